//! The `PermissionEngine` actor: holds the policy (rule layers, additional roots) and the
//! session's grants, and answers with the pure `check` function: `Authorize` turns the
//! decision into a `Permit`, a `Pending` question or a refusal for the calling agent;
//! `Check` only reports the decision. Grants from the approver arrive as messages, so
//! every agent sees them on its next call.
//!
//! Build its arguments with `Policy::load(project_root, home)` (or `Policy::default()`).
//!
//! The decision itself — `check`, the hooks' say, the sandbox profile and the permit —
//! is the pure engine's (`crate::permission`, `Checked::authorize`); this module only
//! holds its state in an actor and sends allowed calls on to the gate (`onward`).

pub mod onward;

use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};

use crate::gate::actor::GateMsg;
use crate::permission::auto::suspend;
use crate::permission::{
    CheckRequest, Checked, Decision, HookOpinion, Layer, PermissionMode, Permit, Policy, RuleInfo,
    check, grants,
};
use crate::protocol::ToolResult;
use onward::{Authorized, Onward};

/// How long a grant lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// Until the session ends (in memory).
    Session,
    /// Persisted to `.crew/settings.local.json`.
    Forever,
}

/// Messages the permission engine accepts.
pub enum PermissionMsg {
    /// Decide one call for an agent about to run it: a `Permit` when allowed, a
    /// `Pending` when a human must answer, the decision when refused.
    Authorize {
        /// The calling agent (the permit is bound to it).
        agent: String,
        /// The call and the caller's situation.
        request: CheckRequest,
        /// What the PreToolUse hooks said (`Silent` when none decided): it can only
        /// move a fallback Ask to Allow or an Allow to Ask (`hook::apply`).
        hook: HookOpinion,
        /// Receives the answer.
        reply: RpcReplyPort<Checked>,
    },
    /// Like `Authorize`, but an allowed call goes straight on to the gate (`onward`), and
    /// the answer is the tool's result; a refused or asked call is answered as by
    /// `Authorize`. The decision is published before the call goes on.
    AuthorizeAndSubmit {
        /// The calling agent (the permit is bound to it).
        agent: String,
        /// The call and the caller's situation.
        request: CheckRequest,
        /// What the PreToolUse hooks said.
        hook: HookOpinion,
        /// Where an allowed call goes.
        onward: Onward,
        /// Receives the result, or the decision when the call did not go on.
        reply: RpcReplyPort<Authorized>,
    },
    /// Decide one call without authorising it (a query: `crew permissions check`, tests).
    Check(CheckRequest, RpcReplyPort<Decision>),
    /// Record a human's grant for calls like this one (send the same request that was
    /// checked). Replies with an error the user can read when the call cannot be granted
    /// (hard-denied, denied by a rule, a system tool) or the settings file cannot be
    /// written.
    Grant(CheckRequest, GrantScope, RpcReplyPort<Result<(), String>>),
    /// Replace the loaded layers (after settings changed); session grants are kept.
    Reload(Policy),
    /// The effective rules, highest layer first.
    ListRules(RpcReplyPort<Vec<RuleInfo>>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for PermissionMsg {}

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
        if let PermissionMsg::Authorize { .. } | PermissionMsg::AuthorizeAndSubmit { .. } = &msg {
            crate::supervise::faults::point("permission");
        }
        match msg {
            PermissionMsg::Authorize {
                agent,
                request,
                hook,
                reply,
            } => {
                let policy = state.for_mode(request.mode);
                // A caller that gave up (timeout) has dropped its port; nothing to do.
                let _ = reply.send(Checked::authorize(agent, request, &hook, policy));
            }
            PermissionMsg::AuthorizeAndSubmit {
                agent,
                request,
                hook,
                onward,
                reply,
            } => {
                let policy = state.for_mode(request.mode);
                match Checked::authorize(agent, request, &hook, policy) {
                    Checked::Allowed { permit, decision } => {
                        submit(permit, &decision, onward, reply)
                    }
                    // A caller that gave up (timeout) has dropped its port; nothing to do.
                    other => drop(reply.send(Authorized::Checked(other))),
                }
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
                let _ = reply.send(result.map(|_| ()).map_err(|e| e.to_string()));
            }
            PermissionMsg::Reload(mut policy) => {
                let session = state
                    .policy
                    .rules
                    .iter()
                    .filter(|r| r.layer == Layer::Session)
                    .cloned();
                policy.rules.extend(session);
                state.policy = policy;
                state.changed();
            }
            PermissionMsg::ListRules(reply) => {
                let _ = reply.send(state.policy.rule_infos());
            }
        }
        Ok(())
    }
}

/// Publishes the allowing decision, then hands the permit to the gate with the caller's
/// port: the gate's refusal or the tool's result is the caller's answer. A gate that is
/// not running (and not replaced in time) answers with an error result, never silence.
fn submit(permit: Permit, decision: &Decision, onward: Onward, reply: RpcReplyPort<Authorized>) {
    let Onward { gate, ctx, events } = onward;
    events.decided(permit.agent(), &permit.call().id, decision);
    let id = permit.call().id.clone();
    let msg = GateMsg::Submit {
        permit,
        ctx,
        reply: crate::gate::port::ResultPort::Authorized(reply),
    };
    gate.forward(msg, move |msg| {
        if let GateMsg::Submit { reply, .. } = msg {
            reply.send(ToolResult::error(
                id,
                "tool_not_allowed",
                "the gate is not running; the call was not run",
            ));
        }
    });
}
