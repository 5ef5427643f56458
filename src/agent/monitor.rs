//! Watching a subagent for its monitors: its events are appended to the task's log file
//! (so `crew tasks logs ID -f` can follow it from another terminal) and its progress —
//! tool calls, token usage, last activity — goes to the task manager.

use std::io::Write;
use std::path::PathBuf;

use ractor::ActorRef;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::events::{Event, EventBus, EventKind};
use crate::protocol::Usage;
use crate::tasks::actor::TaskMsg;

/// A running watcher; `finish` drains what is left and stops it.
pub(crate) struct Watcher {
    done: CancellationToken,
    handle: JoinHandle<()>,
}

impl Watcher {
    /// Stops watching after writing every event already published.
    pub(crate) async fn finish(self) {
        self.done.cancel();
        let _ = self.handle.await;
    }
}

/// Starts watching `agent`'s events on `bus` for task `task_id`, logging to `log`.
pub(crate) fn watch_agent(
    bus: &EventBus,
    agent: &str,
    task_id: &str,
    log: PathBuf,
    tasks: ActorRef<TaskMsg>,
) -> Watcher {
    let agent = agent.to_string();
    // Woken by its own agent's events only: with 32 background agents, one agent's tool
    // call wakes one monitor, not 32.
    let mut rx = bus.subscribe_where({
        let agent = agent.clone();
        move |e| e.agent == agent
    });
    let done = CancellationToken::new();
    let stop = done.clone();
    let id = task_id.to_string();
    let handle = tokio::spawn(async move {
        let mut file = match log.parent().map(std::fs::create_dir_all) {
            Some(Err(e)) => {
                tracing::warn!("cannot create the log directory for {}: {e}", log.display());
                None
            }
            _ => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .ok(),
        };
        loop {
            let event = tokio::select! {
                e = rx.recv() => e,
                _ = stop.cancelled() => {
                    // Drain what was published before the run ended.
                    while let Ok(e) = rx.try_recv() {
                        record(&e, &agent, &id, file.as_mut(), &tasks);
                    }
                    break;
                }
            };
            match event {
                Some(e) => record(&e, &agent, &id, file.as_mut(), &tasks),
                None => break,
            }
        }
    });
    Watcher { done, handle }
}

fn record(
    event: &Event,
    agent: &str,
    id: &str,
    file: Option<&mut std::fs::File>,
    tasks: &ActorRef<TaskMsg>,
) {
    if event.agent != agent {
        return;
    }
    let (line, update) = match &event.kind {
        EventKind::TextDelta { text } => (Some(text.clone()), None),
        EventKind::ToolCallStarted { call } => {
            let args: String = call.arguments.chars().take(200).collect();
            let activity = format!(
                "{} {}",
                call.name,
                args.chars().take(80).collect::<String>()
            );
            (
                Some(format!("\n→ {} {args}\n", call.name)),
                Some((1, Usage::default(), Some(activity))),
            )
        }
        EventKind::ToolCallFinished {
            name,
            is_error,
            error_code,
            summary,
            ..
        } => {
            let mark = if *is_error {
                format!("✗ {name} [{}]", error_code.as_deref().unwrap_or("error"))
            } else {
                format!("✓ {name}")
            };
            (Some(format!("{mark} {summary}\n")), None)
        }
        EventKind::TurnFinished { usage, turn, .. } => {
            (None, Some((0, *usage, Some(format!("turn {turn} done")))))
        }
        EventKind::Error { message } => (Some(format!("\nerror: {message}\n")), None),
        EventKind::RunFinished { status, .. } => (Some(format!("\n[run {status}]\n")), None),
        _ => (None, None),
    };
    if let (Some(line), Some(f)) = (line, file) {
        let _ = f.write_all(line.as_bytes());
    }
    if let Some((tool_calls, usage, activity)) = update {
        let _ = tasks.cast(TaskMsg::Activity {
            id: id.to_string(),
            tool_calls,
            usage,
            activity,
        });
    }
}
