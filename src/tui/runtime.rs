//! The TUI's event loop. One `tokio::select!` over terminal input (crossterm's
//! `EventStream`), the session's event bus, the approver's questions and internal
//! completions (runs, task lists, logs). Nothing here waits for the session: runs, task
//! queries and stops are spawned and report back through a channel, so typing, scrolling
//! and approving stay live while the model streams and subagents work.

use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event as TermEvent, EventStream, KeyEventKind,
};
use crossterm::execute;
use futures::StreamExt;
use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::sync::mpsc;

use super::app::{App, Effect, SessionInfo};
use super::transcript::Entry;
use super::trust_prompt::{self, Answer, TrustPrompt};
use super::view;
use crate::agent::catalog::Catalog;
use crate::agent::lead::LeadMsg;
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest};
use crate::approver::actor::ApproverPolicy;
use crate::cli::Cli;
use crate::cli::setup::{Prepared, prepare};
use crate::protocol::{ContentBlock, Message, Role};
use crate::tasks::actor::TaskMsg;
use crate::tasks::{TaskRecord, now_ms};

/// Work that finished off the loop.
pub(super) enum Done {
    Run(Result<RunOutcome, String>),
    CommandExpanded(String),
    Tasks(Vec<TaskRecord>),
    Log(String, String),
    TaskEnded(u64, TaskRecord),
    Stopped(Result<TaskRecord, String>),
    Team(Option<crate::cli::team::TeamView>),
    Transcript(String, String),
    TeamNotice(Result<String, String>),
    Ahead(super::speculate::Report),
    Compacted(Result<crate::agent::context::Compacted, String>),
}

/// The largest log tail the log view loads.
const LOG_TAIL_BYTES: usize = 64 * 1024;

/// Runs the interactive UI until the user quits; returns the exit code.
pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    ask_trust(&cli).await?;
    let (approval_tx, mut approvals) = mpsc::unbounded_channel();
    let mut warnings = Vec::new();
    let prepared = prepare(&cli, ApproverPolicy::Forward(approval_tx), &mut |w| {
        warnings.push(w)
    })
    .await?;
    let mut app = App::new(session_info(&prepared), prepared.permission_mode);
    for w in warnings {
        app.transcript.push(Entry::Error(w));
    }
    greet(&mut app, &prepared);

    let mut terminal = ratatui::try_init()?;
    // Paste arrives as one event instead of a stream of keys (and Enters).
    let _ = execute!(std::io::stdout(), EnableBracketedPaste);
    let result = event_loop(&mut app, &prepared, &mut terminal, &mut approvals).await;
    let _ = execute!(std::io::stdout(), DisableBracketedPaste);
    ratatui::restore();

    app.approvals.deny_all("the session ended");
    prepared.session.cancel();
    let session_id = prepared.session_id.clone();
    prepared.close().await;
    result?;
    eprintln!("crew: session {session_id} saved; resume it with `crew --resume {session_id}`");
    Ok(0)
}

/// The first-run trust prompt, before the session (and its settings) are loaded.
async fn ask_trust(cli: &Cli) -> anyhow::Result<()> {
    let cwd = crate::cli::setup::working_dir(cli)?;
    let root = crate::store::project_root(&cwd);
    let Some(prompt) = TrustPrompt::needed(&root, crate::store::home_dir().as_deref()) else {
        return Ok(());
    };
    let mut terminal = ratatui::try_init()?;
    let answer = trust_prompt::ask(&mut terminal, &prompt).await;
    ratatui::restore();
    if answer? == Answer::Trust {
        prompt.grant()?;
    }
    Ok(())
}

fn session_info(p: &Prepared) -> SessionInfo {
    let root = crate::store::project_root(&p.cwd);
    let home = crate::store::home_dir();
    let catalog = Catalog::load(&root, home.as_deref());
    SessionInfo {
        session_id: p.session_id.clone(),
        cwd: p.cwd.clone(),
        project_root: root,
        home,
        model: p.model.clone(),
        agents: catalog
            .agents
            .values()
            .map(|a| (a.name.clone(), a.description.clone()))
            .collect(),
        commands: p
            .commands
            .names()
            .into_iter()
            .filter_map(|name| {
                let c = p.commands.get(&name)?;
                let hint = c
                    .argument_hint
                    .as_deref()
                    .map_or(String::new(), |h| format!("{h} "));
                Some((name, format!("{hint}{} ({})", c.description, c.origin())))
            })
            .collect(),
        auto: Some(p.auto.clone()),
        bypass_disabled: p.bypass_disabled,
        suspended_in_auto: p.suspended_in_auto.clone(),
    }
}

