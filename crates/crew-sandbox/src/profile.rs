//! The sandbox profile of one command: how much power the OS grants it, chosen by the
//! permission engine from the decision that allowed it (`permission::profile`) and
//! carried with the call, `Permit` → gate → `ClearedCall` → executor → `ToolContext` →
//! `process::shell_command`. Nothing runs with more power than was granted: a command
//! the engine allowed as a read cannot write, one allowed without a human writes only
//! below the writable roots, and only a human's explicit answer or the user's own
//! settings run a command outside the sandbox.
//!
//! The type itself is plain data the engine picks and the runner enforces, so it lives in
//! `crew-protocol` (`crew_protocol::sandbox_profile`) and is re-exported here.

pub use crew_protocol::sandbox_profile::{NetworkAccess, SandboxProfile};

/// What a failed sandboxed command's stderr suggests: when it looks like the sandbox
/// stopped it (a write outside the roots, a read-only file system, a refused
/// connection in the read profile), a note saying so and naming the ways out. `None`
/// for an unsandboxed command or an unrelated failure.
pub fn failure_hint(profile: SandboxProfile, stderr: &str) -> Option<String> {
    if !profile.is_sandboxed() {
        return None;
    }
    let fs = [
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
    ]
    .iter()
    .any(|m| stderr.contains(m));
    let net = profile == SandboxProfile::Read
        && [
            "Network is unreachable",
            "Could not resolve host",
            "Connection refused",
        ]
        .iter()
        .any(|m| stderr.contains(m));
    if !fs && !net {
        return None;
    }
    let what = match profile {
        SandboxProfile::Read => {
            "it ran in the read profile (allowed without asking as a read-only command: no writes outside the private temp dir, no network)"
        }
        SandboxProfile::Bypass => {
            "it ran in the bypass profile (the home directory's own files, crew's state and protected paths are read-only, credential stores hidden)"
        }
        _ => {
            "it ran in the write profile (writes only below the writable roots; protected paths read-only; credential stores hidden)"
        }
    };
    Some(format!(
        "{FAILURE_NOTE}: {what}. If it must do this, \
         call run_command again with `outside_sandbox: true`: the user is asked and may run it \
         once outside the sandbox (never without a human). Or the user adds it to \
         `sandbox.excludedCommands`, or its directory to `sandbox.filesystem.allowWrite`, in \
         ~/.crew/settings.json or .crew/settings.local.json"
    ))
}

/// How the note [`failure_hint`] appends to a command's result begins: the TUI offers to
/// run a command outside the sandbox only after a result of it carried this note.
pub const FAILURE_NOTE: &str = "note: the OS sandbox may have stopped this command";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_lose_the_network_and_only_humans_outlast_a_missing_layer() {
        assert_eq!(SandboxProfile::Read.network(), NetworkAccess::None);
        assert_eq!(SandboxProfile::Write.network(), NetworkAccess::AllowList);
        assert!(!SandboxProfile::Read.human_backed());
        assert!(!SandboxProfile::Write.human_backed());
        assert!(SandboxProfile::Approved.human_backed());
        assert!(!SandboxProfile::Unsandboxed.is_sandboxed());
        assert_eq!(SandboxProfile::default(), SandboxProfile::Write);
    }

    #[test]
    fn a_sandbox_failure_is_named_with_the_ways_out() {
        let hint =
            failure_hint(SandboxProfile::Write, "bash: /etc/x: Read-only file system").unwrap();
        for way in [
            "outside the sandbox",
            "sandbox.excludedCommands",
            "sandbox.filesystem.allowWrite",
        ] {
            assert!(hint.contains(way), "{way}: {hint}");
        }
        assert!(failure_hint(SandboxProfile::Unsandboxed, "Permission denied").is_none());
        assert!(failure_hint(SandboxProfile::Write, "error: no such file").is_none());
        assert!(failure_hint(SandboxProfile::Read, "Could not resolve host: x").is_some());
    }
}
