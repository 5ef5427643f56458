//! The session's service actors — permission engine, approver, gate, executor and
//! worktree manager — held in `Slot`s, with what each is restarted from: the engine from
//! its last policy (grants included, kept in its `PolicyMemory`), the gate from its
//! registered policies (`GateMemory`, journaled by its slot as each is sent), the approver from its policy, the executor from the
//! registry, the worktree manager from its registry on disk, the task manager from its
//! records (reached through its `TaskFront`, with the live tasks' tokens kept here). `Services::restart` spawns the
//! replacement under the session and swaps it into the slot, so every caller reaches it
//! on its next message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorRef, SpawnErr};

use crate::approver::actor::{Approver, ApproverMsg, ApproverPolicy};
use crate::engine::{EngineArgs, PermissionEngine, PermissionMsg, PolicyMemory};
use crate::executor::actor::{ExecutorArgs, ExecutorMsg, ToolExecutor};
use crate::gate::actor::{self as gate, Gate, GateArgs, GateMemory, GateMsg};
use crate::permission::Policy;
use crate::supervise::Slot;
use crate::tasks::actor::{TaskArgs, TaskManager, TaskMsg};
use crate::tasks::front_actor::TaskFront;
use crate::tools::Registry;
use crate::worktree::actor::{WorktreeManager, WorktreeManagerArgs, WorktreeMsg};

/// A service actor the session restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The permission engine.
    Permission,
    /// The approver.
    Approver,
    /// The gate.
    Gate,
    /// The tool executor.
    Executor,
    /// The worktree manager.
    Worktrees,
    /// The task manager.
    Tasks,
}

impl Service {
    /// The name used in events and in `CREW_FAULTS`.
    pub fn name(self) -> &'static str {
        match self {
            Service::Permission => "permission",
            Service::Approver => "approver",
            Service::Gate => "gate",
            Service::Executor => "executor",
            Service::Worktrees => "worktrees",
            Service::Tasks => "tasks",
        }
    }

    /// The service of a name (`permission`, `gate`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Service::Permission,
            Service::Approver,
            Service::Gate,
            Service::Executor,
            Service::Worktrees,
            Service::Tasks,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// What the pipeline services are built from.
pub struct ServiceArgs {
    /// The permission policy.
    pub policy: Policy,
    /// How Asks are answered.
    pub approver: ApproverPolicy,
    /// The tools.
    pub registry: Arc<Registry>,
    /// The executor's timeout for tools that set none.
    pub default_timeout: Duration,
    /// Where the executor offloads large results (`None`: they are cut instead).
    pub results: Option<crate::offload::ResultsDir>,
}

/// The running services and what each is restarted from.
pub struct Services {
    /// The permission engine.
    pub permission: Slot<PermissionMsg>,
    /// The approver.
    pub approver: Slot<ApproverMsg>,
    /// The gate.
    pub gate: Slot<GateMsg>,
    /// The executor: only the gate and this supervisor hold it.
    executor: Slot<ExecutorMsg>,
    /// The worktree manager, once started.
    worktrees: Option<(Slot<WorktreeMsg>, WorktreeManagerArgs)>,
    /// The task manager, once started.
    tasks: Option<(Slot<TaskMsg>, TaskArgs)>,
    policy: PolicyMemory,
    approver_policy: ApproverPolicy,
    registry: Arc<Registry>,
    default_timeout: Duration,
    results: Option<crate::offload::ResultsDir>,
    gate_memory: GateMemory,
    supervisor: ActorCell,
}

impl Services {
    /// Starts the engine, approver, executor and gate linked to `supervisor`.
    pub async fn start(args: ServiceArgs, supervisor: ActorCell) -> Result<Self, SpawnErr> {
        let policy: PolicyMemory = Arc::new(Mutex::new(args.policy.clone()));
        let gate_memory: GateMemory = Arc::new(Mutex::new(HashMap::new()));
        let permission = Slot::new(
            Actor::spawn_linked(
                None,
                PermissionEngine,
                engine_args(&policy),
                supervisor.clone(),
            )
            .await?
            .0,
        );
        let approver = Slot::new(
            Actor::spawn_linked(None, Approver, args.approver.clone(), supervisor.clone())
                .await?
                .0,
        );
        let executor = Slot::new(
            Actor::spawn_linked(
                None,
                ToolExecutor,
                ExecutorArgs {
                    registry: args.registry.clone(),
                    default_timeout: args.default_timeout,
                    results: args.results.clone(),
                },
                supervisor.clone(),
            )
            .await?
            .0,
        );
        let journal = gate_memory.clone();
        let gate = Slot::journaled(
            Actor::spawn_linked(
                None,
                Gate,
                GateArgs {
                    registry: args.registry.clone(),
                    executor: executor.clone(),
                    memory: Some(gate_memory.clone()),
                },
                supervisor.clone(),
            )
            .await?
            .0,
            // Each policy change is kept as it is sent, so a gate that dies with one
            // unread in its mailbox is replaced by one that has it.
            Arc::new(move |msg: &GateMsg| gate::record(&journal, msg)),
        );
        Ok(Self {
            permission,
            approver,
            gate,
            executor,
            worktrees: None,
            tasks: None,
            policy,
            approver_policy: args.approver,
            registry: args.registry,
            default_timeout: args.default_timeout,
            results: args.results,
            gate_memory,
            supervisor,
        })
    }