fn greet(app: &mut App, p: &Prepared) {
    if p.is_demo {
        app.transcript.push(Entry::Notice(
            "No model configured and no ANTHROPIC_API_KEY/OPENAI_API_KEY set: the built-in demo plays the model.".into(),
        ));
    }
    if !p.resumed.is_empty() {
        show_conversation(app, &p.resumed);
        app.memory_injected = crate::memory::render::injected_paths(&p.resumed);
        app.transcript.push(Entry::Notice(format!(
            "Resumed session {} ({} messages).",
            p.session_id,
            p.resumed.len()
        )));
    }
    app.transcript.push(Entry::Notice(
        "crew — type a task; /help for commands, Shift+Tab for permission modes.".into(),
    ));
}

pub(super) fn show_conversation(app: &mut App, conversation: &[Message]) {
    for m in conversation {
        for block in &m.content {
            match (m.role, block) {
                (Role::User, ContentBlock::Text { text }) => {
                    app.transcript.push(Entry::User(text.clone()))
                }
                (_, ContentBlock::Text { text }) => {
                    app.transcript.push(Entry::Assistant(text.clone()))
                }
                (_, ContentBlock::ToolUse(call)) => app.transcript.tool_started("lead", call),
                (_, ContentBlock::ToolResult(r)) => {
                    let first = r.content.lines().next().unwrap_or("").to_string();
                    app.transcript
                        .tool_finished("lead", &r.tool_use_id, r.is_error, &first)
                }
                _ => {}
            }
        }
    }
}

