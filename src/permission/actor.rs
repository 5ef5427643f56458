//! The `PermissionEngine` actor: holds the policy (rule layers, additional roots) and the
//! session's grants, and answers `Check` with the pure `check` function. Grants from the
//! approver arrive as messages, so every agent sees them on its next call.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};

use super::{CheckRequest, Decision, Layer, Policy, Source, Verdict, check};

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
    /// Decide one call.
    Check(CheckRequest, RpcReplyPort<Decision>),
    /// Record a human's grant for calls like this one.
    Grant(CheckRequest, GrantScope, RpcReplyPort<Result<(), String>>),
}

/// The actor (configuration only; state is built in `pre_start`).
pub struct PermissionEngine;

/// The engine's state.
pub struct EngineState {
    policy: Policy,
    /// Exact (tool, arguments) pairs granted for this session.
    session_grants: Vec<(String, String)>,
}

impl Actor for PermissionEngine {
    type Msg = PermissionMsg;
    type State = EngineState;
    type Arguments = Policy;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        policy: Policy,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(EngineState {
            policy,
            session_grants: Vec::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PermissionMsg::Check(req, reply) => {
                let mut decision = check(&req, &state.policy);
                let granted = state
                    .session_grants
                    .iter()
                    .any(|(t, a)| *t == req.call.name && *a == req.call.arguments);
                if decision.verdict == Verdict::Ask && granted {
                    decision.verdict = Verdict::Allow;
                    decision.source = Source::Rule(Layer::Session);
                    decision.reason = "allowed for this session".into();
                }
                // A caller that gave up (timeout) has dropped its port; nothing to do.
                let _ = reply.send(decision);
            }
            PermissionMsg::Grant(req, _scope, reply) => {
                state
                    .session_grants
                    .push((req.call.name.clone(), req.call.arguments.clone()));
                let _ = reply.send(Ok(()));
            }
        }
        Ok(())
    }
}
