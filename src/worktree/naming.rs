//! Names and places: which task ids are acceptable, the branch name made from a task's
//! description, and where a repository's worktrees live (outside the repository, so a
//! subagent's files never show up in the main checkout's `git status`).

use std::path::{Path, PathBuf};

use super::WorktreeError;

/// Longest slug taken from a task description.
pub(crate) const MAX_SLUG: usize = 40;
/// Longest task id.
pub(crate) const MAX_ID: usize = 64;
/// Prefix of every branch we create.
pub(crate) const BRANCH_PREFIX: &str = "crew/";

/// Checks that a task id can name a directory, a git worktree and part of a branch:
/// ASCII letters, digits, `-`, `_` and `.`, not starting with `.` or `-`, at most 64 long.
pub(crate) fn check_task_id(id: &str) -> Result<(), WorktreeError> {
    let bad = |reason| {
        Err(WorktreeError::InvalidTaskId {
            id: id.to_string(),
            reason,
        })
    };
    if id.is_empty() {
        return bad("it is empty");
    }
    if id.len() > MAX_ID {
        return bad("it is longer than 64 characters");
    }
    if id.starts_with('.') || id.starts_with('-') {
        return bad("it starts with `.` or `-`");
    }
    if id.contains("..") || id.ends_with(".lock") {
        return bad("git refuses `..` and a `.lock` ending in branch names");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return bad("only ASCII letters, digits, `-`, `_` and `.` are allowed");
    }
    Ok(())
}

/// A branch-name slug of a description: lowercase ASCII letters and digits, runs of
/// anything else turned into one `-`, trimmed, at most [`MAX_SLUG`] characters.
pub(crate) fn slug(description: &str) -> String {
    let mut out = String::new();
    for c in description.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(MAX_SLUG);
    out.trim_end_matches('-').to_string()
}

/// The branch of a task: `crew/<task-id>/<slug>`, or `crew/<task-id>/work` for an empty
/// slug. Each task's branch lives in a ref directory of its own
/// (`refs/heads/crew/<task-id>/`), the unit the OS sandbox can make writable for that
/// task alone.
pub(crate) fn branch_name(task_id: &str, description: &str) -> String {
    match slug(description) {
        s if s.is_empty() => format!("{BRANCH_PREFIX}{task_id}/work"),
        s => format!("{BRANCH_PREFIX}{task_id}/{s}"),
    }
}

/// The default folder for all worktrees: `~/.crew/worktrees`.
pub(crate) fn default_base_dir() -> Option<PathBuf> {
    dirs::home_dir().map(|h| h.join(".crew").join("worktrees"))
}

/// The folder for one repository's worktrees inside `base_dir`:
/// `<repo-name>-<first 8 hex of SHA-1 of the canonical repository path>`. The hash keeps
/// two checkouts that share a name apart; the name keeps the folder recognisable.
pub(crate) fn repo_dir(base_dir: &Path, repo_root: &Path) -> PathBuf {
    let name = repo_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into());
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let bytes = repo_root.as_os_str().as_encoded_bytes();
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
        .map(|oid| oid.to_string())
        .unwrap_or_else(|_| "00000000".into());
    base_dir.join(format!("{name}-{}", &hash[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_keeps_lowercase_alnum_and_single_dashes() {
        assert_eq!(slug("Fix the  Login bug!"), "fix-the-login-bug");
        assert_eq!(slug("  --Ünïcode résumé 42"), "n-code-r-sum-42");
        assert_eq!(slug("!!!"), "");
        let long = slug(&"abc ".repeat(30));
        assert!(long.len() <= MAX_SLUG && !long.ends_with('-'), "{long}");
    }

    #[test]
    fn branch_is_prefixed_and_falls_back_to_id() {
        assert_eq!(branch_name("t1", "Add tests"), "crew/t1/add-tests");
        assert_eq!(branch_name("t1", "???"), "crew/t1/work");
    }

    #[test]
    fn task_ids_that_could_escape_the_folder_are_refused() {
        for bad in ["", "../x", "a/b", ".hidden", "-rf", "a..b", "x.lock", "a b"] {
            assert!(check_task_id(bad).is_err(), "{bad} accepted");
        }
        for good in ["t1", "task_2", "a.b-c", "0123abcd"] {
            assert!(check_task_id(good).is_ok(), "{good} refused");
        }
    }

    #[test]
    fn repo_dir_differs_for_same_name_in_different_places() {
        let a = repo_dir(Path::new("/b"), Path::new("/x/proj"));
        let b = repo_dir(Path::new("/b"), Path::new("/y/proj"));
        assert_ne!(a, b);
        assert!(
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("proj-"))
        );
        assert_eq!(a, repo_dir(Path::new("/b"), Path::new("/x/proj")));
    }
}