async fn event_loop(
    app: &mut App,
    prepared: &Prepared,
    terminal: &mut ratatui::DefaultTerminal,
    approvals: &mut mpsc::UnboundedReceiver<crate::approver::actor::PendingApproval>,
) -> anyhow::Result<()> {
    let mut events = prepared.events.subscribe();
    let mut keys = EventStream::new();
    let (done_tx, mut done) = mpsc::unbounded_channel::<Done>();
    let mut tick = tokio::time::interval(Duration::from_millis(300));
    let lead = prepared.session.lead().clone();
    let tasks = prepared.session.tasks().cloned();
    // Only the newest completion watcher counts; older ones may answer late.
    let mut watch_generation = 0u64;
    let mut ahead = super::speculate::Ahead::new(
        crate::speculation::enabled(
            &prepared.project_root,
            prepared.home.as_deref(),
            &prepared.model,
            prepared.is_demo,
        ),
        crate::store::session_dir(&prepared.project_root, &prepared.session_id)
            .map(|d| d.join("speculation")),
    );
    let report = |tx: mpsc::UnboundedSender<Done>| move |r| drop(tx.send(Done::Ahead(r)));
    loop {
        terminal.draw(|f| view::draw(app, f, now_ms()))?;
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => app.on_key(k),
                Some(Ok(TermEvent::Paste(text))) => app.input.paste(&text),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            Some(ev) = events.recv() => {
                app.on_event(ev);
                // Drain what is already there before redrawing: streaming stays cheap.
                while let Ok(ev) = events.try_recv() {
                    app.on_event(ev);
                }
            }
            Some(p) = approvals.recv() => app.approvals.push(p),
            Some(d) = done.recv() => match d {
                Done::Run(result) => {
                    app.on_run_finished(result);
                    if let Some(t) = &tasks {
                        watch_generation += 1;
                        watch_completion(t.clone(), watch_generation, done_tx.clone());
                    }
                    ahead.after_run(app, &lead, report(done_tx.clone()));
                }
                Done::Ahead(super::speculate::Report::Ready(generation, spec)) => {
                    ahead.ready(app, generation, spec)
                }
                Done::Ahead(super::speculate::Report::Resolved(req, resolution)) => {
                    let cancelled = ahead.finish_resolving();
                    super::speculate::adopted_or_run(app, &lead, req, resolution, cancelled, &done_tx)
                }
                Done::CommandExpanded(text) => app.on_command_expanded(text),
                Done::Tasks(records) => app.tasks.set_records(records),
                Done::Log(id, text) => app.tasks.log = Some((id, text)),
                Done::TaskEnded(generation, rec) => {
                    if generation == watch_generation {
                        app.on_task_completed(&rec);
                    }
                }
                Done::Stopped(Ok(rec)) => app.transcript.push(Entry::Notice(format!(
                    "Stopped task {} ({}).", rec.id, rec.status.as_str()
                ))),
                Done::Stopped(Err(e)) => app.transcript.push(Entry::Error(e)),
                Done::Team(Some(view)) => app.team.set_view(view),
                Done::Team(None) => {}
                Done::Transcript(name, text) => {
                    if app.team.transcript.as_ref().is_some_and(|(n, _)| *n == name) {
                        app.team.transcript = Some((name, text));
                    }
                }
                Done::TeamNotice(Ok(text)) => app.transcript.push(Entry::Notice(text)),
                Done::TeamNotice(Err(e)) => app.transcript.push(Entry::Error(e)),
                Done::Compacted(Ok(c)) => app.transcript.push(Entry::Notice(format!(
                    "Compacted: about {} → {} tokens of context.",
                    c.tokens_before, c.tokens_after
                ))),
                Done::Compacted(Err(e)) => app.transcript.push(Entry::Error(e)),
            },
            _ = tick.tick() => {
                if let Some(t) = &tasks {
                    list_tasks(t.clone(), done_tx.clone());
                }
                if let Some((id, _)) = &app.tasks.log {
                    load_log(app, id.clone(), done_tx.clone());
                }
                if app.team.open {
                    team_io::load_view(&app.info.session_id, done_tx.clone());
                    if let Some((name, _)) = &app.team.transcript {
                        team_io::load_transcript(app, name.clone(), done_tx.clone());
                    }
                }
            }
        }
        for effect in app.take_effects() {
            match effect {
                Effect::Run(req) => match ahead.take_for(&req) {
                    Some(spec) => super::speculate::resolve(spec, req, report(done_tx.clone())),
                    None => spawn_run(lead.clone(), req, done_tx.clone()),
                },
                Effect::RunCommand { name, args, mode } => {
                    ahead.discard_current();
                    spawn_command(prepared, name, args, mode, done_tx.clone())
                }
                Effect::Compact(what) => spawn_compact(lead.clone(), what, done_tx.clone()),
                Effect::Cancel => {
                    ahead.cancel_resolving();
                    let _ = lead.cast(LeadMsg::Cancel);
                }
                Effect::SetPermissionMode(mode) => {
                    let _ = lead.cast(LeadMsg::SetPermissionMode(mode));
                }
                Effect::StopTask(id) => {
                    if let Some(t) = &tasks {
                        stop_task(t.clone(), id, done_tx.clone());
                    }
                }
                Effect::LoadLog(id) => load_log(app, id, done_tx.clone()),
                Effect::SendToTeammate { to, message } => {
                    team_io::send(&app.info.session_id, to, message, done_tx.clone())
                }
                Effect::StopTeammate(name) => {
                    team_io::ask_to_stop(&app.info.session_id, name, done_tx.clone())
                }
                Effect::LoadTeammateTranscript(name) => {
                    team_io::load_transcript(app, name, done_tx.clone())
                }
                // Each actor answers at once (bounded by `statuses`), so this is inline.
                Effect::McpStatus => {
                    let statuses = prepared.mcp.statuses().await;
                    app.transcript
                        .push(Entry::Notice(super::mcp_view::render(&statuses)));
                }
            }
        }
        if app.quit {
            return Ok(());
        }
    }
}

pub(super) fn spawn_run(
    lead: ActorRef<LeadMsg>,
    req: RunRequest,
    done: mpsc::UnboundedSender<Done>,
) {
    tokio::spawn(async move {
        // A run may take hours; the bound only guards against a lost reply.
        let result = match lead
            .call(
                |reply| LeadMsg::Run(req, reply),
                Some(Duration::from_secs(24 * 3600)),
            )
            .await
        {
            Ok(CallResult::Success(r)) => r,
            _ => Err("the lead agent did not answer".to_string()),
        };
        let _ = done.send(Done::Run(result));
    });
}

