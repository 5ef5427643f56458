//! Deferred tools: when an agent may see many MCP tools (more than `maxTools`, or more
//! than `maxTokens` of definitions), they are left out of its requests and `tool_search`
//! finds and loads them, as Claude Code's ToolSearch does.
//!
//! - Deferrable: every MCP tool (`mcp__<server>__<tool>`); built-in tools never are.
//! - Loaded: a deferred tool named on the first line of a successful `tool_search` result
//!   in the agent's conversation. The conversation is the only record, so a forked or
//!   resumed conversation keeps what it loaded.
//! - A call to a deferred tool not loaded yet is refused (`tool_not_loaded`, nothing
//!   runs) and told to load it first: the model has not seen its schema. Claude Code
//!   refuses such calls too. A loaded tool's calls take the usual permission path.
//! - Settings (`toolSearch` in `~/.crew/settings.json`, `.crew/settings.json`,
//!   `.crew/settings.local.json`; later files win per field):
//!   `{"mode": "auto" | "always" | "never", "maxTools": 40, "maxTokens": 10000}`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::tool_search::{self, ToolSearch};
use super::{Definition, Registry, ToolSpec};
use crate::protocol::{ContentBlock, Message, ToolCall, ToolResult};

/// When tools are deferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Above `max_tools` deferrable tools or `max_tokens` of their definitions.
    Auto,
    /// Whenever there is a deferrable tool.
    Always,
    /// Never: every tool is sent.
    Never,
}

/// The deferral threshold (the `toolSearch` setting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threshold {
    /// When to defer.
    pub mode: Mode,
    /// Defer when more deferrable tools than this are visible (auto mode).
    pub max_tools: usize,
    /// Defer when their definitions take more estimated tokens than this (auto mode).
    pub max_tokens: usize,
}

