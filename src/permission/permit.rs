//! What the permission engine hands out: a `Permit` for a call it allowed, a `Pending` for
//! a call that needs a human, and nothing but a `Decision` for a refusal. A `Permit` is
//! the only thing the gate accepts (design.md invariant 1). Its fields are private and
//! its constructors are visible only inside `permission`, so a permit exists only where
//! the engine allowed the call — or where a human did: `Permit::approved` turns a
//! `Pending` into a permit only together with an `Approval`, which only the approver can
//! build (`crate::approver::Approval`).
//!
//! Code outside the engine can neither build a permit by hand nor call its constructor:
//!
//! ```compile_fail,E0451
//! use crewmaster::permission::Permit;
//! use crewmaster::protocol::ToolCall;
//! let forged = Permit {
//!     call: ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{}".into() },
//!     agent: "lead".into(),
//!     cwd: "/".into(),
//! };
//! ```
//!
//! ```compile_fail,E0624
//! use crewmaster::permission::Permit;
//! use crewmaster::protocol::ToolCall;
//! let call = ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{}".into() };
//! let forged = Permit::issue(call, "lead".into(), "/".into());
//! ```
//!
//! Nor can it turn an Ask into a permit without the approver's token:
//!
//! ```compile_fail,E0451
//! use crewmaster::approver::Approval;
//! use crewmaster::protocol::ToolCall;
//! let call = ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{}".into() };
//! let fake = Approval { agent: "lead".into(), call, answer: crewmaster::approver::ApprovalAnswer::AllowOnce };
//! ```

use std::path::{Path, PathBuf};

use crate::approver::{Approval, ApprovalAnswer};
use crate::protocol::ToolCall;
use crate::protocol::sandbox_profile::SandboxProfile;
use crew_policy::{CheckRequest, Decision, HookOpinion, Policy, check, hook, profile};

/// Leave to run one call: issued by the permission engine for an Allow, or built from a
/// `Pending` and a human's `Approval`. Bound to the call (id, name, arguments), the
/// calling agent and its working directory, and carries the sandbox profile its
/// commands run in (chosen from the decision, `permission::profile`). Deliberately
/// neither `Clone` nor `Deserialize`: it is spent when submitted to the gate.
#[derive(Debug)]
pub struct Permit {
    call: ToolCall,
    agent: String,
    cwd: PathBuf,
    profile: SandboxProfile,
}

impl Permit {
    /// Only the engine issues permits (this module and `engine`).
    pub(super) fn issue(
        call: ToolCall,
        agent: String,
        cwd: PathBuf,
        profile: SandboxProfile,
    ) -> Permit {
        Permit {
            call,
            agent,
            cwd,
            profile,
        }
    }

    /// A permit for a call the engine asked about and a human approved. Fails when the
    /// approval was given for another call or another agent. The command runs in the
    /// approved profile (confined like the write profile), outside the sandbox only when
    /// the human answered "run it outside the sandbox" (or the user's settings already
    /// put it there), and in bypass as the mode says.
    pub fn approved(pending: Pending, approval: &Approval) -> Result<Permit, ApprovalMismatch> {
        if approval.call() != &pending.call || approval.agent() != pending.agent {
            return Err(ApprovalMismatch {
                call_id: pending.call.id,
            });
        }
        let profile = match (approval.answer(), pending.profile) {
            (ApprovalAnswer::AllowOutsideSandbox, _) => SandboxProfile::Unsandboxed,
            (_, p @ (SandboxProfile::Unsandboxed | SandboxProfile::Bypass)) => p,
            _ => SandboxProfile::Approved,
        };
        Ok(Permit::issue(
            pending.call,
            pending.agent,
            pending.cwd,
            profile,
        ))
    }

    /// A permit for a call the engine asked about and auto mode's classifier allowed.
    /// Fails when the classifier judged another call.
    pub fn classified(
        pending: Pending,
        allow: &crate::classifier::ClassifierAllow,
    ) -> Result<Permit, ApprovalMismatch> {
        if allow.call() != &pending.call {
            return Err(ApprovalMismatch {
                call_id: pending.call.id,
            });
        }
        // The classifier is no human: its allow runs in the write profile.
        let profile = match pending.profile {
            SandboxProfile::Read | SandboxProfile::Approved => SandboxProfile::Write,
            p => p,
        };
        Ok(Permit::issue(
            pending.call,
            pending.agent,
            pending.cwd,
            profile,
        ))
    }

