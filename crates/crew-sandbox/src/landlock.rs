//! Linux Landlock confinement for commands: reads and execution anywhere, writes only
//! where the call's sandbox profile allows (the read profile: the private temp dir and
//! the harmless devices, and no TCP; the write profile: below the writable roots too; the
//! bypass profile: everywhere but the home directory's own files and crew's state); no terminal
//! is writable, and (ABI 5, Linux 6.10+) device ioctls are allowed only on those devices,
//! so a command cannot inject keystrokes into a terminal with `TIOCSTI`.
//!
//! The ruleset is built in the parent (opening directories and allocating is not allowed
//! between `fork` and `exec`); the child only calls `prctl` and `landlock_restrict_self`
//! from `pre_exec`, both plain system calls. The sandbox fails closed: when the kernel
//! cannot enforce Landlock the command is refused, never run unconfined.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, RulesetStatus, path_beneath_rules,
};

use crate::profile::SandboxProfile;

/// The newest Landlock ABI whose filesystem rights we ask for. V3 covers reading,
/// writing, creating, removing, renaming across directories and truncating; V5 adds the
/// device ioctl right, granted only on [`WRITABLE_DEVICES`]. Older kernels enforce what
/// they know (best effort above V1).
const TARGET_ABI: ABI = ABI::V5;

/// Devices bash and common tools write to; writing them (or an ioctl on them) changes no
/// file and reaches no terminal. `/dev/tty`, `/dev/ptmx` and `/dev/pts` are deliberately
/// absent: commands run without a terminal.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/shm"];

/// The errno the child reports when `landlock_restrict_self` could not confine it; the
/// parent turns it back into [`SandboxError::NotEnforced`].
pub const NOT_ENFORCED_ERRNO: i32 = nix::errno::Errno::ENOTSUP as i32;

/// Whether the running kernel can enforce Landlock filesystem rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelSupport {
    /// Landlock is built in and enabled.
    Available,
    /// Landlock is missing or disabled; the text says what the probe saw.
    Unavailable(&'static str),
}

/// Why a command could not be confined. Every message says how to opt out.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel has no (enabled) Landlock, so the command was refused.
    #[error(
        "the command was refused: the OS sandbox (Linux Landlock) is required but {0}. {ADVICE}"
    )]
    Unsupported(String),
    /// A layer the call's profile needs is missing here (the text says which, and what
    /// to do).
    #[error("{0}")]
    Unavailable(String),
    /// Building the ruleset failed.
    #[error(
        "the command was refused: the Landlock ruleset could not be built ({0}). \
         Check that the writable roots exist. {ADVICE}"
    )]
    Ruleset(#[from] RulesetError),
    /// The child could not build its mount namespace (read-only protected paths).
    #[error(
        "the command was refused: the mount namespace that keeps .git/hooks, .git/config and \
         settings read-only could not be set up ({0}). {ADVICE}"
    )]
    MountNamespace(io::Error),
    /// The child could not build its network namespace (loopback only, or the proxy).
    #[error(
        "the command was refused: the network namespace that cuts it off from the network \
         (loopback only, or the sandbox.network.allowedDomains proxy) could not be set up ({0}). \
         {ADVICE}"
    )]
    NetworkNamespace(io::Error),
    /// The command's resource limits (its pids cgroup, file-size and CPU rlimits) could
    /// not be set up.
    #[error(
        "the command was refused: its resource limits (process count cgroup, file size, CPU \
         time) could not be set up ({0}). Set \"limits\" in the settings to lower or remove a \
         limit, or check that crew may create cgroups"
    )]
    Limits(io::Error),
    /// The child could not restrict itself.
    #[error(
        "the command was refused: the kernel did not enforce the Landlock sandbox in the \
         child process. {ADVICE}"
    )]
    NotEnforced,
}

/// What a user can do when confinement is impossible. Commands that run unasked (every
/// command allowed by a rule or by the mode, in every mode; subagents, teammates) are
/// always confined, so the way to run commands without the sandbox is a human's approval
/// of each one, in the default or acceptEdits mode.
pub const ADVICE: &str = "Commands that run without asking (allowed by a rule or by the \
    permission mode, dontAsk, subagents, teammates) are always confined, and project settings \
    cannot turn that off. To run commands on this machine, use the default or acceptEdits \
    permission mode with an `ask` rule such as `Bash(*)`, so that each command is approved \
    first (approved commands run with the layers that hold), or list a command in \
    `sandbox.excludedCommands` of your own settings";

