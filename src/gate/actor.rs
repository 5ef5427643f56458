//! The `Gate` actor: keeps each agent's policy (registered by the agent's actor), receives
//! `Permit`s — calls that the permission engine (and, if asked, a human) allowed —, applies
//! the calling agent's Safety/Names policy, and forwards the resulting `ClearedCall` to
//! the executor, whose only reference it holds (through the supervisor's slot, so a
//! restarted executor is reached). A permit of an agent that registered no policy is
//! refused. It never waits for the executor: the caller's reply port travels with the
//! cleared call.
//!
//! Under a session the policies live in the supervisor's `GateMemory`: the gate's slot
//! journals every policy message into it as it is sent (`record`), before the gate has
//! read it, and the gate reads the policies from there. A gate that dies with a
//! `Register` unread in its mailbox therefore loses nothing: its replacement starts from
//! the memory, which already holds the registration. (Without the journal a lost
//! registration would only ever refuse calls, never allow them: fail closed either way.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::port::{ExecutorMsg, ResultPort};
use super::{GatePolicy, NameLimit, clear, refusal};
use crate::permission::Permit;
use crate::protocol::{ToolCall, ToolResult};
use crate::supervise::Slot;
use crate::tools::{Registry, ToolContext};

/// The registered policies of a supervised gate, written by the journal of its slot as
/// each policy message is sent (see [`record`]) and read by the gate (and by its
/// replacement after a crash).
pub type GateMemory = Arc<Mutex<HashMap<String, GatePolicy>>>;

/// Applies a policy message (`Register`, `Update`, `Narrow`, `EndLimits`, `Unregister`)
/// to `policies`; any other message changes nothing.
fn apply(policies: &mut HashMap<String, GatePolicy>, msg: &GateMsg) {
    match msg {
        GateMsg::Register { agent, policy } => {
            policies.insert(agent.clone(), policy.clone());
        }
        // An update never registers: a late one must not revive an ended agent.
        GateMsg::Update { agent, policy } => {
            if let Some(current) = policies.get_mut(agent) {
                *current = policy.clone();
            }
        }
        GateMsg::Narrow { agent, limit } => {
            if let Some(current) = policies.get_mut(agent) {
                current.narrow(limit.clone());
            }
        }
        GateMsg::EndLimits { agent } => {
            if let Some(current) = policies.get_mut(agent) {
                current.end_limits();
            }
        }
        GateMsg::Unregister { agent } => {
            policies.remove(agent);
        }
        GateMsg::Refusal { .. } | GateMsg::Submit { .. } | GateMsg::SubmitAll(_) => {}
    }
}

/// The journal of a supervised gate's slot: records each policy message in `memory` as it
/// is sent, in the senders' order.
pub fn record(memory: &GateMemory, msg: &GateMsg) {
    if matches!(
        msg,
        GateMsg::Refusal { .. } | GateMsg::Submit { .. } | GateMsg::SubmitAll(_)
    ) {
        return;
    }
    // A poisoned lock only means a panic mid-update; each entry is replaced whole.
    apply(&mut memory.lock().unwrap_or_else(|e| e.into_inner()), msg);
}

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
        reply: ResultPort,
    },
    /// `Submit` for calls permitted together (a turn's read-only batch): those cleared
    /// go to the executor in one message.
    SubmitAll(Vec<Submitted>),
}

/// One call of `GateMsg::SubmitAll`: the fields of a `Submit`.
pub struct Submitted {
    /// Leave to run the call.
    pub permit: Permit,
    /// Where and how it runs.
    pub ctx: ToolContext,
    /// Receives the tool's result or the refusal.
    pub reply: ResultPort,
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
    /// The policies, kept by the journal of the gate's slot (see [`record`]): the gate
    /// reads them there and leaves the policy messages it receives to the journal, which
    /// has applied them already. `None`: the gate keeps its own policies, from the
    /// messages it handles.
    pub memory: Option<GateMemory>,
}

