//! `crew -p TASK`: one headless run of the lead agent. Asks are refused with a reason
//! that says how to allow them (there is nobody to ask) — unless `--dashboard` serves a
//! web dashboard alongside, where they wait for an answer; Ctrl-C cancels the run
//! cleanly, a second Ctrl-C exits at once.

use anyhow::{Context, bail};

use super::output::{Rendering, for_terminal, render_events, result_json};
use super::stream::printer::{Emit, Printer};
use super::{Cli, OutputFormat};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::session::build::prepare;
use crate::session::{SessionError, SessionHandle};
use crate::tasks::actor::TaskMsg;

/// Runs `task` headless; returns the exit code (0 success, 1 the run failed, was
/// cancelled or was stopped by its budget).
pub(crate) async fn headless(cli: Cli, task: String) -> anyhow::Result<i32> {
    let mode: AgentMode = super::setup::agent_mode(&cli)?;
    let plan = match (&cli.plan_file, mode) {
        (Some(f), _) => Some(
            std::fs::read_to_string(f).with_context(|| format!("--plan-file {}", f.display()))?,
        ),
        (None, AgentMode::Do) => bail!("--mode do needs the approved plan: pass --plan-file FILE"),
        (None, _) => None,
    };
    let (questions_tx, questions) = tokio::sync::mpsc::unbounded_channel();
    let approver = match cli.dashboard {
        Some(_) => ApproverPolicy::Forward(questions_tx),
        None => ApproverPolicy::Headless,
    };
    let prepared = prepare(&super::setup::options(&cli), approver, &mut |w| {
        eprintln!("crew: {w}")
    })
    .await?;
    let dashboard = match cli.dashboard {
        Some(addr) => {
            match serve_dashboard(
                &prepared,
                addr,
                super::dashboard::exposure(cli.dashboard_allow_remote),
                questions,
            )
            .await
            {
                Ok(d) => Some(d),
                Err(e) => {
                    prepared.close().await;
                    return Err(e);
                }
            }
        }
        None => None,
    };
    if prepared.is_demo && cli.output_format == OutputFormat::Text {
        eprintln!(
            "crew: no model configured and no ANTHROPIC_API_KEY/OPENAI_API_KEY set — running the built-in demo script"
        );
    }
    // `/name args` runs a custom slash command; an unknown `/name` is an error (a typo
    // must not become a paid model call). Text like `/etc/hosts …` is a task.
    let command = match crate::commands::expand::invocation(&task) {
        Some((name, args)) => match prepared.commands.get(name) {
            Some(cmd) => Some((cmd.clone(), args.to_string())),
            None => {
                let message = crate::commands::lead_calls::unknown(name, &prepared.commands);
                prepared.close().await;
                bail!(message);
            }
        },
        None => None,
    };
    let started = std::time::Instant::now();
    // Text shows some events only; the others need not wake its printer.
    let rx = match cli.output_format {
        OutputFormat::Text => prepared
            .events
            .subscribe_where_told(crate::session::render::shown_as_text),
        // Everything, and first what went wrong while the session started.
        _ => prepared.events.subscribe_where_told(|_| true),
    };
    // Only JSON results list the requests; text need not wake a collector every turn.
    let requests = (!matches!(cli.output_format, OutputFormat::Text)).then(|| {
        tokio::spawn(super::output::collect_requests(
            prepared
                .events
                .subscribe_where(super::output::is_lead_request),
        ))
    });
    let format = cli.output_format;
    let emit = match format {
        OutputFormat::StreamJson => super::stream::emit_for(&cli),
        _ => Emit::Nothing,
    };
    let rendering = Rendering {
        format,
        printer: Printer::new(&prepared.session_id, &prepared.model, emit),
        init: match format {
            OutputFormat::StreamJson => Some(super::stream::init_message(&prepared, mode).await),
            _ => None,
        },
    };
    // Text for a terminal passes the sanitizer (model text and tool output must not
    // drive it); JSON and anything piped stay byte-exact.
    let printer = tokio::spawn(render_events(
        rx,
        rendering,
        for_terminal(std::io::stdout(), format),
        // Diagnostics on stderr are text whatever the output format.
        for_terminal(std::io::stderr(), OutputFormat::Text),
    ));

    let session = &prepared.session;
    let session_id = prepared.session_id.clone();
    let lead = session.lead().clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ncrew: cancelling (Ctrl-C again to quit at once)");
            let _ = lead.cast(crate::agent::lead_actor::LeadMsg::Cancel);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let task = match command {
        Some((cmd, args)) => {
            let home = prepared.home.as_deref();
            let cwd = &prepared.cwd;
            crate::commands::lead_calls::start(session.lead(), &cmd, &args, mode, cwd, home)
                .await
                .text
        }
        None => task,
    };
    let max_turns = cli.max_turns;
    let outcome = run_until_quiet(
        session,
        RunRequest { mode, task, plan },
        if cli.no_wait {
            News::Ignore
        } else {
            News::Follow
        },
        max_turns,
    )
    .await;
    ctrl_c.abort();
    let tasks = match session.tasks() {
        Some(t) => match t
            .call(TaskMsg::List, Some(std::time::Duration::from_secs(10)))
            .await
        {
            Ok(ractor::rpc::CallResult::Success(list)) => list,
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    let model = prepared.model.clone();
    let auto = prepared.auto.summary();
    if let Some(d) = dashboard {
        d.stop();
    }
    prepared.close().await;
    // The bus closes once the session's actors are gone; let the printer drain it.
    let mut printer = printer
        .await
        .unwrap_or_else(|_| Printer::new(&session_id, &model, Emit::Nothing));
    let requests = match requests {
        Some(collected) => collected.await.unwrap_or_default(),
        None => Vec::new(),
    };
    let outcome = outcome?;
    // Work the team listed and left undone makes the run unfinished, whatever the model
    // said: a script must not take it for done.
    let unfinished = unfinished_work(&session_id);
    if !unfinished.is_empty() {
        eprintln!(
            "crew: the run ended with {} work item(s) left undone: {}",
            unfinished.len(),
            unfinished.join("; ")
        );
    }
    match format {
        // Say why the run stopped when it is a limit, not the model, that stopped it.
        OutputFormat::Text if outcome.status == RunStatus::BudgetExhausted => {
            eprintln!("crew: stopped: {}", outcome.result);
        }
        OutputFormat::Text => {}
        OutputFormat::Json | OutputFormat::StreamJson | OutputFormat::Events => {
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
            let mut json = result_json(&outcome, &mut printer, duration_ms, &tasks);
            json["auto_mode"] = serde_json::to_value(&auto).unwrap_or_default();
            super::output::add_spend(&mut json, &outcome, requests);
            json["unfinished_items"] = serde_json::json!(unfinished);
            println!("{json}");
        }
    }
    if !unfinished.is_empty() {
        return Ok(1);
    }
    Ok(match outcome.status {
        RunStatus::Completed | RunStatus::MaxTurns => 0,
        // The work was cut short: a script must not take it for done.
        RunStatus::BudgetExhausted | RunStatus::Cancelled | RunStatus::Failed => 1,
    })
}

/// The session's open work items that nothing blocks, as `#id subject (status)`; none when
/// the session has no team (its work list is never created for that).
fn unfinished_work(session_id: &str) -> Vec<String> {
    let Some(teams) = crate::store::teams_dir() else {
        return Vec::new();
    };
    if !teams.join(session_id).join("todos").is_dir() {
        return Vec::new();
    }
    let items = match crate::team::Team::open(&teams, session_id).and_then(|t| t.list_todos()) {
        Ok(items) => items,
        Err(e) => return vec![format!("the work list could not be read ({e})")],
    };
    crate::team::todos::unfinished(&items)
        .into_iter()
        .map(|i| format!("#{} {} ({})", i.id, i.subject, i.status))
        .collect()
}

/// Serves the session's dashboard at `addr`, its approval `questions` answerable there;
/// prints its URL on stderr (stdout is the run's output).
async fn serve_dashboard(
    prepared: &crate::session::build::Prepared,
    addr: std::net::SocketAddr,
    exposure: crate::dashboard::Exposure,
    questions: tokio::sync::mpsc::UnboundedReceiver<crate::approver::actor::PendingApproval>,
) -> anyhow::Result<crate::dashboard::Dashboard> {
    use crate::dashboard::{Dashboard, Listen, Scope};
    let Some(live) = prepared.live() else {
        bail!(
            "--dashboard: the session could not register under ~/.crew/run, so no dashboard can reach it"
        );
    };
    live.approvals().serve(questions, None);
    let listen = Listen { addr, exposure };
    let dashboard = Dashboard::start(listen, Scope::Own(live.entry().clone())).await?;
    if let Some(w) = dashboard.warning() {
        eprintln!("crew: warning: {w}");
    }
    eprintln!("crew: dashboard: {}", dashboard.url());
    Ok(dashboard)
}

/// What a headless run does once the lead's run ends while its team or its background
/// tasks still have news for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum News {
    /// Keeps the lead going on it (see [`SessionHandle::run_until_quiet`]).
    Follow,
    /// Returns at once (`--no-wait`).
    Ignore,
}

/// Runs the request, then — with [`News::Follow`] — keeps the lead going while its team
/// or its background tasks have news for it; at most `max_turns` lead runs in all.
async fn run_until_quiet(
    session: &SessionHandle,
    first: RunRequest,
    news: News,
    max_turns: u32,
) -> Result<RunOutcome, SessionError> {
    match news {
        News::Ignore => session.run(first).await,
        News::Follow => session.run_until_quiet(first, max_turns).await,
    }
}
