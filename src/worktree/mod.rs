//! Git worktrees for subagents: each task gets its own checkout outside the repository,
//! on its own branch, and its work is never deleted automatically.
//!
//! The pieces: [`naming`] (task ids, slugs, where things live), [`registry`] (the persisted
//! record of our worktrees), [`add`] (adding a worktree, many at once), [`git`] (the other git
//! operations), [`safe_git`] (every `git` program crew starts), [`include`] (`.worktreeinclude`
//! and the setup command), [`manager`] (the operations, synchronous, one repository), [`review`] (diff, merge,
//! squash, discard for the front ends) and [`actor`] (the `WorktreeManager` actor that serialises them).

pub mod actor;
pub(crate) mod add;
pub(crate) mod git;
pub(crate) mod include;
pub mod manager;
pub(crate) mod naming;
pub(crate) mod overlay;
pub(crate) mod registry;
pub(crate) mod review;
pub mod safe_git;
pub(crate) mod scope;
pub(crate) mod snapshot;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use actor::{WorktreeManager, WorktreeManagerArgs, WorktreeMsg};
pub use manager::Manager;

/// A worktree made for a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The task id (also the worktree's directory name and git worktree name).
    pub id: String,
    /// The worktree's directory.
    pub path: PathBuf,
    /// Its branch, `crew/<task-id>-<slug>`.
    pub branch: String,
    /// The commit the branch was created from (hex).
    pub base_commit: String,
    /// The main checkout of the repository.
    pub repo_root: PathBuf,
    /// The outcome of `worktree.setup`, when one is configured.
    pub setup: Option<SetupReport>,
    /// Git-ignored files copied from the main checkout by `.worktreeinclude` (relative).
    pub copied: Vec<PathBuf>,
}

impl Worktree {
    /// Where a path of the main checkout lives in this worktree (`None` if `path` is not
    /// inside the main checkout): a subagent told to edit `<repo>/src/x.rs` edits
    /// `<worktree>/src/x.rs`.
    pub fn map_path(&self, path: &std::path::Path) -> Option<PathBuf> {
        path.strip_prefix(&self.repo_root)
            .ok()
            .map(|rel| self.path.join(rel))
    }
}

/// How the optional setup command went. A failing setup does not undo the worktree: the
/// subagent can still read and edit, and the lead is told why its builds may fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupReport {
    /// The command as configured.
    pub command: String,
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit code (`None` if killed by a signal or not started).
    pub exit_code: Option<i32>,
    /// The last lines of its combined output, or why it could not start.
    pub output_tail: String,
}

/// Where a registered worktree stands in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A subagent is (or was, before a crash) working in it.
    Active,
    /// Its task ended with work in it; kept for the user to review, merge or discard.
    Kept,
}

/// What a worktree holds relative to its base.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffSummary {
    /// Files that differ from the base (committed or not, untracked included).
    pub files_changed: usize,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Whether the worktree has uncommitted changes, untracked non-ignored files included.
    pub uncommitted: bool,
    /// Commits on the branch that are not in its base.
    pub commits_ahead: u32,
}

impl DiffSummary {
    /// Whether there is nothing in the worktree that is not in its base.
    pub fn is_clean(&self) -> bool {
        !self.uncommitted && self.commits_ahead == 0
    }

    /// `clean`, `dirty`, `ahead N` or `dirty, ahead N`.
    pub fn state_label(&self) -> String {
        match (self.uncommitted, self.commits_ahead) {
            (false, 0) => "clean".into(),
            (true, 0) => "dirty".into(),
            (false, n) => format!("ahead {n}"),
            (true, n) => format!("dirty, ahead {n}"),
        }
    }
}

/// The outcome of finishing a task's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Finished {
    /// It held nothing beyond its base; the worktree and its branch are gone.
    Removed,
    /// It holds work; it stays, with its branch, marked `kept`.
    Kept {
        /// Why, in words.
        reason: String,
        /// What it holds.
        summary: DiffSummary,
    },
}