    /// Starts the worktree manager linked to the supervisor.
    pub async fn start_worktrees(
        &mut self,
        args: WorktreeManagerArgs,
    ) -> Result<Slot<WorktreeMsg>, SpawnErr> {
        let actor =
            Actor::spawn_linked(None, WorktreeManager, args.clone(), self.supervisor.clone())
                .await?
                .0;
        let slot = Slot::new(actor);
        self.worktrees = Some((slot.clone(), args));
        Ok(slot)
    }

    /// Starts the task manager and its front linked to the supervisor; callers get the
    /// front.
    pub async fn start_tasks(&mut self, args: TaskArgs) -> Result<ActorRef<TaskMsg>, SpawnErr> {
        let sup = self.supervisor.clone();
        let (manager, _) =
            Actor::spawn_linked(None, TaskManager, args.clone(), sup.clone()).await?;
        let slot = Slot::new(manager);
        let (front, _) = Actor::spawn_linked(None, TaskFront, slot.clone(), sup).await?;
        self.tasks = Some((slot, args));
        Ok(front)
    }

    /// Which service `cell` is (as the slots hold it now), if any.
    pub fn which(&self, cell: &ActorCell) -> Option<Service> {
        if self.permission.holds(cell) {
            Some(Service::Permission)
        } else if self.approver.holds(cell) {
            Some(Service::Approver)
        } else if self.gate.holds(cell) {
            Some(Service::Gate)
        } else if self.executor.holds(cell) {
            Some(Service::Executor)
        } else if self.worktrees.as_ref().is_some_and(|(s, _)| s.holds(cell)) {
            Some(Service::Worktrees)
        } else if self.tasks.as_ref().is_some_and(|(s, _)| s.holds(cell)) {
            Some(Service::Tasks)
        } else {
            None
        }
    }

    /// Spawns a replacement for `service` from its last good state and swaps it in.
    pub async fn restart(&self, service: Service) -> Result<(), SpawnErr> {
        let sup = self.supervisor.clone();
        match service {
            Service::Permission => {
                let args = engine_args(&self.policy);
                let (a, _) = Actor::spawn_linked(None, PermissionEngine, args, sup).await?;
                self.permission.replace(a);
            }
            Service::Approver => {
                let args = self.approver_policy.clone();
                let (a, _) = Actor::spawn_linked(None, Approver, args, sup).await?;
                self.approver.replace(a);
            }
            Service::Executor => {
                let args = ExecutorArgs {
                    registry: self.registry.clone(),
                    default_timeout: self.default_timeout,
                    results: self.results.clone(),
                };
                let (a, _) = Actor::spawn_linked(None, ToolExecutor, args, sup).await?;
                self.executor.replace(a);
            }
            Service::Gate => {
                let args = GateArgs {
                    registry: self.registry.clone(),
                    executor: self.executor.clone(),
                    memory: Some(self.gate_memory.clone()),
                };
                let (a, _) = Actor::spawn_linked(None, Gate, args, sup).await?;
                self.gate.replace(a);
            }
            Service::Worktrees => {
                if let Some((slot, args)) = &self.worktrees {
                    let (a, _) =
                        Actor::spawn_linked(None, WorktreeManager, args.clone(), sup).await?;
                    slot.replace(a);
                }
            }
            Service::Tasks => {
                if let Some((slot, args)) = &self.tasks {
                    let args = TaskArgs {
                        restore: true,
                        ..args.clone()
                    };
                    let (a, _) = Actor::spawn_linked(None, TaskManager, args, sup).await?;
                    slot.replace(a);
                }
            }
        }
        Ok(())
    }

    /// Kills a service from outside (the fault injector's `kill`) and waits until it is
    /// gone, so that its supervision event is queued before the next kill is handled.
    pub async fn kill(&self, service: Service) {
        let cell = match service {
            Service::Permission => self.permission.get().get_cell(),
            Service::Approver => self.approver.get().get_cell(),
            Service::Gate => self.gate.get().get_cell(),
            Service::Executor => self.executor.get().get_cell(),
            Service::Worktrees => match &self.worktrees {
                Some((slot, _)) => slot.get().get_cell(),
                None => return,
            },
            Service::Tasks => match &self.tasks {
                Some((slot, _)) => slot.get().get_cell(),
                None => return,
            },
        };
        let _ = cell.kill_and_wait(Some(Duration::from_secs(10))).await;
    }
}

/// The engine's arguments from the last policy it held, writing through to the same memory.
fn engine_args(memory: &PolicyMemory) -> EngineArgs {
    // A poisoned lock only means a panic mid-copy; the copy was replaced whole.
    let policy = memory.lock().unwrap_or_else(|e| e.into_inner()).clone();
    EngineArgs {
        policy,
        memory: Some(memory.clone()),
    }
}
