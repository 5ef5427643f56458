//! One inbox file's open descriptors and in-memory state, shared by every [`Team`] handle
//! on the same team directory in this process (one copy per process: `inbox_registry.rs`),
//! so a send or a read costs a few system calls and no re-scan of the file.
//!
//! What is kept per inbox: the inbox file opened for reading and appending, its lock file
//! (`flock(2)` on a kept descriptor: it excludes other processes; an in-process mutex
//! excludes this process's threads), where appends stand (end offset, message count, each
//! sender's last `seq`) and the read cursor with a write-behind copy in `<name>.cursor`.
//!
//! Other processes append too (`crew team send` from another terminal) and may move the
//! cursor (`crew --continue` after a crash): under the lock, the inbox's length and the
//! cursor file's `stat` stamp are compared with what this process last saw, and whatever
//! another process added is read from where this process stopped. A replaced or cut inbox
//! is read again from the start.
//!
//! [`Team`]: super::Team

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::error::{Result, TeamError, io_at};
use super::inbox::Envelope;
use super::inbox_read::{Stamp, check_cursor, scan, write_json};

/// Whether an operation may wait for a lock another thread or process holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait (call it off the async runtime).
    Block,
    /// Give up at once when the lock is taken (safe on the async runtime).
    Try,
}

/// `inboxes/<name>.cursor`: how much of the inbox was delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cursor {
    /// Messages delivered (the index of the next one).
    pub(crate) delivered: u64,
    /// The byte offset just after the last delivered message.
    pub(crate) offset: u64,
}

/// Where appends stand: rebuilt from the file when unknown, caught up when another
/// process appended.
#[derive(Clone, Debug, Default)]
pub(crate) struct Appended {
    /// Just past the last complete line.
    pub(crate) end: u64,
    /// Complete messages in the file.
    pub(crate) records: u64,
    /// Each sender's last `seq`.
    pub(crate) seqs: HashMap<String, u64>,
}

/// What the flusher still has to make durable.
#[derive(Clone, Copy, Debug, Default)]
struct Dirty {
    /// Appended bytes not yet fsynced.
    data: bool,
    /// A new inbox whose directory entry is not yet fsynced.
    dir: bool,
    /// A cursor not yet written to its file.
    cursor: bool,
}

#[derive(Default)]
struct State {
    /// The inbox, opened for reading and appending, and its inode.
    file: Option<(Arc<File>, u64)>,
    /// The lock file's descriptor while nobody holds the lock.
    lock: Option<File>,
    appended: Option<Appended>,
    cursor: Cursor,
    /// The cursor file's stamp when this process last read or wrote it.
    cursor_stamp: Option<Stamp>,
    /// The last [`Held::unread`]: delivering through this count ends at this offset.
    read_hint: Option<Cursor>,
    dirty: Dirty,
    /// Whether the flusher already has this inbox on its list.
    queued: bool,
}

impl State {
    /// Whether something awaits the flusher that it does not know about yet (and now does).
    fn needs_flusher(&mut self) -> bool {
        let d = self.dirty;
        let needed = (d.data || d.dir || d.cursor) && !self.queued;
        if needed {
            self.queued = true;
        }
        needed
    }
}

/// One inbox's files and state.
pub(crate) struct Inbox {
    path: PathBuf,
    lock_path: PathBuf,
    cursor_path: PathBuf,
    dir: PathBuf,
    state: Mutex<State>,
    /// Serialises writes of the cursor file (the flusher and [`Inbox::flush`] callers).
    cursor_io: Mutex<()>,
}

