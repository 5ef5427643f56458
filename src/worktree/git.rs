//! The git operations behind the worktree manager, on git2 (libgit2), which runs no hook,
//! filter driver, textconv or fsmonitor, except one step: moving the user's checkout to a
//! merge result is done by the `git` program (`git merge --ff-only`, started through
//! [`super::safe_git`] so it too runs nothing the configuration names), because git2 has
//! no safe equivalent of git's two-way checkout that keeps unrelated local changes,
//! updates the reflog and runs no half-way.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{BranchType, DiffOptions, Oid, Repository, StatusOptions, WorktreePruneOptions};

use super::scope::Scope;
use super::{DiffSummary, MergeStyle, WorktreeError, git_err, io_err};

/// The main checkout of the repository containing `start` (also when `start` is inside a
/// linked worktree: worktrees of worktrees belong to the same repository), canonical.
pub(crate) fn open_main(start: &Path) -> Result<(Repository, PathBuf), WorktreeError> {
    let found = Repository::discover(start).map_err(|source| WorktreeError::NotARepository {
        path: start.to_path_buf(),
        source,
    })?;
    let main = if found.is_worktree() {
        Repository::open(found.commondir()).map_err(git_err("open", found.commondir().display()))?
    } else {
        found
    };
    let root = main
        .workdir()
        .ok_or_else(|| WorktreeError::BareRepository {
            path: main.path().to_path_buf(),
        })?
        .to_path_buf();
    let root = root.canonicalize().map_err(io_err("resolve", &root))?;
    Ok((main, root))
}

/// The commit `base` names in the checkout at `cwd` (default: its HEAD).
pub(crate) fn resolve_base(cwd: &Path, base: Option<&str>) -> Result<Oid, WorktreeError> {
    let repo = Repository::discover(cwd).map_err(|source| WorktreeError::NotARepository {
        path: cwd.to_path_buf(),
        source,
    })?;
    let spec = base.unwrap_or("HEAD");
    repo.revparse_single(spec)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id())
        .map_err(|source| WorktreeError::BadBase {
            base: spec.to_string(),
            source,
        })
}

/// Whether the checkout at `path` has uncommitted changes, untracked non-ignored files
/// included.
pub(crate) fn is_dirty(wt: &Repository, scope: &Scope) -> Result<bool, WorktreeError> {
    if scope.is_empty() {
        return Ok(false);
    }
    Ok(!dirty_paths_in(wt, scope)?.is_empty())
}

/// The paths with uncommitted changes (staged, unstaged or untracked, not ignored).
pub(crate) fn dirty_paths(repo: &Repository) -> Result<BTreeSet<String>, WorktreeError> {
    dirty_paths_in(repo, &Scope::Everything)
}

/// [`dirty_paths`] among the paths of `scope`.
fn dirty_paths_in(repo: &Repository, scope: &Scope) -> Result<BTreeSet<String>, WorktreeError> {
    let mut opts = StatusOptions::new();
    scope.status_options(&mut opts);
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(git_err("status", repo.path().display()))?;
    Ok(statuses
        .iter()
        .map(|e| String::from_utf8_lossy(e.path_bytes()).into_owned())
        .collect())
}

