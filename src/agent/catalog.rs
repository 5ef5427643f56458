//! The agent catalog: built-in definitions plus those found in `~/.claude/agents/`,
//! `~/.crew/agents/` (the user's), `.claude/agents/` (for users coming from Claude Code)
//! and `.crew/agents/` (the project's), in plugins (`plugin:agent`) and in `--agents`.
//! Precedence, lowest first: built-in, plugin, `~/.claude`, `~/.crew`, `.claude`, `.crew`,
//! `--agents`; a definition of a name already defined replaces it with a warning naming
//! both (replacing a built-in is how one customises it, so that is said nowhere). A
//! broken file is reported and the others load; a file that is not regular (a FIFO, a
//! device), is larger than 256 KiB, or in a plugin leads outside it, is reported unread.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::definition::{AgentDefinition, DefinitionError, built_ins, parse};
use crate::plugins::{Plugin, Plugins};

/// The loaded definitions and the problems found.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Definitions by name.
    pub agents: BTreeMap<String, AgentDefinition>,
    /// Files that could not be loaded.
    pub errors: Vec<DefinitionError>,
    /// Two definitions of one name: which one is used, which one is not.
    clashes: Vec<String>,
}

impl Catalog {
    /// What the loaded definitions' files had that crew ignored, one line each naming the
    /// file and the field, and the names defined twice, naming both files.
    pub(crate) fn warnings(&self) -> impl Iterator<Item = &str> {
        self.clashes.iter().map(String::as_str).chain(
            self.agents
                .values()
                .flat_map(|def| def.warnings.iter().map(String::as_str)),
        )
    }

    /// Each agent type's name and description, for the `agent` tool's description.
    pub fn agent_types(&self) -> Vec<(String, String)> {
        self.agents
            .values()
            .map(|d| (d.name.clone(), d.description.clone()))
            .collect()
    }

    /// The definitions that carry a `hooks` object, for `hooks::config::load_agents`.
    pub fn hook_sources(&self) -> impl Iterator<Item = crate::hooks::config::AgentHooks<'_>> {
        self.agents.values().filter_map(|d| {
            d.hooks
                .as_ref()
                .map(|hooks| crate::hooks::config::AgentHooks {
                    name: &d.name,
                    origin: &d.origin,
                    hooks,
                })
        })
    }

    /// Loads the built-ins and the definition directories of `project_root` and `home`
    /// (lowest precedence first: built-in, `~/.claude`, `~/.crew`, `.claude`, `.crew`).
    pub fn load(project_root: &Path, home: Option<&Path>) -> Self {
        let mut catalog = Catalog::default();
        for def in built_ins() {
            catalog.agents.insert(def.name.clone(), def);
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(home) = home {
            dirs.push(home.join(".claude/agents"));
            dirs.push(home.join(".crew/agents"));
        }
        dirs.push(project_root.join(".claude/agents"));
        dirs.push(project_root.join(".crew/agents"));
        for dir in dirs {
            for file in markdown_files(&dir) {
                match read(&file, &file) {
                    Ok(def) => catalog.insert(def),
                    Err(e) => catalog.errors.push(e),
                }
            }
        }
        catalog
    }

    /// Adds the agents of each plugin's `agents/*.md`, named `plugin:name`, below every
    /// file's (a file that names itself `plugin:name` wins). `${CLAUDE_PLUGIN_ROOT}` in a
    /// prompt is the plugin's directory.
    pub(crate) fn add_plugins(&mut self, plugins: &Plugins) {
        for plugin in plugins.iter() {
            for file in markdown_files(&plugin.part("agents")) {
                match read_plugin_file(plugin, &file) {
                    Ok(def) => self.insert_plugin(def),
                    Err(e) => self.errors.push(e),
                }
            }
        }
    }

    /// Adds `def` over a definition of the same name, saying so unless that one is a
    /// built-in.
    fn insert(&mut self, def: AgentDefinition) {
        if let Some(old) = self.agents.get(&def.name)
            && !old.origin.starts_with("built-in")
        {
            self.clashes
                .push(clash(&def.name, &def.origin, &old.origin));
        }
        self.agents.insert(def.name.clone(), def);
    }

    /// Adds a plugin's `def`: below a file's definition of the same name, over another
    /// file of the same plugin.
    fn insert_plugin(&mut self, def: AgentDefinition) {
        match self.agents.get(&def.name) {
            Some(old) if old.plugin.is_none() && !old.origin.starts_with("built-in") => {
                self.clashes
                    .push(clash(&def.name, &old.origin, &def.origin));
            }
            _ => self.insert(def),
        }
    }

    /// Adds the definitions of Claude Code's `--agents` JSON (an object from name to
    /// definition), above every file's: the command line wins, as in Claude Code.
    pub(crate) fn add_json(&mut self, json: &str) -> Result<(), DefinitionError> {
        let origin = "--agents";
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| DefinitionError {
            origin: origin.into(),
            message: format!("not JSON: {e}"),
        })?;
        let Some(agents) = value.as_object() else {
            return Err(DefinitionError {
                origin: origin.into(),
                message: r#"give an object from agent name to definition, e.g. {"reviewer": {"description": "…", "prompt": "…"}}"#.into(),
            });
        };
        for (name, def) in agents {
            let def = super::definition::from_json(name, def, origin)?;
            self.insert(def);
        }
        Ok(())
    }

    /// The definition called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.get(name)
    }

    /// The names, for error messages.
    pub fn names(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }
}

