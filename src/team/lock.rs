//! Exclusive `flock(2)` locks on files in the team directory. Each acquisition opens the lock
//! file afresh, so the lock excludes other threads of this process as well as other processes,
//! and the kernel drops it when a holder dies: a crashed teammate never leaves a stale lock.
//!
//! The wait is bounded: crew's own holders keep a lock for one small read-modify-write, so a
//! lock still held after [`BOUND`] is held by something else (a stray process that opened
//! the file). That is reported as [`TeamError::LockHeld`], naming the file, instead of
//! stalling the caller (the lead's `todo_add`) for as long as the stranger likes. Sandboxed
//! commands cannot open the file at all: the team directory is hidden from every sandbox.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use super::error::{Result, TeamError, io_at};

/// The longest a team lock is waited for.
pub(crate) const BOUND: Duration = Duration::from_secs(5);
/// The first pause between attempts; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// Held while the lock is taken; released on drop.
pub(crate) struct Locked {
    _lock: Flock<File>,
}

/// Takes the exclusive lock on `path` (creating the file if needed), waiting at most
/// [`BOUND`] for another holder to let go.
pub(crate) fn exclusive(path: &Path) -> Result<Locked> {
    exclusive_within(path, BOUND)
}

/// [`exclusive`] with the bound given.
pub(crate) fn exclusive_within(path: &Path, bound: Duration) -> Result<Locked> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io_at(path))?;
    flock_within(file, path, bound).map(|lock| Locked { _lock: lock })
}

/// Takes the exclusive `flock` on `file` (opened from `path`), trying again with a growing
/// pause while somebody else holds it, for at most `bound`.
pub(crate) fn flock_within(mut file: File, path: &Path, bound: Duration) -> Result<Flock<File>> {
    let started = Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(lock),
            // Somebody holds it (EWOULDBLOCK), or a signal interrupted us: try again
            // until the bound.
            Err((back, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => {
                if started.elapsed() >= bound {
                    return Err(TeamError::LockHeld {
                        path: PathBuf::from(path),
                        waited: started.elapsed(),
                    });
                }
                file = back;
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            Err((_, source)) => {
                return Err(TeamError::Lock {
                    path: PathBuf::from(path),
                    source,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_past_the_bound_is_reported_with_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("todos.lock");
        let held = exclusive(&path).unwrap();
        let t = Instant::now();
        let err = match exclusive_within(&path, Duration::from_millis(200)) {
            Err(e) => e,
            Ok(_) => panic!("a second holder got the lock"),
        };
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        let text = err.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains("holds"), "{text}");
        drop(held);
        // Once it is let go, the next caller gets it at once.
        exclusive_within(&path, Duration::from_millis(200)).unwrap();
    }
}
