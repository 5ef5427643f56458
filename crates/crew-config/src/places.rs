//! Where crew's files are, before any of them is read: `~/.crew` (`HOME` decides), the
//! user's home, the project a directory belongs to, and the private temp directory of
//! sandboxed commands. The root crate's `store` re-exports them; the permission engine
//! reads them too, so they live below both.

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
    find_project_root(cwd, home.as_deref())
}

/// The project root for a directory: the nearest ancestor (itself included) holding
/// `.git` or `.crew`, never the home directory (whose `.crew` holds user settings) nor
/// `/`; the directory itself when there is none.
pub fn find_project_root(start: &Path, home: Option<&Path>) -> PathBuf {
    for dir in start.ancestors() {
        if Some(dir) == home || dir.parent().is_none() {
            break;
        }
        if dir.join(".git").exists() || dir.join(".crew").is_dir() {
            return dir.to_path_buf();
        }
    }
    start.to_path_buf()
}

/// The temp directory confined commands get (their `TMPDIR`, `TMP` and `TEMP` point
/// there): private to this user, instead of the whole shared temp dir — which may hold the
/// very checkout the sandbox protects (a project under /tmp would otherwise be writable).
pub fn sandbox_temp_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("crew-sandbox-{}", nix::unistd::getuid()));
        let made = std::fs::create_dir_all(&dir).and_then(|_| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        });
        if let Err(e) = made {
            // Without it, confined commands simply cannot write temp files (fail closed).
            tracing::warn!("cannot create the sandbox temp dir {}: {e}", dir.display());
        }
        dir
    })
    .clone()
}

/// The user's home directory (`HOME` decides).
pub fn home_dir() -> Option<PathBuf> {
    crew_home().and_then(|h| h.parent().map(Path::to_path_buf))
}
