//! Building a session from the command line: working directory, permission mode,
//! model, agent catalog, tools, transcript and task state. Shared by the headless run
//! and the terminal UI.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use tokio::task::JoinHandle;

use super::{Cli, model};
use crate::agent::catalog::Catalog;
use crate::agent::prompt::lead_system_prompt;
use crate::agent::runner::AgentSpec;
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::executor::DEFAULT_TIMEOUT;
use crate::permission::{PermissionMode, Policy};
use crate::protocol::Message;
use crate::session::{Orchestration, SessionConfig, SessionHandle};
use crate::tools::{CommandSandbox, Registry, builtin_tools, orchestration_tools};

/// A started session and what belongs with it.
pub struct Prepared {
    /// The session.
    pub session: SessionHandle,
    /// Its events (subscribe before the first run).
    pub events: EventBus,
    /// Its id (for `--resume`).
    pub session_id: String,
    /// The lead's working directory.
    pub cwd: PathBuf,
    /// The lead's permission mode at start.
    pub permission_mode: PermissionMode,
    /// The model's name, for display.
    pub model: String,
    /// Whether the built-in demo plays the model.
    pub is_demo: bool,
    /// The conversation the session resumed with.
    pub resumed: Vec<Message>,
    /// The custom slash commands (`.claude/commands`, `.crew/commands`, user-level).
    pub commands: Arc<crate::commands::CommandCatalog>,
    /// The project root.
    pub project_root: PathBuf,
    /// The home directory.
    pub home: Option<PathBuf>,
    /// The session's MCP servers (stopped, process groups and all, by `close`).
    pub mcp: crate::mcp::McpClients,
    /// The session's auto mode (classifier, breaker, tally).
    pub auto: Arc<crate::auto_mode::AutoMode>,
    /// `permissions.disableBypassPermissionsMode: "disable"` is set.
    pub bypass_disabled: bool,
    /// The allow rules auto mode sets aside.
    pub suspended_in_auto: Vec<String>,
    recorder: JoinHandle<()>,
}

impl Prepared {
    /// Stops the session (cancelling background work) and finishes the transcript.
    pub async fn close(self) {
        self.session.shutdown().await;
        self.mcp.shutdown().await;
        self.events.close();
        let _ = self.recorder.await;
        // Team inboxes are fsynced by group commit: the last window too, before exiting.
        let _ = tokio::task::spawn_blocking(crate::team::inbox::flush_all).await;
    }
}

/// The working directory from `--cwd` or the current directory, canonical.
pub fn working_dir(cli: &Cli) -> anyhow::Result<PathBuf> {
    let cwd = match &cli.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    if !cwd.is_dir() {
        bail!("--cwd {}: not a directory", cwd.display());
    }
    Ok(cwd)
}