/// Compacts the lead's conversation (`/compact`) and reports how it went.
fn spawn_compact(lead: ActorRef<LeadMsg>, what: Option<String>, done: mpsc::UnboundedSender<Done>) {
    tokio::spawn(async move {
        // A summary turn can take minutes; the bound only guards against a lost reply.
        let result = match lead
            .call(
                |reply| LeadMsg::Compact(what, reply),
                Some(Duration::from_secs(3600)),
            )
            .await
        {
            Ok(CallResult::Success(r)) => r,
            _ => Err("the lead agent did not answer".to_string()),
        };
        let _ = done.send(Done::Compacted(result));
    });
}

/// Expands a custom slash command (its `!` commands and `@file` reads run as the lead's
/// calls, shown and approved like any other) and runs the result as the lead's turn.
fn spawn_command(
    p: &Prepared,
    name: String,
    args: String,
    mode: AgentMode,
    done: mpsc::UnboundedSender<Done>,
) {
    let Some(cmd) = p.commands.get(&name).cloned() else {
        let _ = done.send(Done::Run(Err(format!("unknown command /{name}"))));
        return;
    };
    let lead = p.session.lead().clone();
    let (cwd, home) = (p.cwd.clone(), p.home.clone());
    tokio::spawn(async move {
        let expanded =
            crate::commands::lead_calls::start(&lead, &cmd, &args, mode, &cwd, home.as_deref())
                .await;
        // Sent before the run starts, so the app has it before the run ends.
        let _ = done.send(Done::CommandExpanded(expanded.text.clone()));
        let req = RunRequest {
            mode,
            task: expanded.text,
            plan: None,
        };
        spawn_run(lead, req, done);
    });
}

fn watch_completion(tasks: ActorRef<TaskMsg>, generation: u64, done: mpsc::UnboundedSender<Done>) {
    tokio::spawn(async move {
        if let Ok(CallResult::Success(Some(rec))) = tasks
            .call(
                |r| TaskMsg::WaitNext("lead".into(), r),
                Some(Duration::from_secs(24 * 3600)),
            )
            .await
        {
            let _ = done.send(Done::TaskEnded(generation, rec));
        }
    });
}

fn list_tasks(tasks: ActorRef<TaskMsg>, done: mpsc::UnboundedSender<Done>) {
    tokio::spawn(async move {
        if let Ok(CallResult::Success(records)) = tasks
            .call(TaskMsg::List, Some(Duration::from_secs(5)))
            .await
        {
            let _ = done.send(Done::Tasks(records));
        }
    });
}

fn stop_task(tasks: ActorRef<TaskMsg>, id: String, done: mpsc::UnboundedSender<Done>) {
    tokio::spawn(async move {
        let result = match tasks
            .call(
                |r| TaskMsg::Stop(id.clone(), r),
                Some(Duration::from_secs(30)),
            )
            .await
        {
            Ok(CallResult::Success(r)) => r,
            _ => Err(format!("task {id} did not stop in time")),
        };
        let _ = done.send(Done::Stopped(result));
    });
}

fn load_log(app: &App, id: String, done: mpsc::UnboundedSender<Done>) {
    let Some(path) = app
        .tasks
        .records
        .iter()
        .find(|r| r.id == id)
        .map(|r| r.output_file.clone())
    else {
        return;
    };
    tokio::spawn(async move {
        let text = match tokio::fs::read(&path).await {
            Ok(bytes) => {
                let tail = &bytes[bytes.len().saturating_sub(LOG_TAIL_BYTES)..];
                String::from_utf8_lossy(tail).into_owned()
            }
            Err(e) => format!("(no log yet at {}: {e})", path.display()),
        };
        let _ = done.send(Done::Log(id, text));
    });
}

/// The team panel's I/O: the team's state, a teammate's transcript, and mail from the user,
/// all read and written through the team's files on the blocking pool.
mod team_io {
    use tokio::sync::mpsc::UnboundedSender;

    use super::{App, Done};
    use crate::team::{MemberName, MessageKind, Outgoing, Recipient, Team};

    /// The largest transcript tail the panel loads.
    const TRANSCRIPT_TAIL_BYTES: usize = 64 * 1024;

