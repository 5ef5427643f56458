//! A private mount namespace in which the protected paths are read-only.
//!
//! Landlock grants rights on whole trees and cannot make `.git/hooks` read-only inside a
//! writable checkout. So a confined command gets its own mount namespace (a user
//! namespace too when we are not root) where each existing protected path is bound onto
//! itself and remounted read-only, and the directories holding them (`.git`, `.crew`,
//! `.claude`) are bound onto themselves so they cannot be renamed away (a mount point
//! cannot be moved or removed). Then what the command may not see ([`HiddenSet`]:
//! credential stores, crew's home but the agent's own workspace, `Read` deny rules, links
//! to them, escape sockets) is hidden: crew's home under a veil (`hidden_veil`), an empty
//! read-only tmpfs over a directory (`~/.ssh`), `/dev/null` over a file (`~/.netrc`).
//! Landlock is applied afterwards, as the outer fence (it also forbids the command to
//! undo any of these mounts).
//!
//! Everything is prepared in the parent: paths as C strings, the uid/gid map texts and
//! each mount's flags. [`PreparedMounts::apply`] runs between `fork` and `exec`, where
//! only system calls are allowed: it allocates nothing and takes no locks.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::Mode;
use nix::sys::statvfs::{FsFlags, statvfs};

use super::hidden::HiddenSet;
use super::hidden_veil::PreparedVeil;
use super::protect::Protected;

/// The errno the child reports when it could not build its mount namespace; the parent
/// turns it back into a sandbox error.
pub const MOUNT_NS_ERRNO: i32 = Errno::ENOTRECOVERABLE as i32;

/// Which namespaces the child creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unshare {
    /// Root: a mount namespace alone (falls back to a user namespace when refused).
    MountOnly,
    /// Not root: a user namespace mapping our ids, and a mount namespace in it.
    WithUser,
}

/// One bind mount to make in the child.
#[derive(Debug)]
struct Bind {
    path: CString,
    /// `Some(flags)`: remount read-only, keeping these flags of the underlying mount
    /// (nosuid, nodev, noexec, atime flags), which a user namespace may not drop.
    read_only: Option<MsFlags>,
}

/// A credential location to hide.
#[derive(Debug)]
enum Hide {
    /// An empty read-only tmpfs over it.
    Dir(CString),
    /// `/dev/null` bound over it.
    File(CString),
}

/// A mount namespace set-up, ready for [`PreparedMounts::apply`] in the child.
#[derive(Debug)]
pub struct PreparedMounts {
    unshare: Unshare,
    uid_map: CString,
    gid_map: CString,
    binds: Vec<Bind>,
    veil: Option<PreparedVeil>,
    hides: Vec<Hide>,
    /// The protected paths (as given) that will be read-only.
    read_only: Vec<PathBuf>,
    /// Also a PID namespace with a fresh `/proc` ([`pid_ns`](super::pid_ns)).
    new_pid: bool,
    /// The command's working directory, entered again once the mounts are made.
    cwd: Option<CString>,
}

/// Whether mount namespaces work here, probed once per process by starting `true` in
/// one (with a read-only bind and a tmpfs, the steps most often refused).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let probe_dir = crate::landlock::sandbox_temp_dir();
        let protected = Protected {
            existing: vec![probe_dir.clone()],
            ..Protected::default()
        };
        let hidden = HiddenSet {
            dirs: vec![probe_dir],
            ..HiddenSet::default()
        };
        let Some(prepared) = PreparedMounts::prepare(&protected, &hidden).ok() else {
            return false;
        };
        let mut cmd = std::process::Command::new("true");
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `apply` only makes system calls on data prepared above.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || prepared.apply());
        }
        let ok = cmd.status().is_ok_and(|s| s.success());
        if !ok {
            tracing::warn!(
                "mount namespaces are not available: protected files (.git/hooks, .git/config, settings) \
                 are guarded by snapshot and restore only"
            );
        }
        ok
    })
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other(format!("{} contains a NUL byte", path.display())))
}