impl Default for Threshold {
    fn default() -> Self {
        Self {
            mode: Mode::Auto,
            max_tools: 40,
            max_tokens: 10_000,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawThreshold {
    mode: Option<Mode>,
    max_tools: Option<usize>,
    max_tokens: Option<usize>,
}

impl Threshold {
    /// Reads `toolSearch` from the settings files in `files` (lowest layer first). A
    /// malformed entry is skipped with a message naming its file; the defaults stand.
    pub fn load(files: &[std::path::PathBuf]) -> (Self, Vec<String>) {
        let mut t = Self::default();
        let mut warnings = Vec::new();
        for file in files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue; // the settings loader reports malformed files
            };
            let Some(raw) = value.get("toolSearch") else {
                continue;
            };
            match RawThreshold::deserialize(raw) {
                Ok(raw) => {
                    t.mode = raw.mode.unwrap_or(t.mode);
                    t.max_tools = raw.max_tools.unwrap_or(t.max_tools);
                    t.max_tokens = raw.max_tokens.unwrap_or(t.max_tokens);
                }
                Err(e) => warnings.push(format!(
                    "{}: `toolSearch` ignored ({e}); expected {{\"mode\": \"auto\"|\"always\"|\"never\", \"maxTools\": N, \"maxTokens\": N}}",
                    file.display()
                )),
            }
        }
        (t, warnings)
    }

    /// The threshold from a project's settings layers: local over project over user.
    pub fn for_project(project_root: &Path, home: Option<&Path>) -> (Self, Vec<String>) {
        // `files` lists the highest layer first; `load` lets a later file win.
        let files: Vec<_> = crate::config::settings::files(project_root, home)
            .into_iter()
            .rev()
            .map(|(_, p)| p)
            .collect();
        Self::load(&files)
    }

    /// Whether `deferrable` definitions should be deferred.
    pub fn defers(&self, deferrable: &[&Definition]) -> bool {
        match self.mode {
            Mode::Never => false,
            Mode::Always => !deferrable.is_empty(),
            Mode::Auto => {
                deferrable.len() > self.max_tools
                    || deferrable
                        .iter()
                        .map(|d| estimated_tokens(d))
                        .sum::<usize>()
                        > self.max_tokens
            }
        }
    }
}

/// Whether a tool may be deferred: MCP tools are.
pub fn is_deferrable(def: &Definition) -> bool {
    def.name.starts_with("mcp__")
}

/// A rough token count of what the model is shown of `def` (4 bytes a token).
pub fn estimated_tokens(def: &Definition) -> usize {
    spec_bytes(&ToolSpec::from(def)).div_ceil(4)
}

/// The JSON size of a tool spec as sent.
pub fn spec_bytes(spec: &ToolSpec) -> usize {
    serde_json::to_vec(spec).map(|v| v.len()).unwrap_or(0)
}

/// One agent run's split of its visible tools into sent and deferred ones.
#[derive(Debug, Clone, Default)]
pub struct Deferral {
    /// Sent in every request (with `tool_search` listing the deferred names, when any).
    immediate: Arc<[ToolSpec]>,
    /// Left out until loaded, by name.
    deferred: Arc<[Definition]>,
    index: HashMap<String, usize>,
}

impl Deferral {
    /// Splits `visible` (the agent's tools in this mode) by the threshold carried by the
    /// registry's `tool_search` tool. Without deferral `tool_search` is left out: there
    /// is nothing for it to find.
    pub fn plan(visible: Vec<Definition>, registry: &Registry) -> Self {
        let tool = registry.get(tool_search::NAME);
        let threshold = tool
            .as_ref()
            .and_then(|t| t.as_any())
            .and_then(|a| a.downcast_ref::<ToolSearch>())
            .map(|t| t.threshold().clone());
        let searchable = visible.iter().any(|d| d.name == tool_search::NAME);
        let deferrable: Vec<&Definition> = visible.iter().filter(|d| is_deferrable(d)).collect();
        let defer = searchable && threshold.is_some_and(|t| t.defers(&deferrable));
        let (deferred, immediate): (Vec<Definition>, Vec<Definition>) = visible
            .into_iter()
            .filter(|d| defer || d.name != tool_search::NAME)
            .partition(|d| defer && is_deferrable(d));
        let names: Vec<&str> = deferred.iter().map(|d| d.name.as_str()).collect();
        let immediate = immediate
            .iter()
            .map(|d| {
                let mut spec = ToolSpec::from(d);
                if d.name == tool_search::NAME {
                    spec.description = format!(
                        "{}\n\nDeferred tools ({}): {}",
                        spec.description,
                        names.len(),
                        names.join(", ")
                    );
                }
                spec
            })
            .collect();
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i))
            .collect();
        Self {
            immediate,
            deferred: deferred.into(),
            index,
        }
    }

    /// What `tool_search` searches (`None` when nothing is deferred).
    pub fn searchable(&self) -> Option<Arc<[Definition]>> {
        (!self.deferred.is_empty()).then(|| self.deferred.clone())
    }

    /// The deferred tools `conversation` has loaded through `tool_search`.
    pub fn loaded(&self, conversation: &[Message]) -> HashSet<String> {
        if self.deferred.is_empty() {
            return HashSet::new();
        }
        let searches: HashSet<&str> = conversation
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolUse(c)
                    if c.name == tool_search::NAME || c.name == tool_search::ALIAS =>
                {
                    Some(c.id.as_str())
                }
                _ => None,
            })
            .collect();
        conversation
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r)
                    if !r.is_error && searches.contains(r.tool_use_id.as_str()) =>
                {
                    Some(r)
                }
                _ => None,
            })
            .flat_map(|r| tool_search::loaded_names(&r.content))
            .filter(|n| self.index.contains_key(*n))
            .map(str::to_string)
            .collect()
    }

    /// The tools for the next request: the immediate ones, then the loaded deferred ones.
    /// The list is shared, not copied, while no deferred tool is loaded.
    pub fn request_tools(&self, conversation: &[Message]) -> Arc<[ToolSpec]> {
        let loaded = self.loaded(conversation);
        if loaded.is_empty() {
            return self.immediate.clone();
        }
        let mut tools = self.immediate.to_vec();
        tools.extend(
            self.deferred
                .iter()
                .filter(|d| loaded.contains(&d.name))
                .map(ToolSpec::from),
        );
        tools.into()
    }

    /// Takes out the calls to deferred tools `conversation` has not loaded; `run` runs
    /// the rest, and the refusals are put back in call order.
    pub async fn run_loaded<F, Fut>(
        &self,
        registry: &Registry,
        conversation: &[Message],
        calls: Vec<ToolCall>,
        run: F,
    ) -> Vec<ToolResult>
    where
        F: FnOnce(Vec<ToolCall>) -> Fut,
        Fut: std::future::Future<Output = Vec<ToolResult>>,
    {
        if self.deferred.is_empty() {
            return run(calls).await;
        }
        let loaded = self.loaded(conversation);
        let mut slots: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
        let mut to_run = Vec::new();
        for call in calls {
            let name = registry.canonical(&call.name).unwrap_or(&call.name);
            if self.index.contains_key(name) && !loaded.contains(name) {
                slots.push(Some(ToolResult::error(
                    &call.id,
                    "tool_not_loaded",
                    format!(
                        "`{name}` is a deferred tool that is not loaded yet: call {} with \
                         query `select:{name}` first, then call it with the schema it shows",
                        tool_search::NAME
                    ),
                )));
            } else {
                slots.push(None);
                to_run.push(call);
            }
        }
        let mut ran = run(to_run).await.into_iter();
        slots
            .into_iter()
            .filter_map(|s| s.or_else(|| ran.next()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> Definition {
        let mut d = ToolSearch::new(Threshold::default()).definition().clone();
        d.name = name.into();
        d.aliases.clear();
        d
    }

    use super::super::Tool;

    #[test]
    fn auto_mode_defers_above_the_tool_count_or_token_budget() {
        let t = Threshold::default();
        let few: Vec<Definition> = (0..40).map(|i| def(&format!("mcp__s__t{i}"))).collect();
        assert!(!t.defers(&few.iter().collect::<Vec<_>>()));
        let many: Vec<Definition> = (0..41).map(|i| def(&format!("mcp__s__t{i}"))).collect();
        assert!(t.defers(&many.iter().collect::<Vec<_>>()));
        let mut big = def("mcp__s__big");
        big.description = "x".repeat(50_000);
        assert!(t.defers(&[&big]));
        let never = Threshold {
            mode: Mode::Never,
            ..t.clone()
        };
        assert!(!never.defers(&many.iter().collect::<Vec<_>>()));
    }

    #[test]
    fn settings_layers_override_field_by_field_and_bad_entries_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.json");
        let local = dir.path().join("local.json");
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &user,
            r#"{"toolSearch": {"mode": "always", "maxTools": 7}}"#,
        )
        .unwrap();
        std::fs::write(&local, r#"{"toolSearch": {"maxTools": 3}}"#).unwrap();
        std::fs::write(&bad, r#"{"toolSearch": {"mode": "sometimes"}}"#).unwrap();
        let (t, warnings) = Threshold::load(&[user, local, bad.clone()]);
        assert_eq!(
            (t.mode, t.max_tools, t.max_tokens),
            (Mode::Always, 3, 10_000)
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains(&bad.display().to_string()));
    }

    #[test]
    fn a_projects_local_file_wins_over_its_shared_file_and_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let (proj, home) = (dir.path().join("proj"), dir.path().join("home"));
        let put = |path: std::path::PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        put(
            home.join(".crew/settings.json"),
            r#"{"toolSearch": {"mode": "always", "maxTools": 1, "maxTokens": 1}}"#,
        );
        put(
            proj.join(".crew/settings.json"),
            r#"{"toolSearch": {"mode": "never", "maxTools": 2}}"#,
        );
        put(
            proj.join(".crew/settings.local.json"),
            r#"{"toolSearch": {"mode": "auto"}}"#,
        );
        let (t, warnings) = Threshold::for_project(&proj, Some(&home));
        assert!(warnings.is_empty(), "{warnings:?}");
        // Each field from the most local file that sets it.
        assert_eq!((t.mode, t.max_tools, t.max_tokens), (Mode::Auto, 2, 1));
    }
}
