//! A running session, visible from outside: it registers itself under `~/.crew/run/`
//! (`registry`), keeps what each agent is doing from its events (`board`), and answers
//! snapshots of it (`snapshot`) on a control socket (`control`), for `crew ps` and for
//! `crew tasks` to find which live session holds an id. It unregisters when it closes; the
//! entries of crews that died are reconciled away by the next reader.

pub(crate) mod board;
pub(crate) mod control;
pub(crate) mod registry;
pub(crate) mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::task::JoinHandle;

use crate::events::EventBus;
use registry::Entry;

/// This process's registration, removed by [`Live::close`].
pub(crate) struct Live {
    entry_file: PathBuf,
    server: Option<JoinHandle<()>>,
}

impl Live {
    /// Registers the session and starts answering on its socket. A socket that cannot be
    /// bound leaves an entry without one (`crew ps` then shows the session from its files);
    /// a registry that cannot be written is an error for the caller to report.
    pub(crate) fn start(
        events: &EventBus,
        project_root: &Path,
        session_id: &str,
        session_dir: &Path,
    ) -> std::io::Result<Live> {
        let run = registry::ensure_run_dir()?;
        let pid = std::process::id();
        static SESSIONS: AtomicU32 = AtomicU32::new(0);
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let (entry_file, socket) = registry::paths(&run, pid, n);
        let mut entry = Entry {
            session: session_id.to_string(),
            project: project_root.to_path_buf(),
            session_dir: session_dir.to_path_buf(),
            pid,
            pid_start: registry::start_time(pid),
            started_ms: crate::tasks::now_ms(),
            socket: Some(socket.clone()),
        };
        let board = board::Board::follow(events);
        let server = match control::serve(&socket, entry.clone(), board) {
            Ok(server) => Some(server),
            Err(e) => {
                tracing::warn!("no control socket at {}: {e}", socket.display());
                entry.socket = None;
                None
            }
        };
        registry::register(&entry_file, &entry)?;
        Ok(Live { entry_file, server })
    }

    /// Stops answering and removes the registration.
    pub(crate) fn close(self) {
        if let Some(server) = self.server {
            server.abort();
        }
        registry::unregister(&self.entry_file);
    }
}