/// Commits everything uncommitted in the checkout at `path` (new, changed and deleted
/// files; ignored files stay out) on `branch`, which must be the checkout's current
/// branch: a confined subagent can repoint its worktree's HEAD (at `main`, say), and
/// this commit runs outside any sandbox. The author is the repository's configured
/// identity, else `crewmaster`.
pub(crate) fn commit_all(path: &Path, branch: &str, message: &str) -> Result<Oid, WorktreeError> {
    let shown = path.display().to_string();
    let wt = Repository::open(path).map_err(git_err("open", &shown))?;
    let own = format!("refs/heads/{branch}");
    let on_branch = wt
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target_bytes().map(|t| t == own.as_bytes()))
        .unwrap_or(false);
    if !on_branch {
        return Err(git_err("commit in", &shown)(git2::Error::from_str(
            &format!(
                "its HEAD is no longer branch {branch}; nothing was committed. Inspect the worktree with `git -C {shown} status` before merging"
            ),
        )));
    }
    let mut index = wt.index().map_err(git_err("index", &shown))?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .map_err(git_err("add", &shown))?;
    index
        .update_all(["*"], None)
        .map_err(git_err("add", &shown))?;
    index.write().map_err(git_err("write index", &shown))?;
    let tree_id = index.write_tree().map_err(git_err("write tree", &shown))?;
    let tree = wt
        .find_tree(tree_id)
        .map_err(git_err("find tree", &shown))?;
    let sig = wt
        .signature()
        .or_else(|_| git2::Signature::now("crewmaster", "crewmaster@localhost"))
        .map_err(git_err("signature", &shown))?;
    let parent = wt
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(git_err("read HEAD", &shown))?;
    wt.commit(Some(&own), &sig, &sig, message, &tree, &[&parent])
        .map_err(git_err("commit", &shown))
}

/// Commits reachable from `tip` that are not reachable from `base`.
pub(crate) fn ahead(repo: &Repository, tip: Oid, base: Oid) -> Result<u32, WorktreeError> {
    let (ahead, _) = repo
        .graph_ahead_behind(tip, base)
        .map_err(git_err("count commits of", tip))?;
    Ok(u32::try_from(ahead).unwrap_or(u32::MAX))
}

/// The tip of local branch `branch`, if it exists.
pub(crate) fn branch_tip(repo: &Repository, branch: &str) -> Option<Oid> {
    repo.find_branch(branch, BranchType::Local)
        .ok()
        .and_then(|b| b.get().target())
}

/// The commit the worktree at `path` has checked out, if any.
pub(crate) fn worktree_head(path: &Path) -> Result<Option<Oid>, WorktreeError> {
    let wt = Repository::open(path).map_err(git_err("open worktree", path.display()))?;
    Ok(wt.head().ok().and_then(|h| h.target()))
}

/// What the worktree at `path` holds beyond `base`: its diff (committed, staged, unstaged
/// and untracked) and its commits. Commits are counted from both the worktree's HEAD and
/// `branch`, whichever is further ahead, so a detached HEAD's commits count too.
pub(crate) fn summarize(
    main: &Repository,
    path: &Path,
    branch: &str,
    base: Oid,
    scope: Scope,
) -> Result<DiffSummary, WorktreeError> {
    let wt = Repository::open(path).map_err(git_err("open worktree", path.display()))?;
    let scope = scope.widen(&wt, base)?;
    let uncommitted = is_dirty(&wt, &scope)?;
    let mut commits_ahead = 0;
    let head = wt.head().ok().and_then(|h| h.target());
    if let Some(head) = head {
        commits_ahead = ahead(&wt, head, base)?;
    }
    if let Some(tip) = branch_tip(main, branch) {
        commits_ahead = commits_ahead.max(ahead(main, tip, base)?);
    }
    if !uncommitted && commits_ahead == 0 && head == Some(base) {
        // Nothing beyond the base: the diff is empty, no need to read every file again.
        return Ok(DiffSummary::default());
    }
    let diff = workdir_diff(&wt, base, &scope)?;
    let stats = diff.stats().map_err(git_err("diff", path.display()))?;
    Ok(DiffSummary {
        files_changed: stats.files_changed(),
        insertions: stats.insertions(),
        deletions: stats.deletions(),
        uncommitted,
        commits_ahead,
    })
}

/// The diff from `base` to the working tree of `wt`, untracked files' content included.
fn workdir_diff<'r>(
    wt: &'r Repository,
    base: Oid,
    scope: &Scope,
) -> Result<git2::Diff<'r>, WorktreeError> {
    let tree = wt
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(git_err("read base tree", base))?;
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_ignored(false);
    scope.diff_options(&mut opts);
    wt.diff_tree_to_workdir_with_index(Some(&tree), Some(&mut opts))
        .map_err(git_err("diff", wt.path().display()))
}

