//! The interactive answer to the sandbox proxy's question about a host that
//! `sandbox.network.allowedDomains` does not list (`crate::sandbox::net::ask`). The
//! TUI installs a [`NetworkAsker`] on the same channel its tool approvals come through, so
//! the human sees "sandbox wants to reach host:port" with the usual choices: once, for the
//! session, always (saved to `.crew/settings.local.json`'s
//! `sandbox.network.allowedDomains` once the command has ended) or deny. Under dontAsk ([`set_dont_ask`]) it refuses
//! without asking; headless nothing is installed and the proxy refuses as before.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::actor::PendingApproval;
use super::{ApprovalAnswer, ApprovalRequest};
use crate::protocol::ToolCall;
use crate::protocol::decision::{Decision, Source, Verdict};
use crate::protocol::permission_mode::PermissionMode;
use crate::sandbox::net::ask::{self, AskFuture, HostAnswer, HostAsker};

/// The name the question's call carries, so the approval view can tell it apart.
pub const NETWORK_CALL: &str = "network";

/// Whether the session is in dontAsk now (nobody may be asked).
static DONT_ASK: AtomicBool = AtomicBool::new(false);

/// Tells the asker the session's permission mode changed (dontAsk refuses new hosts).
pub fn set_dont_ask(mode: PermissionMode) {
    DONT_ASK.store(mode == PermissionMode::DontAsk, Ordering::SeqCst);
}

/// Asks the TUI's human about new hosts.
pub struct NetworkAsker {
    questions: UnboundedSender<PendingApproval>,
    settings: PathBuf,
}

impl NetworkAsker {
    /// An asker that sends its questions to `questions` and saves "always" answers to
    /// `settings` (the project's `.crew/settings.local.json`).
    pub fn new(questions: UnboundedSender<PendingApproval>, settings: PathBuf) -> Self {
        Self {
            questions,
            settings,
        }
    }
}

/// Installs the asker for this interactive session, in `mode` to start with.
pub fn install(
    questions: UnboundedSender<PendingApproval>,
    project_root: &Path,
    mode: PermissionMode,
) {
    set_dont_ask(mode);
    let settings = project_root.join(".crew/settings.local.json");
    ask::set_asker(Some(Arc::new(NetworkAsker::new(questions, settings))));
}

/// The question shown for `host:port`.
pub fn request(host: &str, port: u16) -> ApprovalRequest {
    let target = format!("{host}:{port}");
    let mut decision = Decision::new(
        Verdict::Ask,
        Source::Sandbox,
        format!(
            "a sandboxed command wants to reach {target}, which sandbox.network.allowedDomains \
             does not list; \"always\" adds \"{target}\" there in .crew/settings.local.json"
        ),
    );
    decision.target = Some(target.clone());
    decision.explicit_ask = true;
    ApprovalRequest {
        agent: "sandbox".into(),
        call: ToolCall {
            id: format!("network-{target}"),
            name: NETWORK_CALL.into(),
            arguments: json!({"host": host, "port": port}).to_string(),
        },
        decision,
        mode: if DONT_ASK.load(Ordering::SeqCst) {
            PermissionMode::DontAsk
        } else {
            PermissionMode::Default
        },
        teammate: None,
    }
}