/// One registered worktree and what it holds now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// The task id.
    pub id: String,
    /// Its branch.
    pub branch: String,
    /// Its directory.
    pub path: PathBuf,
    /// Registry status.
    pub status: Status,
    /// The task description.
    pub description: String,
    /// The base commit (hex).
    pub base_commit: String,
    /// What it holds; `None` if its directory is missing (run reconcile).
    pub summary: Option<DiffSummary>,
}

impl Listing {
    /// `clean`, `dirty`, `ahead N`, `dirty, ahead N` or `missing`.
    pub fn state_label(&self) -> String {
        self.summary
            .as_ref()
            .map_or_else(|| "missing".into(), DiffSummary::state_label)
    }
}

/// How a task's branch lands on the main checkout's branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergeStyle {
    /// A merge commit with the branch as its second parent.
    Merge,
    /// One single-parent commit holding all of the branch's changes.
    Squash,
}

/// The result of a successful merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merged {
    /// The new commit on the main checkout's branch (hex).
    pub commit: String,
    /// The branch merged into, e.g. `main`.
    pub into: String,
    /// Whether the task's commits were squashed into one.
    pub squash: bool,
    /// Files changed by the merge.
    pub files: Vec<String>,
}

/// A registry entry pruned because its directory was gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pruned {
    /// The task id.
    pub id: String,
    /// Its branch.
    pub branch: String,
    /// Whether the branch was kept because it has commits beyond its base.
    pub branch_kept: bool,
    /// Commits on the branch beyond its base.
    pub commits_ahead: u32,
}

/// What reconciliation found and did. Nothing holding work is ever deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileReport {
    /// Registry entries whose directory was gone, now removed from the registry and git.
    pub pruned: Vec<Pruned>,
    /// Directories in the repository's worktrees folder, or git worktrees there, that the
    /// registry does not know. Left in place for the user.
    pub orphaned: Vec<PathBuf>,
    /// Entries left `active` by a previous run (it was killed); now `kept`.
    pub interrupted: Vec<String>,
}

