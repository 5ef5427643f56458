//! The review loop on a kept worktree, shared by the TUI's worktrees panel and the web
//! dashboard: show its diff, merge or squash it into the current branch, or discard it.
//! Each is one synchronous call on a [`Manager`] answering with what it did in words;
//! "keep" does nothing, so it is not here. Whether a discard must be confirmed first is
//! decided here too ([`needs_confirmation`]), so both front ends ask in the same cases.

use serde::{Deserialize, Serialize};

use super::{Listing, Manager, MergeStyle, WorktreeError};

/// What the user chose to do with a worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Review {
    /// Show its diff against its base.
    Diff,
    /// Merge its branch into the current branch.
    Merge,
    /// Merge its commits as one.
    Squash,
    /// Delete it with its branch.
    Discard,
}

/// Whether discarding `listing` throws work away (uncommitted changes or commits not in
/// its base), so that the user must confirm it first. A missing directory holds nothing.
pub(crate) fn needs_confirmation(listing: &Listing) -> bool {
    listing.summary.as_ref().is_some_and(|s| !s.is_clean())
}

/// Does `review` to the worktree of task `id`; answers the diff's text, or what was done.
pub(crate) fn act(m: &Manager, review: Review, id: &str) -> Result<String, WorktreeError> {
    Ok(match review {
        Review::Diff => m.diff(id)?,
        Review::Merge | Review::Squash => {
            let style = match review {
                Review::Squash => MergeStyle::Squash,
                _ => MergeStyle::Merge,
            };
            let merged = m.merge(id, style)?;
            let how = if merged.squash {
                "squashed into"
            } else {
                "merged into"
            };
            format!(
                "Worktree {id} {how} {} as {} ({} file(s)); worktree and branch removed.",
                merged.into,
                &merged.commit[..merged.commit.len().min(12)],
                merged.files.len()
            )
        }
        Review::Discard => {
            let held = m.discard(id)?.map_or_else(
                || "its directory was already gone".into(),
                |s| format!("it was {}", s.state_label()),
            );
            format!("Worktree {id} discarded ({held}).")
        }
    })
}
