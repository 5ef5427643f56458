//! Whether git tracks a file: a `.crew/settings.local.json` that is in the repository's
//! index or HEAD tree came with the clone, so it is shared content, not the user's own
//! local settings (`settings.rs` then treats it like the project layer).
//!
//! Read with libgit2, which runs no configured programs (no fsmonitor, hooks or filters).

use std::path::Path;

use git2::{ErrorCode, Repository};

/// Why a file counts as shared content rather than the user's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shared {
    /// The file is not tracked (or there is no repository): it is the user's own.
    No,
    /// The index or HEAD tree of the repository holds it.
    Tracked,
    /// The repository could not be read; failing closed, the file counts as shared.
    Unknown(String),
}

/// Whether the repository that contains `file` (discovered from its directory upwards,
/// ignoring `GIT_DIR`) tracks it in its index or its HEAD commit.
pub(crate) fn is_shared(file: &Path) -> Shared {
    let Some(dir) = file.parent() else {
        return Shared::No;
    };
    let repo = match Repository::discover(dir) {
        Ok(r) => r,
        Err(e) if e.code() == ErrorCode::NotFound => return Shared::No,
        Err(e) => return Shared::Unknown(format!("cannot open its git repository: {e}")),
    };
    let Some(workdir) = repo.workdir() else {
        return Shared::No;
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (workdir, dir) = (real(workdir), real(dir));
    let Ok(rel_dir) = dir.strip_prefix(&workdir) else {
        return Shared::Unknown(format!(
            "{} is not inside the work tree {} of its repository",
            dir.display(),
            workdir.display()
        ));
    };
    let Some(name) = file.file_name() else {
        return Shared::No;
    };
    let rel = rel_dir.join(name);
    match repo.index() {
        Ok(index) => {
            if (0..=3).any(|stage| index.get_path(&rel, stage).is_some()) {
                return Shared::Tracked;
            }
        }
        Err(e) => return Shared::Unknown(format!("cannot read the git index: {e}")),
    }
    let head = match repo.head() {
        Ok(h) => h,
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => {
            return Shared::No;
        }
        Err(e) => return Shared::Unknown(format!("cannot read HEAD: {e}")),
    };
    match head.peel_to_tree() {
        Ok(tree) if tree.get_path(&rel).is_ok() => Shared::Tracked,
        Ok(_) => Shared::No,
        Err(e) => Shared::Unknown(format!("cannot read the HEAD tree: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn tracked_committed_staged_and_untracked_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let file = root.join(".crew/settings.local.json");
        assert_eq!(is_shared(&file), Shared::No, "no repository");
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join(".crew")).unwrap();
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(is_shared(&file), Shared::No, "untracked");
        git(root, &["add", "-f", ".crew/settings.local.json"]);
        assert_eq!(is_shared(&file), Shared::Tracked, "staged");
        git(root, &["commit", "-qm", "x"]);
        git(root, &["rm", "-q", "--cached", ".crew/settings.local.json"]);
        assert_eq!(is_shared(&file), Shared::Tracked, "still in HEAD");
    }
}
