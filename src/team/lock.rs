//! Exclusive `flock(2)` locks on files in the team directory. Each acquisition opens the lock
//! file afresh, so the lock excludes other threads of this process as well as other processes,
//! and the kernel drops it when a holder dies: a crashed teammate never leaves a stale lock.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::error::{Result, TeamError, io_at};

/// Held while the lock is taken; released on drop.
pub(crate) struct Locked {
    _lock: Flock<File>,
}

/// Blocks until the exclusive lock on `path` is ours (creating the file if needed).
pub(crate) fn exclusive(path: &Path) -> Result<Locked> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io_at(path))?;
    loop {
        match Flock::lock(file, FlockArg::LockExclusive) {
            Ok(lock) => return Ok(Locked { _lock: lock }),
            // A signal interrupted the wait: wait again.
            Err((back, nix::errno::Errno::EINTR)) => file = back,
            Err((_, source)) => {
                return Err(TeamError::Lock {
                    path: PathBuf::from(path),
                    source,
                });
            }
        }
    }
}