/// The unified diff of the worktree at `path` against `base`, uncommitted changes and
/// untracked files included.
pub(crate) fn diff_text(path: &Path, base: Oid, scope: Scope) -> Result<String, WorktreeError> {
    let wt = Repository::open(path).map_err(git_err("open worktree", path.display()))?;
    let scope = scope.widen(&wt, base)?;
    if scope.is_empty() {
        return Ok(String::new());
    }
    let diff = workdir_diff(&wt, base, &scope)?;
    let mut out = Vec::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })
    .map_err(git_err("print diff", path.display()))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Deletes the worktree directory `path` (which must be `base_dir/name`), prunes git's
/// metadata for worktree `name` and deletes branch `branch`. Callers decide beforehand
/// that nothing of value is lost.
pub(crate) fn remove(
    main: &Repository,
    base_dir: &Path,
    name: &str,
    path: &Path,
    branch: &str,
) -> Result<(), WorktreeError> {
    // Only `<base_dir>/<valid id>` exactly: a registry edited to say `../..` or an
    // absolute path elsewhere must not turn into a recursive delete.
    if super::naming::check_task_id(name).is_err() || path != base_dir.join(name) {
        return Err(WorktreeError::OutsideBase {
            path: path.to_path_buf(),
            base: base_dir.to_path_buf(),
        });
    }
    // An overlay workspace: its mount and layers go first (a no-op for a checkout).
    super::overlay::remove_layers(base_dir, name, path)?;
    super::overlay::unlock(&main.path().join("worktrees").join(name));
    if path.exists() {
        discard_dir(base_dir, name, path)?;
    }
    let _held = super::add::lock(main.path())?;
    prune_metadata(main, name)?;
    delete_branch(main, branch)
}

/// The folder, beside the worktrees, where removed worktrees wait to be deleted.
pub(crate) const TRASH_DIR: &str = ".trash";

/// Takes the directory `path` of worktree `name` out of the way at once (a rename into
/// [`TRASH_DIR`]) and deletes it on a background thread: deleting thousands of files need
/// not delay the caller, who decided nothing in it is of value. Falls back to deleting in
/// place when the rename fails.
fn discard_dir(base_dir: &Path, name: &str, path: &Path) -> Result<(), WorktreeError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let trash = base_dir.join(TRASH_DIR);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let target = trash.join(format!("{name}.{}.{n}", std::process::id()));
    let moved = std::fs::create_dir_all(&trash).and_then(|()| std::fs::rename(path, &target));
    if moved.is_err() {
        return std::fs::remove_dir_all(path).map_err(io_err("delete", path));
    }
    std::thread::spawn(move || {
        let _ = std::fs::remove_dir_all(&target);
    });
    Ok(())
}

/// Deletes, on a background thread, whatever a removal left in `base_dir`'s trash (a
/// process that died before its deleting thread finished).
pub(crate) fn empty_trash(base_dir: &Path) {
    let trash = base_dir.join(TRASH_DIR);
    if trash.is_dir() {
        std::thread::spawn(move || {
            let _ = std::fs::remove_dir_all(&trash);
        });
    }
}

/// Removes git's record of worktree `name` if its directory is gone (as `git worktree
/// prune` would). Returns whether something was pruned.
pub(crate) fn prune_metadata(main: &Repository, name: &str) -> Result<bool, WorktreeError> {
    let Ok(wt) = main.find_worktree(name) else {
        return Ok(false);
    };
    if wt.validate().is_ok() {
        return Ok(false);
    }
    let mut opts = WorktreePruneOptions::new();
    opts.valid(false).locked(false).working_tree(false);
    wt.prune(Some(&mut opts))
        .map_err(git_err("worktree prune", name))?;
    Ok(true)
}

