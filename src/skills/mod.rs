//! Skills: `SKILL.md` files with front matter (`name`, `description`, `allowed-tools`)
//! in `~/.claude/skills/*/`, `~/.crew/skills/*/`, `.claude/skills/*/` and
//! `.crew/skills/*/` (later ones override earlier ones by name, so the project's win over
//! the user's). Their names and descriptions go into the lead's system prompt; the
//! `skill` tool (`tools::skill`) returns a skill's body, and while the skill is active its
//! `allowed-tools` narrow what the gate lets the agent run (`gate::NameLimit`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::front_matter::{self, ToolList};
use crate::protocol::name_limit::{LimitOwner, NameLimit};

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
}

impl Scope {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
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
    /// Its name (the `skill` tool's argument).
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// The tools that may run while it is active, as registry names (`None`: it does
    /// not narrow them).
    pub allowed_tools: Option<BTreeSet<String>>,
    /// The instructions (the file's body).
    pub body: String,
    /// The directory holding `SKILL.md` and the files beside it.
    pub dir: PathBuf,
    /// Where it was found.
    pub scope: Scope,
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

/// Why a `SKILL.md` could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SkillParseError {
    /// The file could not be read, or its front matter split or parsed.
    #[error(transparent)]
    FrontMatter(#[from] front_matter::FrontMatterError),
    /// The name (given or the directory's) is not a skill name.
    #[error("field `name`: `{0}` is not a skill name (use letters, digits and `-`, at most 64)")]
    BadName(String),
    /// No description.
    #[error("field `description` is missing: say when the skill should be used")]
    NoDescription,
}

/// Parses one `SKILL.md` (`dir` is its directory; its name is the default skill name).
pub fn parse(text: &str, dir: &Path, scope: Scope) -> Result<Skill, SkillParseError> {
    let (yaml, body) = front_matter::split(text)?;
    // `argument-hint: [a] [b]` is not YAML, but Claude Code accepts it; skills carry no
    // arguments here, so it is dropped before parsing.
    let (_, yaml) = front_matter::take_raw(yaml, "argument-hint");
    let front: SkillFront = serde_yaml_ng::from_value(front_matter::lenient(&yaml)?.into())
        .map_err(front_matter::FrontMatterError::from)?;
    let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = front
        .name
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|| dir_name.to_string());
    if !valid_name(&name) {
        return Err(SkillParseError::BadName(name));
    }
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or(SkillParseError::NoDescription)?;
    Ok(Skill {
        name,
        description,
        allowed_tools: front.allowed_tools.as_ref().map(ToolList::names),
        body: body.to_string(),
        dir: dir.to_path_buf(),
        scope,
    })
}

/// The skills found, by name, and the files that could not be loaded.
#[derive(Debug, Clone, Default)]
pub struct SkillCatalog {
    skills: BTreeMap<String, Skill>,
    /// Files that could not be loaded.
    pub errors: Vec<SkillError>,
}

impl SkillCatalog {
    /// Loads the skills of `project_root` and `home` (see [`search_dirs`]).
    pub fn load(project_root: &Path, home: Option<&Path>) -> Self {
        let mut catalog = Self::default();
        for (scope, dir) in search_dirs(project_root, home, "skills") {
            catalog.load_dir(&dir, scope);
        }
        catalog
    }

