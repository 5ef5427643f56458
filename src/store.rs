//! Where crewmaster keeps its state on disk: `~/.crew/` (`HOME` decides), with one
//! directory per project holding one directory per session. A project's directory is
//! named by [`project_slug`], which no two canonical paths share, and records the root it
//! belongs to (`project-root`): only a directory whose record is this root's gives up its
//! sessions. Directories of the old, colliding layout are adopted by [`open_project`]
//! (see `legacy`). Also the one atomic-write helper every persisted file uses (`behind`:
//! written now or group-committed), the project root of a directory, and the private temp
//! directory of sandboxed commands.

pub(crate) mod behind;
mod legacy;

use std::path::{Path, PathBuf};

use sha2::Digest;

pub use legacy::legacy_slug;

/// The file in a project's directory that records the canonical root it belongs to.
pub const ROOT_RECORD: &str = "project-root";

pub use crew_config::places::{
    crew_home, find_project_root, home_dir, project_root, sandbox_temp_dir,
};

/// The name of a project's directory under `~/.crew/projects/`: the readable tail of the
/// old slug, then 32 hex digits of the SHA-256 of the canonical path's bytes, so
/// `/a/b` and `/a-b` (one old slug, `-a-b`) get different directories:
/// `/home/me/src/app` → `-home-me-src-app-<hash>`. Pass a canonical path.
pub fn project_slug(project_root: &Path) -> String {
    let digest = sha2::Sha256::digest(project_root.as_os_str().as_encoded_bytes());
    let hash: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let readable: Vec<char> = legacy_slug(project_root).chars().collect();
    let tail: String = readable[readable.len().saturating_sub(48)..]
        .iter()
        .collect();
    format!("{tail}-{hash}")
}

/// `~/.crew/projects/<slug>`.
pub fn project_dir(project_root: &Path) -> Option<PathBuf> {
    Some(
        crew_home()?
            .join("projects")
            .join(project_slug(project_root)),
    )
}

/// `~/.crew/projects/<slug>/<session-id>`: a session's task state and logs.
pub fn session_dir(project_root: &Path, session_id: &str) -> Option<PathBuf> {
    Some(project_dir(project_root)?.join(session_id))
}

/// `~/.crew/teams`: one directory per agent team (see `team`).
pub fn teams_dir() -> Option<PathBuf> {
    Some(crew_home()?.join("teams"))
}

/// Whether `dir` (a project's directory) records `project_root` as its root. A
/// directory without the record, or with another root, is no project's: its sessions
/// are never picked.
pub fn owned_by(dir: &Path, project_root: &Path) -> bool {
    std::fs::read(dir.join(ROOT_RECORD)).is_ok_and(|bytes| bytes == root_record(project_root))
}

fn root_record(project_root: &Path) -> Vec<u8> {
    project_root.as_os_str().as_encoded_bytes().to_vec()
}

/// This project's directory, made and claimed for it (its root recorded), after adopting
/// the sessions of the old layout's directory when they can only be this project's.
/// Returns the directory and, when an old directory was adopted or left alone, a sentence
/// saying so. An existing directory recording another root is an error.
pub fn open_project(project_root: &Path) -> anyhow::Result<(PathBuf, Option<String>)> {
    use anyhow::Context;
    let dir = project_dir(project_root)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let notice = legacy::adopt(project_root, &dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let record = dir.join(ROOT_RECORD);
    match std::fs::read(&record) {
        Ok(bytes) if bytes == root_record(project_root) => {}
        Ok(bytes) => anyhow::bail!(
            "{} records the project {}, not {}: remove that directory if it is stale",
            dir.display(),
            String::from_utf8_lossy(&bytes),
            project_root.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_atomic(&record, &root_record(project_root))
                .with_context(|| format!("cannot write {}", record.display()))?;
        }
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", record.display()));
        }
    }
    Ok((dir, notice))
}

/// Whether `id` can name a session: 1 to 64 letters, digits, `-` or `_` (so it never
/// leaves the project's directory).
pub fn valid_session_id(id: &str) -> bool {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    !id.is_empty() && id.len() <= 64 && id.chars().all(safe)
}

/// The most recently modified session directory of a project, if any.
pub fn newest_session(project_root: &Path) -> Option<(String, PathBuf)> {
    let dir = project_dir(project_root)?;
    if !owned_by(&dir, project_root) {
        return None;
    }
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().join("tasks.json").is_file())
        .filter_map(|e| {
            let modified = e
                .path()
                .join("tasks.json")
                .metadata()
                .ok()?
                .modified()
                .ok()?;
            Some((
                modified,
                e.file_name().to_string_lossy().into_owned(),
                e.path(),
            ))
        })
        .max_by_key(|(m, _, _)| *m)
        .map(|(_, id, path)| (id, path))
}

/// Writes `bytes` to `path` atomically (temp file in the same directory, `fdatasync`,
/// then rename), so a crash never leaves a half-written file behind. Files rewritten on a
/// turn's path use [`behind::write_replace`] instead, which leaves the sync to group commit.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    behind::write_replace(path, bytes, behind::Flush::Now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_is_path_safe_and_keeps_the_readable_tail() {
        let slug = project_slug(Path::new("/home/me/my app"));
        assert!(slug.starts_with("-home-me-my-app-"), "{slug}");
        assert_eq!(slug.len(), "-home-me-my-app-".len() + 32);
        assert!(slug.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        let long = format!("/{}", "x/".repeat(200));
        assert!(project_slug(Path::new(&long)).len() <= 48 + 33);
    }

    #[test]
    fn paths_with_one_old_slug_get_different_directories() {
        let spellings = ["/a/b", "/a-b", "/a b", "/a\u{e9}b", "/a.b/", "/a_b"];
        let slugs: std::collections::HashSet<String> = spellings
            .iter()
            .map(|p| project_slug(Path::new(p)))
            .collect();
        assert_eq!(slugs.len(), spellings.len(), "{slugs:?}");
        assert_eq!(
            legacy_slug(Path::new("/a/b")),
            legacy_slug(Path::new("/a-b"))
        );
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }
}
