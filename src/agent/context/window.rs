//! How big each model's context window is, and when an agent compacts: a built-in table
//! of windows by model-name prefix, and the settings that override it.
//!
//! Settings (`~/.crew/settings.json`, `~/.claude/settings.json`, `.crew/settings.json`,
//! `.claude/settings.json` and the `settings.local.json` files; a higher layer wins per
//! key):
//! - `contextWindows`: `{"<model name or prefix>": tokens}`; the longest matching key
//!   wins over the built-in table.
//! - `autoCompact`: `true` (the default, at 80 % of the window), `false` (never compact
//!   automatically), or a percentage of the window between 10 and 95.
//! - `compactKeepExchanges`: how many of the newest exchanges (a model turn and the tool
//!   results answering it) stay verbatim after a compaction (default 3).
//!
//! None of these can loosen a permission, so a project's files apply without trust.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The window assumed for a model the table does not know.
pub(crate) const DEFAULT_WINDOW: u64 = 128_000;
/// The default `autoCompact` threshold, in percent of the window.
pub(crate) const DEFAULT_THRESHOLD_PERCENT: f64 = 80.0;
/// The default `compactKeepExchanges`.
pub(crate) const DEFAULT_KEEP_EXCHANGES: usize = 3;

/// Model-name prefixes and their context windows in tokens; the longest prefix wins.
const TABLE: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("script", 200_000),
    ("demo", 200_000),
];

/// The context-window table and the compaction settings of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSettings {
    /// `contextWindows` overrides: model name or prefix, tokens.
    pub windows: Vec<(String, u64)>,
    /// The auto-compaction threshold in percent of the window (`None`: off).
    pub auto_compact: Option<f64>,
    /// How many of the newest exchanges stay verbatim.
    pub keep_exchanges: usize,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            windows: Vec::new(),
            auto_compact: Some(DEFAULT_THRESHOLD_PERCENT),
            keep_exchanges: DEFAULT_KEEP_EXCHANGES,
        }
    }
}

impl ContextSettings {
    /// The context window of `model`, in tokens.
    pub fn window_for(&self, model: &str) -> u64 {
        let overridden = self
            .windows
            .iter()
            .filter(|(k, _)| model.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, w)| *w);
        overridden
            .or_else(|| {
                TABLE
                    .iter()
                    .filter(|(k, _)| model.starts_with(k))
                    .max_by_key(|(k, _)| k.len())
                    .map(|(_, w)| *w)
            })
            .unwrap_or(DEFAULT_WINDOW)
    }

    /// The token count at which `model`'s agents compact before their next turn (`None`:
    /// automatic compaction is off).
    pub fn threshold_for(&self, model: &str) -> Option<u64> {
        let percent = self.auto_compact?;
        Some((self.window_for(model) as f64 * percent / 100.0) as u64)
    }

    /// Reads the settings from `files`, lowest layer first (later files win per key). A
    /// malformed entry is skipped with a message naming its file; the rest stands.
    pub fn load(files: &[PathBuf]) -> (Self, Vec<String>) {
        let mut s = Self::default();
        let mut warnings = Vec::new();
        for file in files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<Value>(&text) else {
                continue; // the settings loader reports malformed files
            };
            let mut warn = |key: &str, expected: &str| {
                warnings.push(format!(
                    "{}: `{key}` ignored; expected {expected}",
                    file.display()
                ))
            };
            if let Some(v) = value.get("contextWindows") {
                match v.as_object() {
                    Some(map) => {
                        for (model, tokens) in map {
                            match tokens.as_u64().filter(|t| *t >= 1_000) {
                                Some(t) => {
                                    s.windows.retain(|(k, _)| k != model);
                                    s.windows.push((model.clone(), t));
                                }
                                None => warn(
                                    &format!("contextWindows.{model}"),
                                    "a whole number of tokens, at least 1000",
                                ),
                            }
                        }
                    }
                    None => warn("contextWindows", "{\"<model>\": tokens}"),
                }
            }
            if let Some(v) = value.get("autoCompact") {
                match v {
                    Value::Bool(false) => s.auto_compact = None,
                    Value::Bool(true) => s.auto_compact = Some(DEFAULT_THRESHOLD_PERCENT),
                    Value::Number(n) => match n.as_f64().filter(|p| (10.0..=95.0).contains(p)) {
                        Some(p) => s.auto_compact = Some(p),
                        None => warn("autoCompact", "true, false or a percentage from 10 to 95"),
                    },
                    _ => warn("autoCompact", "true, false or a percentage from 10 to 95"),
                }
            }
            if let Some(v) = value.get("compactKeepExchanges") {
                match v.as_u64().filter(|n| *n <= 50) {
                    Some(n) => s.keep_exchanges = n as usize,
                    None => warn("compactKeepExchanges", "a whole number from 0 to 50"),
                }
            }
        }
        (s, warnings)
    }

    /// The settings of a project's layers (user, then project, then local).
    pub fn for_project(project_root: &Path, home: Option<&Path>) -> (Self, Vec<String>) {
        // `files` lists the highest layer first; reading it backwards lets the higher win.
        let files: Vec<PathBuf> = crate::config::settings::files(project_root, home)
            .into_iter()
            .rev()
            .map(|(_, p)| p)
            .collect();
        Self::load(&files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_settings_override_the_table() {
        let mut s = ContextSettings::default();
        assert_eq!(s.window_for("claude-sonnet-4-5"), 200_000);
        assert_eq!(s.window_for("gpt-4o-mini"), 128_000);
        assert_eq!(s.window_for("mystery"), DEFAULT_WINDOW);
        s.windows.push(("claude-".into(), 100_000));
        s.windows.push(("claude-sonnet".into(), 1_000_000));
        assert_eq!(s.window_for("claude-sonnet-4-5"), 1_000_000);
        assert_eq!(s.window_for("claude-opus-4"), 100_000);
        assert_eq!(s.threshold_for("claude-opus-4"), Some(80_000));
        s.auto_compact = None;
        assert_eq!(s.threshold_for("claude-opus-4"), None);
    }

    #[test]
    fn later_files_win_and_bad_entries_are_named_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.json");
        let local = dir.path().join("local.json");
        std::fs::write(
            &user,
            r#"{"contextWindows":{"script":50000,"tiny":5},"autoCompact":false,"compactKeepExchanges":7}"#,
        )
        .unwrap();
        std::fs::write(
            &local,
            r#"{"contextWindows":{"script":20000},"autoCompact":60,"compactKeepExchanges":"x"}"#,
        )
        .unwrap();
        let (s, warnings) = ContextSettings::load(&[user.clone(), local.clone()]);
        assert_eq!(s.window_for("script"), 20_000);
        assert_eq!(s.auto_compact, Some(60.0));
        assert_eq!(s.keep_exchanges, 7);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("user.json") && warnings[0].contains("contextWindows.tiny"));
        assert!(warnings[1].contains("local.json") && warnings[1].contains("compactKeepExchanges"));
        std::fs::write(&local, r#"{"autoCompact":99}"#).unwrap();
        let (s, warnings) = ContextSettings::load(&[local]);
        assert_eq!(s.auto_compact, Some(DEFAULT_THRESHOLD_PERCENT));
        assert!(warnings[0].contains("autoCompact"), "{warnings:?}");
    }
}
