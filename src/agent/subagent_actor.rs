//! Subagents: `launch` registers a task and spawns a `SubAgent` actor linked under the
//! agent that asked (so that agent's supervisor sees it fail); the actor runs its loop in
//! a spawned task — waiting for a concurrency slot, setting up its worktree, running under
//! dontAsk with its own tool list — and reports the outcome to the task manager.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::catalog::Catalog;
use super::delegate::{ActorDelegate, ResumeRequest, SpawnRequest, Worktrees};
use super::mode::AgentMode;
use super::monitor::watch_agent;
pub(crate) use super::resume::resume;
use super::resume::{Finished, FinishedAgents};
use super::run_error::{Crash, RunError};
use super::runner::{RunOutcome, RunPlace, RunRequest, RunStatus, Runner};
use super::subagent_spec::{commit_dirs, defined_runner, definition, subagent_model, working_copy};
use crate::gate::GatePolicy;
use crate::gate::actor::GateMsg;
use crate::permission::SharedMode;
use crate::permission::delegation::{Isolation, Placement};
use crate::tasks::TaskStatus;
use crate::tasks::actor::TaskMsg;
use crate::tools::CommandSandbox;
use crate::tools::delegate::DelegateError;

/// Subagents may nest this deep (the lead is depth 0).
pub(crate) const MAX_DEPTH: u32 = 2;

/// Why a subagent's working copy could not be made or ended.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The worktree manager refused to create it.
    #[error("could not create the worktree: {0}")]
    Create(crate::worktree::WorktreeError),
    /// The worktree manager could not end it.
    #[error(transparent)]
    Finish(crate::worktree::WorktreeError),
    /// The worktree manager did not answer (its actor is gone or timed out).
    #[error("the worktree manager {0}")]
    Manager(crate::supervise::CallError),
}

/// Where subagents get isolated working copies (git worktrees).
#[async_trait]
pub trait Workspaces: Send + Sync {
    /// The repository's root (the main checkout).
    fn repo_root(&self) -> &Path;
    /// Creates the task's working copy; returns its root.
    async fn create(&self, task_id: &str, description: &str) -> Result<PathBuf, WorkspaceError>;
    /// Ends the task's working copy: removed when clean, kept (and described) otherwise.
    async fn finish(&self, task_id: &str) -> Result<String, WorkspaceError>;
}

/// What every subagent of a session shares.
#[derive(Clone)]
pub struct SubagentEnv {
    /// The lead's runner, cloned and re-specified per subagent.
    pub runner: Runner,
    /// The agent definitions.
    pub catalog: Arc<Catalog>,
    /// The session's task manager.
    pub tasks: ActorRef<TaskMsg>,
    /// Worktrees, when the project is a git repository.
    pub workspaces: Option<Arc<dyn Workspaces>>,
    /// Bounds how many subagents run at once (`maxConcurrentAgents`).
    pub slots: Arc<Semaphore>,
    /// The lead's working directory (mapped into each worktree).
    pub main_cwd: PathBuf,
    /// Turn limit when the definition sets none.
    pub default_max_turns: u32,
    /// What directory walkers may show (the session's deny rules and credentials).
    pub walk: Arc<crate::permission::walk::WalkFilter>,
    /// The session's team (`None`: named agents cannot be started).
    pub team: Option<super::team_launch::TeamLink>,
    /// Finished subagents, kept to be resumed.
    pub finished: FinishedAgents,
    /// Worker nodes (`--workers`): where `placement: remote` agents, and agents that
    /// find the local slots full, run.
    pub workers: Option<Arc<dyn super::host::Workers>>,
    /// The lead's permission mode, which subagents in its checkout work under.
    pub lead_mode: SharedMode,
}

impl SubagentEnv {
    /// Whether its subagents can get worktrees of their own.
    pub(crate) fn worktrees(&self) -> Worktrees {
        match self.workspaces {
            Some(_) => Worktrees::Available,
            None => Worktrees::Unavailable,
        }
    }
}