    fn load_dir(&mut self, dir: &Path, scope: Scope) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let file = dir.join("SKILL.md");
            let parsed = front_matter::read(&file)
                .map_err(SkillParseError::from)
                .and_then(|text| parse(&text, &dir, scope));
            match parsed {
                Ok(skill) => {
                    self.skills.insert(skill.name.clone(), skill);
                }
                Err(e) => self.errors.push(SkillError {
                    file,
                    message: e.to_string(),
                }),
            }
        }
    }

    /// A catalog of these skills (tests, embedders).
    pub fn from_skills(skills: impl IntoIterator<Item = Skill>) -> Self {
        Self {
            skills: skills.into_iter().map(|s| (s.name.clone(), s)).collect(),
            errors: Vec::new(),
        }
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// The skills, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The directories of the user's skills, canonical: outside the project, so the
    /// permission engine lets file tools read (never write) below them.
    pub fn user_dirs(&self) -> Vec<PathBuf> {
        self.iter()
            .filter(|s| s.scope == Scope::User)
            .filter_map(|s| std::fs::canonicalize(&s.dir).ok())
            .collect()
    }

    /// The gate limit a successful `skill` call with these arguments puts in force (`None`
    /// when they name no skill here).
    pub fn limit_for(&self, arguments: &str) -> Option<NameLimit> {
        let input = serde_json::from_str(arguments).ok()?;
        let skill = self.get(&requested(&input)?)?;
        Some(NameLimit {
            owner: LimitOwner::Skill(skill.name.clone()),
            names: skill
                .allowed_tools
                .as_ref()
                .map(|names| names.iter().cloned().collect()),
        })
    }

    /// The skills section for an agent limited to the tools `allowed` (`None`: all): the
    /// list when it can call the `skill` tool, else nothing (a subagent or teammate whose
    /// definition leaves the tool out is not told about skills it cannot load).
    pub fn prompt_section_for(
        &self,
        allowed: Option<&std::collections::HashSet<String>>,
    ) -> String {
        match allowed {
            Some(names) if !names.contains(TOOL_NAME) => String::new(),
            _ => self.prompt_section(),
        }
    }

    /// The part of a system prompt that lists the skills (empty without skills).
    pub fn prompt_section(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "\n\nSkills (load one with the `skill` tool when the task matches its description; \
while it is active only its allowed tools run, until this turn ends or another skill is loaded):",
        );
        for s in self.iter() {
            out.push_str(&format!("\n- {}: {}", s.name, s.description));
        }
        out
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
    fn parses_claude_code_skill_files() {
        let s = parse(
            "---\nname: pdf\ndescription: Fill PDF forms\nargument-hint: [file] [out]\nallowed-tools:\n  - Read\n  - Bash(python:*)\nlicense: MIT\n---\n# PDF\nSteps.",
            Path::new("/s/pdf"),
            Scope::User,
        )
        .unwrap();
        assert_eq!(s.name, "pdf");
        assert_eq!(s.body, "# PDF\nSteps.");
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
    fn bad_files_say_which_field() {
        let e = parse("---\nname: x\n---\nB", Path::new("/s/x"), Scope::Project)
            .unwrap_err()
            .to_string();
        assert!(e.contains("description"), "{e}");
        let e = parse(
            "---\nname: a b\ndescription: d\n---\n",
            Path::new("/s/x"),
            Scope::Project,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`name`"), "{e}");
        let e = parse("no front matter", Path::new("/s/x"), Scope::Project)
            .unwrap_err()
            .to_string();
        assert!(e.contains("---"), "{e}");
    }

    #[test]
    fn project_skills_override_user_skills_and_errors_name_the_file() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        put(
            home.path(),
            ".claude/skills/review/SKILL.md",
            "---\nname: review\ndescription: mine\n---\nU",
        );
        put(
            home.path(),
            ".crew/skills/notes/SKILL.md",
            "---\nname: notes\ndescription: n\n---\nN",
        );
        put(
            project.path(),
            ".claude/skills/review/SKILL.md",
            "---\nname: review\ndescription: team's\n---\nP",
        );
        put(
            project.path(),
            ".crew/skills/bad/SKILL.md",
            "---\nname: bad\n---\n",
        );
        put(project.path(), ".crew/skills/not-a-skill/README.md", "x");
        let c = SkillCatalog::load(project.path(), Some(home.path()));
        assert_eq!(c.get("review").unwrap().description, "team's");
        assert_eq!(c.get("review").unwrap().scope, Scope::Project);
        assert_eq!(c.get("notes").unwrap().scope, Scope::User);
        assert_eq!(c.iter().count(), 2);
        assert_eq!(c.errors.len(), 1);
        assert!(c.errors[0].to_string().contains("bad/SKILL.md"));
        assert_eq!(c.user_dirs().len(), 1);
        let limit = c.limit_for(r#"{"skill":"/review"}"#).unwrap();
        assert_eq!(limit.owner, LimitOwner::Skill("review".into()));
        assert_eq!(limit.names, None);
        assert_eq!(c.limit_for(r#"{"name":"nope"}"#), None);
        assert_eq!(c.limit_for("not json"), None);
        assert!(c.prompt_section().contains("- notes: n"));
    }
}
