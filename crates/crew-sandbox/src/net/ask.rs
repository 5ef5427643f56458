//! Asking a human about a host that `sandbox.network.allowedDomains` does not list. In an
//! interactive session (the TUI, not under dontAsk) a [`HostAsker`] is installed with
//! [`set_asker`]; the proxy then holds a connection to an unlisted host and asks, once per
//! host and port however many connections wait for it: allow this connection, allow it
//! for the session (kept in [`session_allows`]'s list), allow it always (also saved to
//! the settings by the asker, once the command has ended: [`Deferred`]) or refuse. Without an asker (headless, dontAsk) the proxy
//! refuses, as it always did.
//!
//! Plain functions and types with no tie to the approver: the TUI side lives in
//! `crate::approver::network`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::FutureExt;
use futures::future::Shared;

/// How long the proxy holds a connection for an answer before refusing it.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(300);

/// A human's answer about one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAnswer {
    /// Let the waiting connection(s) through; ask again next time.
    Once,
    /// Let it through for the rest of the session.
    Session,
    /// Let it through from now on (the asker saves it to the settings).
    Always,
    /// Refuse it.
    Deny,
}

/// The future an asker returns.
pub type AskFuture = Pin<Box<dyn Future<Output = HostAnswer> + Send>>;

/// Asks a human whether a sandboxed command may reach `host:port`.
pub trait HostAsker: Send + Sync {
    /// The question; the answer may take as long as the human does (the proxy gives up
    /// after [`ASK_TIMEOUT`]).
    fn ask(&self, host: &str, port: u16) -> AskFuture;

    /// Saves an "always" answer (to the settings). Called once the command has ended and
    /// its protected files were restored, so the save is not undone with them.
    fn save(&self, host: &str, port: u16) -> Result<(), SaveError>;
}

/// Why saving an "always" answer failed: the implementation's own error (it lives above
/// this crate, with the settings files), kept whole for the warning that reports it.
pub type SaveError = Box<dyn std::error::Error + Send + Sync>;

/// One "always" answer waiting to be saved: who saves it, the host and the port.
type Save = (Arc<dyn HostAsker>, String, u16);

/// The "always" answers given while one command ran, saved when it has ended.
#[derive(Clone, Default)]
pub struct Deferred(Arc<Mutex<Vec<Save>>>);

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|l| l.len()).unwrap_or(0);
        write!(f, "Deferred({n})")
    }
}

impl Deferred {
    fn push(&self, asker: &Arc<dyn HostAsker>, host: &str, port: u16) {
        if let Ok(mut l) = self.0.lock() {
            l.push((Arc::clone(asker), host.to_string(), port));
        }
    }

    /// Saves (and forgets) every answer recorded so far; a failed save is logged (the host
    /// stays allowed for the session).
    pub fn persist(&self) {
        let taken = self
            .0
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        for (asker, host, port) in taken {
            if let Err(e) = asker.save(&host, port) {
                tracing::warn!(
                    "{host}:{port} is allowed for this session, but saving it failed: {e}"
                );
            }
        }
    }
}

static ASKER: RwLock<Option<Arc<dyn HostAsker>>> = RwLock::new(None);

/// Installs (or, with `None`, removes) the asker for the commands this process starts.
pub fn set_asker(asker: Option<Arc<dyn HostAsker>>) {
    if let Ok(mut a) = ASKER.write() {
        *a = asker;
    }
}

/// The asker in force, if any.
pub fn asker() -> Option<Arc<dyn HostAsker>> {
    ASKER.read().ok().and_then(|a| a.clone())
}

/// The `host:port` targets allowed for this session (lowercase host, no trailing dot).
static SESSION: RwLock<Vec<String>> = RwLock::new(Vec::new());

fn key(host: &str, port: u16) -> String {
    format!("{}:{port}", host.trim_end_matches('.').to_ascii_lowercase())
}

/// Whether `host:port` was allowed for this session.
pub fn session_allows(host: &str, port: u16) -> bool {
    let k = key(host, port);
    SESSION.read().is_ok_and(|s| s.contains(&k))
}

/// Allows `host:port` for the rest of this session.
pub fn allow_for_session(host: &str, port: u16) {
    let k = key(host, port);
    if let Ok(mut s) = SESSION.write()
        && !s.contains(&k)
    {
        s.push(k);
    }
}

type Pending = Shared<Pin<Box<dyn Future<Output = HostAnswer> + Send>>>;

/// Questions in flight, by target, so connections to the same host share one question.
static IN_FLIGHT: Mutex<Option<HashMap<String, Pending>>> = Mutex::new(None);

/// Asks `asker` about `host:port` (one question for all connections waiting on it) and
/// returns whether the connection may go through. A session or always answer is added
/// to the session's list (an always answer also to `saves`); no answer within
/// [`ASK_TIMEOUT`] is a refusal.
pub async fn decide(asker: &Arc<dyn HostAsker>, saves: &Deferred, host: &str, port: u16) -> bool {
    let k = key(host, port);
    let pending = {
        let Ok(mut guard) = IN_FLIGHT.lock() else {
            return false;
        };
        let map = guard.get_or_insert_with(HashMap::new);
        map.entry(k.clone())
            .or_insert_with(|| {
                let question = asker.ask(host, port);
                let timed: Pin<Box<dyn Future<Output = HostAnswer> + Send>> =
                    Box::pin(async move {
                        tokio::time::timeout(ASK_TIMEOUT, question)
                            .await
                            .unwrap_or(HostAnswer::Deny)
                    });
                timed.shared()
            })
            .clone()
    };
    let answer = pending.await;
    if let Ok(mut guard) = IN_FLIGHT.lock()
        && let Some(map) = guard.as_mut()
    {
        map.remove(&k);
    }
    match answer {
        HostAnswer::Once => true,
        HostAnswer::Session => {
            allow_for_session(host, port);
            true
        }
        HostAnswer::Always => {
            allow_for_session(host, port);
            saves.push(asker, host, port);
            true
        }
        HostAnswer::Deny => false,
    }
}