/// Messages a subagent accepts.
pub(crate) enum SubAgentMsg {
    /// Start a nested subagent (its `agent` tool).
    Spawn(SpawnRequest, RpcReplyPort<Result<String, DelegateError>>),
    /// Resume a finished subagent (its `send_message` to one).
    Resume(ResumeRequest, RpcReplyPort<Result<String, DelegateError>>),
    /// Internal: the run ended (`Err`: it crashed or could not start, and why).
    Ended(Result<RunOutcome, RunError>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for SubAgentMsg {}

/// The subagent actor (configuration only).
pub(crate) struct SubAgent;

/// What a subagent starts from.
pub(crate) struct SubAgentArgs {
    env: SubagentEnv,
    task_id: String,
    depth: u32,
    request: SpawnRequest,
    cancel: CancellationToken,
    log: PathBuf,
    /// Set when this run resumes a finished subagent.
    resumed: Option<Box<Finished>>,
}

/// A subagent's state.
pub(crate) struct SubAgentState {
    env: SubagentEnv,
    task_id: String,
    depth: u32,
    children: HashMap<ActorId, String>,
}

/// Registers a task and spawns its subagent under `parent`; returns the task id.
/// Called from the parent's handler: it only registers and spawns (both quick).
pub(crate) async fn launch(
    parent: ActorCell,
    env: &SubagentEnv,
    depth: u32,
    request: SpawnRequest,
    children: &mut HashMap<ActorId, String>,
) -> Result<String, DelegateError> {
    if request.name.is_some() {
        return Err(DelegateError::Refused(
            "only the lead can start teammates (named agents); leave out `name`".into(),
        ));
    }
    if depth > MAX_DEPTH {
        return Err(DelegateError::Refused(format!(
            "subagents cannot start subagents beyond a depth of {MAX_DEPTH}"
        )));
    }
    let agent_type = match &request.fork {
        // A fork has its caller's tools, writers included: never the main checkout.
        Some(_) if request.isolation == Some(Isolation::None) => {
            return Err(DelegateError::Refused(
                "a fork works in its own worktree: isolation `none` is refused for forks".into(),
            ));
        }
        Some(_) => super::fork::FORK_TYPE.to_string(),
        None => {
            let Some(def) = env.catalog.get(&request.subagent_type) else {
                return Err(DelegateError::Refused(format!(
                    "unknown subagent_type `{}`; available: {}",
                    request.subagent_type,
                    env.catalog.names().join(", ")
                )));
            };
            // Refused here as well as in the engine: the model may not move a writer
            // into the main checkout.
            super::delegate::placement(
                &request,
                def,
                &env.runner.pipeline.registry,
                env.worktrees(),
            )
            .map_err(|e| DelegateError::Refused(e.to_string()))?;
            let isolation = request.isolation.unwrap_or_else(|| def.isolation());
            if let Some(workers) = super::host::choose(env, def, isolation)? {
                let def = def.clone();
                return workers.launch_subagent(env, depth, request, &def).await;
            }
            def.name.clone()
        }
    };
    start(parent, env, depth, request, agent_type, None, children).await
}

/// Registers the task and spawns the actor of a new or resumed subagent.
pub(super) async fn start(
    parent: ActorCell,
    env: &SubagentEnv,
    depth: u32,
    request: SpawnRequest,
    agent_type: String,
    resumed: Option<Box<Finished>>,
    children: &mut HashMap<ActorId, String>,
) -> Result<String, DelegateError> {
    let task = super::lifecycle::register(env, &request.description, agent_type).await?;
    let args = SubAgentArgs {
        env: env.clone(),
        task_id: task.id.clone(),
        depth,
        request,
        cancel: task.cancel,
        log: task.log,
        resumed,
    };
    match Actor::spawn_linked(None, SubAgent, args, parent).await {
        Ok((actor, _)) => {
            children.insert(actor.get_id(), task.id.clone());
            Ok(task.id)
        }
        Err(e) => {
            let reason = format!("could not start: {e}");
            super::lifecycle::end(env, task.id, TaskStatus::Failed, reason);
            Err(DelegateError::Failed(format!(
                "could not start the subagent: {e}"
            )))
        }
    }
}

/// What a supervisor does when one of its subagents stops: a failure becomes a `failed`
/// task with the reason (the task manager ignores it if the task already ended).
pub(crate) fn on_child_event(
    children: &mut HashMap<ActorId, String>,
    tasks: &ActorRef<TaskMsg>,
    evt: &SupervisionEvent,
) {
    match evt {
        SupervisionEvent::ActorFailed(who, reason) => {
            if let Some(task) = children.remove(&who.get_id()) {
                let _ = tasks.cast(TaskMsg::Finish {
                    id: task,
                    status: TaskStatus::Failed,
                    result: format!("the subagent crashed: {reason}"),
                });
            }
        }
        SupervisionEvent::ActorTerminated(who, _, _) => {
            children.remove(&who.get_id());
        }
        _ => {}
    }
}

impl Actor for SubAgent {
    type Msg = SubAgentMsg;
    type State = SubAgentState;
    type Arguments = SubAgentArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SubAgentArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let state = SubAgentState {
            env: args.env.clone(),
            task_id: args.task_id.clone(),
            depth: args.depth,
            children: HashMap::new(),
        };
        tokio::spawn(run_subagent(myself, args));
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SubAgentMsg::Spawn(req, reply) => {
                let r = launch(
                    myself.get_cell(),
                    &state.env,
                    state.depth + 1,
                    req,
                    &mut state.children,
                )
                .await;
                let _ = reply.send(r);
            }
            SubAgentMsg::Resume(req, reply) => {
                let r = resume(myself.get_cell(), &state.env, req, &mut state.children).await;
                let _ = reply.send(r);
            }
            SubAgentMsg::Ended(Ok(outcome)) => {
                let status = match outcome.status {
                    RunStatus::Completed => TaskStatus::Completed,
                    RunStatus::MaxTurns => TaskStatus::MaxTurns,
                    RunStatus::Cancelled => TaskStatus::Cancelled,
                    RunStatus::Failed => TaskStatus::Failed,
                    RunStatus::BudgetExhausted => TaskStatus::Cancelled,
                };
                super::lifecycle::end(&state.env, state.task_id.clone(), status, outcome.result);
                myself.stop(None);
            }
            // Fail the actor so the parent's supervisor records the crash.
            SubAgentMsg::Ended(Err(reason)) => return Err(reason.into()),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        on_child_event(&mut state.children, &state.env.tasks, &evt);
        Ok(())
    }
}

/// The subagent's whole life, in its own task: slot, worktree, run, clean-up, report.
async fn run_subagent(me: ActorRef<SubAgentMsg>, args: SubAgentArgs) {
    let SubAgentArgs {
        env,
        task_id,
        depth,
        request,
        cancel,
        log,
        resumed,
    } = args;
    let workspaces = env.workspaces.clone();
    let id = task_id.clone();
    let run = Run {
        task_id,
        depth,
        request,
        resumed,
    };
    let result = tokio::spawn(work(me.clone(), env, run, cancel, log)).await;
    let ended = match result {
        Ok(r) => r,
        Err(e) => {
            let crash = Crash::from(e);
            // The run died before it could tidy up: keep or remove its worktree now, and
            // say where work that was kept is (the parent cannot know otherwise).
            match workspaces {
                Some(ws) => Err(RunError::CrashedInWorktree {
                    crash,
                    worktree: super::lifecycle::finish_worktree(ws.as_ref(), &id).await,
                }),
                None => Err(RunError::Crashed(crash)),
            }
        }
    };
    let _ = me.cast(SubAgentMsg::Ended(ended));
}

/// What one run of a subagent is.
struct Run {
    task_id: String,
    depth: u32,
    /// For a resumed subagent, its original request with the message as the prompt.
    request: SpawnRequest,
    resumed: Option<Box<Finished>>,
}

async fn work(
    me: ActorRef<SubAgentMsg>,
    env: SubagentEnv,
    run: Run,
    cancel: CancellationToken,
    log: PathBuf,
) -> Result<RunOutcome, RunError> {
    let Run {
        task_id,
        depth,
        request,
        resumed,
    } = run;
    let cancelled = || RunOutcome {
        result: "stopped before it started".into(),
        status: RunStatus::Cancelled,
        usage: Default::default(),
        turns: 0,
        tool_calls: 0,
    };
    let _slot = tokio::select! {
        permit = env.slots.clone().acquire_owned() => permit.map_err(|_| RunError::Closing)?,
        _ = cancel.cancelled() => return Ok(cancelled()),
    };
    let (placement, isolation) = match &request.fork {
        Some(_) => (Placement::Worktree, Isolation::Worktree),
        None => {
            let def = definition(&env, &request)?;
            let placement = super::delegate::placement(
                &request,
                def,
                &env.runner.pipeline.registry,
                env.worktrees(),
            )?;
            let isolation = request.isolation.unwrap_or_else(|| def.isolation());
            (placement, isolation)
        }
    };
    let (cwd, worktree_note, workspace) =
        working_copy(&env, &task_id, &request.description, placement, isolation).await?;
    let _ = env.tasks.cast(TaskMsg::Running {
        id: task_id.clone(),
        pgid: None,
        worktree: workspace.as_ref().map(|(_, root)| root.clone()),
    });

    let (runner, mut conversation, req) = match (&resumed, &request.fork) {
        (Some(f), _) => {
            let mut runner = env.runner.clone();
            runner.spec = f.spec.clone();
            let req = RunRequest {
                mode: request
                    .fork
                    .as_ref()
                    .map_or(AgentMode::Chat, |b| b.mode.forked()),
                task: super::resume::resumed_task(&request.prompt, &worktree_note),
                plan: None,
            };
            (runner, f.conversation.clone(), req)
        }
        (None, Some(base)) => {
            let mut runner = env.runner.clone();
            runner.spec = base.spec.clone();
            runner.spec.id = format!("{}/{task_id}", super::fork::FORK_TYPE);
            if let Some(model) = &request.model {
                runner.spec.model = subagent_model(Some(model), &base.spec.model);
            }
            let req = RunRequest {
                mode: base.mode.forked(),
                task: super::fork::task(&request.prompt, &worktree_note),
                plan: None,
            };
            (runner, super::fork::seed(base), req)
        }
        (None, None) => {
            let def = definition(&env, &request)?;
            let runner = defined_runner(&env, def, &request, &task_id, depth, &worktree_note);
            let req = RunRequest {
                mode: AgentMode::Chat,
                task: request.prompt.clone(),
                plan: None,
            };
            (runner, Vec::new(), req)
        }
    };
    let agent_id = runner.spec.id.clone();
    let writable_roots = match &workspace {
        Some((_, root)) => {
            let mut roots = vec![root.clone()];
            roots.extend(commit_dirs(root));
            roots
        }
        None => vec![cwd.clone()],
    };
    let place = RunPlace {
        cwd,
        permission_mode: match &workspace {
            // In its own worktree it works unattended, confined there.
            Some(_) => SharedMode::new(super::subagent_spec::unattended(
                runner.pipeline.auto.as_deref(),
            )),
            // In the caller's checkout it works as the lead does, under the lead's mode
            // (the same cell: a switch applies to both), so its calls ask where the
            // lead's would.
            None => env.lead_mode.clone(),
        },
        sandbox: CommandSandbox::landlock(writable_roots),
        delegate: Some(Arc::new(
            ActorDelegate::new(me, SubAgentMsg::Spawn).with_resume(SubAgentMsg::Resume),
        )),
        tasks: Some(env.tasks.clone()),
        walk: env.walk.clone(),
        team: None,
        mail: None,
    };
    let watcher = watch_agent(
        &runner.pipeline.events,
        &agent_id,
        &task_id,
        log,
        env.tasks.clone(),
    );
    // The subagent's tool list is enforced by the gate, registered for its run only.
    let gate = runner.pipeline.gate.clone();
    gate.cast(GateMsg::Register {
        agent: agent_id.clone(),
        policy: GatePolicy::new(req.mode, runner.spec.allowed_tools.clone()),
    });
    let mut outcome = runner.run(&mut conversation, &req, &place, cancel).await;
    gate.cast(GateMsg::Unregister { agent: agent_id });
    // Kept to be resumed by a message.
    let (original, mut tasks) = match resumed {
        Some(f) => (f.request, f.tasks),
        None => (request.clone(), Vec::new()),
    };
    tasks.push(task_id.clone());
    env.finished.put(Finished {
        request: original,
        spec: runner.spec.clone(),
        conversation,
        depth,
        tasks,
    });
    watcher.finish().await;
    if let Some((ws, _)) = workspace {
        let worktree = super::lifecycle::finish_worktree(ws.as_ref(), &task_id).await;
        outcome.result = format!("{}\n\n{worktree}", outcome.result);
    }
    Ok(outcome)
}
