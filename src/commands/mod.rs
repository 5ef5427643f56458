//! Custom slash commands: Markdown files in `~/.claude/commands`, `~/.crew/commands`,
//! `.claude/commands` and `.crew/commands` (later ones override earlier ones, so the
//! project's win). A file's name is the command (`review.md` → `/review`); as in Claude
//! Code, a subdirectory does not change the name but is shown with it (`frontend/test.md`
//! → `/test`, "project:frontend"), and `/frontend:test` names it exactly when two
//! directories hold a `test.md`. Front matter (optional): `description`, `allowed-tools`,
//! `argument-hint`, `model`. Expanding an invocation into the first user message is
//! `expand.rs`.

pub(crate) mod expand;
pub(crate) mod lead_calls;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::front_matter::{self, ToolList};
use crate::skills::{Scope, search_dirs, valid_name};

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
}

impl SlashCommand {
    /// How it is shown in lists: `(project:frontend)`, `(user)`.
    pub(crate) fn origin(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{}:{ns}", self.scope.as_str()),
            None => self.scope.as_str().to_string(),
        }
    }
}

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
    let front: CommandFront = match yaml.trim() {
        "" => CommandFront::default(),
        y => serde_yaml_ng::from_value(front_matter::lenient(y)?.into())?,
    };
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
    })
}

/// The commands found and the files that could not be loaded.
#[derive(Debug, Clone, Default)]
pub(crate) struct CommandCatalog {
    /// By bare name.
    by_name: BTreeMap<String, SlashCommand>,
    /// By `namespace:name`, for commands in subdirectories.
    by_qualified: BTreeMap<String, SlashCommand>,
    /// Files that could not be loaded.
    pub errors: Vec<CommandError>,
}

/// How deep subdirectories are searched.
const MAX_DEPTH: usize = 4;

impl CommandCatalog {
    /// Loads the commands of `project_root` and `home` (see `skills::search_dirs`).
    pub(crate) fn load(project_root: &Path, home: Option<&Path>) -> Self {
        let mut catalog = Self::default();
        for (scope, dir) in search_dirs(project_root, home, "commands") {
            let mut files = Vec::new();
            collect(&dir, &dir, 0, &mut files);
            files.sort();
            for (file, namespace, name) in files {
                catalog.load_file(&file, namespace, &name, scope);
            }
        }
        catalog
    }

    fn load_file(&mut self, file: &Path, namespace: Option<String>, name: &str, scope: Scope) {
        if !valid_name(name) {
            self.errors.push(CommandError {
                file: file.to_path_buf(),
                message: "the file name is not a command name (use letters, digits and `-`)".into(),
            });
            return;
        }
        let parsed =
            front_matter::read(file).and_then(|text| parse(&text, name, namespace, file, scope));
        match parsed {
            Ok(cmd) => {
                if let Some(ns) = &cmd.namespace {
                    self.by_qualified
                        .insert(format!("{ns}:{}", cmd.name), cmd.clone());
                }
                self.by_name.insert(cmd.name.clone(), cmd);
            }
            Err(e) => self.errors.push(CommandError {
                file: file.to_path_buf(),
                message: e.to_string(),
            }),
        }
    }

    /// Makes each skill a command as well, `/name args`, as Claude Code does: the turn's
    /// message is the skill's instructions with the arguments after them, and its
    /// `allowed-tools` narrow the turn. A command file of the same name wins, with a
    /// warning naming both files (returned, for the caller to show).
    pub(crate) fn add_skills(&mut self, skills: &crate::skills::SkillCatalog) -> Vec<String> {
        let mut clashes = Vec::new();
        for skill in skills.iter() {
            let file = skill.dir.join("SKILL.md");
            if let Some(cmd) = self.by_name.get(&skill.name) {
                clashes.push(format!(
                    "/{} is the command {}; the skill {} of the same name is reached by the skill tool only",
                    skill.name,
                    cmd.file.display(),
                    file.display()
                ));
                continue;
            }
            let cmd = SlashCommand {
                name: skill.name.clone(),
                namespace: None,
                description: skill.description.clone(),
                allowed_tools: skill.allowed_tools.clone(),
                argument_hint: None,
                model: None,
                body: format!("{}\n\nARGUMENTS: $ARGUMENTS", skill.body.trim_end()),
                file,
                scope: skill.scope,
            };
            self.by_name.insert(cmd.name.clone(), cmd);
        }
        clashes
    }