    /// The sandbox profile the call's commands run in.
    pub fn profile(&self) -> SandboxProfile {
        self.profile
    }

    /// The permitted call.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The agent the permit was issued to.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The working directory the call was judged in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Spends the permit: the call, the agent, the working directory and the profile.
    pub fn into_parts(self) -> (ToolCall, String, PathBuf, SandboxProfile) {
        (self.call, self.agent, self.cwd, self.profile)
    }
}

#[cfg(test)]
impl Permit {
    /// A permit for the crate's own unit tests (the gate's); never compiled otherwise.
    pub(crate) fn for_test(call: ToolCall, agent: &str, cwd: &str) -> Permit {
        Permit::issue(call, agent.into(), cwd.into(), SandboxProfile::Write)
    }
}

/// A call the engine answered with Ask: it runs only once a human approves it
/// (`Permit::approved`). Built only by the engine.
#[derive(Debug)]
pub struct Pending {
    call: ToolCall,
    agent: String,
    cwd: PathBuf,
    decision: Decision,
    profile: SandboxProfile,
}

impl Pending {
    /// Only the engine builds pending calls.
    pub(super) fn new(
        call: ToolCall,
        agent: String,
        cwd: PathBuf,
        decision: Decision,
        profile: SandboxProfile,
    ) -> Pending {
        Pending {
            call,
            agent,
            cwd,
            decision,
            profile,
        }
    }

    /// The call waiting for an answer.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The asking agent.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Why the engine asks.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }
}

/// The approval presented with a pending call was given for a different call or agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the approval does not belong to call `{call_id}`; the call was not run")]
pub struct ApprovalMismatch {
    /// The pending call's id.
    pub call_id: String,
}

/// The engine's answer to a `Check` from an agent: leave to run, a question for a human,
/// or a refusal.
#[derive(Debug)]
pub enum Checked {
    /// Allowed: submit the permit to the gate.
    Allowed {
        /// Leave to run the call.
        permit: Permit,
        /// Why it was allowed.
        decision: Decision,
    },
    /// Needs a human: ask the approver, then combine with its approval.
    Asked(Pending),
    /// Refused.
    Denied(Decision),
}

impl Checked {
    /// The engine's whole answer to `agent`'s call: the pure `check` under `policy`, moved
    /// by the PreToolUse hooks' `opinion` (`hook::apply`), a human required for a call
    /// asking to leave the sandbox (`profile::require_human`), and the sandbox profile
    /// chosen for it (`profile::choose`). The `PermissionEngine` actor answers with it.
    pub fn authorize(
        agent: String,
        request: CheckRequest,
        opinion: &HookOpinion,
        policy: &Policy,
    ) -> Checked {
        let decision = hook::apply(check(&request, policy), opinion, request.mode);
        let decision = profile::require_human(&request, decision, policy);
        let profile = profile::choose(&request, &decision, policy);
        let CheckRequest { call, cwd, .. } = request;
        Checked::from_decision(call, agent, cwd, decision, profile)
    }

    /// Wraps a decision of the pure `check` for the calling agent, with the sandbox
    /// profile chosen for it (`permission::profile::choose`).
    fn from_decision(
        call: ToolCall,
        agent: String,
        cwd: PathBuf,
        decision: Decision,
        profile: SandboxProfile,
    ) -> Checked {
        use crew_policy::Verdict;
        match decision.verdict {
            Verdict::Allow => Checked::Allowed {
                permit: Permit::issue(call, agent, cwd, profile),
                decision,
            },
            Verdict::Ask => Checked::Asked(Pending::new(call, agent, cwd, decision, profile)),
            Verdict::Deny => Checked::Denied(decision),
        }
    }

    /// The decision behind the answer.
    pub fn decision(&self) -> &Decision {
        match self {
            Checked::Allowed { decision, .. } | Checked::Denied(decision) => decision,
            Checked::Asked(p) => &p.decision,
        }
    }
}
