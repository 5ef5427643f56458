//! What every subagent's life shares, wherever it runs (issue 27 item 3): its task is
//! registered the same way before it starts ([`register`]) and ended the same way
//! ([`end`]), whether the subagent runs here (`subagent_actor::start`) or on a worker
//! (`worker::remote_task::launch`). Its worktree is made and brought back through the one
//! `Workspaces` of the session in both cases; the worker side only ships it as a bundle.
//! What became of a worktree is told in one wording ([`finish_worktree`]), by subagents
//! and teammates alike.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::subagent_actor::{SubagentEnv, Workspaces};
use crate::tasks::TaskKind;
use crate::tasks::TaskStatus;
use crate::tasks::actor::{NewTask, TaskMsg};
use crate::tools::delegate::DelegateError;

/// How long the task manager may take to register a task.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(10);

/// A subagent's task, registered and not yet started.
#[derive(Debug)]
pub(crate) struct Registered {
    /// The task id the model and the user see.
    pub id: String,
    /// The file its output is logged to.
    pub log: PathBuf,
    /// Stops it (`task_stop`, the user, the session ending).
    pub cancel: CancellationToken,
}

/// Registers a running agent task of `agent_type` for `description`, owned by the agent
/// of `env`.
pub(crate) async fn register(
    env: &SubagentEnv,
    description: &str,
    agent_type: String,
) -> Result<Registered, DelegateError> {
    let cancel = CancellationToken::new();
    let new = NewTask {
        kind: TaskKind::Agent,
        description: description.to_string(),
        owner: env.runner.spec.id.clone(),
        agent_type: Some(agent_type),
        command: None,
    };
    match env
        .tasks
        .call(
            |r| TaskMsg::Create(new, cancel.clone(), r),
            Some(REGISTER_TIMEOUT),
        )
        .await
    {
        Ok(ractor::rpc::CallResult::Success(record)) => Ok(Registered {
            id: record.id,
            log: record.output_file,
            cancel,
        }),
        _ => Err(DelegateError::NoAnswer("the task manager")),
    }
}

/// Ends task `id` with `status` and `result` (what the parent and `task_output` read).
pub(crate) fn end(env: &SubagentEnv, id: String, status: TaskStatus, result: String) {
    let _ = env.tasks.cast(TaskMsg::Finish { id, status, result });
}

/// Ends worktree `id` of `ws` (removed when it holds nothing, kept otherwise) and says
/// what became of it, `[worktree] …`: where kept work is, or why it could not be finished.
pub(crate) async fn finish_worktree(ws: &dyn Workspaces, id: &str) -> String {
    match ws.finish(id).await {
        Ok(summary) => format!("[worktree] {summary}"),
        Err(e) => format!("[worktree] could not be finished: {e}"),
    }
}
