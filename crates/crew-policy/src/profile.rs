//! Which sandbox profile a call's commands run in, chosen from the decision that allowed
//! it (design: "nothing runs with more power than a human granted"): unsandboxed only for
//! `sandbox.excludedCommands`, `sandbox.enabled: false` outside the unattended modes, or
//! a human's "run it outside the sandbox" (`Permit::approved`); bypassPermissions the
//! bypass profile; a read allowed without a human the read profile; anything else the
//! write profile (a human's approval makes it the approved one).
//!
//! A call asking to run outside the sandbox (`outside_sandbox: true`) is never allowed
//! without a human ([`require_human`]). Approved, it runs unconfined only if the human
//! said so, or if `sandbox.allowUnsandboxedCommands` says an approved request runs
//! outside, as Claude Code does by default.

use serde_json::Value;

use super::mode::unattended;
use super::{Category, CheckRequest, Decision, PermissionMode, Policy, TargetSpec, Verdict};
use crew_protocol::sandbox_profile::SandboxProfile;

/// The argument with which a command call asks to run outside the sandbox.
pub const OUTSIDE_SANDBOX_ARG: &str = "outside_sandbox";

/// The command text of a call whose tool runs commands, with the call's arguments.
fn command_of(req: &CheckRequest) -> Option<(String, Value)> {
    let Some(TargetSpec::Command { field }) = req.spec.as_ref().map(|s| &s.target) else {
        return None;
    };
    let args: Value = serde_json::from_str(&req.call.arguments).ok()?;
    Some((args.get(field)?.as_str()?.to_string(), args))
}

/// Whether the call asks to run outside the sandbox.
fn asks_outside(req: &CheckRequest) -> bool {
    command_of(req)
        .is_some_and(|(_, a)| a.get(OUTSIDE_SANDBOX_ARG).and_then(Value::as_bool) == Some(true))
}

/// The profile for `req` decided as `decision` under `policy`.
pub fn choose(req: &CheckRequest, decision: &Decision, policy: &Policy) -> SandboxProfile {
    let command = command_of(req).map(|(c, _)| c);
    if command.is_some() {
        if (policy.sandbox.disabled && !unattended(req.mode))
            || command
                .as_deref()
                .is_some_and(|c| policy.sandbox.excludes(c))
        {
            return SandboxProfile::Unsandboxed;
        }
        if policy.sandbox.allow_unsandboxed_commands
            && !unattended(req.mode)
            && asks_outside(req)
            && decision.verdict == Verdict::Ask
        {
            // Only a human's answer to this question runs it (`Permit::approved`).
            return SandboxProfile::Unsandboxed;
        }
    }
    if req.mode == PermissionMode::BypassPermissions {
        return SandboxProfile::Bypass;
    }
    if decision.verdict == Verdict::Allow && decision.category == Some(Category::Read) {
        return SandboxProfile::Read;
    }
    SandboxProfile::Write
}

/// A call asking to run outside the sandbox is never allowed without a human: an Allow
/// becomes an explicit Ask in the attended modes, and an Allow or Ask a Deny under
/// dontAsk and auto (whose classifier is no human).
/// Other decisions, bypassPermissions (which asks nothing; the request is ignored there)
/// and `sandbox.enabled: false` (everything runs outside already) are left unchanged.
pub fn require_human(req: &CheckRequest, mut decision: Decision, policy: &Policy) -> Decision {
    if !asks_outside(req)
        || decision.verdict == Verdict::Deny
        || policy.sandbox.disabled
        || req.mode == PermissionMode::BypassPermissions
    {
        return decision;
    }
    // Under auto an Ask would go to the classifier, which is no human either.
    if unattended(req.mode) {
        decision.verdict = Verdict::Deny;
        decision.reason = "the command asks to run outside the OS sandbox, which needs a human's approval, and nobody is asked in this mode; run it without `outside_sandbox`, or have the user add it to `sandbox.excludedCommands`".into();
    } else if decision.verdict == Verdict::Allow {
        decision.verdict = Verdict::Ask;
        decision.reason = format!(
            "the command asks to run outside the OS sandbox ({}); answer `o` to run it once outside, or allow it to run sandboxed",
            decision.reason
        );
    }
    decision.explicit_ask = true;
    decision
}
