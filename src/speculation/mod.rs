//! Speculative execution (TUI): after a turn ends, the model suggests the user's likely
//! next prompt (`suggest`), and a fork of the lead runs it ahead while the user reads
//! (`runner`, with each call judged by `calls`), writing only into a copy-on-write
//! overlay (`overlay`). If the user submits exactly the suggestion, the speculated
//! messages are adopted and the overlay's files go into the workspace through the normal
//! write path; anything else deletes the overlay (`ahead`).
//!
//! The setting `speculation` (a boolean in any settings layer) turns it off with
//! `false`; it is on by default unless the model is the built-in demo. Any layer may
//! turn it off; none needs to turn it on.

pub mod ahead;
pub mod calls;
pub mod overlay;
pub mod runner;
pub mod suggest;

use std::path::Path;

pub use ahead::{Resolution, Speculation};
pub use runner::{Ending, Limits, Speculated};

/// Whether speculation is on for a session in `project_root`: never for the demo model,
/// otherwise unless a settings file says `"speculation": false`. A settings file that
/// cannot be read or parsed turns it off (it is an optimisation; doing less is safe).
pub fn enabled(project_root: &Path, home: Option<&Path>, is_demo: bool) -> bool {
    if is_demo {
        return false;
    }
    crate::permission::layers::files(project_root, home)
        .into_iter()
        .all(|(_, path)| setting_allows(&path))
}

fn setting_allows(path: &Path) -> bool {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
        Err(_) => return false,
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => v.get("speculation").and_then(serde_json::Value::as_bool) != Some(false),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_by_default_off_for_the_demo_and_when_any_layer_says_false() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        assert!(enabled(root.path(), Some(home.path()), false));
        assert!(!enabled(root.path(), Some(home.path()), true));
        std::fs::create_dir_all(home.path().join(".crew")).unwrap();
        std::fs::write(
            home.path().join(".crew/settings.json"),
            r#"{"speculation": false}"#,
        )
        .unwrap();
        assert!(!enabled(root.path(), Some(home.path()), false));
        std::fs::write(
            home.path().join(".crew/settings.json"),
            r#"{"speculation": true}"#,
        )
        .unwrap();
        assert!(enabled(root.path(), Some(home.path()), false));
    }
}