/// Locks a mutex, taking over its state if a panicking holder poisoned it (every update
/// leaves the state consistent before it can panic).
pub(crate) fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inbox {
    /// The inbox `<dir>/<name>.jsonl`, nothing read yet (see `inbox_registry` for the one
    /// shared copy per process).
    pub(crate) fn new(dir: &Path, name: &str) -> Inbox {
        Inbox {
            path: dir.join(format!("{name}.jsonl")),
            lock_path: dir.join(format!("{name}.lock")),
            cursor_path: dir.join(format!("{name}.cursor")),
            dir: dir.to_path_buf(),
            state: Mutex::new(State::default()),
            cursor_io: Mutex::new(()),
        }
    }

    /// The directory holding the inbox.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The inbox file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the inbox's lock: this process's mutex, then the `flock` on the lock file.
    /// With [`Wait::Try`], `None` when either is held elsewhere.
    pub(crate) fn hold(&self, wait: Wait) -> Result<Option<Held<'_>>> {
        let mut state = match wait {
            Wait::Block => relock(&self.state),
            Wait::Try => match self.state.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                Err(TryLockError::WouldBlock) => return Ok(None),
            },
        };
        let mut file = match state.lock.take() {
            Some(f) => f,
            None => OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&self.lock_path)
                .map_err(io_at(&self.lock_path))?,
        };
        let flock = match wait {
            // Bounded: a stranger holding the inbox's lock is reported, not waited on.
            Wait::Block => super::lock::flock_within(file, &self.lock_path, super::lock::BOUND)?,
            Wait::Try => loop {
                match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                    Ok(flock) => break flock,
                    // A signal interrupted the attempt: try again.
                    Err((back, Errno::EINTR)) => file = back,
                    Err((back, Errno::EWOULDBLOCK)) => {
                        state.lock = Some(back);
                        return Ok(None);
                    }
                    Err((_, source)) => {
                        return Err(TeamError::Lock {
                            path: self.lock_path.clone(),
                            source,
                        });
                    }
                }
            },
        };
        Ok(Some(Held {
            inbox: self,
            state,
            flock: Some(flock),
        }))
    }

    /// The lock is busy although the caller would wait (never happens with `Wait::Block`).
    pub(crate) fn busy(&self) -> TeamError {
        TeamError::Lock {
            path: self.lock_path.clone(),
            source: Errno::EWOULDBLOCK,
        }
    }

    /// Makes what was written durable: fsyncs appended data (and a new inbox's directory
    /// entry), then writes the cursor. Called by the flusher and on shutdown.
    pub(crate) fn flush(&self) -> Result<()> {
        let (file, dirty) = {
            let mut state = relock(&self.state);
            let dirty = state.dirty;
            state.dirty.data = false;
            state.dirty.dir = false;
            state.queued = false;
            (state.file.as_ref().map(|(f, _)| f.clone()), dirty)
        };
        let synced = (|| {
            if let (true, Some(file)) = (dirty.data, &file) {
                file.sync_data().map_err(io_at(&self.path))?;
            }
            if dirty.dir {
                File::open(&self.dir)
                    .and_then(|d| d.sync_all())
                    .map_err(io_at(&self.dir))?;
            }
            Ok(())
        })();
        if let Err(e) = synced {
            // Still to do: the next flush tries again.
            let mut state = relock(&self.state);
            state.dirty.data |= dirty.data;
            state.dirty.dir |= dirty.dir;
            return Err(e);
        }
        self.write_cursor()
    }

    /// Writes the in-memory cursor to `<name>.cursor` (atomically) if it changed.
    fn write_cursor(&self) -> Result<()> {
        let _io = relock(&self.cursor_io);
        let cursor = {
            let state = relock(&self.state);
            if !state.dirty.cursor {
                return Ok(());
            }
            state.cursor
        };
        write_json(&self.cursor_path, &cursor)?;
        let stamp = std::fs::metadata(&self.cursor_path)
            .map(|m| Stamp::of(&m))
            .map_err(io_at(&self.cursor_path))?;
        let mut state = relock(&self.state);
        state.cursor_stamp = Some(stamp);
        if state.cursor == cursor {
            state.dirty.cursor = false;
        }
        Ok(())
    }
}

