//! Skills: `SKILL.md` files with front matter (`name`, `description`, `allowed-tools`)
//! in `~/.claude/skills/*/`, `~/.crew/skills/*/`, `.claude/skills/*/` and
//! `.crew/skills/*/` (later ones override earlier ones by name, so the project's win over
//! the user's), and in plugins' `skills/*/` (named `plugin:skill`, below every file's).
//! Their names and descriptions go into the lead's system prompt; the `skill` tool
//! (`tools::skill`) returns a skill's body, and while the skill is active its
//! `allowed-tools` narrow what the gate lets the agent run (`gate::NameLimit`).
//!
//! A `name` written as Claude Code accepts it (`Hook Development`) is kept as the
//! skill's title, and its name is the slug (`hook-development`). A field crew does not
//! know and a tool crew does not have each get a warning naming the file. The catalog is
//! `catalog.rs`.

mod catalog;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::front_matter::{self, ToolList};

pub use catalog::SkillCatalog;

/// The name of the tool that loads a skill (`tools::skill`).
pub const TOOL_NAME: &str = "skill";

/// The skill a `skill` call names: its `name` (or Claude Code's `skill`) without a
/// leading `/`; `None` when the one given is not a string.
fn requested(input: &serde_json::Value) -> Option<String> {
    let name = match input.get("name").filter(|v| !v.is_null()) {
        Some(n) => n.as_str()?,
        None => input.get("skill")?.as_str()?,
    };
    Some(name.trim().trim_start_matches('/').to_string())
}

/// Where a skill or command file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's home (`~/.claude`, `~/.crew`).
    User,
    /// The project (`.claude`, `.crew`), shared with everyone who clones it.
    Project,
    /// A plugin (`--plugin-dir`, or installed and enabled).
    Plugin,
}

impl Scope {
    /// `user`, `project` or `plugin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Plugin => "plugin",
        }
    }
}

/// The directories of one kind of extension (`skills`, `commands`), lowest precedence
/// first: `~/.claude/KIND`, `~/.crew/KIND`, `.claude/KIND`, `.crew/KIND`.
pub fn search_dirs(project_root: &Path, home: Option<&Path>, kind: &str) -> Vec<(Scope, PathBuf)> {
    let mut dirs = Vec::new();
    if let Some(home) = home {
        dirs.push((Scope::User, home.join(".claude").join(kind)));
        dirs.push((Scope::User, home.join(".crew").join(kind)));
    }
    dirs.push((Scope::Project, project_root.join(".claude").join(kind)));
    dirs.push((Scope::Project, project_root.join(".crew").join(kind)));
    dirs
}

/// One skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its name (the `skill` tool's argument, `/name`): `plugin:name` for a plugin's.
    pub name: String,
    /// The `name` as written when it is not a name itself (`Hook Development` for
    /// `hook-development`).
    pub title: Option<String>,
    /// When to use it, for the model.
    pub description: String,
    /// The tools that may run while it is active, as registry names (`None`: it does
    /// not narrow them).
    pub allowed_tools: Option<BTreeSet<String>>,
    /// What arguments `/name` takes, for completion (`argument-hint`).
    pub argument_hint: Option<String>,
    /// The instructions (the file's body).
    pub body: String,
    /// The directory holding `SKILL.md` and the files beside it.
    pub dir: PathBuf,
    /// Where it was found.
    pub scope: Scope,
    /// The plugin it came with.
    pub plugin: Option<String>,
    /// What in its file crew ignored (unknown fields, unknown tools), each naming the
    /// file and the field.
    pub warnings: Vec<String>,
}

impl Skill {
    /// Its name without a plugin's namespace (`review` for `kit:review`).
    pub(crate) fn bare_name(&self) -> &str {
        match &self.plugin {
            Some(_) => self.name.rsplit(':').next().unwrap_or(&self.name),
            None => &self.name,
        }
    }
}

/// A skill file that could not be loaded: the file and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SkillError {
    /// The `SKILL.md` file.
    pub file: PathBuf,
    /// What is wrong and what to do.
    pub message: String,
}

/// The fields a `SKILL.md` may set; any other gets a warning naming it. `license` and
/// `metadata` only describe the skill (the Agent Skills format has them).
const FIELDS: &[&str] = &[
    "name",
    "description",
    "allowed-tools",
    "argument-hint",
    "license",
    "metadata",
];

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct SkillFront {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    allowed_tools: Option<ToolList>,
}

/// Whether `name` can name a skill or command: letters, digits, `-`, `_`, `.`, `:`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The name a skill written as `written` goes by: `written` when it is a name, else its
/// slug — lowercase, each run of spaces (or other characters a name cannot hold) one
/// `-` (`Hook Development` → `hook-development`); `None` when nothing is left.
pub(crate) fn skill_name(written: &str) -> Option<String> {
    let written = written.trim();
    if valid_name(written) {
        return Some(written.to_string());
    }
    let mut slug = String::new();
    for c in written.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':') {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-').to_string();
    valid_name(&slug).then_some(slug)
}

