//! Laying the [`Veil`] over crew's home in the child's mount namespace: the kept paths
//! (the agent's own worktree, its session's results) are first cloned as detached mount
//! trees (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`, with the read-only binds already
//! made inside them), then an empty tmpfs covers the home, the kept paths' directories
//! are made in it, each clone is moved back to its place (`move_mount`), and the tmpfs
//! is made read-only. Everything else below the home (the cookie, keys, trust store,
//! settings, control sockets, other sessions and worktrees) is simply not there, including
//! what is created after the command started.
//!
//! Prepared in the parent; [`PreparedVeil::apply`] runs between `fork` and `exec`: system
//! calls only, no allocation.

use std::ffi::{CStr, CString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::libc;
use nix::mount::{MsFlags, mount};

use super::hidden::Veil;

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// One kept path: where it is, what kind, and the clone's descriptor once made.
#[derive(Debug)]
struct Kept {
    path: CString,
    dir: bool,
    fd: AtomicI32,
}

/// A veil ready for [`PreparedVeil::apply`].
#[derive(Debug)]
pub struct PreparedVeil {
    over: CString,
    /// Directories to make inside the tmpfs, parents first.
    skeleton: Vec<CString>,
    kept: Vec<Kept>,
}

fn cstring(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other(format!("{} contains a NUL byte", path.display())))
}

impl PreparedVeil {
    /// Prepares `veil` (its paths are real and its kept paths strictly below `over`).
    pub fn prepare(veil: &Veil) -> io::Result<Self> {
        let mut skeleton: Vec<PathBuf> = Vec::new();
        let mut kept = Vec::new();
        for k in &veil.keep {
            let Ok(rel) = k.strip_prefix(&veil.over) else {
                continue;
            };
            let dir = k.is_dir();
            let mut at = veil.over.clone();
            let parts: Vec<_> = rel.components().collect();
            for (i, c) in parts.iter().enumerate() {
                at.push(c);
                if i + 1 < parts.len() || dir {
                    skeleton.push(at.clone());
                }
            }
            kept.push(Kept {
                path: cstring(k)?,
                dir,
                fd: AtomicI32::new(-1),
            });
        }
        skeleton.sort();
        skeleton.dedup();
        Ok(Self {
            over: cstring(&veil.over)?,
            skeleton: skeleton
                .iter()
                .map(|p| cstring(p))
                .collect::<io::Result<_>>()?,
            kept,
        })
    }

    /// Lays the veil in the calling (child) process's mount namespace.
    pub fn apply(&self) -> Result<(), Errno> {
        for k in &self.kept {
            // SAFETY: a system call on a NUL-terminated path prepared in the parent.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    k.path.as_ptr(),
                    OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE,
                )
            };
            if fd < 0 {
                return Err(Errno::last());
            }
            k.fd.store(fd as i32, Ordering::Relaxed);
        }
        mount(
            Some(c"tmpfs"),
            self.over.as_c_str(),
            Some(c"tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some(c"size=64k,mode=0755"),
        )?;
        for d in &self.skeleton {
            // SAFETY: as above.
            if unsafe { libc::mkdir(d.as_ptr(), 0o755) } < 0 && Errno::last() != Errno::EEXIST {
                return Err(Errno::last());
            }
        }
        for k in &self.kept {
            if !k.dir {
                // SAFETY: as above; the descriptor is closed at once.
                let fd = unsafe {
                    libc::open(
                        k.path.as_ptr(),
                        libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                        0o600,
                    )
                };
                if fd < 0 {
                    return Err(Errno::last());
                }
                // SAFETY: closing the descriptor just opened.
                unsafe { libc::close(fd) };
            }
            let fd = k.fd.load(Ordering::Relaxed);
            // SAFETY: `fd` is the clone made above; the path is prepared.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_move_mount,
                    fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    k.path.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                )
            };
            if r < 0 {
                return Err(Errno::last());
            }
            // SAFETY: the clone is attached now; its descriptor is no longer needed.
            unsafe { libc::close(fd) };
        }
        mount(
            None::<&CStr>,
            self.over.as_c_str(),
            None::<&CStr>,
            MsFlags::MS_BIND
                | MsFlags::MS_REMOUNT
                | MsFlags::MS_RDONLY
                | MsFlags::MS_NOSUID
                | MsFlags::MS_NODEV
                | MsFlags::MS_NOEXEC,
            None::<&CStr>,
        )?;
        Ok(())
    }
}
