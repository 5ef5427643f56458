//! Worktrees that start from the user's working state. A subagent's worktree is made from
//! HEAD plus one snapshot commit of the main checkout's uncommitted changes (staged,
//! unstaged and untracked files that are not ignored), the way `git stash create` makes
//! one, so the agent sees the code as the user sees it. The snapshot is the worktree's
//! recorded base: its diff is the agent's own work, and landing it carries only the
//! agent's commits ([`plan_merge`]), so the user's uncommitted changes stay theirs.
//!
//! The snapshot is made with libgit2 from an in-memory copy of the index (the user's
//! index file is never written) and names no ref; no filter, hook or other program the
//! repository's configuration names runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use git2::{IndexAddOption, Oid, Repository, Signature};

use super::git::{MergePlan, landing_branch, landing_files, signature};
use super::{MergeStyle, WorktreeError, git_err};

/// A snapshot being taken, which callers that arrive meanwhile wait for and share.
#[derive(Default)]
struct Flight {
    /// `Some` once the snapshot is taken; `Some(None)` inside when it failed (each caller
    /// then takes its own, to report its own error).
    result: Mutex<Option<Option<Option<Oid>>>>,
    done: Condvar,
}

/// The snapshots being taken, by the folder they are taken of.
static FLIGHTS: Mutex<BTreeMap<PathBuf, Arc<Flight>>> = Mutex::new(BTreeMap::new());

/// The snapshot commit of the working state of the repository at `start`, a child of its
/// HEAD; `None` when nothing is uncommitted (or the state cannot be read as a tree: an
/// unfinished merge, an unborn branch), so the worktree starts from HEAD itself.
///
/// Reading the working state looks at every file, so the workspaces a lead starts at
/// once share one snapshot: a call that arrives while another takes the snapshot waits for
/// it and uses it (it saw the working state after this call began).
pub(crate) fn of_working_state(start: &Path) -> Result<Option<Oid>, WorktreeError> {
    let lock = |m: &'static Mutex<BTreeMap<PathBuf, Arc<Flight>>>| {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let (flight, leader) = {
        let mut flights = lock(&FLIGHTS);
        match flights.get(start) {
            Some(f) => (Arc::clone(f), false),
            None => {
                let f = Arc::new(Flight::default());
                flights.insert(start.to_path_buf(), Arc::clone(&f));
                (f, true)
            }
        }
    };
    if !leader {
        let mut result = flight
            .result
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while result.is_none() {
            result = flight
                .done
                .wait(result)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if let Some(Some(shared)) = *result {
            return Ok(shared);
        }
        drop(result);
        return take(start);
    }
    let taken = take(start);
    lock(&FLIGHTS).remove(start);
    *flight
        .result
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(taken.as_ref().ok().copied());
    flight.done.notify_all();
    taken
}

/// Takes the snapshot of [`of_working_state`].
fn take(start: &Path) -> Result<Option<Oid>, WorktreeError> {
    let repo = Repository::discover(start).map_err(|source| WorktreeError::NotARepository {
        path: start.to_path_buf(),
        source,
    })?;
    if repo.is_bare() {
        return Ok(None);
    }
    let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) else {
        return Ok(None);
    };
    let err = || git_err("snapshot the working tree of", start.display());
    let mut index = repo.index().map_err(err())?;
    index
        .add_all(["*"], IndexAddOption::DEFAULT, None)
        .map_err(err())?;
    index.update_all(["*"], None).map_err(err())?;
    let Ok(tree_id) = index.write_tree() else {
        return Ok(None);
    };
    if tree_id == head.tree_id() {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_id).map_err(err())?;
    let sig = Signature::now("crew", "crew@localhost").map_err(err())?;
    let message = "crew: snapshot of the working tree's uncommitted changes\n\n\
                   The state the agent started from; not its work. Diff and merge leave it out.\n";
    let commit = repo
        .commit(None, &sig, &sig, message, &tree, &[&head])
        .map_err(err())?;
    Ok(Some(commit))
}

