//! The `WorktreeManager` actor: one per repository, it serialises the worktree operations
//! of [`Manager`] so that two subagents never race on the same `.git`.
//!
//! Unlike the other actors, it awaits its work inside `handle`: git operations on one
//! repository must not overlap (libgit2 and git both take the index and ref locks and
//! fail rather than wait), and they take milliseconds to a second. Each runs on the
//! blocking pool (`spawn_blocking`) so the runtime's threads stay free; the mailbox queues
//! the next operation until this one is done. The one long step, the `worktree.setup`
//! command, touches only the new worktree, so it runs in a spawned task that replies to
//! `Create` when it ends, and the mailbox moves on.

use std::path::PathBuf;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::include::run_setup;
use super::{
    DiffSummary, Finished, Listing, Manager, Merged, ReconcileReport, Worktree, WorktreeError,
};

/// Messages the worktree manager accepts. Every reply is the operation's result.
pub enum WorktreeMsg {
    /// Make a worktree for a task (see [`Manager::create`]); the reply comes after the
    /// setup command, if one is configured, has ended (up to 10 minutes).
    Create {
        /// The task id: the directory and git worktree name, and part of the branch.
        task_id: String,
        /// The task description (the branch slug and the registry).
        description: String,
        /// The ref to branch from; `None` for `worktree.base` or the lead's HEAD.
        base: Option<String>,
        /// Receives the new worktree.
        reply: RpcReplyPort<Result<Worktree, WorktreeError>>,
    },
    /// The task ended: remove its worktree if it holds nothing, else keep and report.
    Finish {
        /// The task id.
        task_id: String,
        /// Receives what happened.
        reply: RpcReplyPort<Result<Finished, WorktreeError>>,
    },
    /// Every registered worktree and what it holds.
    List {
        /// Receives the listing.
        reply: RpcReplyPort<Result<Vec<Listing>, WorktreeError>>,
    },
    /// The unified diff of a worktree against its base.
    Diff {
        /// The task id.
        task_id: String,
        /// Receives the diff text.
        reply: RpcReplyPort<Result<String, WorktreeError>>,
    },
    /// Merge a worktree's branch into the main checkout's branch, then remove it.
    Merge {
        /// The task id.
        task_id: String,
        /// One squashed commit instead of a merge commit.
        squash: bool,
        /// Receives the merge result or the refusal (conflicts, dirty files).
        reply: RpcReplyPort<Result<Merged, WorktreeError>>,
    },
    /// Delete a worktree and its branch whatever they hold (asked by the user).
    Discard {
        /// The task id.
        task_id: String,
        /// Receives what was discarded (`None` if the directory was already gone).
        reply: RpcReplyPort<Result<Option<DiffSummary>, WorktreeError>>,
    },
    /// Reconcile the registry with git and the disk (call once on start).
    Reconcile {
        /// Receives what was pruned and what is orphaned.
        reply: RpcReplyPort<Result<ReconcileReport, WorktreeError>>,
    },
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for WorktreeMsg {}

/// The actor (configuration only; the state, a [`Manager`], is built in `pre_start`).
pub struct WorktreeManager;

/// What the worktree manager needs to start.
#[derive(Debug, Clone)]
pub struct WorktreeManagerArgs {
    /// A directory inside the repository: the lead's cwd (its HEAD is the default base).
    pub repo: PathBuf,
    /// Where worktrees go; `None` for `~/.crew/worktrees`. Tests pass a temporary folder.
    pub base_dir: Option<PathBuf>,
    /// Whether the project folder is trusted: only then does the `worktree.setup`
    /// command of its shared `.crew/settings.json` run in new worktrees.
    pub trusted: bool,
}

/// Runs `op` on the blocking pool and waits for it (see the module comment for why
/// waiting here is right for this actor).
async fn blocking<T: Send + 'static>(
    manager: &Manager,
    op: impl FnOnce(&Manager) -> Result<T, WorktreeError> + Send + 'static,
) -> Result<T, WorktreeError> {
    let manager = manager.clone();
    tokio::task::spawn_blocking(move || op(&manager))
        .await
        .map_err(|e| WorktreeError::Internal(e.to_string()))?
}

impl Actor for WorktreeManager {
    type Msg = WorktreeMsg;
    type State = Manager;
    type Arguments = WorktreeManagerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: WorktreeManagerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let opened = tokio::task::spawn_blocking(move || {
            Manager::open(&args.repo, args.base_dir.as_deref()).map(|mut m| {
                if !args.trusted {
                    m.ignore_setup();
                }
                m
            })
        })
        .await?;
        Ok(opened?)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        manager: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A caller that gave up has dropped its port; the operation still completed.
        match msg {
            WorktreeMsg::Create {
                task_id,
                description,
                base,
                reply,
            } => {
                let created = blocking(manager, move |m| {
                    m.create(&task_id, &description, base.as_deref())
                })
                .await;
                match (created, manager.setup_command()) {
                    (Ok(mut wt), Some(command)) => {
                        let command = command.to_string();
                        tokio::spawn(async move {
                            wt.setup = Some(run_setup(&command, &wt.path).await);
                            let _ = reply.send(Ok(wt));
                        });
                    }
                    (created, _) => {
                        let _ = reply.send(created);
                    }
                }
            }
            WorktreeMsg::Finish { task_id, reply } => {
                let _ = reply.send(blocking(manager, move |m| m.finish(&task_id)).await);
            }
            WorktreeMsg::List { reply } => {
                let _ = reply.send(blocking(manager, |m| m.list()).await);
            }
            WorktreeMsg::Diff { task_id, reply } => {
                let _ = reply.send(blocking(manager, move |m| m.diff(&task_id)).await);
            }
            WorktreeMsg::Merge {
                task_id,
                squash,
                reply,
            } => {
                let _ = reply.send(blocking(manager, move |m| m.merge(&task_id, squash)).await);
            }
            WorktreeMsg::Discard { task_id, reply } => {
                let _ = reply.send(blocking(manager, move |m| m.discard(&task_id)).await);
            }
            WorktreeMsg::Reconcile { reply } => {
                let _ = reply.send(blocking(manager, |m| m.reconcile()).await);
            }
        }
        Ok(())
    }
}