impl Inbox {
    /// Acknowledges through `delivered` in memory alone when this process's last read ended
    /// exactly there (the usual take-then-ack): no file to look at, so no lock file either.
    /// `None` when the full path ([`Held::ack`]) is needed or, with [`Wait::Try`], the state
    /// is busy; otherwise whether the flusher must be told.
    pub(crate) fn ack_read(&self, delivered: u64, wait: Wait) -> Option<bool> {
        let mut state = match wait {
            Wait::Block => relock(&self.state),
            Wait::Try => match self.state.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                Err(TryLockError::WouldBlock) => return None,
            },
        };
        let hint = state.read_hint.filter(|h| h.delivered == delivered)?;
        if delivered > state.cursor.delivered {
            state.cursor = hint;
            state.dirty.cursor = true;
        }
        Some(state.needs_flusher())
    }
}

/// The inbox's lock, held; released on drop.
pub(crate) struct Held<'a> {
    inbox: &'a Inbox,
    state: MutexGuard<'a, State>,
    flock: Option<Flock<File>>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(flock) = self.flock.take() {
            // Kept for the next holder; if unlocking fails, dropping the descriptor unlocks.
            if let Ok(file) = flock.unlock() {
                self.state.lock = Some(file);
            }
        }
    }
}

/// What [`Held::data`] does when the inbox file does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IfAbsent {
    /// Create it (a send).
    Create,
    /// Answer `None` (a read: no file is no messages).
    Skip,
}

