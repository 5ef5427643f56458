//! The sessions' lines as one stream for a page: each shown session's control socket is
//! watched (`events`), and each of its lines is passed on wrapped as
//! `{"s":SESSION,"e":LINE}` without being parsed again. A session that appears later
//! (`crew dashboard`) is attached when the registry lists it; one that ends is announced
//! (`session_ended`), and not attached again. Everything stops when the page goes away.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::Scope;
use crate::session::live::control;
use crate::session::live::registry::Entry;

/// How often the registry is read for sessions that started since.
const RESCAN: Duration = Duration::from_secs(1);

/// Lines for one page.
pub(super) type Feed = mpsc::UnboundedReceiver<String>;

/// Starts feeding the lines of `scope`'s sessions to a new page.
pub(super) fn start(scope: Scope) -> Feed {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut attached: HashSet<String> = HashSet::new();
    tokio::spawn(async move {
        loop {
            for entry in scope.sessions() {
                if attached.insert(entry.session.clone()) {
                    tokio::spawn(attach(entry, tx.clone()));
                }
            }
            if tx.is_closed() || matches!(scope, Scope::Own(_)) {
                break;
            }
            tokio::time::sleep(RESCAN).await;
        }
    });
    rx
}

/// `{"s":SESSION,"e":BODY}` around a line that is already JSON.
fn wrap(session: &str, body: &str) -> String {
    let s = serde_json::to_string(session).unwrap_or_default();
    format!("{{\"s\":{s},\"e\":{body}}}")
}

async fn attach(entry: Entry, tx: mpsc::UnboundedSender<String>) {
    let hello = json!({
        "type": "session",
        "project": entry.project,
        "pid": entry.pid,
        "started": entry.started_ms,
    });
    if tx.send(wrap(&entry.session, &hello.to_string())).is_err() {
        return;
    }
    if let Some(socket) = &entry.socket
        && let Ok(mut lines) = control::watch(socket).await
    {
        while let Ok(Some(line)) = lines.next_line().await {
            if tx.send(wrap(&entry.session, &line)).is_err() {
                return;
            }
        }
    }
    // Not attached again: a session's id is not reused.
    let _ = tx.send(wrap(&entry.session, r#"{"type":"session_ended"}"#));
}
