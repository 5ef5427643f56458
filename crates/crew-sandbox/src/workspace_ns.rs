//! crew's own mount namespace, where subagents' workspaces are overlays.
//!
//! A workspace stacks an overlay (only what the agent changes) over one shared read-only
//! checkout of its base, so it costs what the agent writes, not the repository's size.
//! An unprivileged user can mount an overlay only inside a mount namespace of a user
//! namespace it owns, and only a single-threaded process may make one. So crew enters
//! its namespace as the very first thing it does ([`enter`], before the async runtime
//! starts its threads): root takes a private mount namespace, anyone else a user
//! namespace that maps only their own ids plus the mount namespace.
//!
//! Everything crew runs afterwards (its file tools, git, the commands agents run, hooks)
//! inherits the namespace, so all of them see a workspace at its ordinary path, with no
//! path translation anywhere. Processes outside crew do not: they see a placeholder,
//! and `crew worktrees open` makes a real checkout of the workspace for them. Our mounts
//! never propagate to the parent namespace (the namespace is a slave of it).
//!
//! Where this fails (an old kernel, unprivileged user namespaces turned off, an upper
//! directory on overlayfs), workspaces fall back to full checkouts; [`support`] says why.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::Mode;

/// Set to `off` (or `0`) to keep crew out of its own namespace: every workspace is then
/// a full checkout, as before overlays.
pub const DISABLE_ENV: &str = "CREW_WORKSPACE_OVERLAY";

/// Tests set this to see crew on a machine without overlays (as the Landlock tests
/// simulate a kernel without Landlock).
pub const SIMULATE_MISSING_ENV: &str = "CREW_TEST_SIMULATE_NO_OVERLAY";

/// Whether this process can mount workspaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// crew is in its own mount namespace and may mount overlays there.
    Available,
    /// Workspaces are full checkouts; the reason, for the user.
    Unavailable(String),
}

static STATE: OnceLock<Support> = OnceLock::new();

/// Enters crew's own namespace. Call once, first thing in `main`, while the process has
/// one thread: `unshare` of a user namespace fails in a threaded process. Later calls
/// return the first call's answer.
pub fn enter() -> &'static Support {
    STATE.get_or_init(try_enter)
}

/// What [`enter`] found; `Unavailable` in a process that never called it (a test
/// harness, a library user), where workspaces are therefore checkouts.
pub fn support() -> &'static Support {
    static NOT_ENTERED: OnceLock<Support> = OnceLock::new();
    STATE.get().unwrap_or_else(|| {
        NOT_ENTERED.get_or_init(|| {
            Support::Unavailable("this process did not enter a mount namespace of its own".into())
        })
    })
}

fn try_enter() -> Support {
    if let Some(v) = std::env::var_os(DISABLE_ENV)
        && (v == "off" || v == "0")
    {
        return Support::Unavailable(format!("turned off by {DISABLE_ENV}=off"));
    }
    if std::env::var_os(SIMULATE_MISSING_ENV).is_some() {
        return Support::Unavailable(format!(
            "overlays missing (simulated by {SIMULATE_MISSING_ENV}=1)"
        ));
    }
    match make_namespace() {
        Ok(()) => Support::Available,
        Err(e) => Support::Unavailable(format!(
            "cannot make a mount namespace of crew's own ({e}): unprivileged user namespaces may be turned off"
        )),
    }
}

fn make_namespace() -> Result<(), Errno> {
    let uid = nix::unistd::geteuid();
    if uid.is_root() {
        // Root needs no user namespace, and keeps its powers over every file.
        unshare(CloneFlags::CLONE_NEWNS)?;
    } else {
        let gid = nix::unistd::getegid();
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)?;
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/uid_map", format!("{uid} {uid} 1\n").as_bytes())?;
        write_proc(c"/proc/self/gid_map", format!("{gid} {gid} 1\n").as_bytes())?;
    }
    // Mounts of the parent still reach us; ours never reach it.
    mount(
        None::<&CStr>,
        c"/",
        None::<&CStr>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&CStr>,
    )
}

fn write_proc(path: &CStr, text: &[u8]) -> Result<(), Errno> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    let n = nix::unistd::write(&fd, text)?;
    if n == text.len() {
        Ok(())
    } else {
        Err(Errno::EIO)
    }
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

/// Mounts an overlay of `lower` (read-only) under `upper` (where changes go; `work` is
/// overlayfs's scratch directory on the same filesystem) at `target`, in crew's
/// namespace. Fails unless [`support`] is `Available`.
pub fn mount_overlay(lower: &Path, upper: &Path, work: &Path, target: &Path) -> io::Result<()> {
    if let Support::Unavailable(why) = support() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, why.clone()));
    }
    for dir in [lower, upper, work] {
        // overlayfs splits its options at commas and colons.
        if dir
            .as_os_str()
            .as_bytes()
            .iter()
            .any(|b| matches!(b, b',' | b':'))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} holds a comma or colon, which overlay options cannot carry",
                    dir.display()
                ),
            ));
        }
    }
    let options = |extra: &str| {
        let mut o = b"lowerdir=".to_vec();
        o.extend_from_slice(lower.as_os_str().as_bytes());
        o.extend_from_slice(b",upperdir=");
        o.extend_from_slice(upper.as_os_str().as_bytes());
        o.extend_from_slice(b",workdir=");
        o.extend_from_slice(work.as_os_str().as_bytes());
        o.extend_from_slice(extra.as_bytes());
        CString::new(o)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
    };
    let target = cstring(target)?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    // `userxattr` keeps overlayfs's own records (whiteouts, opaque directories) in the
    // user.* xattrs an unprivileged mount may write; a kernel without it refuses the option.
    let first = mount(
        Some(c"overlay"),
        target.as_c_str(),
        Some(c"overlay"),
        flags,
        Some(options(",userxattr")?.as_c_str()),
    );
    match first {
        Ok(()) => Ok(()),
        Err(Errno::EINVAL) => mount(
            Some(c"overlay"),
            target.as_c_str(),
            Some(c"overlay"),
            flags,
            Some(options("")?.as_c_str()),
        )
        .map_err(io::Error::from),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Unmounts the overlay at `target` in crew's namespace (lazily: a process still inside
/// it keeps its view until it leaves). Not mounted is not an error.
pub fn unmount(target: &Path) -> io::Result<()> {
    if !is_mount_point(target) {
        return Ok(());
    }
    umount2(cstring(target)?.as_c_str(), MntFlags::MNT_DETACH).map_err(io::Error::from)
}

/// Whether `path` is the root of a mount (its device differs from its parent's).
pub fn is_mount_point(path: &Path) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    match (std::fs::symlink_metadata(path), std::fs::metadata(parent)) {
        (Ok(m), Ok(p)) => m.file_type().is_dir() && m.dev() != p.dev(),
        _ => false,
    }
}
