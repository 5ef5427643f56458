//! Which memory files an agent gets, by place: the user's own, those of every directory
//! from the repository root down to the cwd, and (later, on first touch) those of a
//! directory below the cwd. Only names are decided here; nothing is read.

use std::path::{Path, PathBuf};

use super::Scope;

/// The names looked for in each project directory, in the order they are loaded.
/// `CLAUDE.local.md` comes last: personal notes refine the shared ones.
pub(crate) const PROJECT_NAMES: [&str; 6] = [
    "CLAUDE.md",
    ".claude/CLAUDE.md",
    "AGENTS.md",
    "CREW.md",
    ".crew/CREW.md",
    "CLAUDE.local.md",
];

/// A memory file to try, found by its place (not by an import).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its path (absolute).
    pub path: PathBuf,
    /// Where it sits.
    pub scope: Scope,
}

/// The user's memory files that exist: `~/.claude/CLAUDE.md`, then `~/.crew/CREW.md`.
pub(crate) fn user_files(home: Option<&Path>) -> Vec<Candidate> {
    let Some(home) = home else {
        return Vec::new();
    };
    [".claude/CLAUDE.md", ".crew/CREW.md"]
        .iter()
        .map(|rel| Candidate {
            path: home.join(rel),
            scope: Scope::User,
        })
        .filter(|c| c.path.exists())
        .collect()
}

/// The memory files of one directory (those that exist), as `scope` (`CLAUDE.local.md`
/// is always `Local`).
pub(crate) fn files_in(dir: &Path, scope: Scope) -> Vec<Candidate> {
    PROJECT_NAMES
        .iter()
        .map(|name| Candidate {
            path: dir.join(name),
            scope: if *name == "CLAUDE.local.md" {
                Scope::Local
            } else {
                scope
            },
        })
        .filter(|c| c.path.exists())
        .collect()
}

/// The directories from `root` down to `cwd`, both included, outermost first. When `cwd`
/// is not below `root`, only `cwd`.
pub(crate) fn dirs_between(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let Ok(rel) = cwd.strip_prefix(root) else {
        return vec![cwd.to_path_buf()];
    };
    let mut dirs = vec![root.to_path_buf()];
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        dirs.push(at.clone());
    }
    dirs
}

/// The memory files of the session's start: the user's, then each directory's from
/// `root` down to `cwd`.
pub(crate) fn start_files(home: Option<&Path>, root: &Path, cwd: &Path) -> Vec<Candidate> {
    let mut out = user_files(home);
    for dir in dirs_between(root, cwd) {
        out.extend(files_in(&dir, Scope::Project));
    }
    out
}

/// The directories strictly below `cwd` down to the one holding `file`, outermost
/// first; empty when `file` is not below `cwd`. Both are absolute and lexically clean.
pub(crate) fn dirs_below(cwd: &Path, file: &Path) -> Vec<PathBuf> {
    let Some(parent) = file.parent() else {
        return Vec::new();
    };
    let Ok(rel) = parent.strip_prefix(cwd) else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    let mut at = cwd.to_path_buf();
    for part in rel.components() {
        at.push(part);
        dirs.push(at.clone());
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_between_the_root_and_the_cwd_outermost_first() {
        let d = dirs_between(Path::new("/r"), Path::new("/r/a/b"));
        assert_eq!(d, [Path::new("/r"), Path::new("/r/a"), Path::new("/r/a/b")]);
        assert_eq!(
            dirs_between(Path::new("/r"), Path::new("/r")),
            [Path::new("/r")]
        );
        assert_eq!(
            dirs_between(Path::new("/r"), Path::new("/x")),
            [Path::new("/x")]
        );
    }

    #[test]
    fn directories_below_the_cwd_up_to_the_files_own() {
        let d = dirs_below(Path::new("/r"), Path::new("/r/a/b/f.rs"));
        assert_eq!(d, [Path::new("/r/a"), Path::new("/r/a/b")]);
        assert!(dirs_below(Path::new("/r"), Path::new("/r/f.rs")).is_empty());
        assert!(dirs_below(Path::new("/r/a"), Path::new("/r/f.rs")).is_empty());
    }

    #[test]
    fn finds_each_name_that_exists_and_local_is_local() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        for name in [
            "CLAUDE.md",
            ".claude/CLAUDE.md",
            "CLAUDE.local.md",
            "CREW.md",
        ] {
            std::fs::write(dir.join(name), "x").unwrap();
        }
        let found = files_in(dir, Scope::Project);
        let names: Vec<_> = found
            .iter()
            .map(|c| (c.path.strip_prefix(dir).unwrap().to_path_buf(), c.scope))
            .collect();
        assert_eq!(
            names,
            [
                (PathBuf::from("CLAUDE.md"), Scope::Project),
                (PathBuf::from(".claude/CLAUDE.md"), Scope::Project),
                (PathBuf::from("CREW.md"), Scope::Project),
                (PathBuf::from("CLAUDE.local.md"), Scope::Local),
            ]
        );
        std::fs::create_dir_all(dir.join(".crew")).unwrap();
        std::fs::write(dir.join(".crew/CREW.md"), "x").unwrap();
        let user = user_files(Some(dir));
        assert_eq!(user[0].path, dir.join(".claude/CLAUDE.md"));
        assert_eq!(user[1].path, dir.join(".crew/CREW.md"));
        assert!(user_files(None).is_empty());
    }
}
