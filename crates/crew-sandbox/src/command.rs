//! How `run_command` (and a hook, and a background command) must confine the processes it
//! starts: no confinement, or Landlock and the namespaces with the writable roots and the
//! call's profile.

use std::path::PathBuf;

use super::profile::SandboxProfile;

/// How `run_command` must confine the processes it starts. The session gives each agent
/// its writable roots; the gate sets the profile of each call from its permit
/// ([`CommandSandbox::for_call`]), so the profile is always the one the permission engine
/// (or a human) chose for that call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CommandSandbox {
    /// No OS-level confinement whatever the profile (the user's own hooks, tests).
    #[default]
    None,
    /// Linux Landlock, namespaces and the protected-path guard, as `profile` says.
    Landlock {
        /// Directories the write and approved profiles may write below.
        writable_roots: Vec<PathBuf>,
        /// The call's profile (the session's default until the gate sets it: write).
        profile: SandboxProfile,
    },
}

impl CommandSandbox {
    /// Confinement below `writable_roots`, in the write profile until a call sets its own.
    pub fn landlock(writable_roots: Vec<PathBuf>) -> Self {
        CommandSandbox::Landlock {
            writable_roots,
            profile: SandboxProfile::Write,
        }
    }

    /// The same roots with the profile a call's permit carries (no confinement stays none).
    pub fn for_call(self, profile: SandboxProfile) -> Self {
        match self {
            CommandSandbox::None => CommandSandbox::None,
            CommandSandbox::Landlock { writable_roots, .. } => CommandSandbox::Landlock {
                writable_roots,
                profile,
            },
        }
    }

    /// The profile commands run in: `Unsandboxed` when there is no confinement.
    pub fn profile(&self) -> SandboxProfile {
        match self {
            CommandSandbox::None => SandboxProfile::Unsandboxed,
            CommandSandbox::Landlock { profile, .. } => *profile,
        }
    }
}
