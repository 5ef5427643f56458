//! Background commands: `run_command` with `run_in_background` starts the command in its
//! own process group with its output going to the task's log, registers it as a task, and
//! returns at once. A waiter records how it ended; stopping the task (or the session)
//! kills the whole group, and processes it leaves behind are killed when it exits.
//! Protected files a confined command changed are restored when it ends. The log keeps
//! at most the caps on kept results (`offload::budget`); the rest is drained and dropped.

mod capped_log;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio_util::sync::CancellationToken;

use super::ToolContext;
use crate::sandbox::process::{self, Ended, GroupChild, ProcessError};
use crate::tasks::actor::{NewTask, TaskMsg};
use crate::tasks::{TaskKind, TaskRecord, TaskStatus};
use capped_log::CappedLog;

/// Why a background command did not start: the tool's error, and the result of its task
/// when one was registered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The task manager did not register the task.
    #[error("the task manager did not answer")]
    NoAnswer,
    /// The task's log file could not be created.
    #[error("cannot create the log {}: {source}", .path.display())]
    Log {
        /// The log file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The command could not be confined or spawned.
    #[error(transparent)]
    Process(#[from] ProcessError),
}

/// Starts `command` in the background for the agent of `ctx`; returns its task record.
pub(crate) async fn start(
    tasks: &ActorRef<TaskMsg>,
    ctx: &ToolContext,
    command: &str,
    description: Option<String>,
) -> Result<TaskRecord, StartError> {
    let cancel = CancellationToken::new();
    let new = NewTask {
        kind: TaskKind::Command,
        description: description.unwrap_or_else(|| command.chars().take(60).collect()),
        owner: ctx.agent_id.clone(),
        agent_type: None,
        command: Some(command.to_string()),
    };
    let record = match tasks
        .call(
            |r| TaskMsg::Create(new, cancel.clone(), r),
            Some(Duration::from_secs(10)),
        )
        .await
    {
        Ok(CallResult::Success(rec)) => rec,
        _ => return Err(StartError::NoAnswer),
    };
    let fail = |e: StartError| {
        let _ = tasks.cast(TaskMsg::Finish {
            id: record.id.clone(),
            status: TaskStatus::Failed,
            result: e.to_string(),
        });
        e
    };
    let log = record
        .output_file
        .parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| std::fs::File::create(&record.output_file))
        .map_err(|source| {
            fail(StartError::Log {
                path: record.output_file.clone(),
                source,
            })
        })?;
    let mut shell = process::shell_command_hiding(command, &ctx.cwd, &ctx.sandbox, Some(&ctx.walk))
        .map_err(|e| fail(e.into()))?;
    // Output goes through crew, so the log stops at the caps on kept results and the
    // rest is drained and discarded (`offload::budget`).
    shell.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = GroupChild::spawn(&mut shell.cmd, &ctx.cwd).map_err(|e| fail(e.into()))?;
    let log = CappedLog::new(log, &record.output_file);
    let mut readers = Vec::new();
    if let Some(out) = child.child_mut().stdout.take() {
        readers.push(log.copy_from(out));
    }
    if let Some(err) = child.child_mut().stderr.take() {
        readers.push(log.copy_from(err));
    }
    let guard = shell.guard;
    let pgid = child.pgid();
    let _ = tasks.cast(TaskMsg::Running {
        id: record.id.clone(),
        pgid: Some(pgid.as_raw()),
        worktree: None,
    });
    let tasks = tasks.clone();
    let id = record.id.clone();
    let log_path = record.output_file.clone();
    tokio::spawn(async move {
        let ended = match child.wait_or_kill(None, &cancel).await {
            // A stop cancels and kills the group at once: an exit by that kill, seen
            // before the cancellation, is still the stop's doing.
            Ok(s) if !s.success() && cancel.is_cancelled() => Err(Ended::Cancelled),
            other => other,
        };
        // Nothing the command started may outlive it.
        let _ = process::kill_group(pgid, nix::sys::signal::Signal::SIGKILL);
        child.disarm();
        // What is still in the pipes; a process that escaped cannot hold the log open.
        let drained = futures::future::join_all(readers.iter_mut());
        let _ = tokio::time::timeout(process::DRAIN_GRACE, drained).await;
        for r in &readers {
            r.abort();
        }
        let (mut status, mut result) = match ended {
            Ok(s) if s.success() => (TaskStatus::Completed, "exit code: 0".to_string()),
            Ok(s) => (
                TaskStatus::Failed,
                match s.code() {
                    Some(c) => format!("exit code: {c}"),
                    None => "killed by a signal".to_string(),
                },
            ),
            Err(Ended::Cancelled) => (
                TaskStatus::Cancelled,
                "stopped; its process group was killed".into(),
            ),
            Err(Ended::TimedOut) => (TaskStatus::Failed, "timed out".into()),
            Err(Ended::Wait(e)) => (TaskStatus::Failed, format!("could not wait for it: {e}")),
        };
        // Protected files the command changed are put back, and the task fails loudly.
        if let Some(report) = guard.finish() {
            status = TaskStatus::Failed;
            result = format!("{result}\n{report}");
        }
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log_path) {
            let _ = writeln!(f, "\n[{result}]");
        }
        let _ = tasks.cast(TaskMsg::Finish { id, status, result });
    });
    Ok(record)
}
