//! Write-behind for crew's own files, so nothing on a turn's path waits for the disk.
//!
//! The durability contract (docs/performance.md, "Durability"):
//!
//! - **A crash of crew (even SIGKILL) loses nothing.** Every transcript event is one
//!   `write(2)` when it happens, and every whole-file replacement is a temporary file
//!   renamed over the old one: once the call returns, the kernel holds the data.
//! - **A power loss loses at most [`FLUSH_WINDOW`].** `fdatasync` is group-committed: a
//!   write lists its file here ([`written`], [`replaced`], [`created`]) and one flusher
//!   thread syncs everything listed at most once per window; [`flush_all`] does it at
//!   once, at exit.
//! - **Derived files are recomputed.** A file computed from the transcript (`costs.json`)
//!   is rewritten at most once per window through a [`Throttle`] and at exit
//!   ([`Flush::Derived`]); resuming a session computes it again from the transcript.
//!
//! `CREW_FLUSH_WINDOW_MS` sets the window (tests shorten it).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long writes gather before one `fdatasync` covers them all, unless
/// `CREW_FLUSH_WINDOW_MS` says otherwise; also the shortest interval between two rewrites
/// of a derived file.
pub(crate) const FLUSH_WINDOW: Duration = Duration::from_secs(1);

/// The flush window in force (read once per process).
pub(crate) fn window() -> Duration {
    static WINDOW: LazyLock<Duration> = LazyLock::new(|| {
        std::env::var("CREW_FLUSH_WINDOW_MS")
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(FLUSH_WINDOW, Duration::from_millis)
    });
    *WINDOW
}

/// When a whole-file replacement reaches the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flush {
    /// `fdatasync` before the rename returns: for files written once, or at exit.
    Now,
    /// By group commit within the flush window (the file and its directory entry).
    Behind,
    /// Never by this write: the file is derived from the transcript and recomputed on
    /// resume, so a power loss that takes it costs nothing.
    Derived,
}

/// Replaces `path` with `bytes`: a temporary file in the same directory, renamed over it,
/// so a crash leaves the old file or the new one, never half of one. `flush` says when it
/// reaches the disk.
pub(crate) fn write_replace(path: &Path, bytes: &[u8], flush: Flush) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    if flush == Flush::Now {
        tmp.as_file().sync_data()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    if flush == Flush::Behind {
        replaced(path);
    }
    Ok(())
}

/// Whether a derived file is due to be rewritten: at most once per window, the first
/// change at once (so another process sees a new session's file without waiting), later
/// ones gathered until the window since the last write has passed. The owner writes;
/// this only decides when.
#[derive(Debug)]
pub(crate) struct Throttle {
    window: Duration,
    last: Option<Instant>,
    pending: bool,
}

impl Throttle {
    /// A throttle allowing one write per `window`.
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            window,
            last: None,
            pending: false,
        }
    }

    /// The file's contents changed at `now`: `true` when the owner should write it now
    /// (and it counts as written), `false` when the write waits for [`Throttle::due`].
    pub(crate) fn changed(&mut self, now: Instant) -> bool {
        match self.last {
            Some(last) if now < last + self.window => {
                self.pending = true;
                false
            }
            _ => {
                self.written(now);
                true
            }
        }
    }

    /// When the change held back must be written; `None` when nothing is held back.
    pub(crate) fn due(&self) -> Option<Instant> {
        match (self.pending, self.last) {
            (true, Some(last)) => Some(last + self.window),
            _ => None,
        }
    }

    /// The owner wrote the file's current contents at `now`.
    pub(crate) fn written(&mut self, now: Instant) {
        self.last = Some(now);
        self.pending = false;
    }
}

/// What the flusher has to make durable.
#[derive(Default)]
struct Pending {
    /// Open files whose appends await `fdatasync`.
    files: Vec<(PathBuf, Arc<File>)>,
    /// Files replaced by rename: opened by path and synced.
    paths: Vec<PathBuf>,
    /// Directories holding new or renamed entries.
    dirs: Vec<PathBuf>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.files.is_empty() && self.paths.is_empty() && self.dirs.is_empty()
    }
}

struct Queue {
    pending: Mutex<Pending>,
    ready: Condvar,
    /// Held while a batch is synced, so [`flush_all`] returns only after a batch the
    /// flusher took is on the disk too.
    syncing: Mutex<()>,
}

static QUEUE: LazyLock<Queue> = LazyLock::new(|| {
    if let Err(e) = std::thread::Builder::new()
        .name("crew-flusher".into())
        .spawn(run)
    {
        // Without the thread, files are still synced by `flush_all` at exit.
        tracing::warn!("could not start the flusher: {e}");
    }
    Queue {
        pending: Mutex::new(Pending::default()),
        ready: Condvar::new(),
        syncing: Mutex::new(()),
    }
});

/// Locks a mutex, taking over its state if a panicking holder poisoned it (each update
/// of the pending lists is one push, consistent before it can panic).
fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds to the pending lists with `add` (which says whether it added anything), waking
/// the flusher when the lists were empty.
fn enqueue(add: impl FnOnce(&mut Pending) -> bool) {
    let queue = &*QUEUE;
    let mut pending = relock(&queue.pending);
    let was_empty = pending.is_empty();
    if add(&mut pending) && was_empty {
        queue.ready.notify_one();
    }
}