/// Why a `SKILL.md` could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SkillParseError {
    /// The file could not be read, or its front matter split or parsed.
    #[error(transparent)]
    FrontMatter(#[from] front_matter::FrontMatterError),
    /// Neither the name given nor the directory's makes a skill name.
    #[error(
        "field `name`: `{0}` is not a skill name (use letters, digits, spaces and `-`, at most 64)"
    )]
    BadName(String),
    /// No description.
    #[error("field `description` is missing: say when the skill should be used")]
    NoDescription,
}

/// Parses one `SKILL.md` (`dir` is its directory; its name is the default skill name).
pub fn parse(text: &str, dir: &Path, scope: Scope) -> Result<Skill, SkillParseError> {
    let file = dir.join("SKILL.md");
    let (yaml, body) = front_matter::split(text)?;
    // `argument-hint: [a] [b]` is not YAML, but Claude Code accepts it: taken as written.
    let (argument_hint, yaml) = front_matter::take_raw(yaml, "argument-hint");
    let map = front_matter::lenient(&yaml)?;
    let unknown = front_matter::unknown_keys(&map, FIELDS);
    let front: SkillFront =
        serde_yaml_ng::from_value(map.into()).map_err(front_matter::FrontMatterError::from)?;
    let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let written = front
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| dir_name.to_string());
    let name = skill_name(&written)
        .or_else(|| skill_name(dir_name))
        .ok_or_else(|| SkillParseError::BadName(written.clone()))?;
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or(SkillParseError::NoDescription)?;
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
    Ok(Skill {
        title: (name != written).then_some(written),
        name,
        description,
        allowed_tools: front.allowed_tools.as_ref().map(ToolList::names),
        argument_hint,
        body: body.to_string(),
        dir: dir.to_path_buf(),
        scope,
        plugin: None,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claude_code_skill_files() {
        let s = parse(
            "---\nname: pdf\ndescription: Fill PDF forms\nargument-hint: [file] [out]\nallowed-tools:\n  - Read\n  - Bash(python:*)\nlicense: MIT\n---\n# PDF\nSteps.",
            Path::new("/s/pdf"),
            Scope::User,
        )
        .unwrap();
        assert_eq!(s.name, "pdf");
        assert_eq!(s.title, None);
        assert_eq!(s.body, "# PDF\nSteps.");
        assert_eq!(s.argument_hint.as_deref(), Some("[file] [out]"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let allowed: Vec<_> = s.allowed_tools.unwrap().into_iter().collect();
        assert_eq!(allowed, ["read_file", "run_command"]);
        let s = parse(
            "---\ndescription: d\n---\nB",
            Path::new("/s/fmt"),
            Scope::User,
        )
        .unwrap();
        assert_eq!((s.name.as_str(), s.allowed_tools), ("fmt", None));
    }

    #[test]
    fn a_name_with_spaces_is_slugged_and_kept_as_the_title() {
        // As plugin skills are written in the wild: a display name, an unquoted
        // multi-line description with a colon, a field crew does not know.
        let text = "---\nname: Hook Development\ndescription: This skill should be used when the user asks to \"create a hook\": PreToolUse,\nPostToolUse and Stop events.\nversion: 0.1.0\nallowed-tools: Read, NotebookEdit\n---\nHooks are…";
        let s = parse(text, Path::new("/p/skills/hook-dev"), Scope::Plugin).unwrap();
        assert_eq!(s.name, "hook-development");
        assert_eq!(s.title.as_deref(), Some("Hook Development"));
        assert!(
            s.description.ends_with("PostToolUse and Stop events."),
            "{}",
            s.description
        );
        assert_eq!(
            s.warnings,
            [
                "/p/skills/hook-dev/SKILL.md: field `version` is not one crew knows; it is ignored",
                "/p/skills/hook-dev/SKILL.md: field `allowed-tools`: `NotebookEdit` is no tool crew has; it allows nothing",
            ]
        );
        assert_eq!(
            skill_name("  Code  Review (v2) ").as_deref(),
            Some("code-review-v2")
        );
        assert_eq!(skill_name("PDF").as_deref(), Some("PDF"));
        // A name with nothing left of it: the directory's name.
        let s = parse(
            "---\nname: 代码审查\ndescription: d\n---\n",
            Path::new("/s/review-zh"),
            Scope::User,
        )
        .unwrap();
        assert_eq!(
            (s.name.as_str(), s.title.as_deref()),
            ("review-zh", Some("代码审查"))
        );
    }

    #[test]
    fn bad_files_say_which_field() {
        let e = parse("---\nname: x\n---\nB", Path::new("/s/x"), Scope::Project)
            .unwrap_err()
            .to_string();
        assert!(e.contains("description"), "{e}");
        let e = parse(
            "---\nname: '!!!'\ndescription: d\n---\n",
            Path::new("/s/???"),
            Scope::Project,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`name`") && e.contains("!!!"), "{e}");
        let e = parse("no front matter", Path::new("/s/x"), Scope::Project)
            .unwrap_err()
            .to_string();
        assert!(e.contains("---"), "{e}");
    }
}
