//! The settings files every reader shares — the permission policy (`settings.rs`) and
//! the hooks (`hooks::config`) — in precedence order, highest first:
//!
//! 1. `<project>/.crew/settings.local.json`, then `<project>/.claude/settings.local.json`
//!    (local: the user's own, unless git tracks it);
//! 2. `<project>/.crew/settings.json`, then `<project>/.claude/settings.json` (project:
//!    shared, came with the repository);
//! 3. `~/.crew/settings.json`, then `~/.claude/settings.json` (user).
//!
//! A single value (`defaultMode`, `model`…) comes from the first file that sets it, so the
//! more local layer wins and, within one layer, our `.crew` file wins over Claude Code's
//! `.claude` file. Lists (rules, hooks, directories) are the union of all files; among
//! rules a deny wins wherever it is (the engine's order, `check`).
//!
//! Each file is read once here and tagged with whether it is shared content (needs the
//! folder's trust); readers parse the part they own from its text.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::settings::SettingsError;
use super::tracked;
use crate::protocol::decision::Layer;

/// The settings files of a project, highest precedence first (missing ones included).
pub(crate) fn files(project_root: &Path, home: Option<&Path>) -> Vec<(Layer, PathBuf)> {
    let mut out = vec![
        (Layer::Local, project_root.join(".crew/settings.local.json")),
        (
            Layer::Local,
            project_root.join(".claude/settings.local.json"),
        ),
        (Layer::Project, project_root.join(".crew/settings.json")),
        (Layer::Project, project_root.join(".claude/settings.json")),
    ];
    if let Some(h) = home {
        out.push((Layer::User, h.join(".crew/settings.json")));
        out.push((Layer::User, h.join(".claude/settings.json")));
    }
    out
}

/// One settings file that exists, read.
#[derive(Debug, Clone)]
pub(crate) struct SettingsFile {
    /// Its layer.
    pub layer: Layer,
    /// Its path.
    pub path: PathBuf,
    /// `Some(why)` when it is shared content that needs the folder's trust: the project's
    /// file, or a local file git tracks (or whose repository cannot be read). `None` when
    /// it is the user's own.
    pub shared: Option<String>,
    text: String,
}

impl SettingsFile {
    /// Whether this is one of Claude Code's files (`.claude/…`) rather than ours.
    pub(crate) fn is_claude(&self) -> bool {
        self.path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".claude")
    }

    /// Parses the file as `T`; a syntax or type error names the file, line and column.
    pub(crate) fn parse<T: DeserializeOwned>(&self) -> Result<T, SettingsError> {
        serde_json::from_str(&self.text).map_err(|e| SettingsError::Malformed {
            path: self.path.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }
}

/// Reads every existing settings file of `project_root` (which should be canonical),
/// highest precedence first. A file that exists but cannot be read is an error naming it:
/// skipping it could skip a deny rule.
pub(crate) fn read_all(
    project_root: &Path,
    home: Option<&Path>,
) -> Result<Vec<SettingsFile>, SettingsError> {
    let mut out = Vec::new();
    for (layer, path) in files(project_root, home) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(SettingsError::Read { path, source }),
        };
        let shared = match layer {
            Layer::Project => Some("it is the project's shared settings".into()),
            Layer::Local => match tracked::is_shared(&path) {
                tracked::Shared::No => None,
                tracked::Shared::Tracked => {
                    Some("git tracks this file, so it came with the repository".into())
                }
                tracked::Shared::Unknown(e) => Some(format!("{e}, so it may be tracked")),
            },
            Layer::User | Layer::Session => None,
        };
        out.push(SettingsFile {
            layer,
            path,
            shared,
            text,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crew_files_precede_claude_files_within_each_layer() {
        let names: Vec<String> = files(Path::new("/p"), Some(Path::new("/h")))
            .into_iter()
            .map(|(_, p)| p.display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "/p/.crew/settings.local.json",
                "/p/.claude/settings.local.json",
                "/p/.crew/settings.json",
                "/p/.claude/settings.json",
                "/h/.crew/settings.json",
                "/h/.claude/settings.json",
            ]
        );
    }

    #[test]
    fn an_untracked_local_file_is_own_and_the_project_file_is_shared() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(root.join(".claude/settings.local.json"), "{}").unwrap();
        let read = read_all(&root, None).unwrap();
        assert_eq!(read.len(), 2);
        assert!(read.iter().all(SettingsFile::is_claude));
        assert_eq!(read[0].layer, Layer::Local);
        assert!(read[0].shared.is_none());
        assert_eq!(read[1].layer, Layer::Project);
        assert!(read[1].shared.is_some());
    }
}