    pub(super) fn load_view(session: &str, done: UnboundedSender<Done>) {
        let session = session.to_string();
        tokio::task::spawn_blocking(move || {
            let view = Team::find_for_session(&session)
                .ok()
                .flatten()
                .and_then(|t| crate::cli::team::view(&t).ok());
            let _ = done.send(Done::Team(view));
        });
    }

    fn deliver(
        session: String,
        to: String,
        out: Outgoing,
        what: &'static str,
    ) -> Result<String, String> {
        let team = Team::find_for_session(&session)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("session {session} has no team yet"))?;
        let recipient = Recipient::parse(&to).map_err(|e| e.to_string())?;
        team.send(&MemberName::user(), &recipient, out)
            .map_err(|e| e.to_string())?;
        Ok(format!("{what} {to}."))
    }

    pub(super) fn send(session: &str, to: String, message: String, done: UnboundedSender<Done>) {
        let session = session.to_string();
        tokio::task::spawn_blocking(move || {
            let r = deliver(session, to, Outgoing::text(message), "Sent your message to");
            let _ = done.send(Done::TeamNotice(r));
        });
    }

    /// Stopping a teammate is a `shutdown_request` in its inbox: it answers and shuts down
    /// at its next turn boundary, and its claimed items return to the list.
    pub(super) fn ask_to_stop(session: &str, to: String, done: UnboundedSender<Done>) {
        let session = session.to_string();
        tokio::task::spawn_blocking(move || {
            let out = Outgoing {
                message: "The user asks you to stop.".into(),
                summary: Some("stop".into()),
                kind: MessageKind::ShutdownRequest,
            };
            let r = deliver(session, to, out, "Asked to shut down:");
            let _ = done.send(Done::TeamNotice(r));
        });
    }

    /// Loads the recorded transcript of teammate `name` (`<session>/agents/<agent id>.jsonl`)
    /// as readable lines.
    pub(super) fn load_transcript(app: &App, name: String, done: UnboundedSender<Done>) {
        let agent_id = app
            .team
            .teammates()
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.agent_id.clone());
        let dir = crate::store::session_dir(&app.info.project_root, &app.info.session_id);
        let (Some(agent_id), Some(dir)) = (agent_id, dir) else {
            return;
        };
        let path = dir
            .join("agents")
            .join(format!("{}.jsonl", agent_id.replace('/', "-")));
        tokio::spawn(async move {
            let text = match tokio::fs::read(&path).await {
                Ok(bytes) => {
                    let tail = &bytes[bytes.len().saturating_sub(TRANSCRIPT_TAIL_BYTES)..];
                    readable(&String::from_utf8_lossy(tail))
                }
                Err(e) => format!("(no transcript yet at {}: {e})", path.display()),
            };
            let _ = done.send(Done::Transcript(name, text));
        });
    }

    /// Messages and tool calls of a transcript, one line each.
    fn readable(jsonl: &str) -> String {
        use crate::events::{Event, EventKind};
        jsonl
            .lines()
            .filter_map(|l| serde_json::from_str::<Event>(l).ok())
            .filter_map(|e| match e.kind {
                EventKind::MessageAppended { message } => {
                    let text = message.text();
                    let role = format!("{:?}", message.role).to_lowercase();
                    (!text.trim().is_empty()).then(|| format!("{role}: {text}"))
                }
                EventKind::ToolCallStarted { call } => {
                    Some(format!("→ {} {}", call.name, call.arguments))
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn a_transcript_reads_as_messages_and_tool_calls() {
            let jsonl = [
                r#"{"agent":"general-purpose/t1","type":"message_appended","message":{"role":"user","content":[{"type":"text","text":"from lead: take #2"}]}}"#,
                r#"{"agent":"general-purpose/t1","type":"tool_call_started","call":{"id":"c1","name":"todo_update","arguments":"{\"id\":\"2\"}"}}"#,
                r#"{"agent":"general-purpose/t1","type":"text_delta","text":"x"}"#,
                "torn {",
            ]
            .join("\n");
            assert_eq!(
                super::readable(&jsonl),
                "user: from lead: take #2\n→ todo_update {\"id\":\"2\"}"
            );
        }
    }
}
