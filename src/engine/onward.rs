//! Sending an allowed call on without a detour: `PermissionMsg::AuthorizeAndSubmit` asks
//! the engine to decide a call and, when it is allowed outright, to hand the `Permit`
//! straight to the gate (the flow of the design: engine → gate → executor), instead of
//! answering the agent, which would only pass the permit on. The caller then waits on one
//! port for the whole answer: the tool's result (or the gate's refusal), or the engine's
//! decision when the call was refused or needs a human. One hop fewer per call, and the
//! decision is published (and recorded in the transcript) before the tool runs, as before.

use ractor::RpcReplyPort;

use crate::events::EventBus;
use crate::gate::actor::GateMsg;
use crate::permission::{CheckRequest, HookOpinion};
use crate::supervise::Slot;
use crate::tools::ToolContext;

/// The engine's answer to `AuthorizeAndSubmit` (defined with the gate's result port, which
/// sends it).
pub(crate) use crate::gate::port::Authorized;

/// Where an allowed call goes on to, and how it runs there.
pub struct Onward {
    /// The gate (through the session's slot, so a restarted gate is reached).
    pub gate: Slot<GateMsg>,
    /// Where and how the call runs (the caller's context for this call).
    pub ctx: ToolContext,
    /// Where the engine publishes its decision before the call goes on.
    pub events: EventBus,
}

/// One call of `AuthorizeAndSubmit`.
pub struct Submission {
    /// The call and the caller's situation.
    pub request: CheckRequest,
    /// What the PreToolUse hooks said.
    pub hook: HookOpinion,
    /// Where the call goes if allowed.
    pub onward: Onward,
    /// Receives the result, or the decision when the call did not go on.
    pub reply: RpcReplyPort<Authorized>,
}
