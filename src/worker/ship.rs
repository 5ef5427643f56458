//! What the lead ships to a worker with a remote run, subagent or teammate alike: the
//! commit its worktree starts from, as a git bundle (cached per commit by the pool), and
//! the spawn message — the task, the agent's loop and the lead's rules.

use std::path::Path;
use std::sync::Arc;

use super::bundle;
use super::pool_actor::Pool;
use super::protocol::{AgentWire, RemoteSpawn};
use crate::agent::delegate::SpawnRequest;
use crate::agent::runner::AgentSpec;

/// The commit a remote run starts from.
pub(super) struct Base {
    /// The commit.
    pub commit: String,
    /// The run's branch (made by the lead's worktree manager).
    pub branch: String,
    /// The commit as a bundle.
    pub bundle: Arc<Vec<u8>>,
}

/// Why the work could not be prepared for, or placed on, a worker.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShipError {
    /// No worker slot could be had.
    #[error(transparent)]
    Place(#[from] super::protocol::PlaceError),
    /// The worktree's HEAD could not be read.
    #[error(transparent)]
    Head(bundle::BundleError),
    /// The commit could not be bundled.
    #[error("cannot bundle the commit for the worker: {0}")]
    Bundle(bundle::BundleError),
}

/// The commit checked out in the worktree at `root` (of the repository at `repo_root`),
/// bundled for the worker.
pub(super) async fn base(pool: &Pool, repo_root: &Path, root: &Path) -> Result<Base, ShipError> {
    let (commit, branch) = bundle::head_of(root).await.map_err(ShipError::Head)?;
    let bundle = pool
        .base_bundle(repo_root, &branch, &commit)
        .await
        .map_err(ShipError::Bundle)?;
    Ok(Base {
        commit,
        branch,
        bundle,
    })
}

/// The spawn message of task `task_id`: `req`'s task for the loop `spec` (its model as the
/// worker names it; `lead_model` is the lead's own), the lead's rules, and `base`.
pub(super) fn spawn(
    pool: &Pool,
    task_id: &str,
    req: &SpawnRequest,
    spec: &AgentSpec,
    lead_model: &str,
    base: &Base,
) -> RemoteSpawn {
    RemoteSpawn {
        task_id: task_id.to_string(),
        lead: pool.group().to_string(),
        description: req.description.clone(),
        prompt: req.prompt.clone(),
        agent: AgentWire {
            id: spec.id.clone(),
            model: pool.model_for(&spec.model, lead_model),
            system_prompt: spec.system_prompt.clone(),
            allowed_tools: spec
                .allowed_tools
                .as_ref()
                .map(|s| s.iter().cloned().collect()),
            max_turns: spec.max_turns,
            max_tokens: spec.max_tokens,
        },
        rules: pool.rules().to_vec(),
        base_commit: base.commit.clone(),
        branch: base.branch.clone(),
        // A remote subagent in auto says so itself (`remote_task`).
        mode: crate::permission::PermissionMode::DontAsk,
        bundle: base.bundle.as_ref().clone(),
    }
}
