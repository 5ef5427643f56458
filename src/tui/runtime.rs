//! The TUI's event loop. One `tokio::select!` over terminal input (crossterm's
//! `EventStream`), the session's event bus, the approver's questions and internal
//! completions (runs, task lists, logs). Nothing here waits for the session: runs, task
//! queries and stops are spawned and report back through a channel, so typing, scrolling
//! and approving stay live while the model streams and subagents work.

use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyEventKind};
use futures::StreamExt;
use tokio::sync::mpsc;

use super::app::{App, Effect};
use super::jobs::{
    Done, list_tasks, load_log, spawn_command, spawn_compact, spawn_run, stop_task,
    watch_completion,
};
use super::screen::Screen;
use super::session_switch::Exit;
use super::startup::{ask_trust, greet, serve_dashboard, session_info};
use super::team_io;
use super::transcript::Entry;
use super::view;
use crate::agent::lead_actor::LeadMsg;
use crate::approver::actor::ApproverPolicy;
use crate::session::build::{Options, Prepared, Start, prepare_as};
use crate::tasks::now_ms;

/// Runs the interactive UI until the user quits; returns the exit code. The terminal is
/// taken over once, before the trust prompt, and kept until the last session ends (see
/// `screen`): keys typed while a session starts wait for the main screen.
/// With `dashboard`, a web dashboard of the session is served alongside (its URL is
/// shown in the transcript).
///
/// `/clear` and `/resume ID` end the session (saved, resumable) and start the next one
/// here, with the same options but the session, the permission mode and the model as the
/// user left them; the input box and its history carry over.
pub async fn run(
    opts: Options,
    dashboard: Option<crate::dashboard::Listen>,
) -> anyhow::Result<i32> {
    let mut screen = Screen::enter()?;
    ask_trust(&opts, &mut screen).await?;
    screen.starting()?;
    let (mut opts, mut start) = (opts, Start::AsAsked);
    // What the next session's app takes over: the input box, and what to tell the user.
    let mut carried: Option<(super::input::InputBox, String)> = None;
    loop {
        let (approval_tx, approvals) = mpsc::unbounded_channel();
        let network_tx = approval_tx.clone();
        let mut warnings = Vec::new();
        let approver = ApproverPolicy::Forward(approval_tx);
        let prepared = prepare_as(&opts, start, approver, &mut |w| warnings.push(w)).await?;
        // A sandboxed command's new host asks here too (refused under dontAsk).
        crate::approver::network::install(
            network_tx,
            &prepared.project_root,
            prepared.permission_mode,
        );
        let mut app = App::new(session_info(&prepared), prepared.permission_mode);
        app.spent = prepared.spent.clone();
        if let Some((input, said)) = carried.take() {
            app.input = input;
            app.transcript.push(Entry::Notice(said));
        }
        for w in warnings {
            app.transcript.push(Entry::Error(w));
        }
        greet(&mut app, &prepared);
        // Asks are answerable from the dashboard too; the dialog gets a copy of each.
        let mut approvals = match prepared.live() {
            Some(live) => {
                let (mirror_tx, mirror_rx) = mpsc::unbounded_channel();
                live.approvals().serve(approvals, Some(mirror_tx));
                mirror_rx
            }
            None => approvals,
        };
        let served = match dashboard {
            Some(listen) => serve_dashboard(&mut app, &prepared, listen).await,
            None => None,
        };

        let result = event_loop(&mut app, &prepared, &mut screen, &mut approvals, &mut opts).await;
        if let Some(d) = served {
            d.stop();
        }
        app.approvals.deny_all("the session ended");
        prepared.session.cancel();
        let session_id = prepared.session_id.clone();
        let next = match result {
            Ok(Exit::Switch(next)) => next,
            ended => {
                drop(screen);
                prepared.close().await;
                ended?;
                eprintln!(
                    "crew: session {session_id} saved; resume it with `crew --resume {session_id}`"
                );
                return Ok(0);
            }
        };
        app.transcript.push(Entry::Notice(format!(
            "Saving session {session_id} and starting the next one…"
        )));
        // Only a courtesy while the session closes: a failed draw must not skip the close.
        let _ = screen.terminal.draw(|f| view::draw(&app, f, now_ms()));
        prepared.close_for(next.end_reason).await;
        let mut input = std::mem::take(&mut app.input);
        input.clear();
        carried = Some((
            input,
            format!(
                "Session {session_id} is saved: /resume {session_id} (or `crew --resume {session_id}`) returns to it."
            ),
        ));
        let next = *next;
        (opts, start) = (next.opts, next.start);
    }
}

/// The shortest time between two redraws caused by agents' events (60 a second).
const FRAME: Duration = Duration::from_millis(16);

