//! The sandbox profile of one command: how much power the OS grants it. The permission
//! engine picks it from the decision that allowed the call (`permission::profile` in
//! crewmaster), the call carries it to the executor, and the command runner enforces it
//! (`sandbox`). Plain data, so that the engine and the runner share it without
//! importing each other.

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

impl std::fmt::Display for SandboxProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