/// The warning for two definitions of `name`: `used` wins over `unused`.
fn clash(name: &str, used: &str, unused: &str) -> String {
    format!("agent `{name}` is defined twice: {used} is used, not {unused}")
}

/// The `*.md` files of `dir`, sorted (none when it does not exist).
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

/// Reads the definition in `file` (its real location `real`), named by `file`. A cloned
/// repository decides what these files are: only small regular files are read.
fn read(file: &Path, real: &Path) -> Result<AgentDefinition, DefinitionError> {
    let origin = file.display().to_string();
    crate::front_matter::read(real)
        .map_err(|e| DefinitionError {
            origin: origin.clone(),
            message: e.to_string(),
        })
        .and_then(|text| parse(&text, &origin))
}

/// Reads a plugin's agent `file`: inside the plugin only, named `plugin:name`, with the
/// plugin's directory for `${CLAUDE_PLUGIN_ROOT}`.
fn read_plugin_file(plugin: &Plugin, file: &Path) -> Result<AgentDefinition, DefinitionError> {
    let real = plugin.confine(file).map_err(|e| DefinitionError {
        origin: file.display().to_string(),
        message: e.to_string(),
    })?;
    let mut def = read(file, &real)?;
    def.name = plugin.qualify(&def.name);
    def.prompt = plugin.expand(&def.prompt);
    def.plugin = Some(plugin.name.clone());
    Ok(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_files_override_built_ins_and_broken_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".crew/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("explore.md"),
            "---\nname: explore\ndescription: mine\n---\nMy explorer.",
        )
        .unwrap();
        std::fs::write(agents.join("broken.md"), "---\nname: b\n---\n").unwrap();
        let claude = dir.path().join(".claude/agents");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(
            claude.join("reviewer.md"),
            "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep\n---\nReview.",
        )
        .unwrap();
        let c = Catalog::load(dir.path(), None);
        assert_eq!(c.get("explore").unwrap().description, "mine");
        assert!(
            c.get("general-purpose")
                .unwrap()
                .origin
                .starts_with("built-in")
        );
        assert!(
            c.get("reviewer")
                .unwrap()
                .tools
                .as_ref()
                .unwrap()
                .contains("search_code")
        );
        assert_eq!(c.errors.len(), 1);
        assert!(c.errors[0].origin.ends_with("broken.md"));
        assert!(c.errors[0].message.contains("description"));
    }

    #[test]
    fn a_fifo_or_a_huge_file_is_reported_unread_and_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".claude/agents");
        std::fs::create_dir_all(&agents).unwrap();
        let ok = std::process::Command::new("mkfifo")
            .arg(agents.join("x.md"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo");
        // Valid front matter followed by a body past the limit.
        let mut huge = String::from("---\nname: huge\ndescription: big\n---\n");
        huge.push_str(&"x".repeat(crate::front_matter::MAX_FILE_BYTES as usize));
        std::fs::write(agents.join("huge.md"), huge).unwrap();
        let root = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        // Reading the FIFO would block forever: load on a thread, with a generous bound.
        std::thread::spawn(move || {
            let _ = tx.send(Catalog::load(&root, None));
        });
        let c = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("loading the catalog blocked on the FIFO");
        assert!(c.get("huge").is_none(), "the huge file was loaded");
        let mut errors: Vec<(String, String)> = c
            .errors
            .iter()
            .map(|e| (e.origin.clone(), e.message.clone()))
            .collect();
        errors.sort();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].0.ends_with("huge.md") && errors[0].1.contains("KiB"),
            "{errors:?}"
        );
        assert!(
            errors[1].0.ends_with("x.md") && errors[1].1.contains("regular"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_clash_names_both_files_and_the_winner_and_the_command_line_wins_last() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, proj) = (tmp.path().join("home"), tmp.path().join("proj"));
        let agent = |desc: &str| format!("---\nname: reviewer\ndescription: {desc}\n---\nBody.");
        for (dir, desc) in [
            (home.join(".claude/agents"), "claude user"),
            (home.join(".crew/agents"), "crew user"),
            (proj.join(".claude/agents"), "project"),
        ] {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("reviewer.md"), agent(desc)).unwrap();
        }
        let mut c = Catalog::load(&proj, Some(&home));
        assert_eq!(c.get("reviewer").unwrap().description, "project");
        let warnings: Vec<&str> = c.warnings().collect();
        assert_eq!(
            warnings,
            [
                format!(
                    "agent `reviewer` is defined twice: {} is used, not {}",
                    home.join(".crew/agents/reviewer.md").display(),
                    home.join(".claude/agents/reviewer.md").display()
                ),
                format!(
                    "agent `reviewer` is defined twice: {} is used, not {}",
                    proj.join(".claude/agents/reviewer.md").display(),
                    home.join(".crew/agents/reviewer.md").display()
                ),
            ]
        );
        c.add_json(r#"{"reviewer": {"description": "typed", "prompt": "p"}}"#)
            .unwrap();
        assert_eq!(c.get("reviewer").unwrap().description, "typed");
        let last = c.warnings().nth(2).unwrap().to_string();
        assert!(
            last.starts_with("agent `reviewer` is defined twice: --agents is used, not ")
                && last.ends_with("proj/.claude/agents/reviewer.md"),
            "{last}"
        );
    }

    #[test]
    fn plugin_agents_are_namespaced_below_files_and_may_not_leave_the_plugin() {
        let tmp = tempfile::tempdir().unwrap();
        let kit = crate::plugins::testing::plugin(
            tmp.path(),
            "kit",
            &[
                (
                    "agents/code-reviewer.md",
                    "---\nname: code-reviewer\ndescription: Use this agent when: a PR is ready.\nExamples: review my diff\ntools: [Read, Grep]\n---\nRun ${CLAUDE_PLUGIN_ROOT}/bin/lint first.",
                ),
                (
                    "agents/explore.md",
                    "---\nname: explore\ndescription: kit's\n---\nx",
                ),
            ],
        );
        std::os::unix::fs::symlink("/etc/shadow", kit.part("agents").join("shadow.md")).unwrap();
        let proj = tmp.path().join("proj");
        let own = proj.join(".crew/agents");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(
            own.join("mine.md"),
            "---\nname: kit:explore\ndescription: mine\n---\nx",
        )
        .unwrap();
        let mut c = Catalog::load(&proj, None);
        c.add_plugins(&crate::plugins::Plugins::of(vec![kit.clone()]));
        let def = c.get("kit:code-reviewer").unwrap();
        assert_eq!(def.plugin.as_deref(), Some("kit"));
        assert_eq!(
            def.prompt,
            format!("Run {}/bin/lint first.", kit.root.display())
        );
        assert!(def.warnings.iter().any(|w| w.contains("`Examples`")));
        // The built-in `explore` is untouched; the project's `kit:explore` wins over the
        // plugin's, with a warning.
        assert!(c.get("explore").unwrap().origin.starts_with("built-in"));
        assert_eq!(c.get("kit:explore").unwrap().description, "mine");
        assert!(
            c.warnings()
                .any(|w| w.contains("`kit:explore` is defined twice")
                    && w.contains("mine.md is used")),
            "{:?}",
            c.warnings().collect::<Vec<_>>()
        );
        // The link to /etc/shadow is refused, naming the file; nothing of it is read.
        assert_eq!(c.errors.len(), 1, "{:?}", c.errors);
        assert!(c.errors[0].origin.ends_with("agents/shadow.md"));
        assert!(
            c.errors[0].message.contains("outside the plugin"),
            "{}",
            c.errors[0]
        );
    }
}
