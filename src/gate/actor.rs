//! The `Gate` actor: keeps each agent's policy (registered by the agent's actor), receives
//! `Permit`s — calls that the permission engine (and, if asked, a human) allowed —, applies
//! the calling agent's Safety/Names policy, and forwards the resulting `ClearedCall` to
//! the executor, whose only reference it holds. A permit of an agent that registered no
//! policy is refused. It never waits for the executor: the caller's reply port travels
//! with the cleared call.

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, MessagingErr, RpcReplyPort};

use super::{GatePolicy, NameLimit, clear, refusal};
use crate::executor::actor::ExecutorMsg;
use crate::permission::Permit;
use crate::protocol::{ToolCall, ToolResult};
use crate::tools::{Registry, ToolContext};

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
    /// The executor: the gate is the only holder of this reference.
    pub executor: ActorRef<ExecutorMsg>,
}

/// The gate's state: its configuration and each registered agent's policy.
pub struct GateState {
    registry: Arc<Registry>,
    executor: ActorRef<ExecutorMsg>,
    policies: HashMap<String, GatePolicy>,
}

impl GateState {
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
        Ok(GateState {
            registry: args.registry,
            executor: args.executor,
            policies: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            GateMsg::Register { agent, policy } => {
                state.policies.insert(agent, policy);
            }
            // An update never registers: a late one must not revive an ended agent.
            GateMsg::Update { agent, policy } => {
                if let Some(current) = state.policies.get_mut(&agent) {
                    *current = policy;
                }
            }
            GateMsg::Narrow { agent, limit } => {
                if let Some(current) = state.policies.get_mut(&agent) {
                    current.narrow(limit);
                }
            }
            GateMsg::EndLimits { agent } => {
                if let Some(current) = state.policies.get_mut(&agent) {
                    current.end_limits();
                }
            }
            GateMsg::Unregister { agent } => {
                state.policies.remove(&agent);
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
                        let id = cleared.call().id.clone();
                        if let Err(MessagingErr::SendErr(ExecutorMsg::Execute(_, reply))) =
                            state.executor.cast(ExecutorMsg::Execute(cleared, reply))
                        {
                            let _ = reply.send(ToolResult::error(
                                id,
                                "executor_unavailable",
                                "the tool executor is not running; the call was not run",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