/// Errors of the worktree operations. Each names the path, branch or id and what to do.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The directory is not inside a git repository.
    #[error("{path} is not inside a git repository ({source}); run crew from a git checkout")]
    NotARepository {
        /// The directory.
        path: PathBuf,
        /// What git said.
        source: git2::Error,
    },
    /// Worktrees need a main checkout.
    #[error("the repository at {path} is bare; worktrees need a checkout to start from")]
    BareRepository {
        /// The repository.
        path: PathBuf,
    },
    /// A task id that cannot name a directory and a branch.
    #[error("task id `{id}` cannot be used for a worktree: {reason}")]
    InvalidTaskId {
        /// The id.
        id: String,
        /// Why.
        reason: &'static str,
    },
    /// A worktree for the id already exists.
    #[error(
        "a worktree for task `{id}` already exists at {path}; finish or discard it first (`crew worktrees discard {id}`)"
    )]
    AlreadyExists {
        /// The id.
        id: String,
        /// Its directory.
        path: PathBuf,
    },
    /// The base ref does not resolve to a commit.
    #[error(
        "base `{base}` does not name a commit ({source}); check `worktree.base` in .crew/settings.json or the base argument"
    )]
    BadBase {
        /// The ref as given.
        base: String,
        /// What git said.
        source: git2::Error,
    },
    /// No registered worktree has this id.
    #[error("no worktree for task `{id}` in {registry}; see `crew worktrees list`")]
    NotFound {
        /// The id.
        id: String,
        /// The registry file.
        registry: PathBuf,
    },
    /// The worktree's directory is gone.
    #[error(
        "the worktree of task `{id}` is missing ({path}); its branch `{branch}` may still hold its commits; restart crew to reconcile"
    )]
    Missing {
        /// The id.
        id: String,
        /// Where it was.
        path: PathBuf,
        /// Its branch.
        branch: String,
    },
    /// The worktree's HEAD is not the tip of its branch, so merging the branch would miss
    /// commits and removing the worktree afterwards could lose them.
    #[error(
        "the worktree of task `{id}` at {path} is not on the tip of its branch `{branch}`; check out `{branch}` there (bringing in any commits you want kept) and merge again"
    )]
    HeadMoved {
        /// The id.
        id: String,
        /// Its directory.
        path: PathBuf,
        /// Its branch.
        branch: String,
    },
    /// The branch holds nothing to merge.
    #[error(
        "branch `{branch}` of task `{id}` has no commits beyond its base; nothing to merge (use `crew worktrees discard {id}`)"
    )]
    NothingToMerge {
        /// The id.
        id: String,
        /// The branch.
        branch: String,
    },
    /// The merge would conflict; nothing was changed.
    #[error(
        "merging `{branch}` (task `{id}`) into `{into}` would conflict in: {}; nothing was changed — resolve it in the worktree (e.g. rebase it onto `{into}`) and merge again",
        paths.join(", ")
    )]
    Conflict {
        /// The id.
        id: String,
        /// The task's branch.
        branch: String,
        /// The branch merged into.
        into: String,
        /// Conflicting paths.
        paths: Vec<String>,
    },
    /// The main checkout has uncommitted changes to files the merge touches.
    #[error(
        "the main checkout {root} has uncommitted changes to files the merge touches: {}; commit or stash them, then merge again",
        paths.join(", ")
    )]
    MainCheckoutDirty {
        /// The main checkout.
        root: PathBuf,
        /// The paths in both.
        paths: Vec<String>,
    },
    /// The main checkout is not on a branch.
    #[error(
        "the main checkout {root} is not on a branch (detached HEAD); check out the branch to merge into"
    )]
    DetachedHead {
        /// The main checkout.
        root: PathBuf,
    },
    /// A path we would delete is not inside our worktrees folder.
    #[error("refusing to delete {path}: it is not inside {base}; remove it by hand if it is yours")]
    OutsideBase {
        /// The path.
        path: PathBuf,
        /// Our folder.
        base: PathBuf,
    },
    /// A git operation failed.
    #[error("git {op} failed for {path}: {source}")]
    Git {
        /// What we were doing.
        op: &'static str,
        /// Repository, worktree or ref concerned.
        path: String,
        /// What git said.
        source: git2::Error,
    },
    /// The `git` program failed.
    #[error("`{command}` failed in {cwd}: {stderr}")]
    GitCommand {
        /// The command line.
        command: String,
        /// Where it ran.
        cwd: PathBuf,
        /// Its error output.
        stderr: String,
    },
    /// A file operation failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What we were doing.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The registry file cannot be read.
    #[error(
        "the worktree registry {path} is malformed ({message}); fix it or move it aside and restart crew"
    )]
    Registry {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `.crew/settings.json` has a bad `worktree` key.
    #[error("{path}: field `{field}` {message}")]
    Settings {
        /// The file.
        path: PathBuf,
        /// The field, e.g. `worktree.setup`.
        field: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// The operation's thread died (a bug); nothing more is known.
    /// A workspace's overlay could not be mounted in this process.
    #[error(
        "cannot mount workspace `{id}` at {path}: {reason}; its changes are kept in {upper} (set CREW_WORKSPACE_OVERLAY=off only for new workspaces)"
    )]
    Overlay {
        /// The task id.
        id: String,
        /// The workspace's path.
        path: PathBuf,
        /// Where its changes are kept.
        upper: PathBuf,
        /// Why the mount failed.
        reason: String,
    },
    /// `open` was asked for a workspace another crew still has mounted.
    #[error(
        "workspace `{id}` is in use by a running crew; let that session end (or stop its task), then open the workspace"
    )]
    StillActive {
        /// The task id.
        id: String,
    },
    #[error("the worktree operation stopped unexpectedly: {0}")]
    Internal(String),
}

/// Shorthand for a git2 failure with context.
pub(crate) fn git_err(
    op: &'static str,
    path: impl ToString,
) -> impl FnOnce(git2::Error) -> WorktreeError {
    move |source| WorktreeError::Git {
        op,
        path: path.to_string(),
        source,
    }
}

/// Shorthand for an I/O failure with context.
pub(crate) fn io_err(
    op: &'static str,
    path: &std::path::Path,
) -> impl FnOnce(std::io::Error) -> WorktreeError {
    let path = path.to_path_buf();
    move |source| WorktreeError::Io { op, path, source }
}
