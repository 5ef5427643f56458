//! The `Gate` actor: keeps each agent's policy (registered by the agent's actor), receives
//! `Permit`s — calls that the permission engine (and, if asked, a human) allowed —, applies
//! the calling agent's Safety/Names policy, and forwards the resulting `ClearedCall` to
//! the executor, whose only reference it holds (through the supervisor's slot, so a
//! restarted executor is reached). A permit of an agent that registered no policy is
//! refused. It never waits for the executor: the caller's reply port travels with the
//! cleared call. Under a session, each policy change is written through to the
//! supervisor's `GateMemory`, from which a restarted gate starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::{GatePolicy, NameLimit, clear, refusal};
use crate::executor::actor::ExecutorMsg;
use crate::permission::Permit;
use crate::protocol::{ToolCall, ToolResult};
use crate::supervise::Slot;
use crate::tools::{Registry, ToolContext};

/// A copy of the registered policies, kept by a supervised gate after each change so a
/// restarted gate still knows every running agent.
pub type GateMemory = Arc<Mutex<HashMap<String, GatePolicy>>>;

/// Messages the gate accepts.
pub enum GateMsg {
    /// An agent's policy (its Agent Mode and tool list), before its first call; a second
    /// registration under the same id replaces the first.
    Register {
        /// The agent's id (the one its permits carry).
        agent: String,
        /// What it may run.
        policy: GatePolicy,
    },
    /// An agent's policy changed (a new run in another Agent Mode); ignored for an agent
    /// that is not registered.
    Update {
        /// The agent's id.
        agent: String,
        /// What it may run from now on.
        policy: GatePolicy,
    },
    /// An `allowed-tools` list is in force for the agent from now on (a skill it loaded,
    /// or the slash command that started its turn); ignored for an unregistered agent.
    Narrow {
        /// The agent's id.
        agent: String,
        /// The list and whose it is.
        limit: NameLimit,
    },
    /// The agent's turn ended: its skill's and command's lists no longer apply.
    EndLimits {
        /// The agent's id.
        agent: String,
    },
    /// The agent ended: its permits are refused from now on.
    Unregister {
        /// The agent's id.
        agent: String,
    },
    /// Would the gate refuse this call of this agent? (`None`: it would clear it.) A
    /// query, so that nobody asks a human about a call the gate will refuse.
    Refusal {
        /// The calling agent.
        agent: String,
        /// The call.
        call: ToolCall,
        /// Receives the refusal, if any.
        reply: RpcReplyPort<Option<ToolResult>>,
    },
    /// Check a permitted call against its agent's policy and, if it passes, run it.
    Submit {
        /// Leave to run the call (the call and the agent come from it).
        permit: Permit,
        /// Where and how it runs (must be the permit's agent and directory).
        ctx: ToolContext,
        /// Receives the tool's result or the refusal.
        reply: RpcReplyPort<ToolResult>,
    },
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for GateMsg {}

/// The gate actor (configuration only).
pub struct Gate;

/// What the gate needs to start.
pub struct GateArgs {
    /// The tool registry, for safety and system labels.
    pub registry: Arc<Registry>,
    /// The executor: no agent holds this reference; only the gate (and the supervisor
    /// that restarts the executor) do.
    pub executor: Slot<ExecutorMsg>,
    /// Where to keep the policies, and where a restarted gate reads them back (`None`:
    /// start empty, keep nothing).
    pub memory: Option<GateMemory>,
}

/// The gate's state: its configuration and each registered agent's policy.
pub struct GateState {
    registry: Arc<Registry>,
    executor: Slot<ExecutorMsg>,
    policies: HashMap<String, GatePolicy>,
    memory: Option<GateMemory>,
}

impl GateState {
    /// Writes one agent's policy (or its removal) through to the memory.
    fn remember(&self, agent: &str) {
        let Some(memory) = &self.memory else { return };
        // A poisoned lock only means a panic mid-insert; the entry is replaced whole.
        let mut memory = memory.lock().unwrap_or_else(|e| e.into_inner());
        match self.policies.get(agent) {
            Some(policy) => memory.insert(agent.to_string(), policy.clone()),
            None => memory.remove(agent),
        };
    }

    /// The agent's policy, or the refusal of a call from an unregistered agent.
    fn policy(&self, agent: &str, call: &ToolCall) -> Result<&GatePolicy, ToolResult> {
        self.policies.get(agent).ok_or_else(|| {
            ToolResult::error(
                &call.id,
                "tool_not_allowed",
                format!("agent `{agent}` is not registered with the gate; the call was not run"),
            )
        })
    }
}

impl Actor for Gate {
    type Msg = GateMsg;
    type State = GateState;
    type Arguments = GateArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: GateArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let policies = match &args.memory {
            Some(memory) => memory.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            None => HashMap::new(),
        };
        Ok(GateState {
            registry: args.registry,
            executor: args.executor,
            policies,
            memory: args.memory,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let GateMsg::Submit { .. } = &msg {
            crate::supervise::faults::point("gate");
        }
        match msg {
            GateMsg::Register { agent, policy } => {
                state.policies.insert(agent.clone(), policy);
                state.remember(&agent);
            }
            // An update never registers: a late one must not revive an ended agent.
            GateMsg::Update { agent, policy } => {
                if let Some(current) = state.policies.get_mut(&agent) {
                    *current = policy;
                    state.remember(&agent);
                }
            }
            GateMsg::Narrow { agent, limit } => {
                if let Some(current) = state.policies.get_mut(&agent) {
                    current.narrow(limit);
                    state.remember(&agent);
                }
            }
            GateMsg::EndLimits { agent } => {
                if let Some(current) = state.policies.get_mut(&agent) {
                    current.end_limits();
                    state.remember(&agent);
                }
            }
            GateMsg::Unregister { agent } => {
                state.policies.remove(&agent);
                state.remember(&agent);
            }
            GateMsg::Refusal { agent, call, reply } => {
                let refused = match state.policy(&agent, &call) {
                    Ok(policy) => refusal(&state.registry, policy, &call),
                    Err(refused) => Some(refused),
                };
                let _ = reply.send(refused);
            }
            GateMsg::Submit { permit, ctx, reply } => {
                let cleared = match state.policy(permit.agent(), permit.call()) {
                    Ok(policy) => clear(&state.registry, policy, permit, ctx),
                    Err(refused) => Err(refused),
                };
                match cleared {
                    Err(refusal) => {
                        let _ = reply.send(refusal);
                    }
                    Ok(cleared) => {
                        // A dead executor's replacement gets the call; none in time is
                        // an error result, never a silent drop.
                        let id = cleared.call().id.clone();
                        state.executor.forward(
                            ExecutorMsg::Execute(cleared, reply),
                            move |ExecutorMsg::Execute(_, reply)| {
                                let _ = reply.send(ToolResult::error(
                                    id,
                                    "executor_unavailable",
                                    "the tool executor is not running; the call was not run",
                                ));
                            },
                        );
                    }
                }
            }
        }
        Ok(())
    }
}