/// Where the gate's policies are.
enum Policies {
    /// Its own, from the messages it handled.
    Own(HashMap<String, GatePolicy>),
    /// The supervisor's, journaled as the messages were sent.
    Journaled(GateMemory),
}

/// The gate's state: its configuration and each registered agent's policy.
pub struct GateState {
    registry: Arc<Registry>,
    executor: Slot<ExecutorMsg>,
    policies: Policies,
}

impl GateState {
    /// The registered policies, for the time of one judgement.
    fn policies(&self) -> PoliciesRef<'_> {
        match &self.policies {
            Policies::Own(own) => PoliciesRef::Own(own),
            // A poisoned lock only means a panic mid-update; each entry is whole.
            Policies::Journaled(memory) => {
                PoliciesRef::Journaled(memory.lock().unwrap_or_else(|e| e.into_inner()))
            }
        }
    }
}

/// A view of the policies wherever they are.
enum PoliciesRef<'a> {
    Own(&'a HashMap<String, GatePolicy>),
    Journaled(std::sync::MutexGuard<'a, HashMap<String, GatePolicy>>),
}

impl std::ops::Deref for PoliciesRef<'_> {
    type Target = HashMap<String, GatePolicy>;
    fn deref(&self) -> &Self::Target {
        match self {
            PoliciesRef::Own(own) => own,
            PoliciesRef::Journaled(guard) => guard,
        }
    }
}

/// The refusal of a call from an agent that is not registered.
fn unregistered(agent: &str, call: &ToolCall) -> ToolResult {
    ToolResult::error(
        &call.id,
        "tool_not_allowed",
        format!("agent `{agent}` is not registered with the gate; the call was not run"),
    )
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
        let policies = match args.memory {
            Some(memory) => Policies::Journaled(memory),
            None => Policies::Own(HashMap::new()),
        };
        Ok(GateState {
            registry: args.registry,
            executor: args.executor,
            policies,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let GateMsg::Register { .. } = &msg {
            crate::supervise::faults::point("gate.register");
        }
        match msg {
            GateMsg::Register { .. }
            | GateMsg::Update { .. }
            | GateMsg::Narrow { .. }
            | GateMsg::EndLimits { .. }
            | GateMsg::Unregister { .. } => {
                // A journaled gate's policies were updated as the message was sent.
                if let Policies::Own(own) = &mut state.policies {
                    apply(own, &msg);
                }
            }
            GateMsg::Refusal { agent, call, reply } => {
                let refused = match state.policies().get(&agent) {
                    Some(policy) => refusal(&state.registry, policy, &call),
                    None => Some(unregistered(&agent, &call)),
                };
                let _ = reply.send(refused);
            }
            GateMsg::Submit { permit, ctx, reply } => {
                state.clear_and_run(vec![Submitted { permit, ctx, reply }]);
            }
            GateMsg::SubmitAll(calls) => state.clear_and_run(calls),
        }
        Ok(())
    }
}

impl GateState {
    /// Clears each call against its agent's policy (a fault point each, as a message
    /// each had), answers the refused ones, and sends those cleared to the executor in
    /// one message. A dead executor's replacement gets them; none in time is an error
    /// result for each, never a silent drop.
    fn clear_and_run(&self, calls: Vec<Submitted>) {
        let mut cleared = Vec::with_capacity(calls.len());
        for Submitted { permit, ctx, reply } in calls {
            crate::supervise::faults::point("gate");
            let checked = match self.policies().get(permit.agent()) {
                Some(policy) => clear(&self.registry, policy, permit, ctx),
                None => Err(unregistered(permit.agent(), permit.call())),
            };
            match checked {
                Err(refusal) => reply.send(refusal),
                Ok(call) => cleared.push((call, reply)),
            }
        }
        if cleared.is_empty() {
            return;
        }
        self.executor.forward(
            ExecutorMsg::Execute(cleared),
            |ExecutorMsg::Execute(lost)| {
                for (call, reply) in lost {
                    reply.send(ToolResult::error(
                        &call.call().id,
                        "executor_unavailable",
                        "the tool executor is not running; the call was not run",
                    ));
                }
            },
        );
    }
}
