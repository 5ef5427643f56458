//! One assembly of a lead's session, for the headless run, the terminal UI and `crew mcp
//! serve` alike: working directory, settings, permission mode, model, agent catalog,
//! tools, MCP servers, workers, transcript and task state. The callers fill an
//! [`Options`] (the command line from its flags, `mcp serve` from its own config) and get
//! back a started session as a [`Prepared`].
//!
//! Modules: `extensions` (plugins, agent definitions, skills, commands and hooks), `mcp`
//! (the MCP servers), `modes` (auto mode and the starting permission mode), `resume` (the
//! working directory and which session to run in), `sandbox` (the lead's command
//! sandbox), `tool_rules` (`--allowedTools` and `--disallowedTools`).

mod extensions;
mod mcp;
mod modes;
mod resume;
mod sandbox;
mod tool_rules;

use crate::tools::rule_names::LoadPolicy;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use futures::future::BoxFuture;
use tokio::task::JoinHandle;

use crate::agent::host::Workers;
use crate::agent::prompt::lead_system_prompt;
use crate::agent::runner::AgentSpec;
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::permission::{PermissionMode, Policy};
use crate::protocol::Message;
use crate::session::model;
use crate::session::{Orchestration, SessionConfig, SessionHandle};
use crate::tools::{Registry, builtin_tools, orchestration_tools};

pub(crate) use resume::working_dir;
pub(crate) use tool_rules::ToolRules;

/// What a session is assembled from besides the settings on disk: the command line's
/// flags (or what `crew mcp serve` chooses for its sessions). Error messages name the
/// flags (`--cwd`, `--resume`, …), so a caller that has no flags should still fill the
/// fields from its own checked configuration.
#[derive(Clone)]
pub struct Options {
    /// `--cwd`: the lead's working directory (`None`: the current directory).
    pub cwd: Option<PathBuf>,
    /// `--permission-mode`: the starting mode's name (`None`: `permissions.defaultMode`).
    pub permission_mode: Option<String>,
    /// `--model` (`None`: the settings' model, else from API keys, else the demo).
    pub model: Option<String>,
    /// `--max-turns`: the most model turns of a lead run (and of each subagent's).
    pub max_turns: u32,
    /// `--max-budget-usd` (`None`: the `maxBudgetUsd` setting).
    pub max_budget_usd: Option<f64>,
    /// `--max-concurrent-agents` (`None`: the `maxConcurrentAgents` setting, else 8).
    pub max_concurrent_agents: Option<usize>,
    /// `--resume ID`.
    pub resume: Option<String>,
    /// `--continue`: resume the project's newest session.
    pub continue_session: bool,
    /// `--session-id`: the id of a new session.
    pub session_id: Option<String>,
    /// `--mcp-config` files, on top of the settings' MCP servers.
    pub mcp_config: Vec<PathBuf>,
    /// `--record-requests`: where a `script:` model appends the requests it gets.
    pub record_requests: Option<PathBuf>,
    /// Who joins the worker nodes for the session (`None`: it runs no remote subagents).
    pub workers: Option<Arc<dyn JoinWorkers>>,
    /// `--allowedTools` and `--disallowedTools`: rules of this session only, on top of
    /// the settings' (Claude Code's syntax: `Bash(git log:*)`, `Read`, `mcp__server__tool`).
    pub tool_rules: ToolRules,
    /// `--system-prompt`: the lead's system prompt instead of crew's.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`: text added at the end of the lead's system prompt.
    pub append_system_prompt: Option<String>,
    /// `--agents`: Claude Code's JSON of agent definitions, above the files'.
    pub agents_json: Option<String>,
    /// `--agent`: the agent definition the lead runs as.
    pub agent: Option<String>,
    /// `--plugin-dir`: plugin directories to load, besides the installed plugins the
    /// settings enable.
    pub plugin_dirs: Vec<PathBuf>,
}

/// What joining the workers may read of the session being assembled.
pub struct JoinRequest<'a> {
    /// `--model`, if given (else the settings' model applies).
    pub model: Option<&'a str>,
    /// The session's settings.
    pub policy: &'a Policy,
    /// The project root (the lead keeps its workers' snapshot under its state).
    pub project_root: &'a Path,
    /// The user's home directory.
    pub home: Option<&'a Path>,
}

/// Joins the worker nodes a session runs remote subagents on. The session reaches
/// workers only through the [`Workers`] it is handed, so the joining is passed in
/// (`worker::join::Cluster`) rather than imported.
pub trait JoinWorkers: Send + Sync {
    /// The joined workers, `None` when none are configured; an error stops the session
    /// from starting.
    fn join<'a>(
        &'a self,
        request: JoinRequest<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Option<Arc<dyn Workers>>>>;
}

