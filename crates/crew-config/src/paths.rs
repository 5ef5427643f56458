//! Paths as settings write them: `~` for the home directory, relative to a base.

use std::path::{Path, PathBuf};

/// Expands `~` and `~/…` against `home` and joins a relative path onto `cwd`.
pub fn absolute(raw: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = match (raw.strip_prefix('~'), home) {
        (Some(""), Some(h)) => h.to_path_buf(),
        (Some(rest), Some(h)) if rest.starts_with('/') => h.join(rest.trim_start_matches('/')),
        _ => PathBuf::from(raw),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}