/// Deletes local branch `branch` if it exists.
pub(crate) fn delete_branch(main: &Repository, branch: &str) -> Result<(), WorktreeError> {
    match main.find_branch(branch, BranchType::Local) {
        Ok(mut b) => b.delete().map_err(git_err("delete branch", branch)),
        Err(_) => Ok(()),
    }
}

/// The registered git worktrees: (name, path).
pub(crate) fn list_git_worktrees(
    main: &Repository,
) -> Result<Vec<(String, PathBuf)>, WorktreeError> {
    let names = main
        .worktrees()
        .map_err(git_err("worktree list", main.path().display()))?;
    let mut out = Vec::new();
    for name in names.iter().flatten().flatten() {
        if let Ok(wt) = main.find_worktree(name) {
            out.push((name.to_string(), wt.path().to_path_buf()));
        }
    }
    Ok(out)
}

/// A merge prepared in memory: the commit to move the main checkout to.
pub(crate) struct MergePlan {
    /// The new commit (not yet on any branch).
    pub commit: Oid,
    /// The branch the main checkout is on.
    pub into: String,
    /// Files the merge changes.
    pub files: Vec<String>,
}

/// Merges `tip` into the main checkout's HEAD in memory and, if that is clean, writes the
/// resulting commit object (a merge commit, or for [`MergeStyle::Squash`] a single-parent commit)
/// without moving any ref. Refuses on conflicts or when the main checkout has uncommitted
/// changes to a file the merge touches; in both cases nothing was changed.
pub(crate) fn plan_merge(
    main: &Repository,
    root: &Path,
    id: &str,
    branch: &str,
    tip: Oid,
    style: MergeStyle,
    message: &str,
) -> Result<MergePlan, WorktreeError> {
    let (into, ours) = landing_branch(main, root)?;
    let theirs = main.find_commit(tip).map_err(git_err("find commit", tip))?;
    let mut index = main
        .merge_commits(&ours, &theirs, None)
        .map_err(git_err("merge", branch))?;
    if index.has_conflicts() {
        let mut paths = BTreeSet::new();
        for c in index
            .conflicts()
            .map_err(git_err("merge", branch))?
            .flatten()
        {
            for e in [c.our, c.their, c.ancestor].into_iter().flatten() {
                paths.insert(String::from_utf8_lossy(&e.path).into_owned());
            }
        }
        return Err(WorktreeError::Conflict {
            id: id.to_string(),
            branch: branch.to_string(),
            into,
            paths: paths.into_iter().collect(),
        });
    }
    let tree_id = index
        .write_tree_to(main)
        .map_err(git_err("merge", branch))?;
    let tree = main.find_tree(tree_id).map_err(git_err("merge", branch))?;
    let files = landing_files(main, root, branch, &ours, &tree)?;
    let sig = signature(main, root)?;
    let parents = match style {
        MergeStyle::Squash => vec![&ours],
        MergeStyle::Merge => vec![&ours, &theirs],
    };
    let commit = main
        .commit(None, &sig, &sig, message, &tree, &parents)
        .map_err(git_err("commit merge of", branch))?;
    Ok(MergePlan {
        commit,
        into,
        files,
    })
}

/// The main checkout's current branch and its commit, or why a merge cannot land there.
pub(crate) fn landing_branch<'r>(
    main: &'r Repository,
    root: &Path,
) -> Result<(String, git2::Commit<'r>), WorktreeError> {
    let head = main
        .head()
        .map_err(git_err("read HEAD of", root.display()))?;
    if !head.is_branch() {
        return Err(WorktreeError::DetachedHead {
            root: root.to_path_buf(),
        });
    }
    let into = head.shorthand().unwrap_or("HEAD").to_string();
    let ours = head
        .peel_to_commit()
        .map_err(git_err("read HEAD of", root.display()))?;
    Ok((into, ours))
}

