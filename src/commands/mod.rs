//! Custom slash commands: Markdown files in `~/.claude/commands`, `~/.crew/commands`,
//! `.claude/commands` and `.crew/commands` (later ones override earlier ones, so the
//! project's win), and in plugins' `commands/` (`/plugin:name`, and `/name` when no
//! other command has it). A file's name is the command (`review.md` → `/review`); as in
//! Claude Code, a subdirectory does not change the name but is shown with it
//! (`frontend/test.md` → `/test`, "project:frontend"), and `/frontend:test` names it
//! exactly when two directories hold a `test.md`. Front matter (optional):
//! `description`, `allowed-tools`, `argument-hint`, `model`; another field, and a tool
//! crew does not have, each get a warning naming the file. Which file wins a name is
//! `catalog.rs`; expanding an invocation into the first user message is `expand.rs`.

mod catalog;
pub(crate) mod expand;
pub(crate) mod lead_calls;

pub(crate) use catalog::CommandCatalog;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::front_matter::{self, ToolList};
use crate::skills::Scope;

/// One custom slash command.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SlashCommand {
    /// Its name, without the `/`.
    pub name: String,
    /// The subdirectories it sits in, joined with `:` (`None` at the top).
    pub namespace: Option<String>,
    /// What it does (else the body's first line).
    pub description: String,
    /// The tools that may run during the turn it starts (`None`: it does not narrow).
    pub allowed_tools: Option<BTreeSet<String>>,
    /// What arguments it takes, for completion.
    pub argument_hint: Option<String>,
    /// The model for the turn it starts.
    pub model: Option<String>,
    /// The prompt template.
    pub body: String,
    /// The file.
    pub file: PathBuf,
    /// Where it was found.
    pub scope: Scope,
    /// The plugin it came with (its name is then `plugin:name`).
    pub plugin: Option<String>,
    /// What in its file crew ignored (unknown fields, unknown tools), each naming the
    /// file and the field.
    pub warnings: Vec<String>,
}

impl SlashCommand {
    /// How it is shown in lists: `(project:frontend)`, `(user)`, `(plugin:kit)`.
    pub(crate) fn origin(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{}:{ns}", self.scope.as_str()),
            None => self.scope.as_str().to_string(),
        }
    }

    /// The name that always invokes it: `name`, `namespace:name` in a subdirectory, the
    /// plugin's `plugin:name`.
    pub(crate) fn key(&self) -> String {
        match (&self.plugin, &self.namespace) {
            (None, Some(ns)) => format!("{ns}:{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// Its name without a namespace or plugin: what `/name` alone may invoke.
    pub(crate) fn bare_name(&self) -> &str {
        match &self.plugin {
            Some(_) => self.name.rsplit(':').next().unwrap_or(&self.name),
            None => &self.name,
        }
    }
}

/// How deep subdirectories are searched.
const MAX_DEPTH: usize = 4;

/// The fields a command file may set; any other gets a warning naming it.
const FIELDS: &[&str] = &["description", "allowed-tools", "argument-hint", "model"];

#[derive(Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct CommandFront {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    allowed_tools: Option<ToolList>,
    #[serde(default)]
    model: Option<String>,
}

/// A command file that could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub(crate) struct CommandError {
    /// The file.
    pub file: PathBuf,
    /// What is wrong and what to do.
    pub message: String,
}

/// Parses one command file.
pub(crate) fn parse(
    text: &str,
    name: &str,
    namespace: Option<String>,
    file: &Path,
    scope: Scope,
) -> Result<SlashCommand, front_matter::FrontMatterError> {
    let (yaml, body) = front_matter::split_optional(text)?;
    // Claude Code's own examples write `argument-hint: [pr-number] [priority]`, which is
    // not YAML: the hint is taken as written, and the rest parsed.
    let (argument_hint, yaml) = match yaml {
        Some(y) => front_matter::take_raw(y, "argument-hint"),
        None => (None, String::new()),
    };
    let (front, unknown): (CommandFront, Vec<String>) = match yaml.trim() {
        "" => (CommandFront::default(), Vec::new()),
        y => {
            let map = front_matter::lenient(y)?;
            let unknown = front_matter::unknown_keys(&map, FIELDS);
            (serde_yaml_ng::from_value(map.into())?, unknown)
        }
    };
    let at = file.display();
    let mut warnings: Vec<String> = unknown
        .iter()
        .map(|field| format!("{at}: field `{field}` is not one crew knows; it is ignored"))
        .collect();
    warnings.extend(
        front
            .allowed_tools
            .iter()
            .flat_map(ToolList::unknown)
            .map(|tool| {
                format!(
                    "{at}: field `allowed-tools`: `{tool}` is no tool crew has; it allows nothing"
                )
            }),
    );
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            body.lines()
                .map(|l| l.trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .chars()
                .take(80)
                .collect()
        });
    Ok(SlashCommand {
        name: name.to_string(),
        namespace,
        description,
        allowed_tools: front.allowed_tools.as_ref().map(ToolList::names),
        argument_hint,
        model: front
            .model
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty()),
        body: body.to_string(),
        file: file.to_path_buf(),
        scope,
        plugin: None,
        warnings,
    })
}

/// The `.md` files below `dir` with their namespace and name (symbolic links to
/// directories are not followed: a cloned repository must not make us walk elsewhere).
pub(super) fn collect(
    root: &Path,
    dir: &Path,
    depth: usize,
    out: &mut Vec<(PathBuf, Option<String>, String)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                collect(root, &path, depth + 1, out);
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let namespace = path
            .parent()
            .and_then(|p| p.strip_prefix(root).ok())
            .map(|rel| {
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(":")
            })
            .filter(|ns| !ns.is_empty());
        out.push((path.clone(), namespace, name.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_and_tools_of_a_command_file_are_warnings_naming_it() {
        let text = "---\ndescription: Review a PR\nallowed-tools: Bash(gh pr view:*), Read, NotebookEdit\nargument-hint: [pr] [focus]\ndisable-model-invocation: true\n---\nReview PR $1.";
        let file = Path::new(".claude/commands/review-pr.md");
        let cmd = parse(text, "review-pr", None, file, Scope::Project).unwrap();
        assert_eq!(cmd.description, "Review a PR");
        assert_eq!(cmd.argument_hint.as_deref(), Some("[pr] [focus]"));
        assert_eq!(
            cmd.warnings,
            [
                ".claude/commands/review-pr.md: field `disable-model-invocation` is not one crew knows; it is ignored",
                ".claude/commands/review-pr.md: field `allowed-tools`: `NotebookEdit` is no tool crew has; it allows nothing",
            ]
        );
        let plain = parse("Just do $ARGUMENTS", "x", None, file, Scope::User).unwrap();
        assert!(plain.warnings.is_empty());
    }
}
