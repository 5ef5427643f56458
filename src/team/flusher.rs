//! Group commit for inboxes: one background thread makes appended messages durable.
//!
//! A send writes its line with `write(2)` under the inbox lock and returns: from then on a
//! crash of the process (even SIGKILL) cannot lose it, since the kernel holds the data. The
//! flusher then fsyncs every inbox written to within a window (5 ms) of the first unsynced
//! append (one fsync covers every message of that window), and writes the cursors that
//! acknowledgements moved. So a power loss can lose at most the last few milliseconds of
//! sends. [`super::Team::flush`] does the same at once (on shutdown and when a teammate
//! goes idle). `CREW_TEAM_FLUSH_WINDOW_MS` sets the window (tests stretch it to hold a
//! cursor back deterministically).

use std::sync::{Arc, Condvar, LazyLock, Mutex};
use std::time::Duration;

use super::inbox_file::{Inbox, relock};

/// How long the flusher gathers appends before it fsyncs them, unless
/// `CREW_TEAM_FLUSH_WINDOW_MS` says otherwise.
const WINDOW: Duration = Duration::from_millis(5);

fn window() -> Duration {
    std::env::var("CREW_TEAM_FLUSH_WINDOW_MS")
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(WINDOW, Duration::from_millis)
}

/// The inboxes waiting for the flusher.
struct Queue {
    waiting: Mutex<Vec<Arc<Inbox>>>,
    ready: Condvar,
}

static QUEUE: LazyLock<Queue> = LazyLock::new(|| {
    if let Err(e) = std::thread::Builder::new()
        .name("crew-inbox-flusher".into())
        .spawn(run)
    {
        // Without the thread, inboxes are still fsynced by `Team::flush`.
        tracing::warn!("could not start the inbox flusher: {e}");
    }
    Queue {
        waiting: Mutex::new(Vec::new()),
        ready: Condvar::new(),
    }
});

/// Puts `inbox` on the flusher's list (the caller saw it become dirty).
pub(crate) fn schedule(inbox: Arc<Inbox>) {
    let queue = &*QUEUE;
    relock(&queue.waiting).push(inbox);
    queue.ready.notify_one();
}

fn run() {
    let queue = &*QUEUE;
    let window = window();
    loop {
        {
            let mut waiting = relock(&queue.waiting);
            while waiting.is_empty() {
                waiting = queue.ready.wait(waiting).unwrap_or_else(|e| e.into_inner());
            }
        }
        std::thread::sleep(window);
        let batch = std::mem::take(&mut *relock(&queue.waiting));
        for inbox in batch {
            if let Err(e) = inbox.flush() {
                tracing::warn!("could not make {} durable: {e}", inbox.path().display());
            }
        }
    }
}
