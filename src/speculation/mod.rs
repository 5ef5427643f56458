//! Speculative execution (TUI): after a turn ends, the model suggests the user's likely
//! next prompt (`suggest`), and a fork of the lead runs it ahead while the user reads
//! (`runner`, with each call judged by `calls`), writing only into a copy-on-write
//! overlay (`overlay`). If the user submits exactly the suggestion, the speculated
//! messages are adopted and the overlay's files go into the workspace through the normal
//! write path; anything else deletes the overlay (`ahead`).
//!
//! The setting `speculation` (a boolean; the highest settings layer that sets it
//! decides) turns it on or off. Unset, it is on, except for the built-in demo and for
//! scripted models (`script:FILE`), whose shared turns a suggestion request would
//! consume: a script opts in with `"speculation": true` and answers the agents
//! `suggestion` and `speculation` under `agents`.

pub mod ahead;
pub(crate) mod calls;
pub mod overlay;
pub mod runner;
pub(crate) mod suggest;

use std::path::Path;

pub use ahead::{Resolution, Speculation};
pub use runner::{Ending, Limits, Speculated};

/// The model a session runs, as far as speculation's default cares: the built-in demo
/// and scripted models replay fixed answers, so guessing ahead only spends their script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionModel<'a> {
    /// The built-in demo.
    Demo,
    /// Any other model, by the name its provider reports (`script`, or a real model's id).
    Named(&'a str),
}

/// Whether speculation is on for a session in `project_root` with `model`. A settings
/// file that cannot be read or parsed turns it off: it is an optimisation, and doing
/// less is safe.
pub fn enabled(project_root: &Path, home: Option<&Path>, model: SessionModel<'_>) -> bool {
    let default = !matches!(model, SessionModel::Demo | SessionModel::Named("script"));
    for (_, path) in crate::config::layers::files(project_root, home) {
        match setting(&path) {
            Ok(Some(on)) => return on,
            Ok(None) => {}
            Err(()) => return false,
        }
    }
    default
}

/// The `speculation` value of one settings file (`None`: the file or the key is absent).
fn setting(path: &Path) -> Result<Option<bool>, ()> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|_| ())?;
    match value.get("speculation") {
        None => Ok(None),
        Some(v) => v.as_bool().map(Some).ok_or(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_by_default_for_real_models_and_the_highest_layer_that_sets_it_decides() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let (r, h) = (root.path(), Some(home.path()));
        assert!(enabled(r, h, SessionModel::Named("claude-x")));
        assert!(!enabled(r, h, SessionModel::Demo));
        assert!(!enabled(r, h, SessionModel::Named("script")));
        let put = |dir: &Path, text: &str| {
            std::fs::create_dir_all(dir.join(".crew")).unwrap();
            std::fs::write(dir.join(".crew/settings.json"), text).unwrap();
        };
        put(home.path(), r#"{"speculation": false}"#);
        assert!(!enabled(r, h, SessionModel::Named("claude-x")));
        put(home.path(), r#"{"speculation": true}"#);
        assert!(enabled(r, h, SessionModel::Named("script")));
        // The project layer is above the user's.
        put(root.path(), r#"{"speculation": false}"#);
        assert!(!enabled(r, h, SessionModel::Named("script")));
        put(root.path(), r#"{"speculation": "yes"}"#);
        assert!(
            !enabled(r, h, SessionModel::Named("claude-x")),
            "a malformed value turns it off"
        );
    }
}
