//! The agent catalog: built-in definitions plus those found in `~/.crew/agents/`,
//! `.claude/agents/` (for users coming from Claude Code) and `.crew/agents/`, later ones
//! overriding earlier ones by name. A broken file is reported and the others load; a file
//! that is not regular (a FIFO, a device) or is larger than 256 KiB is reported unread.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::definition::{AgentDefinition, DefinitionError, built_ins, parse};

/// The loaded definitions and the problems found.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Definitions by name.
    pub agents: BTreeMap<String, AgentDefinition>,
    /// Files that could not be loaded.
    pub errors: Vec<DefinitionError>,
}

impl Catalog {
    /// What the loaded definitions' files had that crew ignored, one line each naming the
    /// file and the field.
    pub(crate) fn warnings(&self) -> impl Iterator<Item = &str> {
        self.agents
            .values()
            .flat_map(|def| def.warnings.iter().map(String::as_str))
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
    /// (lowest precedence first: built-in, user, `.claude`, `.crew`).
    pub fn load(project_root: &Path, home: Option<&Path>) -> Self {
        let mut catalog = Catalog::default();
        for def in built_ins() {
            catalog.agents.insert(def.name.clone(), def);
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(home) = home {
            dirs.push(home.join(".crew/agents"));
        }
        dirs.push(project_root.join(".claude/agents"));
        dirs.push(project_root.join(".crew/agents"));
        for dir in dirs {
            catalog.load_dir(&dir);
        }
        catalog
    }

    fn load_dir(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for file in files {
            let origin = file.display().to_string();
            // A cloned repository decides what these files are: only small regular files.
            let parsed = crate::front_matter::read(&file)
                .map_err(|e| DefinitionError {
                    origin: origin.clone(),
                    message: e.to_string(),
                })
                .and_then(|text| parse(&text, &origin));
            match parsed {
                Ok(def) => {
                    self.agents.insert(def.name.clone(), def);
                }
                Err(e) => self.errors.push(e),
            }
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
            self.agents.insert(def.name.clone(), def);
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
}
