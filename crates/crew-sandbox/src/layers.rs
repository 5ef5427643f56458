//! Which layers of the OS sandbox hold on this machine, probed once per process: Landlock
//! for files, Landlock for TCP (ABI 4), mount namespaces (read-only protected paths,
//! hidden credentials) and PID namespaces. Where namespaces are unavailable (an
//! AppArmor-restricted distribution, Docker's default seccomp profile) crew falls back to
//! a Landlock-only tier; where Landlock is missing, commands that no human approved are
//! refused (`refusal`). [`summary`] is the one line a session prints about it.
//!
//! Tests simulate missing layers: `CREW_TEST_SIMULATE_NO_LANDLOCK=1` (no Landlock at
//! all) and [`SIMULATE_NO_NAMESPACES_ENV`]` = 1` (no mount or PID namespaces). Both can only
//! make crew stricter or refuse more.

use super::profile::SandboxProfile;
use crate::landlock::{self, KernelSupport};

/// The test-only switch that makes crew see no mount or PID namespaces.
pub const SIMULATE_NO_NAMESPACES_ENV: &str = "CREW_TEST_SIMULATE_NO_NAMESPACES";

/// The layers that hold here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// Landlock confines file writes.
    pub landlock: bool,
    /// Landlock also refuses TCP connect and bind (ABI 4, Linux 6.7+).
    pub landlock_net: bool,
    /// Mount namespaces work (protected paths read-only, credential stores hidden).
    pub mount_ns: bool,
    /// PID namespaces work (a private `/proc`, nothing outlives the command).
    pub pid_ns: bool,
}

fn simulated(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v == "1")
}

/// Whether mount namespaces can be used here (and are not simulated away).
pub fn mount_namespaces() -> bool {
    !simulated(SIMULATE_NO_NAMESPACES_ENV) && super::mount_ns::available()
}

/// Whether PID namespaces can be used here (and are not simulated away).
pub fn pid_namespaces() -> bool {
    !simulated(SIMULATE_NO_NAMESPACES_ENV) && super::pid_ns::available()
}

/// Probes (once each) what holds on this machine.
pub fn probe() -> Layers {
    let landlock = landlock::kernel_support() == KernelSupport::Available;
    Layers {
        landlock,
        landlock_net: landlock && landlock::restricts_tcp(),
        mount_ns: mount_namespaces(),
        pid_ns: pid_namespaces(),
    }
}

impl Layers {
    /// The names of the layers that are missing.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.landlock {
            out.push("Landlock (file writes)");
        }
        if !self.landlock_net {
            out.push("Landlock ABI 4 (TCP)");
        }
        if !self.mount_ns {
            out.push("mount namespaces (read-only protected paths, hidden credential stores)");
        }
        if !self.pid_ns {
            out.push("PID namespaces (private /proc)");
        }
        out
    }

    /// One line saying which layers hold and what follows from the missing ones; `None`
    /// when everything holds.
    pub fn summary(&self) -> Option<String> {
        let missing = self.missing();
        if missing.is_empty() {
            return None;
        }
        let mut held = Vec::new();
        if self.landlock {
            held.push("Landlock (file writes)");
        }
        if self.landlock_net {
            held.push("Landlock (TCP)");
        }
        if self.mount_ns {
            held.push("mount namespaces");
        }
        if self.pid_ns {
            held.push("PID namespaces");
        }
        let consequence = if !self.landlock {
            "commands that no human approved are refused; approved commands run with the layers that hold"
        } else if !self.mount_ns {
            "Landlock-only tier: writes and TCP are confined, but credential stores are not hidden and protected files are guarded by snapshot and restore only"
        } else {
            "the missing layers' protection is not available"
        };
        Some(format!(
            "OS sandbox: holding: {}; missing: {}; {consequence}",
            if held.is_empty() {
                "nothing".to_string()
            } else {
                held.join(", ")
            },
            missing.join(", ")
        ))
    }

    /// Why a command in `profile` must be refused here, or `None` when it may run. A
    /// command that no human approved needs Landlock for its files and, in the read
    /// profile, a way to take away its network (a network namespace or Landlock ABI 4).
    pub fn refusal(&self, profile: SandboxProfile) -> Option<String> {
        if profile.human_backed() {
            return None;
        }
        let mut missing = Vec::new();
        if !self.landlock {
            missing.push("Landlock");
        }
        if profile == SandboxProfile::Read && !self.landlock_net && !self.mount_ns {
            missing.push("a network namespace or Landlock ABI 4 for TCP");
        }
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "the command was refused: it was allowed without asking ({profile} profile), and such \
             commands run only inside the OS sandbox, but this machine lacks {}. Enable Landlock \
             (Linux 5.13+, `lsm=landlock` on the kernel command line) or run crew where namespaces \
             are allowed; until then, use the default or acceptEdits mode and approve commands one \
             by one (add an `ask` rule such as `Bash(*)`), or set \"sandbox\": {{\"enabled\": false}} \
             in ~/.crew/settings.json to run commands without the sandbox (unsafe)",
            missing.join(" and ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Layers {
        Layers {
            landlock: true,
            landlock_net: true,
            mount_ns: true,
            pid_ns: true,
        }
    }

    #[test]
    fn a_missing_landlock_refuses_only_what_no_human_approved() {
        let none = Layers {
            landlock: false,
            landlock_net: false,
            ..all()
        };
        for p in [SandboxProfile::Read, SandboxProfile::Write] {
            let why = none.refusal(p).unwrap();
            assert!(why.contains("Landlock"), "{why}");
            assert!(why.contains("approve"), "{why}");
        }
        for p in [
            SandboxProfile::Approved,
            SandboxProfile::Bypass,
            SandboxProfile::Unsandboxed,
        ] {
            assert_eq!(none.refusal(p), None, "{p}");
        }
        assert_eq!(all().refusal(SandboxProfile::Read), None);
        assert_eq!(all().summary(), None);
    }

    #[test]
    fn the_landlock_only_tier_runs_reads_and_says_what_is_lost() {
        let tier = Layers {
            mount_ns: false,
            pid_ns: false,
            ..all()
        };
        assert_eq!(tier.refusal(SandboxProfile::Read), None);
        let line = tier.summary().unwrap();
        assert!(line.contains("Landlock-only tier"), "{line}");
        assert!(line.contains("credential stores are not hidden"), "{line}");
        // Without namespaces and without Landlock TCP, reads cannot lose the network.
        let old = Layers {
            landlock_net: false,
            ..tier
        };
        assert!(old.refusal(SandboxProfile::Read).is_some());
        assert_eq!(old.refusal(SandboxProfile::Write), None);
    }
}
