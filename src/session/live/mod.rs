//! A running session, visible from outside: it registers itself under `~/.crew/run/`
//! (`registry`), keeps what each agent is doing from its events (`board`), and answers
//! snapshots of it (`snapshot`) on a control socket (`control`), for `crew ps` and for
//! `crew tasks` to find which live session holds an id. For the web dashboard the socket
//! also streams the session's history (`journal`, masked by `redact`), takes answers to
//! its open approval questions (`approvals`) and acts on worktrees (`steer`). It
//! unregisters when it closes; the entries of crews that died are reconciled away by the
//! next reader.

pub(crate) mod approvals;
pub(crate) mod board;
pub(crate) mod control;
pub(crate) mod journal;
pub(crate) mod redact;
pub mod registry;
pub(crate) mod snapshot;
pub(crate) mod steer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::task::JoinHandle;

use crate::events::EventBus;
use registry::Entry;

/// This process's registration, removed by [`Live::close`].
pub struct Live {
    entry_file: PathBuf,
    entry: Entry,
    server: Option<JoinHandle<()>>,
    journal: Arc<journal::Journal>,
    approvals: Arc<approvals::Approvals>,
}

impl Live {
    /// Registers the session and starts answering on its socket. A socket that cannot be
    /// bound leaves an entry without one (`crew ps` then shows the session from its files);
    /// a registry that cannot be written is an error for the caller to report.
    pub fn start(
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
        let journal = journal::Journal::new(redact::Secrets::from_env());
        events.add_recorder(journal.clone());
        let approvals = approvals::Approvals::new(journal.clone());
        let served = control::Served {
            entry: entry.clone(),
            board,
            journal: journal.clone(),
            approvals: approvals.clone(),
        };
        let server = match control::serve(&socket, served) {
            Ok(server) => Some(server),
            Err(e) => {
                tracing::warn!("no control socket at {}: {e}", socket.display());
                entry.socket = None;
                None
            }
        };
        registry::register(&entry_file, &entry)?;
        Ok(Live {
            entry_file,
            entry,
            server,
            journal,
            approvals,
        })
    }

    /// The registration (its `socket` is `None` when none could be bound).
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The session's open approval questions: give them the approver's questions
    /// ([`approvals::Approvals::serve`]) so that watchers can answer them.
    pub(crate) fn approvals(&self) -> &Arc<approvals::Approvals> {
        &self.approvals
    }

    /// Stops answering and removes the registration.
    pub fn close(self) {
        self.journal.close_watchers();
        if let Some(server) = self.server {
            server.abort();
        }
        registry::unregister(&self.entry_file);
    }
}
