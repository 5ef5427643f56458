//! The `WorktreeManager` actor: one per repository, it runs the worktree operations of
//! [`Manager`] so that they never trip over each other on the same `.git`.
//!
//! Creations and finishes run in parallel: each touches only its own branch, its own
//! `.git/worktrees/<id>` and its own checkout; the few shared git writes are serialised
//! by the add lock of [`super::add`] and the registry update by its file lock. They are
//! bounded by
//! [`parallel_creations`] (checkouts are disk-bound: a few beyond the cores keep the disk
//! busy). Each runs on the blocking pool in a spawned task, so the mailbox moves on and
//! the next `Create` starts at once; the `worktree.setup` command runs in that task too.
//!
//! Every other operation (merge, discard, list, diff, reconcile) is exclusive:
//! it waits in `handle` until the creations in flight are done and holds the mailbox
//! while it runs (reconcile must not prune a half-made worktree; a merge moves the main
//! checkout). git and libgit2 fail rather than wait on each other's locks, so waiting
//! here is right for this actor.

use std::path::PathBuf;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::{RwLock, Semaphore};

use super::include::run_setup;
use super::{
    DiffSummary, Finished, Listing, Manager, MergeStyle, Merged, ReconcileReport, Worktree,
    WorktreeError,
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
        /// A merge commit or one squashed commit.
        style: MergeStyle,
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

/// How many worktrees are created at once: twice the cores, at least 2 (checkout is
/// mostly waiting on the disk).
pub fn parallel_creations() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get() * 2)
        .max(2)
}

/// The actor's state: the operations and what keeps them from overlapping wrongly.
pub struct State {
    manager: Manager,
    /// Bounds the creations in flight.
    creating: Arc<Semaphore>,
    /// Creations hold it shared, every other operation exclusively.
    exclusive: Arc<RwLock<()>>,
}

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
    type State = State;
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
        Ok(State {
            manager: opened?,
            creating: Arc::new(Semaphore::new(parallel_creations())),
            exclusive: Arc::new(RwLock::new(())),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A caller that gave up has dropped its port; the operation still completed.
        if let WorktreeMsg::Create {
            task_id,
            description,
            base,
            reply,
        } = msg
        {
            // Shared access is taken here, in mailbox order, so an exclusive operation
            // sent after this creation waits for it.
            let shared = state.exclusive.clone().read_owned().await;
            let creating = state.creating.clone();
            let manager = state.manager.clone();
            tokio::spawn(async move {
                let created = match creating.acquire_owned().await {
                    Ok(_slot) => {
                        blocking(&manager, move |m| {
                            m.create(&task_id, &description, base.as_deref())
                        })
                        .await
                    }
                    Err(_) => Err(WorktreeError::Internal(
                        "the worktree manager stopped".into(),
                    )),
                };
                // The setup command touches only the new worktree: other operations
                // need not wait for it.
                drop(shared);
                let _ = reply.send(match (created, manager.setup_command()) {
                    (Ok(mut wt), Some(command)) => {
                        wt.setup = Some(run_setup(command, &wt.path).await);
                        Ok(wt)
                    }
                    (created, _) => created,
                });
            });
            return Ok(());
        }
        if let WorktreeMsg::Finish { task_id, reply } = msg {
            // A finish touches only its own worktree and branch (git's shared records
            // under the add lock, the registry under its own): it runs beside creations
            // and other finishes, in mailbox order before any exclusive operation.
            let shared = state.exclusive.clone().read_owned().await;
            let (busy, manager) = (state.creating.clone(), state.manager.clone());
            tokio::spawn(async move {
                let finished = match busy.acquire_owned().await {
                    Ok(_slot) => blocking(&manager, move |m| m.finish(&task_id)).await,
                    Err(_) => Err(WorktreeError::Internal(
                        "the worktree manager stopped".into(),
                    )),
                };
                drop(shared);
                let _ = reply.send(finished);
            });
            return Ok(());
        }
        let _exclusive = state.exclusive.write().await;
        let manager = &state.manager;
        match msg {
            WorktreeMsg::Create { .. } | WorktreeMsg::Finish { .. } => {}
            WorktreeMsg::List { reply } => {
                let _ = reply.send(blocking(manager, |m| m.list()).await);
            }
            WorktreeMsg::Diff { task_id, reply } => {
                let _ = reply.send(blocking(manager, move |m| m.diff(&task_id)).await);
            }
            WorktreeMsg::Merge {
                task_id,
                style,
                reply,
            } => {
                let _ = reply.send(blocking(manager, move |m| m.merge(&task_id, style)).await);
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