/// Who commits a merge: the repository's configured user.
pub(crate) fn signature<'r>(
    main: &'r Repository,
    root: &Path,
) -> Result<git2::Signature<'r>, WorktreeError> {
    main.signature().map_err(git_err(
        "commit (it needs user.name and user.email: set them with `git config`)",
        root.display(),
    ))
}

/// The files that landing `tree` on `ours` changes; refused when the main checkout has
/// uncommitted changes to one of them (the fast-forward would overwrite them).
pub(crate) fn landing_files(
    main: &Repository,
    root: &Path,
    branch: &str,
    ours: &git2::Commit<'_>,
    tree: &git2::Tree<'_>,
) -> Result<Vec<String>, WorktreeError> {
    let ours_tree = ours.tree().map_err(git_err("merge", branch))?;
    let diff = main
        .diff_tree_to_tree(Some(&ours_tree), Some(tree), None)
        .map_err(git_err("diff", branch))?;
    let mut files = BTreeSet::new();
    for d in diff.deltas() {
        for p in [d.old_file().path(), d.new_file().path()]
            .into_iter()
            .flatten()
        {
            files.insert(p.to_string_lossy().into_owned());
        }
    }
    let dirty = dirty_paths(main)?;
    let clash: Vec<String> = files.intersection(&dirty).cloned().collect();
    if !clash.is_empty() {
        return Err(WorktreeError::MainCheckoutDirty {
            root: root.to_path_buf(),
            paths: clash,
        });
    }
    Ok(files.into_iter().collect())
}

/// Moves the main checkout's branch and files to `commit`, a descendant of its HEAD, with
/// `git merge --ff-only`: git checks every file first and changes nothing if one would be
/// overwritten, so the checkout is never left half-merged.
pub(crate) fn fast_forward(root: &Path, commit: Oid) -> Result<(), WorktreeError> {
    run_git(
        root,
        &["merge", "--ff-only", "--quiet", &commit.to_string()],
    )
}

/// Runs `git ARGS` in `cwd` through [`super::safe_git`] (no hook, filter, fsmonitor or
/// other program the repository's or a nested repository's configuration names; writes
/// confined to `cwd` and its git directories); a non-zero exit is an error carrying its
/// stderr.
fn run_git(cwd: &Path, args: &[&str]) -> Result<(), WorktreeError> {
    let command = format!("git {}", args.join(" "));
    let safe =
        super::safe_git::SafeGit::for_trees(&[cwd]).map_err(|e| WorktreeError::GitCommand {
            command: command.clone(),
            cwd: cwd.to_path_buf(),
            stderr: e.to_string(),
        })?;
    let mut cmd = safe
        .confined_command(cwd, &[cwd])
        .map_err(|e| WorktreeError::GitCommand {
            command: command.clone(),
            cwd: cwd.to_path_buf(),
            stderr: e.to_string(),
        })?;
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| WorktreeError::GitCommand {
            command: command.clone(),
            cwd: cwd.to_path_buf(),
            stderr: format!("could not run git: {e}"),
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(WorktreeError::GitCommand {
        command,
        cwd: cwd.to_path_buf(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_refuses_paths_that_leave_the_worktrees_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path().join("repo")).unwrap();
        let base = tmp.path().join("base");
        let victim = tmp.path().join("victim");
        std::fs::create_dir_all(base.join("t1")).unwrap();
        std::fs::create_dir_all(&victim).unwrap();
        for (name, path) in [
            ("t1", base.join("t1/../../victim")),
            ("t1", victim.clone()),
            ("../victim", base.join("../victim")),
            ("t1", base.clone()),
        ] {
            let err = remove(&repo, &base, name, &path, "crew/t1").unwrap_err();
            assert!(matches!(err, WorktreeError::OutsideBase { .. }), "{err}");
        }
        assert!(victim.is_dir() && base.join("t1").is_dir());
        remove(&repo, &base, "t1", &base.join("t1"), "crew/t1").unwrap();
        assert!(!base.join("t1").exists());
    }
}
