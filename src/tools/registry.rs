//! The registry: the set of tools an executor can run, in a stable order, with lookup by
//! name. Shared (behind an `Arc`) by the executor, the gate and the agents, which only
//! read definitions from it.
//!
//! Two sections: the static tools, registered once before the session starts, and a
//! dynamic section of tools that appear and disappear at run time (an MCP server's tools,
//! refreshed on `tools/list_changed`). The dynamic section sits behind a lock that is read
//! per lookup and never held across an await, so every request, gate check and executor
//! run sees one consistent set; lookups therefore return owned values (`Arc`s, cloned
//! definitions) rather than borrows.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use super::{Definition, Safety, Tool};

/// Tools by name, in registration order, and the skills the `skill` tool loads.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    aliases: HashMap<String, String>,
    skills: Arc<crate::skills::SkillCatalog>,
    /// Shared by every clone, so a refresh reaches whoever holds the registry.
    dynamic: Arc<RwLock<Dynamic>>,
    /// Each tool's compiled argument schema, shared by every clone.
    validators: Arc<super::schema::Validators>,
}

/// The run-time section: each source's tools, in the order the source listed them.
#[derive(Default)]
struct Dynamic {
    by_source: BTreeMap<String, Vec<Arc<dyn Tool>>>,
    index: HashMap<String, Arc<dyn Tool>>,
}

/// A handle that replaces the tools of one source (an MCP server) in a registry's
/// dynamic section. Clones share the section.
#[derive(Clone)]
pub struct DynamicTools {
    section: Arc<RwLock<Dynamic>>,
    /// The static names and aliases, which a dynamic tool may not shadow.
    reserved: Arc<HashSet<String>>,
}

impl DynamicTools {
    /// Replaces the tools of `source` with `tools`. A tool whose name is already taken (by
    /// a static tool, another source, or twice in `tools`) is left out; the names left out
    /// are returned so the caller can report them.
    pub fn set(&self, source: &str, tools: Vec<Arc<dyn Tool>>) -> Vec<String> {
        let mut section = self.section.write().unwrap_or_else(|e| e.into_inner());
        section.remove_source(source);
        let mut kept = Vec::new();
        let mut skipped = Vec::new();
        for tool in tools {
            let name = tool.definition().name.clone();
            if self.reserved.contains(&name) || section.index.contains_key(&name) {
                skipped.push(name);
                continue;
            }
            section.index.insert(name, tool.clone());
            kept.push(tool);
        }
        section.by_source.insert(source.to_string(), kept);
        skipped
    }

    /// Removes every tool of `source`.
    pub fn remove(&self, source: &str) {
        let mut section = self.section.write().unwrap_or_else(|e| e.into_inner());
        section.remove_source(source);
    }

    /// The names of `source`'s tools, in order.
    pub fn names(&self, source: &str) -> Vec<String> {
        let section = self.section.read().unwrap_or_else(|e| e.into_inner());
        section
            .by_source
            .get(source)
            .map(|tools| tools.iter().map(|t| t.definition().name.clone()).collect())
            .unwrap_or_default()
    }
}

impl Dynamic {
    fn remove_source(&mut self, source: &str) {
        for tool in self.by_source.remove(source).unwrap_or_default() {
            self.index.remove(&tool.definition().name);
        }
    }
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
        self.register(Arc::new(super::skill::SkillTool::new(skills.clone())))?;
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

    /// A handle to the dynamic section, for a source of run-time tools. Names registered
    /// statically by now are reserved: a dynamic tool cannot shadow them.
    pub fn dynamic_tools(&self) -> DynamicTools {
        let reserved = self
            .index
            .keys()
            .chain(self.aliases.keys())
            .cloned()
            .collect();
        DynamicTools {
            section: self.dynamic.clone(),
            reserved: Arc::new(reserved),
        }
    }

