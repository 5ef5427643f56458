//! Subagent workspaces backed by the `WorktreeManager` actor: each subagent gets a git
//! worktree on its own branch; when it ends, the worktree is removed if it holds nothing
//! and kept (with a summary saying how to review and merge it) otherwise.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use super::subagent_actor::{WorkspaceError, Workspaces};
use crate::supervise::Slot;
use crate::worktree::actor::WorktreeMsg;
use crate::worktree::{Finished, Worktree};

/// Creating a worktree may run the project's setup command (up to 10 minutes).
const CREATE_TIMEOUT: Duration = Duration::from_secs(11 * 60);
/// Finishing inspects and maybe removes a worktree.
const FINISH_TIMEOUT: Duration = Duration::from_secs(120);

/// Worktrees through the session's `WorktreeManager`.
pub(crate) struct WorktreeWorkspaces {
    actor: Slot<WorktreeMsg>,
    repo_root: PathBuf,
    created: Mutex<HashMap<String, Worktree>>,
}

impl WorktreeWorkspaces {
    /// Workspaces in the repository at `repo_root`, managed by the actor in `actor` (the
    /// session swaps in a restarted manager).
    pub(crate) fn new(actor: Slot<WorktreeMsg>, repo_root: PathBuf) -> Self {
        Self {
            actor,
            repo_root,
            created: Mutex::new(HashMap::new()),
        }
    }

    fn remember(&self) -> std::sync::MutexGuard<'_, HashMap<String, Worktree>> {
        // Poisoning only means a panic mid-insert; the map is still usable.
        self.created.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl Workspaces for WorktreeWorkspaces {
    fn repo_root(&self) -> &Path {
        &self.repo_root
    }

    async fn create(&self, task_id: &str, description: &str) -> Result<PathBuf, WorkspaceError> {
        let (id, desc) = (task_id.to_string(), description.to_string());
        let wt = match self
            .actor
            .call(
                |reply| WorktreeMsg::Create {
                    task_id: id,
                    description: desc,
                    base: None,
                    reply,
                },
                CREATE_TIMEOUT,
            )
            .await
        {
            Ok(Ok(wt)) => wt,
            Ok(Err(e)) => return Err(WorkspaceError::Create(e)),
            Err(e) => return Err(WorkspaceError::Manager(e)),
        };
        let path = wt.path.clone();
        self.remember().insert(task_id.to_string(), wt);
        Ok(path)
    }

    async fn finish(&self, task_id: &str) -> Result<String, WorkspaceError> {
        let id = task_id.to_string();
        let finished = match self
            .actor
            .call(
                |reply| WorktreeMsg::Finish { task_id: id, reply },
                FINISH_TIMEOUT,
            )
            .await
        {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => return Err(WorkspaceError::Finish(e)),
            Err(e) => return Err(WorkspaceError::Manager(e)),
        };
        let wt = self.remember().remove(task_id);
        Ok(match finished {
            Finished::Removed => "no changes; its worktree and branch were removed".to_string(),
            Finished::Kept { reason, summary } => {
                let place = wt
                    .map(|w| format!(" at {} on branch {}", w.path.display(), w.branch))
                    .unwrap_or_default();
                format!(
                    "kept{place} ({reason}: {} files changed, +{} -{}{}{}). Review with `crew worktrees diff {task_id}`, \
merge with `crew worktrees merge {task_id}`, or drop with `crew worktrees discard {task_id}`.",
                    summary.files_changed,
                    summary.insertions,
                    summary.deletions,
                    if summary.uncommitted {
                        ", uncommitted changes"
                    } else {
                        ""
                    },
                    match summary.commits_ahead {
                        0 => String::new(),
                        n => format!(", {n} commits"),
                    },
                )
            }
        })
    }
}