/// The flags of the mount holding `path` that a read-only remount must keep.
fn kept_flags(path: &Path) -> MsFlags {
    let Ok(st) = statvfs(path) else {
        return MsFlags::empty();
    };
    let f = st.flags();
    let mut out = MsFlags::empty();
    for (st_flag, ms_flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(st_flag) {
            out |= ms_flag;
        }
    }
    out
}

impl PreparedMounts {
    /// Prepares binds for the existing protected paths (their real locations) and the
    /// pinned directories, ancestors first, then the veil and the covers of `hidden`.
    pub fn prepare(protected: &Protected, hidden: &HiddenSet) -> io::Result<Self> {
        let mut binds: Vec<(PathBuf, bool)> = Vec::new();
        let mut covered = Vec::new();
        for (paths, read_only) in [(&protected.pins, false), (&protected.existing, true)] {
            for p in paths {
                // Bind the real location: the kernel follows links in a mount target too,
                // and the canonical path keeps the ancestor-first order right. A dangling
                // link cannot be bound; the snapshot watches it instead.
                if let Ok(real) = std::fs::canonicalize(p) {
                    binds.push((real, read_only));
                    if read_only {
                        covered.push(p.clone());
                    }
                }
            }
        }
        binds.sort();
        binds.dedup();
        let binds = binds
            .into_iter()
            .map(|(path, read_only)| {
                Ok(Bind {
                    read_only: read_only.then(|| kept_flags(&path)),
                    path: cstring(&path)?,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        let mut hides = Vec::new();
        for d in &hidden.dirs {
            hides.push(Hide::Dir(cstring(d)?));
        }
        for f in &hidden.files {
            hides.push(Hide::File(cstring(f)?));
        }
        let veil = hidden
            .veil
            .as_ref()
            .map(PreparedVeil::prepare)
            .transpose()?;
        let uid = nix::unistd::geteuid();
        let gid = nix::unistd::getegid();
        Ok(Self {
            unshare: if uid.is_root() {
                Unshare::MountOnly
            } else {
                Unshare::WithUser
            },
            uid_map: cstring(Path::new(&format!("{uid} {uid} 1\n")))?,
            gid_map: cstring(Path::new(&format!("{gid} {gid} 1\n")))?,
            binds,
            veil,
            hides,
            read_only: covered,
            new_pid: false,
            cwd: None,
        })
    }

    /// Also runs the command in its own PID namespace with a fresh `/proc`: it sees no
    /// other process, and nothing it starts outlives it. `apply` then returns only in the
    /// namespace's first process ([`pid_ns::split`](super::pid_ns::split)).
    pub fn with_pid_namespace(mut self) -> Self {
        self.new_pid = true;
        self
    }

    /// Enters `cwd` again once the mounts are made. The child was started there before
    /// the namespace existed, so its working directory is still the directory below the
    /// mounts: `..` from a kept worktree under the veil would reach its siblings, and
    /// relative paths inside a directory bound read-only would write below the binding.
    pub fn with_cwd(mut self, cwd: &Path) -> io::Result<Self> {
        self.cwd = Some(cstring(cwd)?);
        Ok(self)
    }

    /// Whether [`with_pid_namespace`](Self::with_pid_namespace) was asked for.
    pub fn has_pid_namespace(&self) -> bool {
        self.new_pid
    }

    /// The protected paths (as given to [`prepare`](Self::prepare)) that the namespace
    /// makes read-only.
    pub fn read_only(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// Whether there is nothing to bind or hide (and no PID namespace to make).
    pub fn is_empty(&self) -> bool {
        self.binds.is_empty() && self.veil.is_none() && self.hides.is_empty() && !self.new_pid
    }

    /// Builds the namespace in the calling (child) process. Meant for `pre_exec`: system
    /// calls only, no allocation. Any failure is reported as [`MOUNT_NS_ERRNO`].
    pub fn apply(&self) -> io::Result<()> {
        self.try_apply()
            .map_err(|_| io::Error::from_raw_os_error(MOUNT_NS_ERRNO))
    }

    fn try_apply(&self) -> Result<(), Errno> {
        let mut flags = CloneFlags::CLONE_NEWNS;
        if self.new_pid {
            flags |= CloneFlags::CLONE_NEWPID;
        }
        let with_user = match self.unshare {
            Unshare::MountOnly => match unshare(flags) {
                Ok(()) => false,
                Err(_) => {
                    unshare_with_user(flags)?;
                    true
                }
            },
            Unshare::WithUser => {
                unshare_with_user(flags)?;
                true
            }
        };
        if with_user {
            write_proc(c"/proc/self/setgroups", c"deny")?;
            write_proc(c"/proc/self/uid_map", &self.uid_map)?;
            write_proc(c"/proc/self/gid_map", &self.gid_map)?;
        }
        // Nothing we mount may propagate back to the parent namespace.
        mount(
            None::<&CStr>,
            c"/",
            None::<&CStr>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&CStr>,
        )?;
        for b in &self.binds {
            let rec = if b.read_only.is_some() {
                MsFlags::empty()
            } else {
                MsFlags::MS_REC
            };
            mount(
                Some(b.path.as_c_str()),
                b.path.as_c_str(),
                None::<&CStr>,
                MsFlags::MS_BIND | rec,
                None::<&CStr>,
            )?;
            if let Some(kept) = b.read_only {
                mount(
                    None::<&CStr>,
                    b.path.as_c_str(),
                    None::<&CStr>,
                    MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
                    None::<&CStr>,
                )?;
            }
        }
        if let Some(v) = &self.veil {
            v.apply()?;
        }
        for h in &self.hides {
            match h {
                Hide::Dir(path) => mount(
                    Some(c"tmpfs"),
                    path.as_c_str(),
                    Some(c"tmpfs"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    Some(c"size=4k,mode=0500"),
                )?,
                Hide::File(path) => mount(
                    Some(c"/dev/null"),
                    path.as_c_str(),
                    None::<&CStr>,
                    MsFlags::MS_BIND,
                    None::<&CStr>,
                )?,
            }
        }
        if let Some(cwd) = &self.cwd {
            nix::unistd::chdir(cwd.as_c_str())?;
        }
        if self.new_pid {
            super::pid_ns::split()?;
        }
        Ok(())
    }
}

/// `unshare` with a user namespace added. A non-dumpable parent (crew makes itself one)
/// leaves its `/proc/self` files owned by root, so the id maps could not be written:
/// the child becomes dumpable again first (exec would reset it anyway).
fn unshare_with_user(flags: CloneFlags) -> Result<(), Errno> {
    nix::sys::prctl::set_dumpable(true)?;
    unshare(CloneFlags::CLONE_NEWUSER | flags)
}

/// Writes `text` to a `/proc/self` file (no allocation).
fn write_proc(path: &CStr, text: &CStr) -> Result<(), Errno> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    let bytes = text.to_bytes();
    let n = nix::unistd::write(&fd, bytes)?;
    if n == bytes.len() {
        Ok(())
    } else {
        Err(Errno::EIO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_kernel::{Feature, require, require_named};
    use std::os::unix::process::CommandExt;

    /// Runs `sh -c script` in `dir` inside the prepared namespace; returns its stderr.
    fn run_inside(prepared: PreparedMounts, dir: &Path, script: &str) -> String {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]).current_dir(dir);
        // SAFETY: `apply` only makes system calls on data prepared beforehand.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    #[test]
    fn protected_files_are_read_only_inside_with_and_without_a_user_namespace() {
        if !require(&[Feature::MountNamespaces]) {
            return;
        }
        for unshare in [Unshare::MountOnly, Unshare::WithUser] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().canonicalize().unwrap();
            std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
            std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
            let protected = Protected::find(std::slice::from_ref(&root));
            let mut prepared = PreparedMounts::prepare(&protected, &HiddenSet::default()).unwrap();
            prepared.unshare = unshare;
            let err = run_inside(
                prepared,
                &root,
                "echo x > .git/config; echo x > .git/hooks/pre-commit; mv .git .git-old; echo ok > free.txt",
            );
            if unshare == Unshare::WithUser
                && err.contains("Operation not permitted")
                && !require_named(
                    "crewmaster::sandbox::mount_ns::tests::protected_files_are_read_only_inside_with_and_without_a_user_namespace (with a user namespace)",
                    &[Feature::UserNamespaces],
                )
            {
                continue;
            }
            assert!(err.contains("Read-only file system"), "{unshare:?}: {err}");
            assert_eq!(
                std::fs::read_to_string(root.join(".git/config")).unwrap(),
                "[core]\n"
            );
            assert!(!root.join(".git/hooks/pre-commit").exists(), "{unshare:?}");
            assert!(
                root.join(".git").is_dir() && !root.join(".git-old").exists(),
                "{unshare:?}"
            );
            // The rest of the tree stays writable, and nothing leaked to our namespace.
            assert_eq!(
                std::fs::read_to_string(root.join("free.txt")).unwrap(),
                "ok\n"
            );
            std::fs::write(root.join(".git/config"), "[core]\nx=1\n").unwrap();
        }
    }

    #[test]
    fn hidden_paths_are_covered_and_kept_paths_under_the_veil_stay_writable() {
        if !require(&[Feature::MountNamespaces]) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let crew = root.join("crew");
        let mine = crew.join("wt/mine");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::create_dir_all(crew.join("wt/theirs")).unwrap();
        std::fs::create_dir_all(root.join("sec")).unwrap();
        std::fs::write(crew.join("cookie"), "COOKIE").unwrap();
        std::fs::write(crew.join("wt/theirs/f"), "THEIRS").unwrap();
        std::fs::write(mine.join("f"), "MINE").unwrap();
        std::fs::write(root.join("sec/key"), "KEY").unwrap();
        std::fs::write(root.join("file.txt"), "FILE").unwrap();
        std::fs::write(root.join("open.txt"), "OPEN").unwrap();
        let hidden = HiddenSet {
            dirs: vec![root.join("sec")],
            files: vec![root.join("file.txt")],
            veil: Some(super::super::hidden::Veil {
                over: crew.clone(),
                keep: vec![mine.clone()],
            }),
        };
        let prepared = PreparedMounts::prepare(&Protected::default(), &hidden).unwrap();
        let mut cmd = std::process::Command::new("sh");
        cmd.args([
            "-c",
            "cat crew/cookie crew/wt/theirs/f sec/key file.txt crew/wt/mine/f open.txt; \
             echo new > crew/wt/mine/new; echo x > crew/planted; ls crew crew/wt",
        ])
        .current_dir(&root);
        // SAFETY: `apply` only makes system calls on data prepared beforehand.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains("MINE") && stdout.contains("OPEN"),
            "{stdout}{stderr}"
        );
        for secret in ["COOKIE", "THEIRS", "KEY", "FILE"] {
            assert!(!stdout.contains(secret), "{secret}: {stdout}");
        }
        assert!(!stdout.contains("cookie"), "{stdout}");
        assert!(stderr.contains("Read-only file system"), "{stderr}");
        assert_eq!(std::fs::read_to_string(mine.join("new")).unwrap(), "new\n");
        assert!(!crew.join("planted").exists());
        // Started inside the kept worktree, `..` does not lead below the veil.
        let prepared = PreparedMounts::prepare(&Protected::default(), &hidden)
            .and_then(|p| p.with_cwd(&mine))
            .unwrap();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "cat f ../theirs/f ../../cookie; echo mine > f2"])
            .current_dir(&mine);
        // SAFETY: as above.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("MINE"), "{stdout}");
        assert!(
            !stdout.contains("THEIRS") && !stdout.contains("COOKIE"),
            "{stdout}"
        );
        assert_eq!(std::fs::read_to_string(mine.join("f2")).unwrap(), "mine\n");
        // Nothing leaked to our namespace.
        assert_eq!(
            std::fs::read_to_string(crew.join("cookie")).unwrap(),
            "COOKIE"
        );
    }
}