/// A started session and what belongs with it.
pub(crate) struct Prepared {
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
    /// The slash commands (`.claude/commands`, `.crew/commands`, user-level, plugins',
    /// and the skills).
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
    /// The lead's tools, by the names the model sees (MCP tools included).
    pub tools: Vec<String>,
    /// The agent definitions by name.
    pub agents: Vec<String>,
    /// What each agent spent before this process (a resumed session's record).
    pub spent: crate::agent::ledger::Ledger,
    recorder: JoinHandle<()>,
    /// The registration `crew ps` finds the session by (`None`: it could not be made).
    live: Option<crate::session::live::Live>,
}

impl Prepared {
    /// The session's registration among the live sessions (`None`: it could not be made).
    pub(crate) fn live(&self) -> Option<&crate::session::live::Live> {
        self.live.as_ref()
    }

    /// Stops the session (cancelling background work) and finishes the transcript.
    pub(crate) async fn close(self) {
        self.close_for("other").await
    }

    /// [`Prepared::close`], telling `SessionEnd` hooks `reason` (Claude Code's: `clear`
    /// when `/clear` replaces the session, `other` otherwise).
    pub(crate) async fn close_for(self, reason: &str) {
        if let Some(live) = self.live {
            live.close();
        }
        self.session.shutdown_for(reason).await;
        self.mcp.shutdown().await;
        self.events.close();
        let _ = self.recorder.await;
        // Team inboxes and crew's files are fsynced by group commit: the last window too,
        // before exiting.
        let _ = tokio::task::spawn_blocking(crate::team::inbox::flush_all).await;
        let _ = tokio::task::spawn_blocking(crate::store::behind::flush_all).await;
    }
}

/// How a session begins, for `SessionStart`'s `source` (Claude Code's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// As the options say: `startup`, or `resume` with `--resume`/`--continue`.
    AsAsked,
    /// A new session after `/clear` in the same terminal: `clear`.
    Clear,
}

