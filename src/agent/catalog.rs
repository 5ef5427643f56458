//! The agent catalog: built-in definitions plus those found in `~/.crew/agents/`,
//! `.claude/agents/` (for users coming from Claude Code) and `.crew/agents/`, later ones
//! overriding earlier ones by name. A broken file is reported and the others load.

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
            let parsed = std::fs::read_to_string(&file)
                .map_err(|e| DefinitionError {
                    origin: origin.clone(),
                    message: format!("cannot read: {e}"),
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
}