/// The lead's command sandbox: every command runs confined, in the profile the engine
/// chooses for its call (`permission::profile`), below the cwd, the additional
/// directories and the user's `sandbox.filesystem.allowWrite`. Also hands the
/// `sandbox.filesystem` deny lists to the command runner and says, once, which sandbox
/// layers hold here; with `sandbox.failIfUnavailable` a missing core layer (Landlock,
/// mount namespaces) stops the session instead.
fn command_sandbox(
    policy: &Policy,
    cwd: &std::path::Path,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<CommandSandbox> {
    crate::sandbox::extra::set(crate::sandbox::extra::ExtraPaths {
        deny_read: policy.sandbox.deny_read.clone(),
        deny_write: policy.sandbox.deny_write.clone(),
        allow_read: policy.sandbox.allow_read.clone(),
    });
    let layers = crate::sandbox::layers::probe();
    if policy.sandbox.fail_if_unavailable && (!layers.landlock || !layers.mount_ns) {
        bail!(
            "sandbox.failIfUnavailable is set, and the OS sandbox cannot start here: missing {}. \
             Run crew on a kernel with Landlock and where namespaces are allowed, or remove \
             failIfUnavailable from the settings to run with the layers that hold (commands \
             that no human approved are then refused where Landlock is missing)",
            layers.missing().join(", ")
        );
    }
    if let Some(line) = layers.summary() {
        warn(line);
    }
    if policy.sandbox.disabled {
        warn(
            "sandbox.enabled is false in your settings: commands run outside the OS sandbox \
             (except under dontAsk and auto, and subagents'). This is unsafe"
                .into(),
        );
    }
    let mut writable_roots = vec![cwd.to_path_buf()];
    writable_roots.extend(policy.additional_roots.iter().cloned());
    writable_roots.extend(policy.sandbox.writable_roots.iter().cloned());
    Ok(CommandSandbox::landlock(writable_roots))
}

/// Starts a session as the command line asks, answering Asks with `approver`.
/// Warnings (unknown mode, broken agent files) go to `warn`.
pub async fn prepare(
    cli: &Cli,
    approver: ApproverPolicy,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<Prepared> {
    let cwd = working_dir(cli)?;
    let project_root = crate::store::project_root(&cwd);
    let home = crate::store::home_dir();
    let (mut policy, warnings) = Policy::load(&project_root, home.as_deref())?;
    for w in warnings {
        warn(w.to_string());
    }
    // Hooks from every settings layer; a project's shared hooks only in a trusted folder.
    let (hooks, hook_warnings) = crate::hooks::config::load(&project_root, home.as_deref())?;
    for w in hook_warnings {
        warn(w.to_string());
    }
    if let Some(usd) = cli.max_budget_usd {
        if !usd.is_finite() || usd < 0.0 {
            bail!("--max-budget-usd {usd}: give a non-negative number of US dollars");
        }
        policy.max_budget_usd = Some(usd);
    }
    let spec = cli.model.as_deref().or(policy.model.as_deref());
    let max_concurrent_agents = cli
        .max_concurrent_agents
        .or(policy.max_concurrent_agents)
        .unwrap_or(8);
    let chosen = model::choose(spec, cli.record_requests.clone())?;
    // Auto mode and the starting mode: the same state machine as every later change.
    let auto = super::modes::auto_mode(&policy, &chosen, cli.record_requests.clone())?;
    let permission_mode =
        super::modes::starting_mode(&policy, &auto, cli.permission_mode.as_deref(), warn)?;
    crate::sandbox::env::set_passthrough(policy.env_passthrough.clone());
    crate::sandbox::net::set_policy(crate::sandbox::net::NetworkPolicy::from_settings(
        &policy.network.allowed_domains,
        policy.network.allow_local_binding,
    )?);
    let sandbox = command_sandbox(&policy, &cwd, warn)?;
    let limits = crate::sandbox::limit_settings::resolve(&policy.limits)?;
    crate::sandbox::limits::configure(limits.limits);
    crate::offload::budget::configure(limits.results);
    if limits.limits.max_processes.is_some()
        && let crate::sandbox::limits::CgroupSupport::Unavailable(why) =
            crate::sandbox::limits::status()
    {
        warn(format!(
            "the process limit for sandboxed commands is unavailable: no pids cgroup could be made ({why}); the file-size and CPU limits still hold"
        ));
    }
    let catalog = Arc::new(Catalog::load(&project_root, home.as_deref()));
    for e in &catalog.errors {
        warn(format!("agent definition not loaded: {e}"));
    }
    let skills = Arc::new(crate::skills::SkillCatalog::load(
        &project_root,
        home.as_deref(),
    ));
    for e in &skills.errors {
        warn(format!("skill not loaded: {e}"));
    }
    // Files beside a user's SKILL.md are readable, though outside the project.
    policy.read_roots = skills.user_dirs();
    let commands = Arc::new(crate::commands::CommandCatalog::load(
        &project_root,
        home.as_deref(),
    ));
    for e in &commands.errors {
        warn(format!("slash command not loaded: {e}"));
    }
    let (by_agent_type, agent_warnings) =
        crate::hooks::config::load_agents(catalog.hook_sources(), &project_root, home.as_deref());
    for w in agent_warnings {
        warn(w.to_string());
    }
    let (context, context_warnings) =
        crate::agent::context::ContextSettings::for_project(&project_root, home.as_deref());
    for w in context_warnings {
        warn(w);
    }
    let hooks = crate::hooks::HookTable {
        session: hooks,
        by_agent_type,
    };
    // This project's directory, claimed for its root (old-layout sessions adopted when
    // they can only be this project's), before a session is chosen from it.
    let (_, notice) = crate::store::open_project(&project_root)?;
    if let Some(notice) = notice {
        warn(notice);
    }
    let (session_id, conversation) = choose_session(cli, &project_root)?;
    let resuming = cli.resume.is_some() || cli.continue_session;
    let transcript = crate::transcript::transcript_path(&project_root, &session_id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let session_dir = crate::store::session_dir(&project_root, &session_id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let agents_dir = session_dir.join("agents");
    // Offloaded tool results are always readable, and nothing else of ~/.crew by this.
    policy.results_dir = crate::offload::ResultsDir::of_session(&session_dir)
        .ensure()
        .ok();
    // Aliases (Claude Code's `Task` for `agent`) come with the tools' definitions.
    let mut registry = Registry::with_tools(
        builtin_tools()
            .into_iter()
            .chain(orchestration_tools(&catalog.agent_types())),
    )?;
    // `tool_search` finds MCP tools deferred above the `toolSearch` threshold.
    let (threshold, threshold_warnings) =
        crate::tools::deferred::Threshold::for_project(&project_root, home.as_deref());
    for w in threshold_warnings {
        warn(w);
    }
    registry.register(Arc::new(crate::tools::tool_search::ToolSearch::new(
        threshold,
    )))?;
    // The `skill` tool exists where there are skills to load.
    if !skills.is_empty() {
        registry = registry.with_skills(skills.clone())?;
    }
    // The engine decides delegation from each agent type's isolation and read-only-ness,
    // and from whether subagents get worktrees here.
    let worktrees = crate::worktree::git::open_main(&cwd).is_ok();
    policy.delegation = crate::agent::delegate::delegation(&catalog, &registry, worktrees);
    let workers = crate::cli::workers::join_from_cli(cli, home.as_deref(), &policy, &project_root)
        .await?
        .map(|pool| pool as Arc<dyn crate::agent::host::Workers>);
    let events = EventBus::new();
    let mcp = start_mcp(
        cli,
        &registry,
        &events,
        &cwd,
        &project_root,
        home.as_deref(),
        warn,
    )
    .await;
    let model_name = chosen.model.clone();
    let bypass_disabled = policy.bypass_disabled;
    let suspended_in_auto = super::modes::suspended(&policy);
    let session = SessionHandle::start(SessionConfig {
        auto: Some(auto.clone()),
        cwd: cwd.clone(),
        permission_mode,
        policy,
        provider: chosen.provider,
        lead: AgentSpec {
            id: "lead".into(),
            model: chosen.model,
            system_prompt: format!("{}{}", lead_system_prompt(&cwd), skills.prompt_section()),
            allowed_tools: None,
            max_turns: cli.max_turns,
            max_tokens: 8192,
        },
        approver,
        registry: Arc::new(registry),
        sandbox,
        default_tool_timeout: DEFAULT_TIMEOUT,
        conversation: conversation.clone(),
        events: events.clone(),
        context,
        hooks: Some(crate::session::SessionHooks {
            hooks,
            project_dir: project_root.clone(),
            session_id: session_id.clone(),
            transcript_path: transcript.clone(),
            source: if resuming { "resume" } else { "startup" },
        }),
        orchestration: Some(Orchestration {
            session_dir: session_dir.clone(),
            catalog,
            worktrees: true,
            worktree_base: None,
            max_concurrent_agents,
            subagent_max_turns: cli.max_turns,
            teams_dir: crate::store::teams_dir(),
            restore_team: resuming.then(|| crate::team::restore::Transcripts {
                lead: transcript.clone(),
                agents_dir: agents_dir.clone(),
            }),
            workers,
        }),
    })
    .await;
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            mcp.shutdown().await;
            return Err(e.into());
        }
    };
    let transcript = crate::transcript::record(&events, transcript, agents_dir);
    // Each agent's spending, for `crew tasks list` and `crew team show`.
    let ledger = crate::agent::ledger::record(&events, session_dir);
    let recorder = tokio::spawn(async move {
        let _ = transcript.await;
        let _ = ledger.await;
    });
    Ok(Prepared {
        session,
        events,
        session_id,
        cwd,
        permission_mode,
        model: model_name,
        is_demo: chosen.is_demo,
        resumed: conversation,
        commands,
        project_root,
        home,
        mcp,
        recorder,
        auto,
        bypass_disabled,
        suspended_in_auto,
    })
}

/// Starts the configured MCP servers (all at once, each within the connect timeout), their
/// tools joining `registry`'s dynamic section; a server that fails is named in a warning.
async fn start_mcp(
    cli: &Cli,
    registry: &Registry,
    events: &EventBus,
    cwd: &std::path::Path,
    project_root: &std::path::Path,
    home: Option<&std::path::Path>,
    warn: &mut dyn FnMut(String),
) -> crate::mcp::McpClients {
    let config = crate::mcp::config::load(project_root, home, &cli.mcp_config, &|v| {
        std::env::var(v).ok()
    });
    for w in config.warnings {
        warn(w);
    }
    for e in config.errors {
        warn(format!("MCP server not started: {e}"));
    }
    let (clients, statuses) = crate::mcp::McpClients::start(
        config.servers,
        registry.dynamic_tools(),
        Some(events.clone()),
        cwd.to_path_buf(),
        crate::mcp::CONNECT_TIMEOUT,
    )
    .await;
    for (server, status) in statuses {
        if !matches!(status, crate::mcp::server_actor::Status::Connected { .. }) {
            warn(format!(
                "MCP server `{}` is not available: {status}",
                server.name
            ));
        }
    }
    clients
}

/// The session to run in: `--resume ID`, `--continue` (the newest), or a new one; with
/// the conversation recorded so far.
/// The id of a new session: `--session-id` (checked: it names a directory), else random.
fn new_session_id(cli: &Cli, project_root: &std::path::Path) -> anyhow::Result<String> {
    let Some(id) = &cli.session_id else {
        return Ok(uuid::Uuid::new_v4().to_string());
    };
    if !crate::store::valid_session_id(id) {
        bail!("--session-id `{id}`: use 1 to 64 letters, digits, `-` or `_`");
    }
    let dir = crate::store::session_dir(project_root, id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    if dir.exists() {
        bail!(
            "--session-id `{id}`: {} already exists; resume it with --resume {id} or pick another id",
            dir.display()
        );
    }
    Ok(id.clone())
}

fn choose_session(
    cli: &Cli,
    project_root: &std::path::Path,
) -> anyhow::Result<(String, Vec<crate::protocol::Message>)> {
    let id = match (&cli.resume, cli.continue_session) {
        (Some(id), _) => Some(id.clone()),
        (None, true) => Some(
            crate::transcript::list_sessions(project_root)
                .first()
                .map(|s| s.id.clone())
                .with_context(|| {
                    format!(
                        "--continue: no earlier session for {}",
                        project_root.display()
                    )
                })?,
        ),
        (None, false) => None,
    };
    let Some(id) = id else {
        return Ok((new_session_id(cli, project_root)?, Vec::new()));
    };
    if !crate::store::valid_session_id(&id) {
        bail!(
            "--resume `{id}`: a session id is 1 to 64 letters, digits, `-` or `_` (see `crew sessions list`)"
        );
    }
    let path = crate::transcript::transcript_path(project_root, &id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let owned = crate::store::project_dir(project_root)
        .is_some_and(|dir| crate::store::owned_by(&dir, project_root));
    if !owned || !path.is_file() {
        bail!(
            "--resume {id}: no such session for {} (see `crew sessions list`)",
            project_root.display()
        );
    }
    let conversation = crate::transcript::resume_conversation(&path)?;
    Ok((id, conversation))
}