/// The test-only switch that makes [`kernel_support`] report Landlock missing, so tests
/// can follow the refusal path on any kernel. It can only make crew stricter.
pub const SIMULATE_MISSING_ENV: &str = "CREW_TEST_SIMULATE_NO_LANDLOCK";

/// Probes the kernel once per process. Reports Landlock missing when
/// [`SIMULATE_MISSING_ENV`] is `1` (tests of the refusal path).
pub fn kernel_support() -> KernelSupport {
    if std::env::var_os(SIMULATE_MISSING_ENV).is_some_and(|v| v == "1") {
        return KernelSupport::Unavailable(
            "missing (simulated by CREW_TEST_SIMULATE_NO_LANDLOCK=1)",
        );
    }
    static SUPPORT: OnceLock<KernelSupport> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let probe = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V1))
            .and_then(|r| r.create());
        match probe {
            Ok(_) => KernelSupport::Available,
            Err(_) => KernelSupport::Unavailable("this kernel does not support Landlock"),
        }
    })
}

/// Whether the kernel's Landlock restricts device ioctls (ABI 5, Linux 6.10+): only then
/// is `TIOCSTI` on a terminal a command opened for reading refused by Landlock itself.
pub fn restricts_device_ioctls() -> bool {
    static V5: OnceLock<bool> = OnceLock::new();
    *V5.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::IoctlDev)
            .and_then(|r| r.create())
            .is_ok()
    })
}

/// Whether the kernel's Landlock can refuse TCP connect and bind (ABI 4, Linux 6.7+): the
/// read profile's "no network" where no network namespace can be made.
pub fn restricts_tcp() -> bool {
    static V4: OnceLock<bool> = OnceLock::new();
    *V4.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)
            .and_then(|r| r.create())
            .is_ok()
    })
}

/// The temp directory confined commands get (defined with the other state paths in
/// `store`, re-exported here for the sandbox).
pub use crew_config::places::sandbox_temp_dir;

/// The roots a confined command may write below: the given roots and the private sandbox
/// temp directory (the harmless devices, `/dev/null` and kin, come on top). Roots that do not exist are
/// skipped by Landlock (so writes there stay denied).
pub fn effective_writable_roots(writable_roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = writable_roots.to_vec();
    roots.push(sandbox_temp_dir());
    roots.sort();
    roots.dedup();
    roots
}

/// The git directories a confined command in a linked worktree may write, so that
/// `git add` and `git commit` work and nothing else of the repository is reachable: the
/// worktree's private git dir (`.git/worktrees/NAME`: its index and HEAD; its
/// `commondir` and `gitdir` links are bound read-only by the mount namespace), the
/// common `objects/` directory, and the ref and reflog directories that hold only this
/// task's branch (`refs/heads/crew/<task>/` and `logs/refs/heads/crew/<task>/`; the
/// reflog directory is created here, as a confined `git commit` could not create it).
///
/// The user's branches (`refs/heads/main`), `packed-refs`, the common `config` and
/// `hooks` stay read-only. A worktree checked out on a branch outside `crew/<task>/`
/// gets no ref directory at all: its commits then fail rather than reach other refs.
/// Empty when `worktree/.git` is a directory or missing.
pub fn git_writable_dirs(worktree: &Path) -> Vec<PathBuf> {
    let Some(private) = crate::protect::private_git_dir(worktree) else {
        return Vec::new();
    };
    let mut dirs = vec![private.clone()];
    let Ok(common) = std::fs::read_to_string(private.join("commondir")) else {
        return dirs;
    };
    let common = private.join(common.trim());
    let common = common.canonicalize().unwrap_or(common);
    dirs.push(common.join("objects"));
    let head = std::fs::read_to_string(private.join("HEAD")).unwrap_or_default();
    if let Some(task_dir) = head
        .trim()
        .strip_prefix("ref: refs/heads/")
        .and_then(own_ref_dir)
    {
        let refs = common.join("refs/heads").join(&task_dir);
        let logs = common.join("logs/refs/heads").join(&task_dir);
        if let Err(e) = std::fs::create_dir_all(&logs) {
            tracing::warn!("cannot create the reflog directory {}: {e}", logs.display());
        }
        dirs.push(refs);
        dirs.push(logs);
    }
    dirs
}

