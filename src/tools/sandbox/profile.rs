//! The sandbox profile of one command: how much power the OS grants it, chosen by the
//! permission engine from the decision that allowed it (`permission::profile`) and
//! carried with the call, `Permit` → gate → `ClearedCall` → executor → `ToolContext` →
//! `process::shell_command`. Nothing runs with more power than was granted: a command
//! the engine allowed as a read cannot write, one allowed without a human writes only
//! below the writable roots, and only a human's explicit answer or the user's own
//! settings run a command outside the sandbox.

use serde::{Deserialize, Serialize};

/// How a command is confined, from the weakest grant to none at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxProfile {
    /// Allowed without a human as a read-only command: no writes anywhere except a
    /// private temp dir and `/dev/null`-like devices, and no network.
    Read,
    /// Allowed without a human by an allow rule or the mode's fallback (acceptEdits,
    /// dontAsk, auto's classifier): writes only below the writable roots, protected
    /// paths read-only, network as `sandbox.network` says.
    #[default]
    Write,
    /// A human approved it (once, for the session, forever): confined as [`Write`], but
    /// a layer that is missing on this machine does not refuse it (a human saw it).
    ///
    /// [`Write`]: SandboxProfile::Write
    Approved,
    /// bypassPermissions: no write limits below the roots and elsewhere, but the home
    /// directory's own files (shell start-up files, `~/.gitconfig`), crew's and Claude
    /// Code's configuration and state, and the protected paths stay read-only, and the
    /// credential stores stay hidden.
    Bypass,
    /// No OS confinement: only for a human's explicit "run it outside the sandbox", a
    /// command in `sandbox.excludedCommands` (user or local settings) or
    /// `sandbox.enabled: false` (user or local settings).
    Unsandboxed,
}

/// What network a profile allows. The network namespace and the allow-list proxy read
/// this; where no namespace can be made, Landlock (ABI 4) refuses TCP for [`None`].
///
/// [`None`]: NetworkAccess::None
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NetworkAccess {
    /// No network at all (loopback inside a private namespace at most).
    None,
    /// Only what `sandbox.network` allows (the allow-list proxy, when configured).
    AllowList,
    /// The host's network, unfiltered.
    Open,
}

impl SandboxProfile {
    /// The name used in events, results and settings.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxProfile::Read => "read",
            SandboxProfile::Write => "write",
            SandboxProfile::Approved => "approved",
            SandboxProfile::Bypass => "bypass",
            SandboxProfile::Unsandboxed => "unsandboxed",
        }
    }

    /// The network the profile allows.
    pub fn network(self) -> NetworkAccess {
        match self {
            SandboxProfile::Read => NetworkAccess::None,
            SandboxProfile::Write | SandboxProfile::Approved => NetworkAccess::AllowList,
            SandboxProfile::Bypass | SandboxProfile::Unsandboxed => NetworkAccess::Open,
        }
    }

    /// Whether a human (or the user's own settings) stands behind the command, so that a
    /// sandbox layer missing on this machine does not refuse it.
    pub fn human_backed(self) -> bool {
        matches!(
            self,
            SandboxProfile::Approved | SandboxProfile::Bypass | SandboxProfile::Unsandboxed
        )
    }

    /// Whether the command runs inside the OS sandbox at all.
    pub fn is_sandboxed(self) -> bool {
        self != SandboxProfile::Unsandboxed
    }
}

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

impl std::fmt::Display for SandboxProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
