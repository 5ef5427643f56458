//! Starting a teammate on a worker (issue 16): which teammates go remote (`placement:
//! remote`, or local slots full with workers), then the lead's worktree and branch, the
//! commit as a bundle, a worker slot, the roster entry, and the proxy actor
//! ([`super::remote_teammate_actor`]) adopted by the team actor like a local teammate's.

use std::path::Path;
use std::sync::Arc;

use ractor::ActorRef;
use tokio::sync::mpsc;

use super::pool_actor::Pool;
use super::protocol::{TaskNews, TeammateSpawn, WorkerMsg};
use super::remote_teammate_actor::{ProxyArgs, RemoteTeammate};
use super::ship;
use crate::agent::definition::AgentDefinition;
use crate::agent::delegate::SpawnRequest;
use crate::agent::subagent_actor::SubagentEnv;
use crate::agent::team_launch::teammate_spec;
use crate::agent::team_link::{TeamLink, new_ids, roster_entry};
use crate::permission::PermissionMode;
use crate::team::MemberName;
use crate::tools::delegate::DelegateError;

/// Starts teammate `name` on a worker: worktree, a worker slot, roster entry, proxy.
/// Returns its agent id.
pub(crate) async fn launch(
    env: &SubagentEnv,
    team: &TeamLink,
    req: SpawnRequest,
    def: &AgentDefinition,
    pool: Arc<Pool>,
    mode: PermissionMode,
    name: MemberName,
) -> Result<String, DelegateError> {
    if req.plan_first {
        return Err(DelegateError::Unsupported(format!(
            "plan_first is not supported for a teammate on a worker; give `{}` `placement: local` to plan first",
            def.name
        )));
    }
    let Some(ws) = env.workspaces.clone() else {
        return Err(DelegateError::Unsupported(
            "placement `remote` needs a git repository (the work travels as a git bundle)".into(),
        ));
    };
    let (agent_id, work_id) = new_ids(def, &name);
    let root = ws
        .create(&work_id, &req.description)
        .await
        .map_err(|e| DelegateError::Failed(e.to_string()))?;
    let ids = (&name, agent_id.as_str(), work_id.as_str());
    let placed = match place(env, &req, def, &pool, mode, ids, ws.repo_root(), &root).await {
        Ok(p) => team
            .add_member(roster_entry(
                &name,
                &agent_id,
                def,
                Some(root.clone()),
                &req,
            ))
            .await
            .map(|()| p)
            .map_err(PlaceFailure::from),
        Err(e) => Err(e),
    };
    let (spawn, node, worker, news) = match placed {
        Ok(p) => p,
        Err(e) => {
            pool.release(&work_id);
            let _ = ws.finish(&work_id).await;
            return Err(DelegateError::Failed(e.to_string()));
        }
    };
    let args = ProxyArgs {
        mailbox: team.mailbox(name.clone()),
        agent_id: agent_id.clone(),
        pipeline: env.runner.pipeline.clone(),
        pool,
        worker,
        node,
        work_id,
        root,
        branch: spawn.run.branch.clone(),
        workspace: ws,
        spawn,
        news,
    };
    team.adopt(&name, RemoteTeammate, args)
        .await
        .map_err(|e| DelegateError::Failed(e.to_string()))?;
    Ok(agent_id)
}

/// Why a remote teammate could not be placed: shipping its work, or adding it to the
/// roster.
#[derive(Debug, thiserror::Error)]
enum PlaceFailure {
    /// The work could not be shipped or no worker slot could be had.
    #[error(transparent)]
    Ship(#[from] ship::ShipError),
    /// The roster did not take it.
    #[error(transparent)]
    Roster(#[from] crate::agent::team_link::TeamLinkError),
}

type Placed = (
    TeammateSpawn,
    String,
    ActorRef<WorkerMsg>,
    mpsc::UnboundedReceiver<TaskNews>,
);

/// Bundles the commit, waits for a worker slot and builds the spawn message for teammate
/// `name` (agent `agent_id`, task `work_id`) in the worktree at `root`.
#[allow(clippy::too_many_arguments)]
async fn place(
    env: &SubagentEnv,
    req: &SpawnRequest,
    def: &AgentDefinition,
    pool: &Pool,
    mode: PermissionMode,
    (name, agent_id, work_id): (&MemberName, &str, &str),
    repo_root: &Path,
    root: &Path,
) -> Result<Placed, PlaceFailure> {
    let base = ship::base(pool, repo_root, root).await?;
    let (tx, news) = mpsc::unbounded_channel();
    let (node, worker) = pool
        .place(work_id, Vec::new(), tx)
        .await
        .map_err(ship::ShipError::from)?;
    let note = format!("\n\nYou work on worker {node}, in your own git worktree.");
    let spec = teammate_spec(
        env,
        def,
        name,
        agent_id.to_string(),
        req.model.as_deref(),
        &note,
    );
    let spawn = TeammateSpawn {
        run: ship::spawn(pool, work_id, req, &spec, &env.runner.spec.model, &base),
        name: name.to_string(),
        mode,
    };
    Ok((spawn, node, worker, news))
}