async fn event_loop(
    app: &mut App,
    prepared: &Prepared,
    screen: &mut Screen,
    approvals: &mut mpsc::UnboundedReceiver<crate::approver::actor::PendingApproval>,
    opts: &mut Options,
) -> anyhow::Result<Exit> {
    let Screen { terminal, keys } = screen;
    // Everything, and first what went wrong while the session started.
    let mut events = prepared.events.subscribe_where_told(|_| true);
    let (done_tx, mut done) = mpsc::unbounded_channel::<Done>();
    let mut tick = tokio::time::interval(Duration::from_millis(300));
    let lead = prepared.session.lead().clone();
    let tasks = prepared.session.tasks().cloned();
    let team = prepared.session.team().cloned();
    // Wakes the lead for team mail; re-armed after each run.
    let mut mail_watch: Option<tokio::task::JoinHandle<()>> = None;
    // Only the newest completion watcher counts; older ones may answer late.
    let mut watch_generation = 0u64;
    let mut ahead = super::speculate::Ahead::new(
        crate::speculation::enabled(
            &prepared.project_root,
            prepared.home.as_deref(),
            if prepared.is_demo {
                crate::speculation::SessionModel::Demo
            } else {
                crate::speculation::SessionModel::Named(&prepared.model)
            },
        ),
        crate::store::session_dir(&prepared.project_root, &prepared.session_id)
            .map(|d| d.join("speculation")),
    );
    let report = |tx: mpsc::UnboundedSender<Done>| move |r| drop(tx.send(Done::Ahead(r)));
    // Events are drawn at most once a frame. Between an event and the next frame the
    // loop does not listen for more, so the agents publishing them (a streaming model, 32
    // subagents' tool calls) do not wake this task per event; the frame drains them all.
    let mut held = false;
    // The bell and the desktop notification, when CREW_NOTIFY asks for them.
    let (attention, warning) = super::attention::Attention::from_env();
    if let Some(warning) = warning {
        app.transcript.push(Entry::Notice(warning));
    }
    let mut drawn_at = tokio::time::Instant::now();
    loop {
        if !held {
            terminal.draw(|f| view::draw(app, f, now_ms()))?;
            drawn_at = tokio::time::Instant::now();
        }
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => app.on_key(k),
                Some(Ok(TermEvent::Paste(text))) => app.input.paste(&text),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(Exit::Quit),
            },
            Some(ev) = events.recv(), if !held => {
                app.on_event(ev);
                held = true;
            }
            _ = tokio::time::sleep_until(drawn_at + FRAME), if held => {
                while let Ok(ev) = events.try_recv() {
                    app.on_event(ev);
                }
                held = false;
            }
            Some(p) = approvals.recv() => {
                let summary = format!(
                    "{} asks to run {}",
                    super::approval::asker(&p.request),
                    p.request.call.name
                );
                attention.input_needed(&summary, &mut std::io::stdout());
                app.approvals.push(p)
            }
            Some(d) = done.recv() => match d {
                Done::Run(result) => {
                    // The run's last events (the end of a plan's text) come first.
                    while let Ok(ev) = events.try_recv() {
                        app.on_event(ev);
                    }
                    held = false;
                    app.on_run_finished(result);
                    if let Some(t) = &tasks {
                        watch_generation += 1;
                        watch_completion(t.clone(), watch_generation, done_tx.clone());
                    }
                    if let Some(t) = &team {
                        if let Some(old) = mail_watch.take() {
                            old.abort();
                        }
                        mail_watch = Some(team_io::watch_mail(t.clone(), done_tx.clone()));
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
                Done::TeamMail => app.on_team_mail(),
                Done::Worktrees(Ok(listings)) => app.worktrees.set_listings(listings),
                Done::Worktrees(Err(e)) => {
                    app.worktrees.open = false;
                    app.transcript
                        .push(Entry::Error(format!("cannot list the worktrees: {e}")));
                }
                Done::Reviewed(review, id, outcome) => {
                    super::worktree_io::reviewed(app, review, id, outcome, &prepared.cwd, &done_tx)
                }
                Done::TaskEnded(generation, rec) => {
                    if generation == watch_generation {
                        app.on_task_completed(&rec);
                    }
                }
                Done::Stopped(Ok(rec)) => app.transcript.push(Entry::Notice(format!(
                    "Stopped task {} ({}).", rec.id, rec.status.as_str()
                ))),
                Done::Stopped(Err(e)) => app.transcript.push(Entry::Error(e.to_string())),
                Done::Team(Some(view)) => app.team.set_view(view),
                Done::Team(None) => {}
                Done::Transcript(name, text) => {
                    if app.team.transcript.as_ref().is_some_and(|(n, _)| *n == name) {
                        app.team.transcript = Some((name, text));
                    }
                }
                Done::TeamNotice(Ok(text)) => app.transcript.push(Entry::Notice(text)),
                Done::TeamNotice(Err(e)) => app.transcript.push(Entry::Error(e.to_string())),
                Done::Compacted(Ok(c)) => app.transcript.push(Entry::Notice(format!(
                    "Compacted: about {} → {} tokens of context.",
                    c.tokens_before, c.tokens_after
                ))),
                Done::Compacted(Err(e)) => app.transcript.push(Entry::Error(e.to_string())),
                Done::Notice(text) => app.transcript.push(Entry::Notice(text)),
            },
            _ = tick.tick() => {
                app.approvals.drop_withdrawn();
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
                    crate::approver::network::set_dont_ask(mode);
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
                Effect::LoadWorktrees => super::worktree_io::load(&prepared.cwd, done_tx.clone()),
                Effect::Worktree(review, id) => {
                    super::worktree_io::review(&prepared.cwd, review, id, done_tx.clone())
                }
                Effect::SetModel(spec) => super::session_switch::set_model(app, &lead, opts, &spec),
                Effect::ListSessions => {
                    super::session_switch::list_sessions(prepared, done_tx.clone())
                }
                Effect::Switch(switch) => {
                    match super::session_switch::next(app, prepared, opts, switch) {
                        Ok(next) => return Ok(Exit::Switch(Box::new(next))),
                        Err(why) => app.transcript.push(Entry::Error(why.to_string())),
                    }
                }
                Effect::McpStatus => {
                    let statuses = prepared.mcp.statuses().await;
                    app.transcript
                        .push(Entry::Notice(super::mcp_view::render(&statuses)));
                }
            }
        }
        if app.quit {
            return Ok(Exit::Quit);
        }
    }
}
