//! Which crew owns a parent cgroup (`crew-<pid>` below crew's own cgroup), so that a crew
//! sweeping the empty cgroups of crews that died never removes a live one's.
//!
//! The pid in the name is not enough: crews in different PID namespaces (a CI job under
//! `unshare -p`, a container sharing the host's cgroup) see different pids, so one would
//! take the other's live `crew-<pid>` for a dead crew's and remove it under its running
//! commands. Each crew therefore holds an exclusive `flock` on a lock file of its own for as
//! long as it runs. A sweeper removes a cgroup only when it can take that lock; where the lock
//! file is missing (the owner sees another `/tmp`, or predates the lock) it leaves the empty
//! cgroup alone: a few empty directories cost nothing, a removed live one fails commands.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::libc;

/// The lock file of the parent cgroup `dir`, in a per-user directory of the temp dir.
fn lock_path(dir: &Path) -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let locks = std::env::temp_dir().join(format!("crew-cgroups-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&locks) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    // Someone else's directory is not trusted with our locks.
    let meta = std::fs::symlink_metadata(&locks).ok()?;
    if !meta.is_dir() || meta.uid() != uid {
        return None;
    }
    // `DefaultHasher::new` has fixed keys: every crew names the same cgroup the same way.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    dir.hash(&mut hasher);
    Some(locks.join(format!("{:016x}.lock", hasher.finish())))
}

/// Whether taking a lock makes its file when there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IfMissing {
    /// Make it: the owner claiming its cgroup.
    Create,
    /// Take no lock: a sweeper, for whom no file means an unknown owner.
    Skip,
}

/// Opens `path` and tries to take its exclusive lock without waiting.
fn try_lock(path: &Path, if_missing: IfMissing) -> Option<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(if_missing == IfMissing::Create)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    // SAFETY: flock on a descriptor we own.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    locked.then_some(file)
}

/// Marks this process as the owner of the parent cgroup `dir` until it exits (the lock is
/// held by a descriptor kept open for the process's life).
pub(crate) fn claim(dir: &Path) {
    static HELD: OnceLock<Option<File>> = OnceLock::new();
    HELD.get_or_init(|| lock_path(dir).and_then(|path| try_lock(&path, IfMissing::Create)));
}

/// Runs `remove` on the parent cgroup `dir` of a crew that looks dead, only when its owner
/// is known to be gone: its lock file exists and its lock can be taken. The lock file goes
/// with the cgroup.
pub(crate) fn sweep_if_abandoned(dir: &Path, remove: impl FnOnce(&Path)) {
    let Some(path) = lock_path(dir) else { return };
    let Some(_lock) = try_lock(&path, IfMissing::Skip) else {
        return;
    };
    remove(dir);
    let _ = std::fs::remove_file(&path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_keeps_a_sweeper_away_and_a_released_one_lets_it_in() {
        let dir = tempfile::tempdir().unwrap();
        let cgroup = dir.path().join("crew-4242");
        let path = lock_path(&cgroup).unwrap();
        // No lock file: the owner is unknown, nothing is swept.
        let mut swept = false;
        sweep_if_abandoned(&cgroup, |_| swept = true);
        assert!(!swept);
        // A live owner holds the lock (another open file description, as in another process).
        let owner = try_lock(&path, IfMissing::Create).unwrap();
        sweep_if_abandoned(&cgroup, |_| swept = true);
        assert!(!swept, "a live owner's cgroup was swept");
        // The owner is gone: its lock is free, and the sweeper removes the cgroup.
        drop(owner);
        sweep_if_abandoned(&cgroup, |d| swept = d == cgroup);
        assert!(swept);
        assert!(!path.exists(), "the lock file goes with the cgroup");
    }
}
