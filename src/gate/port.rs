//! Where a call's result goes. A caller that submitted its permit to the gate itself
//! waits on a `ToolResult` port; a caller whose permit the permission engine sent on
//! (`PermissionMsg::AuthorizeAndSubmit`) waits on one port for the engine's whole answer,
//! and the result arrives there as `Authorized::Ran`. Either way the gate's refusal and
//! the executor's result are sent the same way, and a port dropped unanswered (its actor
//! died) tells the caller so. The message the gate sends the executor is defined here too.

use ractor::RpcReplyPort;

use super::ClearedCall;
use crate::permission::Checked;
use crate::protocol::ToolResult;

/// What the gate sends the executor (`executor::actor`): a cleared call and where its
/// result goes. Defined here, with the gate, so the gate needs nothing of the executor
/// but its address.
pub enum ExecutorMsg {
    /// Run cleared calls (those the gate cleared together: a turn's read-only batch, or
    /// one call) and send each its result.
    Execute(Vec<(ClearedCall, ResultPort)>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for ExecutorMsg {}

/// The permission engine's answer to `PermissionMsg::AuthorizeAndSubmit` (`engine::onward`).
#[derive(Debug)]
pub enum Authorized {
    /// Allowed and sent on: what the tool returned, or the gate's refusal.
    Ran(ToolResult),
    /// Not sent on: refused, or a human (or auto mode's classifier) must answer first.
    Checked(Checked),
}

/// The port a call's result (or the gate's refusal) is sent to.
pub enum ResultPort {
    /// The caller that submitted the permit.
    Caller(RpcReplyPort<ToolResult>),
    /// The caller that asked the engine to authorize and submit the call.
    Authorized(RpcReplyPort<Authorized>),
}

impl ResultPort {
    /// Sends the result; a caller that gave up (timeout, cancelled turn) is not told.
    pub fn send(self, result: ToolResult) {
        match self {
            ResultPort::Caller(port) => drop(port.send(result)),
            ResultPort::Authorized(port) => drop(port.send(Authorized::Ran(result))),
        }
    }
}

impl From<RpcReplyPort<ToolResult>> for ResultPort {
    fn from(port: RpcReplyPort<ToolResult>) -> Self {
        ResultPort::Caller(port)
    }
}