/// Lands the commits `base..tip` of a worktree that started from a snapshot on the main
/// checkout's HEAD, leaving the snapshot out: replayed one by one onto HEAD (`Merge`, each
/// keeping its message and author), or as one commit (`Squash`). Nothing moves: the result
/// is a commit object for `git::fast_forward`. Refuses on conflicts and when the main
/// checkout has uncommitted changes to a file the result touches.
pub(crate) fn plan_merge(
    main: &Repository,
    root: &Path,
    id: &str,
    branch: &str,
    (base, tip): (Oid, Oid),
    style: MergeStyle,
    message: &str,
) -> Result<MergePlan, WorktreeError> {
    let (into, ours) = landing_branch(main, root)?;
    let conflict = |index: &git2::Index| -> WorktreeError {
        let mut paths = std::collections::BTreeSet::new();
        if let Ok(conflicts) = index.conflicts() {
            for c in conflicts.flatten() {
                for e in [c.our, c.their, c.ancestor].into_iter().flatten() {
                    paths.insert(String::from_utf8_lossy(&e.path).into_owned());
                }
            }
        }
        WorktreeError::Conflict {
            id: id.to_string(),
            branch: branch.to_string(),
            into: into.clone(),
            paths: paths.into_iter().collect(),
        }
    };
    let sig = signature(main, root)?;
    let find = |oid: Oid| main.find_commit(oid).map_err(git_err("find commit", oid));
    let land = |index: &mut git2::Index| -> Result<Oid, WorktreeError> {
        if index.has_conflicts() {
            return Err(conflict(index));
        }
        index.write_tree_to(main).map_err(git_err("merge", branch))
    };
    let commit = match style {
        MergeStyle::Squash => {
            let (base_tree, tip_tree) = (tree_of(&find(base)?)?, tree_of(&find(tip)?)?);
            let mut index = main
                .merge_trees(&base_tree, &tree_of(&ours)?, &tip_tree, None)
                .map_err(git_err("merge", branch))?;
            let tree = main
                .find_tree(land(&mut index)?)
                .map_err(git_err("merge", branch))?;
            main.commit(None, &sig, &sig, message, &tree, &[&ours])
                .map_err(git_err("commit merge of", branch))?
        }
        MergeStyle::Merge => {
            let mut walk = main.revwalk().map_err(git_err("list commits of", branch))?;
            walk.push(tip).map_err(git_err("list commits of", branch))?;
            walk.hide(base)
                .map_err(git_err("list commits of", branch))?;
            walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
                .map_err(git_err("list commits of", branch))?;
            let mut onto = ours.clone();
            for oid in walk {
                let commit = find(oid.map_err(git_err("list commits of", branch))?)?;
                let mut index = main
                    .cherrypick_commit(&commit, &onto, 0, None)
                    .map_err(git_err("replay", commit.id()))?;
                let tree = main
                    .find_tree(land(&mut index)?)
                    .map_err(git_err("replay", commit.id()))?;
                let message = commit.message().unwrap_or("crew task commit");
                let next = main
                    .commit(None, &commit.author(), &sig, message, &tree, &[&onto])
                    .map_err(git_err("replay", commit.id()))?;
                onto = find(next)?;
            }
            onto.id()
        }
    };
    let landed = find(commit)?;
    let files = landing_files(main, root, branch, &ours, &tree_of(&landed)?)?;
    Ok(MergePlan {
        commit,
        into,
        files,
    })
}

fn tree_of<'r>(commit: &git2::Commit<'r>) -> Result<git2::Tree<'r>, WorktreeError> {
    commit
        .tree()
        .map_err(git_err("read the tree of", commit.id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a.txt"), "committed\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "init"]);
        dir
    }

    #[test]
    fn a_clean_checkout_needs_no_snapshot() {
        let dir = repo();
        assert_eq!(of_working_state(dir.path()).unwrap(), None);
    }

    #[test]
    fn the_snapshot_holds_uncommitted_and_untracked_files_not_ignored_ones() {
        let dir = repo();
        let p = dir.path();
        std::fs::write(p.join("a.txt"), "changed\n").unwrap();
        std::fs::write(p.join("new.txt"), "new\n").unwrap();
        std::fs::write(p.join("debug.log"), "noise\n").unwrap();
        let index_before = std::fs::read(p.join(".git/index")).unwrap();
        let snap = of_working_state(p).unwrap().expect("a snapshot");
        let snap = snap.to_string();
        assert_eq!(git(p, &["show", &format!("{snap}:a.txt")]), "changed\n");
        assert_eq!(git(p, &["show", &format!("{snap}:new.txt")]), "new\n");
        assert!(!git(p, &["ls-tree", "--name-only", &snap]).contains("debug.log"));
        assert_eq!(
            git(p, &["rev-parse", &format!("{snap}^")]),
            git(p, &["rev-parse", "HEAD"])
        );
        // The user's index, branch and files are as they were.
        assert_eq!(std::fs::read(p.join(".git/index")).unwrap(), index_before);
        assert_eq!(git(p, &["status", "--porcelain"]), " M a.txt\n?? new.txt\n");
    }
}
