//! Work the TUI's event loop starts and does not wait for: runs, `/compact`, custom
//! commands, task queries and stops, log loads. Each is spawned and reports back as a
//! [`Done`] through the loop's channel, so the loop stays live while it works.

use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::sync::mpsc;

use super::app::App;
use crate::agent::lead_actor::{LeadError, LeadMsg};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest};
use crate::session::build::Prepared;
use crate::tasks::TaskRecord;
use crate::tasks::actor::{StopError, TaskMsg};
use crate::team::TeamError;

/// Why work the loop started failed; the TUI shows its text in the transcript.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobError {
    /// The lead refused or failed the request.
    #[error(transparent)]
    Lead(#[from] LeadError),
    /// The lead did not answer (its actor is gone, or the reply was lost).
    #[error("the lead agent did not answer")]
    NoAnswer,
    /// `/name` is neither built in nor a custom command.
    #[error("unknown command /{0}")]
    UnknownCommand(String),
    /// The task manager refused to stop the task.
    #[error(transparent)]
    Stop(#[from] StopError),
    /// The task did not stop within the bound.
    #[error("task {0} did not stop in time")]
    StopTimeout(String),
    /// The team refused or failed a message.
    #[error(transparent)]
    Team(#[from] TeamError),
    /// The session has no team to message.
    #[error("session {0} has no team yet")]
    NoTeam(String),
    /// The worktree manager refused or failed (a conflict, nothing to merge, no such id).
    #[error(transparent)]
    Worktree(#[from] crate::worktree::WorktreeError),
}

/// Work that finished off the loop.
pub(super) enum Done {
    Run(Result<RunOutcome, JobError>),
    CommandExpanded(String),
    Tasks(Vec<TaskRecord>),
    Log(String, String),
    TaskEnded(u64, TaskRecord),
    TeamMail,
    Worktrees(Result<Vec<crate::worktree::Listing>, JobError>),
    Reviewed(
        super::worktrees_panel::Review,
        String,
        Result<String, JobError>,
    ),
    Stopped(Result<TaskRecord, JobError>),
    Team(Option<crate::team::view::TeamView>),
    Transcript(String, String),
    TeamNotice(Result<String, JobError>),
    Ahead(super::speculate::Report),
    Compacted(Result<crate::agent::context::Compacted, JobError>),
    /// Text for the transcript (`/resume`'s list of sessions).
    Notice(String),
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
            Ok(CallResult::Success(r)) => r.map_err(JobError::from),
            _ => Err(JobError::NoAnswer),
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
            Ok(CallResult::Success(r)) => r.map_err(JobError::from),
            _ => Err(JobError::NoAnswer),
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
        let _ = done.send(Done::Run(Err(JobError::UnknownCommand(name))));
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
            Ok(CallResult::Success(r)) => r.map_err(JobError::from),
            _ => Err(JobError::StopTimeout(id)),
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