/// Entries of the home directory the bypass profile may write below: its subdirectories,
/// except those holding code the user's shell, git or desktop runs, and crew's and
/// Claude Code's configuration and state. The files directly in the home directory
/// (`.bashrc`, `.profile`, `.gitconfig`, …) are not granted, nor creating new ones there.
const BYPASS_KEPT_IN_HOME: &[&str] = &[
    ".crew",
    ".claude",
    ".config",
    ".ssh",
    ".gnupg",
    ".bashrc.d",
    ".local",
    ".aws",
    ".kube",
    ".docker",
    ".azure",
    ".password-store",
    ".oh-my-zsh",
];

/// Entries of `~/.config` and `~/.local` the bypass profile may not write below.
const BYPASS_KEPT_IN_CONFIG: &[&str] = &[
    "git",
    "fish",
    "systemd",
    "autostart",
    "environment.d",
    "gh",
    "gcloud",
    "crew",
    "claude",
    "bin",
    "share",
];

/// The directories the bypass profile may write below, besides the roots and the sandbox
/// temp dir: every directory of the file system except the way down to `home` (each
/// sibling of each of its ancestors is granted whole), and inside `home` every
/// subdirectory but [`BYPASS_KEPT_IN_HOME`] (`~/.config` and `~/.local` one level deeper,
/// but [`BYPASS_KEPT_IN_CONFIG`]). Landlock grants only, so the home directory itself,
/// its files and the kept directories stay read-only, and of `/dev` only the harmless
/// devices are writable. Without a home directory: every directory of `/` but `/dev`.
pub fn bypass_writable_dirs(home: Option<&Path>) -> Vec<PathBuf> {
    let subdirs = |dir: &Path, kept: &[&str], skip: Option<&Path>| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .filter(|p| Some(p.as_path()) != skip)
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_none_or(|n| !kept.contains(&n))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let Some(home) = home.and_then(|h| h.canonicalize().ok()) else {
        return subdirs(Path::new("/"), &["dev"], None);
    };
    let mut out = Vec::new();
    let ancestors: Vec<&Path> = home.ancestors().skip(1).collect();
    for (i, dir) in ancestors.iter().enumerate() {
        // The ancestor's child on the way down to home is not granted whole.
        let towards = if i == 0 {
            Some(home.as_path())
        } else {
            Some(ancestors[i - 1])
        };
        // `/dev` keeps only the harmless devices (terminals stay out of reach).
        let kept: &[&str] = if dir.parent().is_none() {
            &["dev"]
        } else {
            &[]
        };
        out.extend(subdirs(dir, kept, towards));
    }
    out.extend(subdirs(&home, BYPASS_KEPT_IN_HOME, None));
    for nested in [".config", ".local"] {
        out.extend(subdirs(&home.join(nested), BYPASS_KEPT_IN_CONFIG, None));
    }
    out.sort();
    out.dedup();
    out
}

/// `crew/<task>` for a branch `crew/<task>/<name…>`: the directory only this task's
/// branches live in. Anything else (a branch directly in `crew/`, `..`) has none.
fn own_ref_dir(branch: &str) -> Option<PathBuf> {
    let mut parts = branch.split('/');
    let (Some("crew"), Some(task), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    let valid = |p: &str| !p.is_empty() && p != "." && p != "..";
    (valid(task) && branch.split('/').all(valid)).then(|| Path::new("crew").join(task))
}

/// The rights below a writable root: everything but making device nodes (root could
/// otherwise `mknod` a terminal or a disk inside its worktree) and device ioctls.
fn root_access() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(TARGET_ABI)
        & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
}