    fn read_dynamic(&self) -> std::sync::RwLockReadGuard<'_, Dynamic> {
        // A panic while the lock was held cannot leave the maps half-written in a way
        // that matters (each write replaces whole entries), so a poisoned lock is read on.
        self.dynamic.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The canonical name for `name` (following an alias), if such a tool exists.
    /// Dynamic tools have no aliases, so their canonical name is `name` itself.
    pub fn canonical<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let name = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        (self.index.contains_key(name) || self.read_dynamic().index.contains_key(name))
            .then_some(name)
    }

    /// The tool called `name` (or aliased as `name`), static or dynamic.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let name = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        match self.index.get(name) {
            Some(&i) => Some(self.tools[i].clone()),
            None => self.read_dynamic().index.get(name).cloned(),
        }
    }

    /// The definition of the tool called `name`.
    pub fn definition(&self, name: &str) -> Option<Definition> {
        self.get(name).map(|t| t.definition().clone())
    }

    /// The declared safety of `name`; looked up here rather than trusted from the model.
    pub fn safety(&self, name: &str) -> Option<Safety> {
        self.get(name).map(|t| t.definition().safety)
    }

    /// The permission spec of `name`'s definition (without cloning the rest of it).
    pub fn permission_spec(&self, name: &str) -> Option<crate::permission::PermissionSpec> {
        self.get(name)
            .and_then(|t| t.definition().permission.clone())
    }

    /// Starts building, off this thread, what the first general schema compile of the
    /// process needs (see [`super::schema::warm_up`]), if one of the tools has a schema
    /// that is not plain. The tools are looked at once: at the first model answer, when
    /// the MCP servers have listed theirs.
    pub fn warm_up_schemas(&self) {
        if !self.validators.first_look() {
            return;
        }
        let general = |t: &Arc<dyn Tool>| !super::schema::is_plain(&t.definition().input_schema);
        if self.tools.iter().any(general)
            || self
                .read_dynamic()
                .by_source
                .values()
                .flatten()
                .any(general)
        {
            super::schema::warm_up();
        }
    }

    /// Validates a call's `input` against `tool`'s schema (compiled once per tool).
    pub fn validate(
        &self,
        tool: &Arc<dyn Tool>,
        input: &serde_json::Value,
    ) -> Result<(), super::schema::ArgumentsError> {
        self.validators.validate(tool, input)
    }

    /// All definitions, in order: the static tools, then each dynamic source's (sources
    /// by name). A snapshot: tools that change later are not reflected.
    pub fn definitions(&self) -> std::vec::IntoIter<Definition> {
        let mut out: Vec<Definition> = self.tools.iter().map(|t| t.definition().clone()).collect();
        let dynamic = self.read_dynamic();
        out.extend(
            dynamic
                .by_source
                .values()
                .flatten()
                .map(|t| t.definition().clone()),
        );
        out.into_iter()
    }

    /// Definitions whose name is in `allowed` (all when `None`); System tools are kept
    /// regardless, as the seed's `DefinitionsFiltered` does.
    pub fn definitions_filtered(&self, allowed: Option<&HashSet<String>>) -> Vec<Definition> {
        self.definitions()
            .filter(|d| d.system || allowed.is_none_or(|a| a.contains(&d.name)))
            .collect()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.definitions().map(|d| d.name))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{ToolContext, ToolError};

    struct Named(Definition);

    #[async_trait::async_trait]
    impl Tool for Named {
        fn definition(&self) -> &Definition {
            &self.0
        }
        async fn run(&self, _: serde_json::Value, _: ToolContext) -> Result<String, ToolError> {
            Ok(self.0.name.clone())
        }
    }

    fn tool(name: &str) -> Arc<dyn Tool> {
        Arc::new(Named(Definition {
            name: name.into(),
            aliases: Vec::new(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            safety: Safety::ReadOnly,
            system: false,
            timeout: None,
            permission: None,
        }))
    }

    #[test]
    fn dynamic_tools_come_and_go_and_cannot_shadow_static_ones() {
        let registry = Registry::with_tools([tool("read_file")]).unwrap();
        let shared = Arc::new(registry.clone());
        let dynamic = registry.dynamic_tools();
        let skipped = dynamic.set(
            "a",
            vec![tool("mcp__a__x"), tool("read_file"), tool("mcp__a__x")],
        );
        assert_eq!(skipped, ["read_file", "mcp__a__x"]);
        assert!(dynamic.set("b", vec![tool("mcp__a__x")]) == ["mcp__a__x"]);
        // Every clone sees the change: the section is shared.
        assert_eq!(shared.canonical("mcp__a__x"), Some("mcp__a__x"));
        assert_eq!(
            shared.get("read_file").unwrap().definition().name,
            "read_file"
        );
        let names: Vec<String> = shared.definitions().map(|d| d.name).collect();
        assert_eq!(names, ["read_file", "mcp__a__x"]);
        dynamic.set("a", vec![tool("mcp__a__y")]);
        assert!(shared.get("mcp__a__x").is_none());
        assert_eq!(shared.safety("mcp__a__y"), Some(Safety::ReadOnly));
        assert_eq!(dynamic.names("a"), ["mcp__a__y"]);
        dynamic.remove("a");
        assert!(shared.definition("mcp__a__y").is_none());
        assert_eq!(shared.definitions().count(), 1);
    }
}
