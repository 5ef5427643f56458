//! The skills of a session: each directory of [`super::search_dirs`] (later ones win by
//! name, with a warning naming both files) and each plugin's `skills/*/SKILL.md` (named
//! `plugin:skill`, below every file's). A skill is found by its name, by the slug of a
//! name as written (`Hook Development`), or by a plugin skill's bare name when only one
//! plugin has it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Scope, Skill, SkillError, SkillParseError, TOOL_NAME, parse, requested, search_dirs};
use crate::front_matter;
use crate::plugins::{ConfineError, Plugin, Plugins};
use crate::protocol::name_limit::{LimitOwner, NameLimit};

/// The skills found, by name, and the files that could not be loaded.
#[derive(Debug, Clone, Default)]
pub struct SkillCatalog {
    skills: BTreeMap<String, Skill>,
    /// Files that could not be loaded.
    pub errors: Vec<SkillError>,
    /// Two skills of one name: which one is used, which one is not.
    clashes: Vec<String>,
}

impl SkillCatalog {
    /// Loads the skills of `project_root` and `home` (see [`search_dirs`]).
    pub fn load(project_root: &Path, home: Option<&Path>) -> Self {
        let mut catalog = Self::default();
        for (scope, dir) in search_dirs(project_root, home, "skills") {
            for dir in skill_dirs(&dir) {
                let file = dir.join("SKILL.md");
                let parsed = front_matter::read(&file)
                    .map_err(SkillParseError::from)
                    .and_then(|text| parse(&text, &dir, scope));
                match parsed {
                    Ok(skill) => catalog.insert(skill),
                    Err(e) => catalog.errors.push(SkillError {
                        file,
                        message: e.to_string(),
                    }),
                }
            }
        }
        catalog
    }

    /// Adds the skills of each plugin's `skills/*/SKILL.md`, named `plugin:skill`, below
    /// every file's. `${CLAUDE_PLUGIN_ROOT}` in a body is the plugin's directory.
    pub(crate) fn add_plugins(&mut self, plugins: &Plugins) {
        for plugin in plugins.iter() {
            for dir in skill_dirs(&plugin.part("skills")) {
                let file = dir.join("SKILL.md");
                match read_plugin_skill(plugin, &dir) {
                    Ok(skill) => match self.skills.get(&skill.name) {
                        Some(old) if old.plugin.is_none() => {
                            let used = old.dir.join("SKILL.md");
                            self.clashes.push(clash(&skill.name, &used, &file));
                        }
                        _ => self.insert(skill),
                    },
                    Err(e) => self.errors.push(SkillError {
                        file,
                        message: e.to_string(),
                    }),
                }
            }
        }
    }

    /// Adds `skill` over one of the same name, saying so.
    fn insert(&mut self, skill: Skill) {
        if let Some(old) = self.skills.get(&skill.name) {
            let (used, unused) = (skill.dir.join("SKILL.md"), old.dir.join("SKILL.md"));
            self.clashes.push(clash(&skill.name, &used, &unused));
        }
        self.skills.insert(skill.name.clone(), skill);
    }

    /// A catalog of these skills (tests, embedders).
    pub fn from_skills(skills: impl IntoIterator<Item = Skill>) -> Self {
        Self {
            skills: skills.into_iter().map(|s| (s.name.clone(), s)).collect(),
            ..Self::default()
        }
    }

    /// What the loaded skills' files had that crew ignored, and the names defined twice
    /// (naming both files), one line each.
    pub fn warnings(&self) -> impl Iterator<Item = &str> {
        self.clashes.iter().map(String::as_str).chain(
            self.skills
                .values()
                .flat_map(|s| s.warnings.iter().map(String::as_str)),
        )
    }

    /// The skill called `name`: by its name, the slug of a name as written (`Hook
    /// Development`), or a plugin skill's bare name when only one plugin has it.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        if let Some(skill) = self.skills.get(name) {
            return Some(skill);
        }
        let slug = super::skill_name(name)?;
        if let Some(skill) = self.skills.get(&slug) {
            return Some(skill);
        }
        let mut bare = self
            .iter()
            .filter(|s| s.plugin.is_some() && s.bare_name() == slug);
        match (bare.next(), bare.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// The skills, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The directories of the user's and the plugins' skills, canonical: outside the
    /// project, so the permission engine lets file tools read (never write) below them.
    pub fn read_dirs(&self) -> Vec<PathBuf> {
        self.iter()
            .filter(|s| matches!(s.scope, Scope::User | Scope::Plugin))
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
            let title = s
                .title
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            out.push_str(&format!("\n- {}{title}: {}", s.name, s.description));
        }
        out
    }
}

/// The warning for two skills named `name`: `used` wins over `unused`.
fn clash(name: &str, used: &Path, unused: &Path) -> String {
    format!(
        "skill `{name}` is defined twice: {} is used, not {}",
        used.display(),
        unused.display()
    )
}

