//! Work the TUI's event loop starts and does not wait for: runs, `/compact`, custom
//! commands, task queries and stops, log loads. Each is spawned and reports back as a
//! [`Done`] through the loop's channel, so the loop stays live while it works.

use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::sync::mpsc;

use super::app::App;
use crate::agent::lead_actor::LeadMsg;
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest};
use crate::session::build::Prepared;
use crate::tasks::TaskRecord;
use crate::tasks::actor::TaskMsg;

/// Work that finished off the loop.
pub(super) enum Done {
    Run(Result<RunOutcome, String>),
    CommandExpanded(String),
    Tasks(Vec<TaskRecord>),
    Log(String, String),
    TaskEnded(u64, TaskRecord),
    TeamMail,
    Worktrees(Result<Vec<crate::worktree::Listing>, String>),
    Reviewed(
        super::worktrees_panel::Review,
        String,
        Result<String, String>,
    ),
    Stopped(Result<TaskRecord, String>),
    Team(Option<crate::team::view::TeamView>),
    Transcript(String, String),
    TeamNotice(Result<String, String>),
    Ahead(super::speculate::Report),
    Compacted(Result<crate::agent::context::Compacted, String>),
}

/// The largest log tail the log view loads.
const LOG_TAIL_BYTES: usize = 64 * 1024;

/// Runs `req` as the lead's turn and reports its outcome.
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
            // The TUI shows the refusal as text.
            Ok(CallResult::Success(r)) => r.map_err(|e| e.to_string()),
            _ => Err("the lead agent did not answer".to_string()),
        };
        let _ = done.send(Done::Run(result));
    });
}

/// Compacts the lead's conversation (`/compact`) and reports how it went.
pub(super) fn spawn_compact(
    lead: ActorRef<LeadMsg>,
    what: Option<String>,
    done: mpsc::UnboundedSender<Done>,
) {
    tokio::spawn(async move {
        // A summary turn can take minutes; the bound only guards against a lost reply.
        let result = match lead
            .call(
                |reply| LeadMsg::Compact(what, reply),
                Some(Duration::from_secs(3600)),
            )
            .await
        {
            // The TUI shows the refusal as text.
            Ok(CallResult::Success(r)) => r.map_err(|e| e.to_string()),
            _ => Err("the lead agent did not answer".to_string()),
        };
        let _ = done.send(Done::Compacted(result));
    });
}

/// Expands a custom slash command (its `!` commands and `@file` reads run as the lead's
/// calls, shown and approved like any other) and runs the result as the lead's turn.
pub(super) fn spawn_command(
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

/// Reports the next of the lead's background tasks to end, tagged with `generation`.
pub(super) fn watch_completion(
    tasks: ActorRef<TaskMsg>,
    generation: u64,
    done: mpsc::UnboundedSender<Done>,
) {
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

/// Reports the session's tasks.
pub(super) fn list_tasks(tasks: ActorRef<TaskMsg>, done: mpsc::UnboundedSender<Done>) {
    tokio::spawn(async move {
        if let Ok(CallResult::Success(records)) = tasks
            .call(TaskMsg::List, Some(Duration::from_secs(5)))
            .await
        {
            let _ = done.send(Done::Tasks(records));
        }
    });
}

/// Stops task `id` and reports its record or why it did not stop.
pub(super) fn stop_task(tasks: ActorRef<TaskMsg>, id: String, done: mpsc::UnboundedSender<Done>) {
    tokio::spawn(async move {
        let result = match tasks
            .call(
                |r| TaskMsg::Stop(id.clone(), r),
                Some(Duration::from_secs(30)),
            )
            .await
        {
            Ok(CallResult::Success(r)) => r.map_err(|e| e.to_string()),
            _ => Err(format!("task {id} did not stop in time")),
        };
        let _ = done.send(Done::Stopped(result));
    });
}

/// Reports the tail of task `id`'s log file.
pub(super) fn load_log(app: &App, id: String, done: mpsc::UnboundedSender<Done>) {
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
