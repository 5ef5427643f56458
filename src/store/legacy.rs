//! The old layout of `~/.crew/projects/`: one directory per project named by a slug in
//! which every character but letters, digits, `.` and `_` became `-`, so `/a/b` and
//! `/a-b` shared `-a-b` and each resumed the other's sessions. Those directories recorded
//! no root, so a directory is adopted (moved, whole, to the project's new directory) only
//! when its sessions can only be this project's: every directory on disk whose old slug
//! is this one is looked for, and it must be this root alone. When another existing
//! directory (or one that cannot be read) has the same old slug, the old directory is
//! left where it is, untouched, for every project, and the user is told how to move it.
//! What this cannot see: a project with the same old slug that has since been deleted.

use std::path::{Path, PathBuf};

/// The most directories looked at while searching for paths with one old slug; beyond
/// that the old directory counts as ambiguous.
const MAX_VISITS: usize = 20_000;

/// The old layout's name for a project path: `/home/me/src/app` → `-home-me-src-app`.
pub fn legacy_slug(project_root: &Path) -> String {
    slug_of(&project_root.to_string_lossy())
}

fn slug_of(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Moves the old layout's directory of `project_root` into `dir` (its new directory)
/// when it can only be this project's. Returns a sentence for the user when an old
/// directory was found, adopted or not; `None` when there is none.
pub(super) fn adopt(project_root: &Path, dir: &Path) -> Option<String> {
    let projects = dir.parent()?;
    let old = projects.join(legacy_slug(project_root));
    if old == dir || !old.is_dir() || std::fs::symlink_metadata(&old).ok()?.is_symlink() {
        return None;
    }
    let owners = match paths_with_slug(&legacy_slug(project_root)) {
        Ok(owners) => owners,
        Err(why) => {
            return Some(format!(
                "the sessions in {} (the old layout) were left there: {why}, so they could be another project's; move them into {} by hand if they are this project's",
                old.display(),
                dir.display()
            ));
        }
    };
    if owners != [project_root.to_path_buf()] {
        let names: Vec<String> = owners.iter().map(|p| p.display().to_string()).collect();
        return Some(format!(
            "the sessions in {} (the old layout) were left there: the projects {} share its name, and it does not record which one they belong to; move them into {} by hand if they are this project's",
            old.display(),
            names.join(" and "),
            dir.display()
        ));
    }
    match move_entries(&old, dir) {
        Ok(kept) if kept.is_empty() => Some(format!(
            "moved this project's sessions from {} to {}",
            old.display(),
            dir.display()
        )),
        Ok(kept) => Some(format!(
            "moved this project's sessions from {} to {}; {} already existed there and stayed in the old directory",
            old.display(),
            dir.display(),
            kept.join(", ")
        )),
        Err(e) => Some(format!(
            "cannot move the sessions in {} to {}: {e}; they stay where they are",
            old.display(),
            dir.display()
        )),
    }
}

/// Moves every entry of `old` into `new` (renames, so nothing is copied or lost), then
/// removes `old` if it is empty. Entries whose name `new` already has stay; their names
/// are returned.
fn move_entries(old: &Path, new: &Path) -> std::io::Result<Vec<String>> {
    if !new.exists() {
        if let Some(parent) = new.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::rename(old, new)?;
        return Ok(Vec::new());
    }
    let mut kept = Vec::new();
    for entry in std::fs::read_dir(old)? {
        let entry = entry?;
        let target = new.join(entry.file_name());
        if target.exists() || target.symlink_metadata().is_ok() {
            kept.push(entry.file_name().to_string_lossy().into_owned());
            continue;
        }
        std::fs::rename(entry.path(), target)?;
    }
    if kept.is_empty() {
        std::fs::remove_dir(old)?;
    }
    Ok(kept)
}

/// Why the directories that share an old slug could not all be found: then whose an old
/// directory is, is unknown.
#[derive(Debug, thiserror::Error)]
enum SearchError {
    /// The slug does not start with `-`, so no absolute path has it.
    #[error("`{0}` is not the name of an absolute path")]
    NotAbsolute(String),
    /// The search would visit more than [`MAX_VISITS`] directories.
    #[error("more than {} directories would have to be searched", MAX_VISITS)]
    TooLarge,
    /// A directory on the way cannot be listed.
    #[error("{} cannot be read ({source})", .path.display())]
    Unreadable {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Every existing directory (reached without symlinks, as a canonical path is) whose old
/// slug is `slug`. An error when a directory on the way cannot be read or the search
/// grows too large: then the answer is unknown.
fn paths_with_slug(slug: &str) -> Result<Vec<PathBuf>, SearchError> {
    let Some(rest) = slug.strip_prefix('-') else {
        return Err(SearchError::NotAbsolute(slug.to_string()));
    };
    let mut found = Vec::new();
    let mut visits = 0;
    search(Path::new("/"), rest, &mut found, &mut visits)?;
    found.sort();
    Ok(found)
}

fn search(
    dir: &Path,
    rest: &str,
    found: &mut Vec<PathBuf>,
    visits: &mut usize,
) -> Result<(), SearchError> {
    *visits += 1;
    if *visits > MAX_VISITS {
        return Err(SearchError::TooLarge);
    }
    let unreadable = |source| SearchError::Unreadable {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir {
            continue;
        }
        let name = slug_of(&entry.file_name().to_string_lossy());
        if rest == name {
            found.push(entry.path());
        } else if let Some(deeper) = rest
            .strip_prefix(name.as_str())
            .and_then(|r| r.strip_prefix('-'))
        {
            search(&entry.path(), deeper, found, visits)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_directory_sharing_an_old_slug() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        for d in ["a-b", "a/b", "a b", "ab"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let slug = legacy_slug(&base.join("a-b"));
        let found = paths_with_slug(&slug).unwrap();
        let mut want = vec![base.join("a b"), base.join("a-b"), base.join("a/b")];
        want.sort();
        assert_eq!(found, want);
        std::fs::remove_dir_all(base.join("a b")).unwrap();
        std::fs::remove_dir_all(base.join("a")).unwrap();
        assert_eq!(paths_with_slug(&slug).unwrap(), vec![base.join("a-b")]);
    }

    #[test]
    fn an_unambiguous_old_directory_is_moved_whole_and_an_ambiguous_one_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let projects = base.join("home/.crew/projects");
        let one = base.join("p/one-x");
        std::fs::create_dir_all(&one).unwrap();
        let old = projects.join(legacy_slug(&one));
        std::fs::create_dir_all(old.join("s1")).unwrap();
        std::fs::write(old.join("s1.jsonl"), "line\n").unwrap();
        let new = projects.join(crate::store::project_slug(&one));
        let notice = adopt(&one, &new).unwrap();
        assert!(notice.contains("moved"), "{notice}");
        assert_eq!(
            std::fs::read_to_string(new.join("s1.jsonl")).unwrap(),
            "line\n"
        );
        assert!(new.join("s1").is_dir() && !old.exists());

        // Now `p/one/x` exists too: an old directory of that name is nobody's.
        std::fs::create_dir_all(base.join("p/one/x")).unwrap();
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("s2.jsonl"), "other\n").unwrap();
        let notice = adopt(&one, &new).unwrap();
        assert!(notice.contains("left there"), "{notice}");
        assert!(
            notice.contains("one/x") && notice.contains("one-x"),
            "{notice}"
        );
        assert_eq!(
            std::fs::read_to_string(old.join("s2.jsonl")).unwrap(),
            "other\n"
        );
        assert!(!new.join("s2.jsonl").exists());
    }
}