/// Starts a session as `opts` asks, answering Asks with `approver`.
/// Warnings (unknown mode, broken agent files) go to `warn`.
pub(crate) async fn prepare(
    opts: &Options,
    approver: ApproverPolicy,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<Prepared> {
    prepare_as(opts, Start::AsAsked, approver, warn).await
}

/// [`prepare`], starting as `start` says.
pub(crate) async fn prepare_as(
    opts: &Options,
    start: Start,
    approver: ApproverPolicy,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<Prepared> {
    let cwd = working_dir(opts)?;
    let project_root = crate::store::project_root(&cwd);
    let home = crate::store::home_dir();
    let (mut policy, warnings) = Policy::load(&project_root, home.as_deref())?;
    for w in warnings {
        warn(w.to_string());
    }
    opts.tool_rules.add_to(&mut policy, home.as_deref())?;
    let extensions::Extensions {
        catalog,
        skills,
        commands,
        hooks,
    } = extensions::load(opts, &project_root, home.as_deref(), warn)?;
    if let Some(usd) = opts.max_budget_usd {
        if !usd.is_finite() || usd < 0.0 {
            bail!("--max-budget-usd {usd}: give a non-negative number of US dollars");
        }
        policy.max_budget_usd = Some(usd);
    }
    // `--agent NAME`: the lead runs as that agent (its prompt, tools and model).
    let lead_agent = match &opts.agent {
        Some(name) => Some(catalog.get(name).cloned().ok_or_else(|| {
            anyhow::anyhow!(
                "--agent {name}: no such agent; the agents are {} (`crew agents list` shows them)",
                catalog.names().join(", ")
            )
        })?),
        None => None,
    };
    let agent_model = lead_agent
        .as_ref()
        .and_then(|def| def.model.as_deref())
        .filter(|m| *m != "inherit");
    let spec = opts
        .model
        .as_deref()
        .or(agent_model)
        .or(policy.model.as_deref());
    let max_concurrent_agents = opts
        .max_concurrent_agents
        .or(policy.max_concurrent_agents)
        .unwrap_or(8);
    let chosen = model::choose(spec, opts.record_requests.clone())?;
    // Auto mode and the starting mode: the same state machine as every later change.
    let auto = modes::auto_mode(&policy, &chosen, opts.record_requests.clone())?;
    let permission_mode =
        modes::starting_mode(&policy, &auto, opts.permission_mode.as_deref(), warn)?;
    crate::sandbox::env::set_passthrough(policy.env_passthrough.clone());
    crate::sandbox::net::set_policy(crate::sandbox::net::NetworkPolicy::from_settings(
        &policy.network.allowed_domains,
        policy.network.allow_local_binding,
    )?);
    let sandbox = sandbox::command_sandbox(&policy, &cwd, warn)?;
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
    let catalog = Arc::new(catalog);
    let skills = Arc::new(skills);
    // Files beside a user's or a plugin's SKILL.md are readable, though outside the project.
    policy.read_roots = skills.read_dirs();
    let commands = Arc::new(commands);
    let (context, context_warnings) =
        crate::agent::context::ContextSettings::for_project(&project_root, home.as_deref());
    for w in context_warnings {
        warn(w);
    }
    // This project's directory, claimed for its root (old-layout sessions adopted when
    // they can only be this project's), before a session is chosen from it.
    let (_, notice) = crate::store::open_project(&project_root)?;
    if let Some(notice) = notice {
        warn(notice);
    }
    let (session_id, conversation) = resume::choose_session(opts, &project_root)?;
    let resuming = opts.resume.is_some() || opts.continue_session;
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
    let worktrees = crate::agent::delegate::worktrees_at(&cwd);
    policy.delegation = crate::agent::delegate::delegation(&catalog, &registry, worktrees);
    let workers = match &opts.workers {
        Some(joiner) => {
            joiner
                .join(JoinRequest {
                    model: opts.model.as_deref(),
                    policy: &policy,
                    project_root: &project_root,
                    home: home.as_deref(),
                })
                .await?
        }
        None => None,
    };
    let events = EventBus::new();
    // Recorded from the first event on: what MCP servers and the session's actors publish
    // as they start (an actor restarted at its first message) is in the transcript too.
    // Each agent's spending, for `crew tasks list` and `crew team show`: what the
    // transcripts record it spent so far (costs.json is a copy written behind), then this
    // run's requests.
    let spent = crate::agent::ledger::Ledger::replay(&transcript, &agents_dir);
    let ledger = crate::agent::ledger::record(&events, session_dir.clone(), spent.clone());
    let recording = crate::transcript::record(&events, transcript.clone(), agents_dir.clone());
    let recorder = tokio::spawn(async move {
        let _ = recording.await;
        let _ = ledger.await;
    });
    let mcp = mcp::start_mcp(
        opts,
        &registry,
        &events,
        &cwd,
        &project_root,
        home.as_deref(),
        warn,
    )
    .await;
    let model_name = chosen.model.clone();
    let lead_allowed = lead_agent
        .as_ref()
        .and_then(|def| def.allowed_tools(registry.definitions().map(|d| d.name)));
    let tools: Vec<String> = registry
        .definitions_filtered(lead_allowed.as_ref())
        .into_iter()
        .map(|d| d.name)
        .collect();
    let agents: Vec<String> = catalog.names().into_iter().map(String::from).collect();
    let bypass_disabled = policy.bypass_disabled;
    let suspended_in_auto = modes::suspended(&policy);
    let session = SessionHandle::start(
        SessionConfig::builder(
            cwd.clone(),
            chosen.provider,
            AgentSpec {
                id: "lead".into(),
                model: chosen.model,
                system_prompt: format!(
                    "{}{}",
                    opts.system_prompt
                        .clone()
                        .or_else(|| lead_agent.as_ref().map(|def| def.prompt.clone()))
                        .unwrap_or_else(|| format!(
                            "{}{}",
                            lead_system_prompt(&cwd),
                            skills.prompt_section()
                        )),
                    opts.append_system_prompt
                        .as_deref()
                        .map(|a| format!("\n\n{a}"))
                        .unwrap_or_default()
                ),
                allowed_tools: lead_allowed,
                max_turns: opts.max_turns,
                max_tokens: 8192,
            },
            Arc::new(registry),
        )
        .permission_mode(permission_mode)
        .policy(policy)
        .approver(approver)
        .sandbox(sandbox)
        .conversation(conversation.clone())
        .events(events.clone())
        .orchestration(Orchestration {
            session_dir: session_dir.clone(),
            catalog,
            worktrees: true,
            worktree_base: None,
            max_concurrent_agents,
            subagent_max_turns: opts.max_turns,
            teams_dir: crate::store::teams_dir(),
            restore_team: resuming.then(|| crate::team::restore::Transcripts {
                lead: transcript.clone(),
                agents_dir: agents_dir.clone(),
            }),
            workers,
        })
        .hooks(crate::session::SessionHooks {
            hooks,
            project_dir: project_root.clone(),
            session_id: session_id.clone(),
            transcript_path: transcript.clone(),
            source: match start {
                Start::Clear => "clear",
                Start::AsAsked if resuming => "resume",
                Start::AsAsked => "startup",
            },
        })
        .auto(auto.clone())
        .context(context)
        .build(),
    )
    .await;
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            mcp.shutdown().await;
            // What was recorded is flushed, and the recorders end.
            events.close();
            let _ = recorder.await;
            return Err(e.into());
        }
    };
    let live = crate::session::live::Live::start(&events, &project_root, &session_id, &session_dir)
        .map_err(|e| {
            warn(format!(
                "`crew ps` will not list this session: cannot register it under ~/.crew/run: {e}"
            ))
        })
        .ok();
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
        live,
        auto,
        bypass_disabled,
        suspended_in_auto,
        tools,
        agents,
        spent,
    })
}
