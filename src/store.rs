//! Where crewmaster keeps its state on disk: `~/.crew/` (`HOME` decides), with one
//! directory per project (a slug of its canonical path) holding one directory per
//! session. Also the one atomic-write helper every persisted file uses.

use std::path::{Path, PathBuf};

/// `~/.crew`, or `None` when the home directory is unknown.
pub fn crew_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
        .map(|h| h.join(".crew"))
}

/// The project a directory belongs to: the nearest ancestor holding `.crew` or `.git`
/// (never the home directory or `/`), else the directory itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    let home = crew_home().and_then(|h| h.parent().map(Path::to_path_buf));
    crate::permission::settings::find_project_root(cwd, home.as_deref())
}

/// The user's home directory (`HOME` decides).
pub fn home_dir() -> Option<PathBuf> {
    crew_home().and_then(|h| h.parent().map(Path::to_path_buf))
}

/// A file-system-safe name for a project path: `/home/me/src/app` → `-home-me-src-app`.
pub fn project_slug(project_root: &Path) -> String {
    project_root
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
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

/// The most recently modified session directory of a project, if any.
pub fn newest_session(project_root: &Path) -> Option<(String, PathBuf)> {
    let dir = project_dir(project_root)?;
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

/// Writes `bytes` to `path` atomically (temp file in the same directory, then rename), so
/// a crash never leaves a half-written file behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_is_path_safe() {
        assert_eq!(
            project_slug(Path::new("/home/me/my app")),
            "-home-me-my-app"
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