/// `file` (at `path`, opened for appending) was written to: its data is synced within
/// the window. Cheap enough to call on every append.
pub(crate) fn written(path: &Path, file: &Arc<File>) {
    enqueue(|p| {
        if p.files.iter().any(|(_, f)| Arc::ptr_eq(f, file)) {
            return false;
        }
        p.files.push((path.to_path_buf(), file.clone()));
        true
    });
}

/// `path` was created: its directory entry is synced within the window.
pub(crate) fn created(path: &Path) {
    if let Some(dir) = path.parent() {
        enqueue(|p| push_new(&mut p.dirs, dir));
    }
}

/// `path` was replaced by a rename: the file and its directory entry are synced within
/// the window.
pub(crate) fn replaced(path: &Path) {
    enqueue(|p| {
        let file = push_new(&mut p.paths, path);
        let dir = path.parent().is_some_and(|d| push_new(&mut p.dirs, d));
        file || dir
    });
}

fn push_new(list: &mut Vec<PathBuf>, path: &Path) -> bool {
    if list.iter().any(|p| p == path) {
        return false;
    }
    list.push(path.to_path_buf());
    true
}

/// Makes everything written so far durable, now: called at exit (and by the flusher once
/// per window). Returns the first failure; a failed item is listed again for the next
/// flush.
pub(crate) fn flush_all() -> std::io::Result<()> {
    let queue = &*QUEUE;
    let _syncing = relock(&queue.syncing);
    let batch = std::mem::take(&mut *relock(&queue.pending));
    let mut failed = Pending::default();
    let mut first = None;
    let mut note = |e: std::io::Error, path: &Path| {
        tracing::warn!("could not make {} durable: {e}", path.display());
        first.get_or_insert(e);
    };
    for (path, file) in batch.files {
        if let Err(e) = file.sync_data() {
            note(e, &path);
            failed.files.push((path, file));
        }
    }
    // The files' data before the directory entries that name them.
    for path in batch.paths {
        match File::open(&path).and_then(|f| f.sync_data()) {
            Ok(()) => {}
            // Replaced or removed since: whatever is there now was listed by its writer.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                note(e, &path);
                failed.paths.push(path);
            }
        }
    }
    for dir in batch.dirs {
        match File::open(&dir).and_then(|d| d.sync_all()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                note(e, &dir);
                failed.dirs.push(dir);
            }
        }
    }
    if !failed.is_empty() {
        let mut pending = relock(&queue.pending);
        pending.files.extend(failed.files);
        pending.paths.extend(failed.paths);
        pending.dirs.extend(failed.dirs);
    }
    first.map_or(Ok(()), Err)
}

/// The flusher: waits for something to sync, lets the window gather more, syncs it all.
fn run() {
    let queue = &*QUEUE;
    loop {
        {
            let mut pending = relock(&queue.pending);
            while pending.is_empty() {
                pending = queue.ready.wait(pending).unwrap_or_else(|e| e.into_inner());
            }
        }
        std::thread::sleep(window());
        // Failures were logged and listed again; the next window retries them.
        let _ = flush_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_writes_the_first_change_at_once_and_gathers_the_rest_for_a_window() {
        let t0 = Instant::now();
        let w = Duration::from_millis(100);
        let mut t = Throttle::new(w);
        assert!(t.changed(t0));
        assert_eq!(t.due(), None);
        // Within the window: held back, due when the window since the write ends.
        assert!(!t.changed(t0 + Duration::from_millis(10)));
        assert!(!t.changed(t0 + Duration::from_millis(90)));
        assert_eq!(t.due(), Some(t0 + w));
        t.written(t0 + w);
        assert_eq!(t.due(), None);
        // A change a window after the last write goes out at once.
        assert!(t.changed(t0 + w + w));
    }

    #[test]
    fn a_replacement_is_whole_and_listed_for_the_flusher_only_when_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.json");
        for (flush, text) in [
            (Flush::Now, "one"),
            (Flush::Derived, "two"),
            (Flush::Behind, "three"),
        ] {
            write_replace(&p, text.as_bytes(), flush).unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        }
        // No temporary file left beside it.
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
        assert!(relock(&QUEUE.pending).paths.contains(&p));
        flush_all().unwrap();
        assert!(!relock(&QUEUE.pending).paths.contains(&p));
    }

    #[test]
    fn an_appended_file_is_listed_once_until_a_flush_takes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let file = Arc::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap(),
        );
        for _ in 0..3 {
            (&*file).write_all(b"line\n").unwrap();
            written(&path, &file);
        }
        created(&path);
        let listed = |q: &Pending| {
            q.files
                .iter()
                .filter(|(_, f)| Arc::ptr_eq(f, &file))
                .count()
        };
        // Another test may flush meanwhile; listed at most once in any case.
        assert!(listed(&relock(&QUEUE.pending)) <= 1);
        // The flusher takes it within the window (tests run with the default, 1 s).
        let deadline = Instant::now() + window() * 10 + Duration::from_secs(5);
        while listed(&relock(&QUEUE.pending)) == 1 {
            assert!(
                Instant::now() < deadline,
                "the flusher never synced the file"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
