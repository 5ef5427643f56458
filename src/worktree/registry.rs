//! The registry: a JSON file in a repository's worktrees folder recording every worktree we
//! made (id, path, branch, base commit, creation time, description, status). It is written
//! atomically (temporary file, rename), so a killed process leaves the old or the new
//! version, never a torn one. It is not fsynced: 32 subagents started at once would wait
//! on 32 flushes in a row under the lock, and what a power loss could take (the newest
//! entries) is still in git's own records, where `reconcile` reports the worktrees it no
//! longer knows as orphaned, never deleting them. Read-modify-write cycles hold [`lock`], an exclusive
//! `flock` on `registry.lock` beside it, so two processes (a session and a
//! `crew worktrees` command, or two sessions) never lose each other's updates.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Status, WorktreeError, io_err};

/// The registry's file name inside the repository's worktrees folder.
pub(crate) const FILE_NAME: &str = "registry.json";

/// The lock file beside the registry (never removed: removing a held lock file would
/// let a second process lock a new inode).
pub(crate) const LOCK_NAME: &str = "registry.lock";

/// The registry's inter-process lock, held until dropped (the kernel also drops it when
/// the process dies, so a killed crew never leaves it stuck).
pub(crate) struct RegistryLock {
    _file: nix::fcntl::Flock<fs::File>,
}

/// Takes the exclusive lock of the registry at `path`, waiting for another holder.
/// Threads of one process exclude each other too: each call opens its own descriptor.
pub(crate) fn lock(path: &Path) -> Result<RegistryLock, WorktreeError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    let lock_path = dir.join(LOCK_NAME);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_err("open", &lock_path))?;
    let file = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| io_err("lock", &lock_path)(std::io::Error::from(errno)))?;
    Ok(RegistryLock { _file: file })
}

/// One worktree we made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The task id.
    pub id: String,
    /// Its directory.
    pub path: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The commit its branch started from (hex).
    pub base_commit: String,
    /// Whether `base_commit` is a snapshot of the main checkout's uncommitted changes on
    /// top of its HEAD (`snapshot`): then landing the branch leaves that commit out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub snapshot: bool,
    /// When it was made, in seconds since the Unix epoch.
    pub created_at: u64,
    /// The task's description.
    pub description: String,
    /// Where it stands.
    pub status: Status,
    /// How its files are held.
    #[serde(default, skip_serializing_if = "Layout::is_checkout")]
    pub layout: Layout,
}

/// How a worktree's files are held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Layout {
    /// A full checkout of its own, as `git worktree add` makes.
    #[default]
    Checkout,
    /// An overlay over the shared checkout of its base, mounted in crew's namespace
    /// (see [`overlay`](super::overlay)).
    Overlay,
}

impl Layout {
    fn is_checkout(&self) -> bool {
        *self == Layout::Checkout
    }
}

/// The registry file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registry {
    /// The main checkout the worktrees belong to.
    #[serde(default)]
    pub repo_root: PathBuf,
    /// The worktrees, oldest first.
    #[serde(default)]
    pub worktrees: Vec<Record>,
}

impl Registry {
    /// Reads the registry at `path`; a missing file is an empty registry.
    pub(crate) fn load(path: &Path) -> Result<Self, WorktreeError> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(io_err("read", path)(e)),
        };
        serde_json::from_str(&text).map_err(|e| WorktreeError::Registry {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Writes the registry to `path` atomically.
    pub(crate) fn save(&self, path: &Path) -> Result<(), WorktreeError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(".{FILE_NAME}.{}.{n}.tmp", std::process::id()));
        let json = serde_json::to_vec_pretty(self).map_err(|e| WorktreeError::Registry {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut file = fs::File::create(&tmp).map_err(io_err("create", &tmp))?;
        file.write_all(&json).map_err(io_err("write", &tmp))?;
        drop(file);
        fs::rename(&tmp, path).map_err(io_err("replace", path))
    }

    /// The record for `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&Record> {
        self.worktrees.iter().find(|r| r.id == id)
    }

    /// The record for `id`, to change.
    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Record> {
        self.worktrees.iter_mut().find(|r| r.id == id)
    }

    /// Removes the record for `id`, if any.
    pub(crate) fn remove(&mut self, id: &str) {
        self.worktrees.retain(|r| r.id != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> Record {
        Record {
            id: id.into(),
            path: PathBuf::from("/w").join(id),
            branch: format!("crew/{id}"),
            base_commit: "abc".into(),
            snapshot: false,
            created_at: 1,
            description: "d".into(),
            status: Status::Active,
            layout: Layout::Checkout,
        }
    }

    #[test]
    fn round_trips_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(FILE_NAME);
        assert_eq!(Registry::load(&path).unwrap(), Registry::default());
        let mut reg = Registry::default();
        reg.worktrees.push(record("a"));
        reg.worktrees.push(record("b"));
        reg.save(&path).unwrap();
        reg.remove("a");
        reg.save(&path).unwrap();
        let back = Registry::load(&path).unwrap();
        assert_eq!(back.worktrees, vec![record("b")]);
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left behind");
    }

    #[test]
    fn concurrent_locked_updates_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        // Each thread opens its own descriptor, so flock excludes them as it would
        // separate processes; without the lock, read-modify-write cycles lose records.
        std::thread::scope(|s| {
            for t in 0..8 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..10 {
                        let _held = lock(path).unwrap();
                        let mut reg = Registry::load(path).unwrap();
                        reg.worktrees.push(record(&format!("t{t}-{i}")));
                        reg.save(path).unwrap();
                    }
                });
            }
        });
        assert_eq!(Registry::load(&path).unwrap().worktrees.len(), 80);
    }

    #[test]
    fn a_malformed_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        fs::write(&path, "{not json").unwrap();
        let err = Registry::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(FILE_NAME) && err.contains("move it aside"),
            "{err}"
        );
    }
}