/// The directories below `dir` that hold a `SKILL.md` (a link counts, so that a plugin's
/// link out of it is reported rather than skipped), sorted.
fn skill_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p.join("SKILL.md")).is_ok())
        .collect();
    dirs.sort();
    dirs
}

/// Why a plugin's skill is not loaded.
#[derive(Debug, thiserror::Error)]
enum PluginSkillError {
    /// Its `SKILL.md` leads outside the plugin, or cannot be resolved.
    #[error(transparent)]
    Confine(#[from] ConfineError),
    /// Its `SKILL.md` cannot be read or is not a skill.
    #[error(transparent)]
    Parse(#[from] SkillParseError),
}

/// Reads a plugin's skill in `dir`: inside the plugin only, named `plugin:skill`, with
/// the plugin's directory for `${CLAUDE_PLUGIN_ROOT}`.
fn read_plugin_skill(plugin: &Plugin, dir: &Path) -> Result<Skill, PluginSkillError> {
    let real = plugin.confine(&dir.join("SKILL.md"))?;
    let text = front_matter::read(&real).map_err(SkillParseError::from)?;
    let mut skill = parse(&text, dir, Scope::Plugin)?;
    skill.name = plugin.qualify(&skill.name);
    skill.body = plugin.expand(&skill.body);
    skill.plugin = Some(plugin.name.clone());
    Ok(skill)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::plugin;

    fn put(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn project_skills_override_user_skills_with_a_warning_and_errors_name_the_file() {
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
        let warnings: Vec<&str> = c.warnings().collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let (used, unused) = (
            project.path().join(".claude/skills/review/SKILL.md"),
            home.path().join(".claude/skills/review/SKILL.md"),
        );
        assert_eq!(
            warnings[0],
            format!(
                "skill `review` is defined twice: {} is used, not {}",
                used.display(),
                unused.display()
            )
        );
        assert_eq!(c.read_dirs().len(), 1);
        let limit = c.limit_for(r#"{"skill":"/review"}"#).unwrap();
        assert_eq!(limit.owner, LimitOwner::Skill("review".into()));
        assert_eq!(limit.names, None);
        assert_eq!(c.limit_for(r#"{"name":"nope"}"#), None);
        assert_eq!(c.limit_for("not json"), None);
        assert!(c.prompt_section().contains("- notes: n"));
    }

    #[test]
    fn plugin_skills_are_namespaced_found_by_bare_name_when_unique_and_confined() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = |name: &str| {
            format!("---\nname: {name}\ndescription: d\n---\nRun ${{CLAUDE_PLUGIN_ROOT}}/bin/x")
        };
        let kit = plugin(
            tmp.path(),
            "kit",
            &[
                ("skills/hooks/SKILL.md", &skill("Hook Development")),
                ("skills/pdf/SKILL.md", &skill("pdf")),
            ],
        );
        let other = plugin(
            tmp.path(),
            "other",
            &[("skills/pdf/SKILL.md", &skill("pdf"))],
        );
        let secret = tmp.path().join("secret.md");
        std::fs::write(&secret, skill("stolen")).unwrap();
        std::fs::create_dir_all(kit.part("skills").join("evil")).unwrap();
        std::os::unix::fs::symlink(&secret, kit.part("skills").join("evil/SKILL.md")).unwrap();
        let mut c = SkillCatalog::default();
        c.add_plugins(&Plugins::of(vec![kit.clone(), other]));
        let names: Vec<&str> = c.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["kit:hook-development", "kit:pdf", "other:pdf"]);
        let hooks = c.get("hook-development").unwrap();
        assert_eq!(hooks.name, "kit:hook-development");
        assert_eq!(hooks.title.as_deref(), Some("Hook Development"));
        assert_eq!(
            c.get("Hook Development").map(|s| s.name.as_str()),
            Some("kit:hook-development")
        );
        assert_eq!(
            c.get("kit:Hook Development").map(|s| s.name.as_str()),
            Some("kit:hook-development")
        );
        assert!(
            hooks
                .body
                .contains(&format!("{}/bin/x", kit.root.display()))
        );
        // Two plugins have `pdf`: only the full names find them.
        assert!(c.get("pdf").is_none());
        assert_eq!(c.get("other:pdf").unwrap().scope, Scope::Plugin);
        // The link out of the plugin is refused, with a warning naming it.
        assert_eq!(c.errors.len(), 1, "{:?}", c.errors);
        assert!(c.errors[0].file.ends_with("skills/evil/SKILL.md"));
        assert!(
            c.errors[0].message.contains("outside the plugin"),
            "{}",
            c.errors[0]
        );
        assert!(!c.iter().any(|s| s.name.contains("stolen")));
        assert_eq!(c.read_dirs().len(), 3);
    }
}