/// A ruleset built in the parent, ready to be applied in the child by [`apply`].
///
/// [`apply`]: PreparedLandlock::apply
#[derive(Debug)]
pub struct PreparedLandlock {
    ruleset: Option<RulesetCreated>,
}

impl PreparedLandlock {
    /// Builds the ruleset of `profile` for `writable_roots`, refusing when `support` says
    /// the kernel cannot enforce it. The read profile writes only the private temp dir and
    /// the harmless devices and (ABI 4) opens no TCP connection; the write and approved
    /// profiles write below the roots; the bypass profile writes anywhere but the home
    /// directory's own files and crew's state ([`bypass_writable_dirs`]). Pass
    /// [`kernel_support()`] except in tests of the refusal path.
    pub fn prepare(
        writable_roots: &[PathBuf],
        profile: SandboxProfile,
        support: KernelSupport,
    ) -> Result<Self, SandboxError> {
        Self::prepare_with_network(writable_roots, profile, support, None)
    }

    /// [`prepare`](Self::prepare), also fencing TCP with `network` (the tier without
    /// network namespaces, `sandbox::net::tcp_fence`).
    pub fn prepare_with_network(
        writable_roots: &[PathBuf],
        profile: SandboxProfile,
        support: KernelSupport,
        network: Option<&crate::net::TcpFence>,
    ) -> Result<Self, SandboxError> {
        if let KernelSupport::Unavailable(why) = support {
            return Err(SandboxError::Unsupported(why.to_string()));
        }
        let mut roots = match profile {
            SandboxProfile::Read => effective_writable_roots(&[]),
            _ => effective_writable_roots(writable_roots),
        };
        if profile == SandboxProfile::Bypass {
            roots.extend(bypass_writable_dirs(dirs::home_dir().as_deref()));
        }
        let mut ruleset = Ruleset::default()
            // Version 1 rights are required: without them nothing is confined.
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V1))?
            // Newer rights (refer, truncate) are added where the kernel has them.
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET_ABI))?;
        ruleset = match network {
            // The tier without network namespaces: TCP only to the proxy's port.
            Some(fence) => fence.handle(ruleset)?,
            // No rule allows any port: every TCP connect and bind is refused (ABI 4+;
            // older kernels leave it to the network namespace).
            None if profile == SandboxProfile::Read => {
                ruleset.handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)?
            }
            None => ruleset,
        };
        let ruleset = ruleset
            .create()?
            .add_rules(path_beneath_rules(
                [Path::new("/")],
                AccessFs::from_read(TARGET_ABI),
            ))?
            .add_rules(path_beneath_rules(&roots, root_access()))?
            .add_rules(path_beneath_rules(
                WRITABLE_DEVICES,
                AccessFs::from_all(TARGET_ABI),
            ))?;
        let ruleset = match network {
            Some(fence) => fence.grant(ruleset)?,
            None => ruleset,
        };
        Ok(Self {
            ruleset: Some(ruleset),
        })
    }

    /// Confines the calling process. Meant for `pre_exec`: it only makes system calls
    /// (`prctl`, `landlock_restrict_self`, `close`) and allocates nothing. Applying twice
    /// is an error, as is a kernel that did not enforce the rules.
    pub fn apply(&mut self) -> io::Result<()> {
        let ruleset = self
            .ruleset
            .take()
            .ok_or_else(|| io::Error::from_raw_os_error(NOT_ENFORCED_ERRNO))?;
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
            _ => Err(io::Error::from_raw_os_error(NOT_ENFORCED_ERRNO)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_kernel_is_refused_with_how_to_opt_out() {
        let err = PreparedLandlock::prepare(
            &[PathBuf::from("/tmp")],
            SandboxProfile::Write,
            KernelSupport::Unavailable("Landlock is disabled"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("refused"), "{msg}");
        assert!(msg.contains("Landlock is disabled"), "{msg}");
        assert!(msg.contains("dontAsk"), "{msg}");
        // The advice never claims a setting turns the sandbox off for unasked commands.
        assert!(!msg.contains("\"enabled\": false"), "{msg}");
        assert!(msg.contains("acceptEdits"), "{msg}");
    }

    #[test]
    fn writable_roots_include_a_private_temp_dir_and_dev_null() {
        let roots = effective_writable_roots(&[PathBuf::from("/work/x")]);
        assert!(roots.contains(&PathBuf::from("/work/x")));
        assert!(roots.contains(&sandbox_temp_dir()));
        // Not the shared temp dir: a checkout living there must stay protected.
        assert!(!roots.contains(&std::env::temp_dir()));
        assert!(!roots.contains(&PathBuf::from("/tmp")));
        for tty in ["/dev/tty", "/dev/pts", "/dev/ptmx"] {
            assert!(!roots.contains(&PathBuf::from(tty)), "{tty}");
            assert!(!WRITABLE_DEVICES.contains(&tty), "{tty}");
        }
        assert!(!roots.contains(&PathBuf::from("/")));
    }

    #[test]
    fn bypass_grants_neither_the_home_files_nor_crews_state() {
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().canonicalize().unwrap();
        for d in [".crew", ".config/git", ".config/htop", "src/proj", ".cache"] {
            std::fs::create_dir_all(home_path.join(d)).unwrap();
        }
        std::fs::write(home_path.join(".bashrc"), "").unwrap();
        let dirs = bypass_writable_dirs(Some(&home_path));
        assert!(dirs.contains(&home_path.join("src")), "{dirs:?}");
        assert!(dirs.contains(&home_path.join(".cache")), "{dirs:?}");
        assert!(dirs.contains(&home_path.join(".config/htop")), "{dirs:?}");
        for kept in ["", ".crew", ".config", ".config/git", ".bashrc"] {
            let p = home_path.join(kept);
            assert!(!dirs.iter().any(|d| p.starts_with(d)), "{kept}: {dirs:?}");
        }
        // Outside the home directory everything else is granted, never `/` itself.
        assert!(!dirs.contains(&PathBuf::from("/")));
        assert!(dirs.contains(&PathBuf::from("/usr")) || !Path::new("/usr").is_dir());
    }

    #[test]
    fn git_dirs_of_a_plain_checkout_are_empty_and_of_a_linked_worktree_narrow() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert!(git_writable_dirs(dir.path()).is_empty());

        let wt = tempfile::tempdir().unwrap();
        let private = dir.path().join(".git/worktrees/wt");
        std::fs::create_dir_all(&private).unwrap();
        std::fs::write(private.join("commondir"), "../..\n").unwrap();
        std::fs::write(private.join("HEAD"), "ref: refs/heads/crew/t1/fix\n").unwrap();
        std::fs::write(
            wt.path().join(".git"),
            format!("gitdir: {}\n", private.display()),
        )
        .unwrap();
        let common = dir.path().join(".git").canonicalize().unwrap();
        let dirs = git_writable_dirs(wt.path());
        assert_eq!(
            dirs,
            [
                private.clone(),
                common.join("objects"),
                common.join("refs/heads/crew/t1"),
                common.join("logs/refs/heads/crew/t1"),
            ]
        );
        assert!(common.join("logs/refs/heads/crew/t1").is_dir());
        // Never the common dir itself, nor the refs of other branches.
        assert!(!dirs.contains(&common));
        assert!(
            !dirs
                .iter()
                .any(|d| d.ends_with("refs/heads") || d.ends_with("refs"))
        );

        // A branch outside crew/<task>/ gets no ref directory.
        std::fs::write(private.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(git_writable_dirs(wt.path()).len(), 2);
        for bad in ["crew/t1", "crew/../x", "crew//x", "other/t1/x"] {
            assert_eq!(own_ref_dir(bad), None, "{bad}");
        }
    }

    #[test]
    fn apply_without_a_ruleset_fails_instead_of_running_unconfined() {
        if !crate::test_kernel::require(&[crate::test_kernel::Feature::Landlock]) {
            return;
        }
        let mut prepared =
            PreparedLandlock::prepare(&[], SandboxProfile::Write, KernelSupport::Available)
                .unwrap();
        // Applying in this test thread would confine it; take the ruleset out instead,
        // as a second `apply` would find it.
        let _ = prepared.ruleset.take();
        let err = prepared.apply().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(NOT_ENFORCED_ERRNO));
    }
}
