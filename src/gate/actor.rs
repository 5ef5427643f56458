//! The `Gate` actor: receives calls that the permission engine (and, if asked, a human)
//! allowed, applies the Safety/Names policy, and forwards the resulting `ClearedCall` to
//! the executor — whose only reference it holds. It never waits for the executor: the
//! caller's reply port travels with the cleared call.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, MessagingErr, RpcReplyPort};

use super::{GatePolicy, clear};
use crate::executor::actor::ExecutorMsg;
use crate::protocol::{ToolCall, ToolResult};
use crate::tools::{Registry, ToolContext};

/// Messages the gate accepts.
pub enum GateMsg {
    /// Check a call against the policy and, if it passes, run it.
    Submit {
        /// The call.
        call: ToolCall,
        /// Where and how it runs.
        ctx: ToolContext,
        /// The calling agent's policy (its Agent Mode and tool list).
        policy: GatePolicy,
        /// Receives the tool's result or the refusal.
        reply: RpcReplyPort<ToolResult>,
    },
}

/// The gate actor (configuration only).
pub struct Gate;

/// What the gate needs to start.
pub struct GateArgs {
    /// The tool registry, for safety and system labels.
    pub registry: Arc<Registry>,
    /// The executor: the gate is the only holder of this reference.
    pub executor: ActorRef<ExecutorMsg>,
}

impl Actor for Gate {
    type Msg = GateMsg;
    type State = GateArgs;
    type Arguments = GateArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: GateArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let GateMsg::Submit {
            call,
            ctx,
            policy,
            reply,
        } = msg;
        match clear(&state.registry, &policy, call, ctx) {
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
        Ok(())
    }
}
