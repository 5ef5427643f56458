//! The `PermissionEngine` actor: its arguments, its state (the policy, grants included, and
//! what it remembers across a restart) and how it answers each `PermissionMsg`.

use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::onward::{Authorized, Onward, Submission};
use super::{GrantScope, PermissionMsg};
use crate::gate::actor::{GateMsg, Submitted};
use crate::gate::port::ResultPort;
use crate::permission::auto::suspend;
use crate::permission::{Checked, Decision, Layer, PermissionMode, Permit, Policy, check, grants};
use crate::protocol::ToolResult;

/// The actor (configuration only; state is built in `pre_start`).
pub struct PermissionEngine;

/// A copy of a supervised engine's policy, grants included, kept up to date by the
/// engine: a restarted engine starts from it, so no grant is lost with a crash.
pub type PolicyMemory = Arc<Mutex<Policy>>;

/// What the engine starts from (`Policy::into()` for an unsupervised engine).
pub struct EngineArgs {
    /// The policy.
    pub policy: Policy,
    /// Where to keep a copy of the policy after each change (`None`: nowhere).
    pub memory: Option<PolicyMemory>,
}

impl From<Policy> for EngineArgs {
    fn from(policy: Policy) -> Self {
        Self {
            policy,
            memory: None,
        }
    }
}

/// The engine's state.
pub struct EngineState {
    /// Loaded layers plus session-layer grants (as rules).
    policy: Policy,
    /// The same without the rules suspended in auto mode (`auto::suspend`), kept so
    /// calls in auto mode do not rebuild it; rebuilt whenever `policy` changes.
    auto_policy: Policy,
    memory: Option<PolicyMemory>,
}

impl EngineState {
    fn new(policy: Policy, memory: Option<PolicyMemory>) -> Self {
        let auto_policy = suspend::effective(&policy, PermissionMode::Auto).into_owned();
        Self {
            policy,
            auto_policy,
            memory,
        }
    }

    /// The policy a call in `mode` is decided by.
    fn for_mode(&self, mode: PermissionMode) -> &Policy {
        if mode == PermissionMode::Auto {
            &self.auto_policy
        } else {
            &self.policy
        }
    }

    /// After a change of `policy`: rebuilds the auto view and writes the policy through to
    /// the memory a restarted engine starts from.
    fn changed(&mut self) {
        self.auto_policy = suspend::effective(&self.policy, PermissionMode::Auto).into_owned();
        if let Some(memory) = &self.memory {
            // A poisoned lock only means a panic mid-copy; the copy is replaced whole.
            *memory.lock().unwrap_or_else(|e| e.into_inner()) = self.policy.clone();
        }
    }
}

impl Actor for PermissionEngine {
    type Msg = PermissionMsg;
    type State = EngineState;
    type Arguments = EngineArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: EngineArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(EngineState::new(args.policy, args.memory))
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PermissionMsg::Authorize {
                agent,
                request,
                hook,
                reply,
            } => {
                crate::supervise::faults::point("permission");
                let policy = state.for_mode(request.mode);
                // A caller that gave up (timeout) has dropped its port; nothing to do.
                let _ = reply.send(Checked::authorize(agent, request, &hook, policy));
            }
            PermissionMsg::AuthorizeAndSubmit { agent, calls } => {
                let mut allowed = Vec::with_capacity(calls.len());
                for Submission {
                    request,
                    hook,
                    onward,
                    reply,
                } in calls
                {
                    crate::supervise::faults::point("permission");
                    let policy = state.for_mode(request.mode);
                    match Checked::authorize(agent.clone(), request, &hook, policy) {
                        Checked::Allowed { permit, decision } => {
                            allowed.push((permit, decision, onward, reply));
                        }
                        // A caller that gave up (timeout) has dropped its port.
                        other => drop(reply.send(Authorized::Checked(other))),
                    }
                }
                submit(&agent, allowed);
            }
            PermissionMsg::Check(req, reply) => {
                // A caller that gave up (timeout) has dropped its port; nothing to do.
                let _ = reply.send(check(&req, state.for_mode(req.mode)));
            }
            PermissionMsg::Grant(req, scope, reply) => {
                let result = match scope {
                    GrantScope::Session => grants::grant_session(&req, &mut state.policy),
                    GrantScope::Forever => grants::grant_forever(
                        &req,
                        &mut state.policy,
                        &crate::config::settings::append_allow,
                    ),
                };
                state.changed();
                let _ = reply.send(result.map(|_| ()));
            }
            PermissionMsg::Reload(mut policy) => {
                let session = state
                    .policy
                    .rules
                    .iter()
                    .filter(|r| r.layer == Layer::Session)
                    .cloned();
                policy.rules.extend(session);
                state.policy = *policy;
                state.changed();
            }
            PermissionMsg::ListRules(reply) => {
                let _ = reply.send(state.policy.rule_infos());
            }
        }
        Ok(())
    }
}

/// Publishes the allowing decisions together (one transcript write), then hands each
/// permit to the gate with its caller's port: the gate's refusal or the tool's result is
/// the caller's answer. A gate that is not running (and not replaced in time) answers
/// with an error result, never silence.
fn submit(agent: &str, allowed: Vec<(Permit, Decision, Onward, RpcReplyPort<Authorized>)>) {
    let Some((_, _, first, _)) = allowed.first() else {
        return;
    };
    first.events.decided_all(
        agent,
        allowed
            .iter()
            .map(|(permit, d, ..)| (permit.call().id.as_str(), d)),
    );
    let gate = first.gate.clone();
    let calls = allowed
        .into_iter()
        .map(|(permit, _, Onward { ctx, .. }, reply)| Submitted {
            permit,
            ctx,
            reply: ResultPort::Authorized(reply),
        })
        .collect();
    gate.forward(GateMsg::SubmitAll(calls), |msg| {
        if let GateMsg::SubmitAll(calls) = msg {
            for Submitted { permit, reply, .. } in calls {
                reply.send(ToolResult::error(
                    &permit.call().id,
                    "tool_not_allowed",
                    "the gate is not running; the call was not run",
                ));
            }
        }
    });
}
