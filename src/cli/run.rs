//! `crew -p TASK`: one headless run of the lead agent. Asks are refused with a reason
//! that says how to allow them (there is nobody to ask); Ctrl-C cancels the run cleanly,
//! a second Ctrl-C exits at once.

use std::sync::Arc;

use anyhow::{Context, bail};

use super::output::{render_events, result_json};
use super::{Cli, OutputFormat, model};
use crate::agent::catalog::Catalog;
use crate::agent::mode::AgentMode;
use crate::agent::prompt::lead_system_prompt;
use crate::agent::runner::RunOutcome;
use crate::agent::runner::{AgentSpec, RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::executor::DEFAULT_TIMEOUT;
use crate::permission::{PermissionMode, Policy};
use crate::session::{Orchestration, SessionConfig, SessionError, SessionHandle};
use crate::tools::{CommandSandbox, Registry, builtin_tools, orchestration_tools};

/// Runs `task` headless; returns the exit code (0 success, 1 the run failed or was
/// cancelled).
pub async fn headless(cli: Cli, task: String) -> anyhow::Result<i32> {
    let cwd = match &cli.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    if !cwd.is_dir() {
        bail!("--cwd {}: not a directory", cwd.display());
    }
    let permission_mode = match cli.permission_mode.as_deref() {
        None => PermissionMode::Default,
        Some(name) => {
            let (mode, warning) = PermissionMode::parse_lenient(name);
            if let Some(w) = warning {
                eprintln!("crew: --permission-mode: {w}");
            }
            mode
        }
    };
    let mode: AgentMode = cli.mode.parse().map_err(anyhow::Error::msg)?;
    let plan = match (&cli.plan_file, mode) {
        (Some(f), _) => Some(
            std::fs::read_to_string(f).with_context(|| format!("--plan-file {}", f.display()))?,
        ),
        (None, AgentMode::Do) => bail!("--mode do needs the approved plan: pass --plan-file FILE"),
        (None, _) => None,
    };
    let chosen = model::choose(cli.model.as_deref(), cli.record_requests.clone())?;
    if chosen.is_demo && cli.output_format == OutputFormat::Text {
        eprintln!(
            "crew: no model configured and no ANTHROPIC_API_KEY/OPENAI_API_KEY set — running the built-in demo script"
        );
    }
    let sandbox = match permission_mode {
        PermissionMode::DontAsk => CommandSandbox::Landlock {
            writable_roots: vec![cwd.clone()],
        },
        _ => CommandSandbox::None,
    };
    let project_root = crate::store::project_root(&cwd);
    let home = crate::store::crew_home().and_then(|h| h.parent().map(std::path::Path::to_path_buf));
    let catalog = Arc::new(Catalog::load(&project_root, home.as_deref()));
    for e in &catalog.errors {
        eprintln!("crew: agent definition not loaded: {e}");
    }
    let (session_id, conversation) = choose_session(&cli, &project_root)?;
    let transcript = crate::transcript::transcript_path(&project_root, &session_id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let session_dir = crate::store::session_dir(&project_root, &session_id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let session_dir_for_agents = session_dir.join("agents");
    let mut registry = Registry::with_tools(
        builtin_tools()
            .into_iter()
            .chain(orchestration_tools(&catalog)),
    )?;
    registry.alias("Task", "agent")?;
    let registry = Arc::new(registry);
    let events = EventBus::new();
    let rx = events.subscribe();
    let session = SessionHandle::start(SessionConfig {
        cwd: cwd.clone(),
        permission_mode,
        policy: Policy {
            home: dirs::home_dir(),
            ..Policy::default()
        },
        provider: chosen.provider,
        lead: AgentSpec {
            id: "lead".into(),
            model: chosen.model,
            system_prompt: lead_system_prompt(&cwd),
            allowed_tools: None,
            max_turns: cli.max_turns,
            max_tokens: 8192,
        },
        approver: ApproverPolicy::Headless,
        registry,
        sandbox,
        default_tool_timeout: DEFAULT_TIMEOUT,
        conversation,
        events: events.clone(),
        orchestration: Some(Orchestration {
            session_dir,
            catalog,
            workspaces: None,
            max_concurrent_agents: cli.max_concurrent_agents,
            subagent_max_turns: cli.max_turns,
        }),
    })
    .await?;
    let format = cli.output_format;
    let recorder = crate::transcript::record(&events, transcript, session_dir_for_agents);
    let printer = tokio::spawn(render_events(
        rx,
        format,
        std::io::stdout(),
        std::io::stderr(),
    ));

    let lead = session.lead().clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ncrew: cancelling (Ctrl-C again to quit at once)");
            let _ = lead.cast(crate::agent::lead::LeadMsg::Cancel);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let outcome = run_until_quiet(&session, RunRequest { mode, task, plan }, cli.no_wait).await;
    ctrl_c.abort();
    session.shutdown().await;
    events.close();
    let _ = recorder.await;
    // The bus closes once the session's actors are gone; let the printer drain it.
    let _ = printer.await;
    let outcome = outcome?;
    match format {
        OutputFormat::Text => {}
        OutputFormat::Json | OutputFormat::StreamJson => {
            println!("{}", result_json(&outcome, &session_id));
        }
    }
    Ok(match outcome.status {
        RunStatus::Completed | RunStatus::MaxTurns => 0,
        RunStatus::Cancelled | RunStatus::Failed => 1,
    })
}

/// Runs the request, then — unless `no_wait` — keeps the lead going while its background
/// tasks are running: each completion starts another lead run that receives it.
async fn run_until_quiet(
    session: &SessionHandle,
    first: RunRequest,
    no_wait: bool,
) -> Result<RunOutcome, SessionError> {
    let mut outcome = session.run(first).await?;
    while !no_wait && matches!(outcome.status, RunStatus::Completed | RunStatus::MaxTurns) {
        if session.next_completion().await.is_none() {
            break;
        }
        outcome = session
            .run(RunRequest {
                mode: AgentMode::Chat,
                task: "Background work you started has ended (see the task notifications). Act on the results, \
or give your final report if everything is done."
                    .into(),
                plan: None,
            })
            .await?;
    }
    Ok(outcome)
}

/// The session to run in: `--resume ID`, `--continue` (the newest), or a new one; with
/// the conversation recorded so far.
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
        return Ok((uuid::Uuid::new_v4().to_string(), Vec::new()));
    };
    let path = crate::transcript::transcript_path(project_root, &id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    if !path.is_file() {
        bail!(
            "--resume {id}: no such session for {} (see `crew sessions list`)",
            project_root.display()
        );
    }
    let conversation = crate::transcript::resume_conversation(&path)?;
    Ok((id, conversation))
}
