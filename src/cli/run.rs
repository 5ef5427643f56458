//! `crew -p TASK`: one headless run of the lead agent. Asks are refused with a reason
//! that says how to allow them (there is nobody to ask); Ctrl-C cancels the run cleanly,
//! a second Ctrl-C exits at once.

use std::sync::Arc;

use anyhow::{Context, bail};

use super::output::{render_events, result_json};
use super::{Cli, OutputFormat, model};
use crate::agent::mode::AgentMode;
use crate::agent::prompt::lead_system_prompt;
use crate::agent::runner::{AgentSpec, RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::executor::DEFAULT_TIMEOUT;
use crate::permission::{PermissionMode, Policy};
use crate::session::{SessionConfig, SessionHandle};
use crate::tools::{CommandSandbox, Registry, builtin_tools};

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
    let registry = Arc::new(Registry::with_tools(builtin_tools())?);
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
        conversation: Vec::new(),
        events: events.clone(),
    })
    .await?;
    let session_id = uuid::Uuid::new_v4().to_string();
    let format = cli.output_format;
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
    let outcome = session.run(RunRequest { mode, task, plan }).await;
    ctrl_c.abort();
    session.shutdown().await;
    events.close();
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