impl Held<'_> {
    /// The inbox file.
    pub(crate) fn path(&self) -> &Path {
        &self.inbox.path
    }

    /// The inbox file and its length; `None` when it does not exist and `absent` is
    /// [`IfAbsent::Skip`]. Opened again (and re-read) when the file at the path is not the
    /// one held open.
    pub(crate) fn data(&mut self, absent: IfAbsent) -> Result<Option<(Arc<File>, u64)>> {
        let path = &self.inbox.path;
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at(path)(e)),
        };
        if let (Some(meta), Some((file, ino))) = (&meta, &self.state.file)
            && meta.ino() == *ino
        {
            return Ok(Some((file.clone(), meta.len())));
        }
        self.state.file = None;
        self.state.appended = None;
        self.state.read_hint = None;
        if meta.is_none() && absent == IfAbsent::Skip {
            return Ok(None);
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io_at(path))?;
        let meta = file.metadata().map_err(io_at(path))?;
        if meta.len() == 0 {
            // Maybe a new inbox: its directory entry must become durable too.
            self.state.dirty.dir = true;
        }
        let file = Arc::new(file);
        self.state.file = Some((file.clone(), meta.ino()));
        Ok(Some((file, meta.len())))
    }

    /// Where appends stand, caught up with the file (`len` long).
    pub(crate) fn appended(&mut self, file: &File, len: u64) -> Result<&mut Appended> {
        let mut a = self
            .state
            .appended
            .take()
            .filter(|a| a.end <= len)
            .unwrap_or_default();
        if a.end < len {
            let scan = scan(&self.inbox.path, file, a.end, a.records, len)?;
            for (m, _) in &scan.messages {
                a.seqs.insert(m.from.to_string(), m.seq);
            }
            a.records += scan.messages.len() as u64;
            a.end = scan.end;
        }
        Ok(self.state.appended.insert(a))
    }

    /// Appends one complete line (written with `write(2)` before this returns; fsynced by
    /// the flusher) and records it. `file` must be [`Held::data`]'s, caught up first.
    pub(crate) fn append(&mut self, file: &File, line: &[u8], from: &str, seq: u64) -> Result<()> {
        let path = &self.inbox.path;
        let appended = self.state.appended.get_or_insert_with(Appended::default);
        let mut writer = file;
        writer.write_all(line).map_err(io_at(path))?;
        appended.end += line.len() as u64;
        appended.records += 1;
        appended.seqs.insert(from.to_string(), seq);
        self.state.dirty.data = true;
        Ok(())
    }

    /// The cursor, read again when another process (or a person) changed its file. An
    /// acknowledgement not yet written is kept when the file is behind it.
    pub(crate) fn cursor(&mut self) -> Result<Cursor> {
        let path = &self.inbox.cursor_path;
        let stamp = match std::fs::metadata(path) {
            Ok(m) => Some(Stamp::of(&m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at(path)(e)),
        };
        if stamp == self.state.cursor_stamp {
            return Ok(self.state.cursor);
        }
        let on_disk = match stamp {
            None => Cursor::default(),
            Some(_) => match std::fs::read(path) {
                Ok(bytes) => {
                    serde_json::from_slice(&bytes).map_err(|source| TeamError::Corrupt {
                        path: path.clone(),
                        source,
                    })?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Cursor::default(),
                Err(e) => return Err(io_at(path)(e)),
            },
        };
        let state = &mut *self.state;
        if !state.dirty.cursor || on_disk.delivered > state.cursor.delivered {
            state.cursor = on_disk;
            state.dirty.cursor = false;
        }
        state.cursor_stamp = stamp;
        state.read_hint = None;
        Ok(state.cursor)
    }

    /// The complete messages after the cursor, in inbox order.
    pub(crate) fn unread(&mut self) -> Result<Vec<Envelope>> {
        let cursor = self.cursor()?;
        let Some((file, len)) = self.data(IfAbsent::Skip)? else {
            return Ok(Vec::new());
        };
        let scan = scan(
            &self.inbox.path,
            &file,
            cursor.offset,
            cursor.delivered,
            len,
        )?;
        if let Some((_, end)) = scan.messages.last() {
            self.state.read_hint = Some(Cursor {
                delivered: cursor.delivered + scan.messages.len() as u64,
                offset: *end,
            });
        }
        Ok(scan.messages.into_iter().map(|(m, _)| m).collect())
    }

    /// How many complete messages follow the cursor.
    pub(crate) fn unread_count(&mut self) -> Result<u64> {
        let cursor = self.cursor()?;
        let Some((file, len)) = self.data(IfAbsent::Skip)? else {
            return Ok(0);
        };
        check_cursor(&self.inbox.path, cursor, len)?;
        let records = self.appended(&file, len)?.records;
        Ok(records.saturating_sub(cursor.delivered))
    }

    /// Moves the cursor (in memory) to `delivered` messages; `false` when it was already
    /// there or beyond. The caller writes it through [`Inbox::flush`] or the flusher.
    pub(crate) fn ack(&mut self, delivered: u64) -> Result<bool> {
        let cursor = self.cursor()?;
        if delivered <= cursor.delivered {
            return Ok(false);
        }
        let next = match self.state.read_hint {
            Some(hint) if hint.delivered == delivered => hint,
            _ => self.find(cursor, delivered)?,
        };
        self.state.cursor = next;
        self.state.dirty.cursor = true;
        Ok(true)
    }

    /// The cursor after `delivered` messages, found by reading from `cursor`.
    fn find(&mut self, cursor: Cursor, delivered: u64) -> Result<Cursor> {
        let path = &self.inbox.path;
        let messages = match self.data(IfAbsent::Skip)? {
            Some((file, len)) => scan(path, &file, cursor.offset, cursor.delivered, len)?.messages,
            None => Vec::new(),
        };
        // `delivered` > `cursor.delivered`: the caller checked.
        let wanted = (delivered - cursor.delivered) as usize;
        match messages.get(wanted - 1) {
            Some((_, offset)) => Ok(Cursor {
                delivered,
                offset: *offset,
            }),
            None => Err(TeamError::AckBeyondEnd {
                path: path.clone(),
                through: delivered,
                available: cursor.delivered + messages.len() as u64,
            }),
        }
    }

    /// Whether something awaits the flusher that it does not know about yet (and now does).
    pub(crate) fn needs_flusher(&mut self) -> bool {
        self.state.needs_flusher()
    }
}