    /// The command invoked as `/name` (or `/namespace:name`).
    pub(crate) fn get(&self, name: &str) -> Option<&SlashCommand> {
        self.by_name
            .get(name)
            .or_else(|| self.by_qualified.get(name))
    }

    /// The commands, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &SlashCommand> {
        self.by_name.values()
    }

    /// Every name that invokes a command (bare and qualified), sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .by_name
            .keys()
            .chain(self.by_qualified.keys())
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// The `.md` files below `dir` with their namespace and name (symbolic links to
/// directories are not followed: a cloned repository must not make us walk elsewhere).
fn collect(
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

    fn put(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_skill_runs_as_a_slash_command_unless_a_command_has_its_name() {
        let project = tempfile::tempdir().unwrap();
        put(
            project.path(),
            ".claude/skills/pdf/SKILL.md",
            "---\nname: pdf\ndescription: Work with PDFs\nallowed-tools: Read\n---\nUse pdftotext.\n",
        );
        put(
            project.path(),
            ".claude/skills/review/SKILL.md",
            "---\nname: review\ndescription: Review as a skill\n---\nSkill body.\n",
        );
        put(project.path(), ".claude/commands/review.md", "Review $1.");
        let skills = crate::skills::SkillCatalog::load(project.path(), None);
        let mut c = CommandCatalog::load(project.path(), None);
        let clashes = c.add_skills(&skills);
        let pdf = c.get("pdf").unwrap();
        assert_eq!(pdf.description, "Work with PDFs");
        assert_eq!(pdf.body, "Use pdftotext.\n\nARGUMENTS: $ARGUMENTS");
        assert_eq!(
            pdf.allowed_tools
                .clone()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["read_file"]
        );
        assert!(pdf.file.ends_with(".claude/skills/pdf/SKILL.md"));
        // The command file keeps its name; the clash is said, naming both files.
        assert_eq!(c.get("review").unwrap().body, "Review $1.");
        assert_eq!(clashes.len(), 1);
        assert!(
            clashes[0].contains("commands/review.md")
                && clashes[0].contains("skills/review/SKILL.md"),
            "{clashes:?}"
        );
    }

    #[test]
    fn loads_claude_code_command_directories() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        put(
            home.path(),
            ".claude/commands/review.md",
            "Mine: $ARGUMENTS",
        );
        put(
            home.path(),
            ".crew/commands/standup.md",
            "# Write my standup\nFrom git log.",
        );
        put(
            project.path(),
            ".claude/commands/review.md",
            "---\ndescription: Review a file\nallowed-tools: Read, Grep, Bash(git diff:*)\nargument-hint: [file] [focus]\nmodel: claude-x\n---\nReview $1.",
        );
        put(
            project.path(),
            ".claude/commands/frontend/test.md",
            "Run the frontend tests",
        );
        // Not YAML, but read as Claude Code reads it: the value as written.
        put(
            project.path(),
            ".crew/commands/loose.md",
            "---\ndescription: [unclosed: as written\n---\nx",
        );
        // A head with no `key: value` at all is still refused, naming the file.
        put(
            project.path(),
            ".crew/commands/bad.md",
            "---\n- a\n- list\n---\nx",
        );
        let c = CommandCatalog::load(project.path(), Some(home.path()));
        let review = c.get("review").unwrap();
        assert_eq!(review.scope, Scope::Project);
        assert_eq!(review.description, "Review a file");
        assert_eq!(review.argument_hint.as_deref(), Some("[file] [focus]"));
        assert_eq!(review.model.as_deref(), Some("claude-x"));
        let tools: Vec<_> = review.allowed_tools.clone().unwrap().into_iter().collect();
        assert_eq!(tools, ["read_file", "run_command", "search_code"]);
        assert_eq!(c.get("standup").unwrap().description, "Write my standup");
        let test = c.get("test").unwrap();
        assert_eq!(test.origin(), "project:frontend");
        assert_eq!(c.get("frontend:test"), Some(test));
        assert_eq!(c.get("loose").unwrap().description, "[unclosed: as written");
        assert_eq!(
            c.names(),
            ["frontend:test", "loose", "review", "standup", "test"]
        );
        assert_eq!(c.errors.len(), 1);
        assert!(
            c.errors[0].to_string().contains("bad.md"),
            "{}",
            c.errors[0]
        );
    }
}
