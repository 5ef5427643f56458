//! Which paths of a worktree can differ from its base, so that status and diff look at
//! those alone. A full checkout can have changed anywhere ([`Scope::Everything`]: git
//! reads every file). An overlay workspace says what changed: only the paths in its upper
//! layer can differ on disk, and with the paths where its index or HEAD differs from the
//! base (read from git's objects, no file touched) that is every path status or diff
//! could report. So ending a task costs what the agent changed, not the repository's size.

use git2::{DiffOptions, Oid, Repository, StatusOptions};

use super::{WorktreeError, git_err};

/// The paths a status or diff of a worktree must look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every file (a full checkout).
    Everything,
    /// These paths (files, or folders with all below them), relative to the worktree.
    Paths(Vec<String>),
}

impl Scope {
    /// Adds the paths where the worktree's index or its HEAD differs from `base`: what
    /// staging and commits changed, which an upper layer does not show.
    pub(crate) fn widen(self, wt: &Repository, base: Oid) -> Result<Scope, WorktreeError> {
        let Scope::Paths(mut paths) = self else {
            return Ok(self);
        };
        let err = || git_err("compare with the base", wt.path().display());
        let base_tree = wt.find_commit(base).and_then(|c| c.tree()).map_err(err())?;
        let index = wt.index().map_err(err())?;
        let staged = wt
            .diff_tree_to_index(Some(&base_tree), Some(&index), None)
            .map_err(err())?;
        collect(&staged, &mut paths);
        if let Some(head) = wt.head().ok().and_then(|h| h.peel_to_tree().ok())
            && head.id() != base_tree.id()
        {
            let committed = wt
                .diff_tree_to_tree(Some(&base_tree), Some(&head), None)
                .map_err(err())?;
            collect(&committed, &mut paths);
        }
        paths.sort();
        paths.dedup();
        Ok(Scope::Paths(paths))
    }

    /// Whether nothing at all can differ.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Scope::Paths(p) if p.is_empty())
    }

    /// Limits a status to the scope.
    pub(crate) fn status_options(&self, opts: &mut StatusOptions) {
        if let Scope::Paths(paths) = self {
            for p in paths {
                opts.pathspec(p);
            }
            opts.disable_pathspec_match(true);
        }
    }

    /// Limits a diff to the scope.
    pub(crate) fn diff_options(&self, opts: &mut DiffOptions) {
        if let Scope::Paths(paths) = self {
            for p in paths {
                opts.pathspec(p);
            }
            opts.disable_pathspec_match(true);
        }
    }
}

fn collect(diff: &git2::Diff<'_>, into: &mut Vec<String>) {
    for d in diff.deltas() {
        for f in [d.old_file(), d.new_file()] {
            if let Some(p) = f.path() {
                into.push(p.to_string_lossy().into_owned());
            }
        }
    }
}
