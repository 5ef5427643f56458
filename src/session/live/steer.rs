//! What a watcher may ask a live session to show or do besides its events: list the
//! project's worktrees, show one's diff, merge, squash or discard one (through the same
//! [`crate::worktree::review`] calls as the TUI's panel, a discard that throws work away
//! only once confirmed), and show the end of a background command's output. Each answer
//! is a JSON object: what was asked for, or `{"error": …}` saying what went wrong.

use std::path::Path;

use serde_json::{Value, json};

use crate::worktree::review::{self, Review};
use crate::worktree::{Manager, naming};

/// Whether the user confirmed a discard that throws work away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Confirmation {
    /// Not (yet): a worktree holding work is kept, and the answer says so.
    #[default]
    NotGiven,
    /// The user saw what the worktree holds and confirmed.
    Given,
}

/// The most bytes of a command's output shown (its end).
const OUTPUT_TAIL: u64 = 64 << 10;

fn error(message: impl std::fmt::Display) -> Value {
    json!({"error": message.to_string()})
}

/// The worktrees of the repository at `project`, each with whether discarding it needs
/// a confirmation.
pub(crate) fn worktrees(project: &Path) -> Value {
    match Manager::open(project, None).and_then(|m| m.list()) {
        Ok(listings) => {
            let list: Vec<Value> = listings
                .iter()
                .map(|l| {
                    let mut v = serde_json::to_value(l).unwrap_or_default();
                    v["state"] = json!(l.state_label());
                    v["confirm_discard"] = json!(review::needs_confirmation(l));
                    v
                })
                .collect();
            json!({"worktrees": list})
        }
        Err(e) => error(e),
    }
}

/// Does `action` to the worktree of task `id` in the repository at `project`.
pub(crate) fn review(
    project: &Path,
    id: &str,
    action: Review,
    confirmation: Confirmation,
) -> Value {
    let outcome = Manager::open(project, None).and_then(|m| {
        if action == Review::Discard && confirmation == Confirmation::NotGiven {
            let listing = m.list()?.into_iter().find(|l| l.id == id);
            if let Some(l) = listing.filter(review::needs_confirmation) {
                return Ok(Err(format!(
                    "worktree {id} holds work ({}): confirm to discard it",
                    l.state_label()
                )));
            }
        }
        review::act(&m, action, id).map(Ok)
    });
    match outcome {
        Ok(Ok(text)) => json!({"ok": true, "text": text}),
        Ok(Err(ask)) => json!({"confirm": ask}),
        Err(e) => error(e),
    }
}

/// The end of the output of background task `task` of the session in `session_dir`.
pub(crate) fn output(session_dir: &Path, task: &str) -> Value {
    use std::io::{Read, Seek, SeekFrom};
    if let Err(e) = naming::check_task_id(task) {
        return error(e);
    }
    let path = crate::tasks::log_path(session_dir, task);
    let read = || -> std::io::Result<(String, bool)> {
        let mut file = std::fs::File::open(&path)?;
        let len = file.metadata()?.len();
        let from = len.saturating_sub(OUTPUT_TAIL);
        file.seek(SeekFrom::Start(from))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok((String::from_utf8_lossy(&bytes).into_owned(), from > 0))
    };
    match read() {
        Ok((text, cut)) => json!({"task": task, "output": text, "truncated": cut}),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            error(format!("task `{task}` has no output log in this session"))
        }
        Err(e) => error(format!("cannot read the output of task `{task}`: {e}")),
    }
}
