//! The worktrees panel's I/O: the listing, and diff, merge, squash and discard through the
//! worktree manager (what `crew worktrees` does), on the blocking pool; each outcome comes
//! back as a [`Done`] and the listing is reloaded after a change.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc::UnboundedSender;

use super::app::App;
use super::jobs::{Done, JobError};
use super::transcript::Entry;
use super::worktrees_panel::Review;
use crate::worktree::Manager;

/// Reports the worktrees of the repository at `cwd`.
pub(super) fn load(cwd: &Path, done: UnboundedSender<Done>) {
    let cwd = cwd.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let listed = Manager::open(&cwd, None)
            .and_then(|m| m.list())
            .map_err(JobError::from);
        let _ = done.send(Done::Worktrees(listed));
    });
}

/// Does `review` to the worktree of task `id` and reports the outcome.
pub(super) fn review(cwd: &Path, review: Review, id: String, done: UnboundedSender<Done>) {
    let cwd: PathBuf = cwd.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let outcome = Manager::open(&cwd, None)
            .and_then(|m| crate::worktree::review::act(&m, review, &id))
            .map_err(JobError::from);
        let _ = done.send(Done::Reviewed(review, id, outcome));
    });
}

/// Shows what a review did: a diff in the panel, anything else as a notice (a refusal —
/// a conflict, nothing to merge — as an error), then reloads the listing.
pub(super) fn reviewed(
    app: &mut App,
    review: Review,
    id: String,
    outcome: Result<String, JobError>,
    cwd: &Path,
    done: &UnboundedSender<Done>,
) {
    let message = match (review, outcome) {
        (Review::Diff, Ok(text)) if text.trim().is_empty() => {
            Entry::Notice(format!("Worktree {id} holds no changes."))
        }
        (Review::Diff, Ok(text)) => {
            app.worktrees.diff = Some((id, text, 0));
            return;
        }
        (_, Ok(text)) => {
            load(cwd, done.clone());
            Entry::Notice(text)
        }
        (_, Err(e)) => Entry::Error(format!("Worktree {id}: {e}")),
    };
    // Shown under the list too: the panel covers the transcript.
    if let Entry::Notice(text) | Entry::Error(text) = &message {
        app.worktrees.message = Some(text.clone());
    }
    app.transcript.push(message);
}