impl HostAsker for NetworkAsker {
    fn ask(&self, host: &str, port: u16) -> AskFuture {
        if DONT_ASK.load(Ordering::SeqCst) {
            return Box::pin(async { HostAnswer::Deny });
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let question = PendingApproval {
            request: request(host, port),
            reply: tx.into(),
        };
        if self.questions.send(question).is_err() {
            return Box::pin(async { HostAnswer::Deny });
        }
        Box::pin(async move {
            match rx.await {
                Ok(ApprovalAnswer::AllowOnce | ApprovalAnswer::AllowOutsideSandbox) => {
                    HostAnswer::Once
                }
                Ok(ApprovalAnswer::AllowSession) => HostAnswer::Session,
                Ok(ApprovalAnswer::AllowForever) => HostAnswer::Always,
                Ok(ApprovalAnswer::Deny { .. }) | Err(_) => HostAnswer::Deny,
            }
        })
    }

    fn save(&self, host: &str, port: u16) -> Result<(), ask::SaveError> {
        Ok(save_allowed_domain(
            &self.settings,
            &format!("{host}:{port}"),
        )?)
    }
}

/// Why an "always" answer could not be written to the settings file.
#[derive(Debug, thiserror::Error)]
pub enum SaveDomainError {
    /// The file holds something that is not JSON.
    #[error("{} is not valid JSON ({reason}); fix it and answer again", .path.display())]
    NotJson {
        /// The settings file.
        path: PathBuf,
        /// The parser's error.
        reason: serde_json::Error,
    },
    /// The file could not be read.
    #[error("cannot read {}: {reason}", .path.display())]
    Read {
        /// The settings file.
        path: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// The file's JSON is not an object.
    #[error("{} does not hold a JSON object", .path.display())]
    NotAnObject {
        /// The settings file.
        path: PathBuf,
    },
    /// A key on the way to `allowedDomains` holds the wrong kind of value.
    #[error("`{key}` in {} is not {kind}", .path.display())]
    WrongKind {
        /// The dotted key.
        key: &'static str,
        /// The settings file.
        path: PathBuf,
        /// What it should be (`an object`, `an array`).
        kind: &'static str,
    },
    /// The settings directory could not be created.
    #[error("cannot create {}: {reason}", .dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// The settings could not be written out as JSON.
    #[error("{0}")]
    Serialize(serde_json::Error),
    /// The file could not be written.
    #[error("cannot write {}: {reason}", .path.display())]
    Write {
        /// The settings file.
        path: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
}

/// Adds `entry` to `sandbox.network.allowedDomains` of the settings file at `path`
/// (created when missing), keeping everything else in it.
pub fn save_allowed_domain(path: &Path, entry: &str) -> Result<(), SaveDomainError> {
    let at = || path.to_path_buf();
    let wrong = |key, kind| SaveDomainError::WrongKind {
        key,
        path: at(),
        kind,
    };
    let mut root: Value = match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
            .map_err(|reason| SaveDomainError::NotJson { path: at(), reason })?,
        Ok(_) => json!({}),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(reason) => return Err(SaveDomainError::Read { path: at(), reason }),
    };
    let list = root
        .as_object_mut()
        .ok_or_else(|| SaveDomainError::NotAnObject { path: at() })?
        .entry("sandbox")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| wrong("sandbox", "an object"))?
        .entry("network")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| wrong("sandbox.network", "an object"))?
        .entry("allowedDomains")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| wrong("sandbox.network.allowedDomains", "an array"))?;
    if !list.iter().any(|v| v.as_str() == Some(entry)) {
        list.push(json!(entry));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|reason| SaveDomainError::CreateDir {
            dir: dir.to_path_buf(),
            reason,
        })?;
    }
    let text = serde_json::to_string_pretty(&root).map_err(SaveDomainError::Serialize)?;
    std::fs::write(path, text + "\n")
        .map_err(|reason| SaveDomainError::Write { path: at(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_keeps_the_other_settings_and_adds_the_entry_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".crew/settings.local.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"permissions":{"allow":["Bash(ls)"]},"sandbox":{"network":{"allowedDomains":["a.example"]}}}"#,
        )
        .unwrap();
        save_allowed_domain(&path, "localhost:8080").unwrap();
        save_allowed_domain(&path, "localhost:8080").unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["permissions"]["allow"], json!(["Bash(ls)"]));
        assert_eq!(
            v["sandbox"]["network"]["allowedDomains"],
            json!(["a.example", "localhost:8080"])
        );
    }

    #[test]
    fn a_settings_file_that_is_not_json_is_named_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.local.json");
        std::fs::write(&path, "{ not json").unwrap();
        let err = save_allowed_domain(&path, "x.example")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("settings.local.json") && err.contains("not valid JSON"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
    }
}
