//! The web dashboard: a page crew serves itself (HTML, JS and CSS embedded in the binary,
//! nothing to build) that shows every live session of the user as it happens — the agent
//! tree and a timeline, each agent's streaming transcript, open approvals, worktrees with
//! their diffs, the team's mail and work list, background commands, costs — and lets the
//! user steer: answer an approval (the answer goes to the session's approver, which alone
//! mints a permit), merge, squash, keep or discard a worktree.
//!
//! The server reaches sessions only through their control sockets
//! (`session::live::control`), in-process (`--dashboard`, its own session) as standalone
//! (`crew dashboard`, every live session): one path. Modules: `guard` (token, Host,
//! Origin and CSRF checks), `server` (the routes), `feed` (the sessions' lines as one SSE
//! stream), `assets` (the embedded page).

mod assets;
mod feed;
mod guard;
mod server;

use std::net::SocketAddr;

use tokio::task::JoinHandle;

use crate::session::live::registry::{self, Entry};

/// Whether the dashboard may listen beyond this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Loopback addresses only (the default): a non-loopback address is an error.
    LoopbackOnly,
    /// The user asked for a non-loopback address explicitly (`--allow-remote`); a warning
    /// says that anyone on the network who gets the URL can steer the agents.
    Remote,
}

/// Where the dashboard listens, and whether that may be beyond this machine.
#[derive(Debug, Clone, Copy)]
pub struct Listen {
    /// The address (port 0: a free port).
    pub addr: SocketAddr,
    /// Whether a non-loopback address was asked for explicitly.
    pub exposure: Exposure,
}

/// Which sessions the dashboard shows.
#[derive(Debug, Clone)]
pub enum Scope {
    /// One session (the run that serves it, `--dashboard`).
    Own(Entry),
    /// Every live session of the user, as they come and go (`crew dashboard`).
    Everyone,
}

impl Scope {
    /// The sessions shown now.
    fn sessions(&self) -> Vec<Entry> {
        match self {
            Scope::Own(entry) => vec![entry.clone()],
            Scope::Everyone => registry::live(),
        }
    }

    /// The session `id`, if it is shown.
    fn find(&self, id: &str) -> Option<Entry> {
        self.sessions().into_iter().find(|e| e.session == id)
    }
}

/// Why the dashboard did not start.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "--listen {0}: not a loopback address; the dashboard steers your agents, so pass --allow-remote to serve it beyond this machine (and keep its URL secret)"
    )]
    NotLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("--listen {addr}: cannot listen there: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A running dashboard.
pub struct Dashboard {
    url: String,
    warning: Option<String>,
    server: JoinHandle<()>,
}

impl Dashboard {
    /// Listens as `listen` says and serves `scope` until stopped.
    pub async fn start(listen: Listen, scope: Scope) -> Result<Dashboard, DashboardError> {
        let addr = listen.addr;
        if !addr.ip().is_loopback() && listen.exposure == Exposure::LoopbackOnly {
            return Err(DashboardError::NotLoopback(addr));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| DashboardError::Bind { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| DashboardError::Bind { addr, source })?;
        let guard = guard::Guard::new(guard::new_token(), bound);
        let shown = if bound.ip().is_unspecified() {
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), bound.port())
        } else {
            bound
        };
        let url = format!("http://{shown}/?token={}", guard.token());
        let warning = (!bound.ip().is_loopback()).then(|| {
            format!(
                "the dashboard listens on {bound}, beyond this machine, without TLS: anyone who sees its URL (token included) can read your sessions and steer your agents"
            )
        });
        let app = server::router(server::App::new(guard, scope));
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!("the dashboard stopped: {e}");
            }
        });
        Ok(Dashboard {
            url,
            warning,
            server,
        })
    }

    /// The URL to open: it names the real port and carries the token.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What the user must be warned of (a non-loopback address), if anything.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Serves until the process ends.
    pub async fn serve_forever(self) {
        let _ = self.server.await;
    }

    /// Stops serving.
    pub fn stop(self) {
        self.server.abort();
    }
}
