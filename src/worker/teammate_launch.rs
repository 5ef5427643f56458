//! Starting a teammate on a worker (issue 16): which teammates go remote (`placement:
//! remote`, or local slots full with workers), then the lead's worktree and branch, the
//! commit as a bundle, a worker slot, the roster entry, and the proxy actor
//! ([`super::remote_teammate`]) adopted by the team actor like a local teammate's.

use std::sync::Arc;

use ractor::{Actor, ActorRef};
use tokio::sync::mpsc;

use super::bundle;
use super::placement::Placement;
use super::pool::Pool;
use super::protocol::{AgentWire, RemoteSpawn, TaskNews, TeammateSpawn, WorkerMsg};
use super::remote_teammate::{ProxyArgs, RemoteTeammate};
use crate::agent::definition::AgentDefinition;
use crate::agent::delegate::SpawnRequest;
use crate::agent::subagent::{SubagentEnv, Workspaces};
use crate::agent::team_launch::{TeamLink, teammate_spec};
use crate::permission::PermissionMode;
use crate::team::actor::{SpawnFn, TeamMsg};
use crate::team::{Member, MemberName};

/// Whether teammate `def` runs on a worker: always with `placement: remote` (an error
/// without workers), and when the local slots are full in a repository with workers.
pub fn choose(env: &SubagentEnv, def: &AgentDefinition) -> Result<Option<Arc<Pool>>, String> {
    match (def.placement, env.workers.clone()) {
        (Placement::Remote, Some(pool)) => Ok(Some(pool)),
        (Placement::Remote, None) => Err(format!(
            "agent type `{}` has `placement: remote`, but this session has no workers (pass --workers HOST:PORT,… and --cookie-file)",
            def.name
        )),
        (Placement::Auto, Some(pool))
            if def.isolation.as_deref() != Some("none")
                && env.workspaces.is_some()
                && env.slots.available_permits() == 0 =>
        {
            Ok(Some(pool))
        }
        _ => Ok(None),
    }
}

/// Starts teammate `name` on a worker: worktree, a worker slot, roster entry, proxy.
/// Returns its agent id.
pub async fn launch(
    env: &SubagentEnv,
    team: &TeamLink,
    req: SpawnRequest,
    def: &AgentDefinition,
    pool: Arc<Pool>,
    mode: PermissionMode,
    name: MemberName,
) -> Result<String, String> {
    if req.plan_first {
        return Err(format!(
            "plan_first is not supported for a teammate on a worker; give `{}` `placement: local` to plan first",
            def.name
        ));
    }
    let Some(ws) = env.workspaces.clone() else {
        return Err(
            "placement `remote` needs a git repository (the work travels as a git bundle)".into(),
        );
    };
    let agent_id = format!("{}/{name}", def.name);
    let work_id = format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let root = ws.create(&work_id, &req.description).await?;
    let placed = place(
        env, &req, def, &pool, mode, &name, &agent_id, &work_id, &root, &ws,
    )
    .await;
    let (spawn, node, worker, news) = match placed {
        Ok(p) => p,
        Err(e) => {
            pool.release(&work_id);
            let _ = ws.finish(&work_id).await;
            return Err(e);
        }
    };
    let mut member = Member::new(name.clone(), &agent_id, &def.name, Some(root.clone()));
    member.model = req.model.clone();
    member.description = req.description.clone();
    let storage = team.storage.clone();
    let added = tokio::task::spawn_blocking(move || storage.add_member(member))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    if let Err(e) = added {
        pool.release(&work_id);
        let _ = ws.finish(&work_id).await;
        return Err(e);
    }
    let args = ProxyArgs {
        mailbox: team.mailbox(name.clone()),
        name: name.clone(),
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
    let spawn: SpawnFn = Box::new(move |cell| {
        Box::pin(async move {
            Actor::spawn_linked(None, RemoteTeammate, args, cell)
                .await
                .map(|(actor, _)| actor.get_cell())
                .map_err(|e| format!("could not start teammate: {e}"))
        })
    });
    let started = team
        .actor
        .call(
            |reply| TeamMsg::Adopt {
                name: name.clone(),
                spawn,
                reply,
            },
            Some(std::time::Duration::from_secs(30)),
        )
        .await;
    match started {
        Ok(ractor::rpc::CallResult::Success(Ok(_))) => Ok(agent_id),
        Ok(ractor::rpc::CallResult::Success(Err(e))) => Err(e),
        _ => Err("the team did not answer; the teammate may not have started".into()),
    }
}

type Placed = (
    TeammateSpawn,
    String,
    ActorRef<WorkerMsg>,
    mpsc::UnboundedReceiver<TaskNews>,
);

/// Bundles the commit, waits for a worker slot and builds the spawn message.
#[allow(clippy::too_many_arguments)]
async fn place(
    env: &SubagentEnv,
    req: &SpawnRequest,
    def: &AgentDefinition,
    pool: &Pool,
    mode: PermissionMode,
    name: &MemberName,
    agent_id: &str,
    work_id: &str,
    root: &std::path::Path,
    ws: &Arc<dyn Workspaces>,
) -> Result<Placed, String> {
    let (commit, branch) = bundle::head_of(root).await.map_err(|e| e.to_string())?;
    let base = pool
        .base_bundle(ws.repo_root(), &branch, &commit)
        .await
        .map_err(|e| format!("cannot bundle the commit for the worker: {e}"))?;
    let (tx, news) = mpsc::unbounded_channel();
    let (node, worker) = pool.place(work_id, Vec::new(), tx).await?;
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
        run: RemoteSpawn {
            task_id: work_id.to_string(),
            lead: pool.group().to_string(),
            description: req.description.clone(),
            prompt: req.prompt.clone(),
            agent: AgentWire {
                id: spec.id.clone(),
                model: pool.model_for(&spec.model, &env.runner.spec.model),
                system_prompt: spec.system_prompt.clone(),
                allowed_tools: spec
                    .allowed_tools
                    .as_ref()
                    .map(|s| s.iter().cloned().collect()),
                max_turns: spec.max_turns,
                max_tokens: spec.max_tokens,
            },
            rules: pool.rules().to_vec(),
            base_commit: commit,
            branch,
            bundle: base.as_ref().clone(),
        },
        name: name.to_string(),
        mode,
    };
    Ok((spawn, node, worker, news))
}
