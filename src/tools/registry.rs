//! The registry: the set of tools an executor can run, in a stable order, with lookup by
//! name. Shared (behind an `Arc`) by the executor, the gate and the agents, which only
//! read definitions from it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{Definition, Safety, Tool};

/// Tools by name, in registration order, and the skills the `skill` tool loads.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    aliases: HashMap<String, String>,
    skills: Arc<crate::skills::SkillCatalog>,
}

/// Registering two tools under one name is a programming error worth a clear message.
#[derive(Debug, thiserror::Error)]
#[error("a tool named `{0}` is already registered")]
pub struct DuplicateTool(pub String);

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry of the given tools.
    pub fn with_tools(
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Result<Self, DuplicateTool> {
        let mut r = Self::new();
        for t in tools {
            r.register(t)?;
        }
        Ok(r)
    }

    /// Adds a tool at the end of the order, with the aliases its definition declares.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), DuplicateTool> {
        let name = tool.definition().name.clone();
        if self.index.contains_key(&name) || self.aliases.contains_key(&name) {
            return Err(DuplicateTool(name));
        }
        for alias in &tool.definition().aliases {
            self.alias(alias, &name)?;
        }
        self.index.insert(name, self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// Registers the `skill` tool over `skills`; the agents' loops read a loaded
    /// skill's `allowed-tools` from the same catalog ([`Registry::skills`]).
    pub fn with_skills(
        mut self,
        skills: Arc<crate::skills::SkillCatalog>,
    ) -> Result<Self, DuplicateTool> {
        self.register(Arc::new(crate::skills::tool::SkillTool::new(
            skills.clone(),
        )))?;
        self.skills = skills;
        Ok(self)
    }

    /// The skills the `skill` tool loads (empty without it).
    pub fn skills(&self) -> &crate::skills::SkillCatalog {
        &self.skills
    }

    /// Makes `alias` resolve to the tool `target` (e.g. Claude Code's `Task` → `agent`).
    pub fn alias(&mut self, alias: &str, target: &str) -> Result<(), DuplicateTool> {
        if self.index.contains_key(alias) || self.aliases.contains_key(alias) {
            return Err(DuplicateTool(alias.to_string()));
        }
        self.aliases.insert(alias.to_string(), target.to_string());
        Ok(())
    }

    /// The canonical name for `name` (following an alias), if such a tool exists.
    pub fn canonical<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let name = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        self.index.contains_key(name).then_some(name)
    }

    /// The tool called `name` (or aliased as `name`).
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        let name = self.canonical(name)?;
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The definition of the tool called `name`.
    pub fn definition(&self, name: &str) -> Option<&Definition> {
        self.get(name).map(|t| t.definition())
    }

    /// The declared safety of `name`; looked up here rather than trusted from the model.
    pub fn safety(&self, name: &str) -> Option<Safety> {
        self.definition(name).map(|d| d.safety)
    }

    /// All definitions, in order.
    pub fn definitions(&self) -> impl Iterator<Item = &Definition> {
        self.tools.iter().map(|t| t.definition())
    }

    /// Definitions whose name is in `allowed` (all when `None`); System tools are kept
    /// regardless, as the seed's `DefinitionsFiltered` does.
    pub fn definitions_filtered(&self, allowed: Option<&HashSet<String>>) -> Vec<Definition> {
        self.definitions()
            .filter(|d| d.system || allowed.is_none_or(|a| a.contains(&d.name)))
            .cloned()
            .collect()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| &t.definition().name))
            .finish()
    }
}
