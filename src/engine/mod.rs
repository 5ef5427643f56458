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

mod actor;
pub(crate) mod onward;

pub use actor::{EngineArgs, EngineState, PermissionEngine, PolicyMemory};

use ractor::RpcReplyPort;
use serde::{Deserialize, Serialize};

use crate::permission::grants::GrantError;
use crate::permission::{CheckRequest, Checked, Decision, HookOpinion, Policy, RuleInfo};
use onward::Submission;

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
    /// Like `Authorize`, for one call or a batch, but an allowed call goes straight on to
    /// the gate (`onward`), and its answer is the tool's result; a refused or asked call
    /// is answered as by `Authorize`. The decisions of the allowed calls are published
    /// together, before any of them goes on.
    AuthorizeAndSubmit {
        /// The calling agent (the permits are bound to it).
        agent: String,
        /// The calls, in the agent's order.
        calls: Vec<Submission>,
    },
    /// Decide one call without authorising it (a query: `crew permissions check`, tests).
    Check(CheckRequest, RpcReplyPort<Decision>),
    /// Record a human's grant for calls like this one (send the same request that was
    /// checked). Replies with an error the user can read when the call cannot be granted
    /// (hard-denied, denied by a rule, a system tool) or the settings file cannot be
    /// written.
    Grant(
        CheckRequest,
        GrantScope,
        RpcReplyPort<Result<(), GrantError>>,
    ),
    /// Replace the loaded layers (after settings changed); session grants are kept.
    Reload(Box<Policy>),
    /// The effective rules, highest layer first.
    ListRules(RpcReplyPort<Vec<RuleInfo>>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for PermissionMsg {}
