//! The built-in tool catalog's names for permission rules: a rule may name a tool by its
//! own name or alias (`write_file(src/**)`, `Task(Explore)`), which stands for the tool's
//! own rule name. The engine's parser ([`Rule::parse_with`]) and the settings loader
//! (`config::settings::load_policy_with`) take that lookup as an argument, so neither imports the
//! catalog; the catalog hands it in here: [`ParseRule`] (`Rule::parse`) and [`LoadPolicy`]
//! (`Policy::load`) are the two with the built-in tools' names. Likewise the tool lists of agent, skill and
//! command files name tools in Claude Code's words (`Read`, `Task`): [`tool_name`] maps
//! them to ours, and [`ToolList::names`] passes it to `front_matter`; [`ToolList::unknown`]
//! names the ones crew does not have.

use std::collections::BTreeSet;
use std::path::Path;

use crate::config::{SettingsError, Warning};
use crate::front_matter::ToolList;
use crate::permission::rules::{RuleError, RuleKind};
use crate::permission::{Layer, Policy, Rule, RuleName};

/// The own rule name of the built-in tool called or aliased `name` (`run_command` →
/// `Bash`, `Task` → `Agent`); `None` for an unknown tool or one without rule names.
pub fn own_rule_name(name: &str) -> Option<RuleName> {
    super::builtin_permission(name).and_then(|s| s.own_rule_name())
}

/// Maps Claude Code's tool names to ours so users can bring their agent files: a rule
/// name (`Read`, `Bash`, …) is the built-in tool whose own rule name it is, an alias
/// (`Task`) its tool — both read from the tools' definitions. `MultiEdit` has no twin
/// here; `edit_file` does its job.
pub fn tool_name(name: &str) -> &str {
    if name == "MultiEdit" {
        return "edit_file";
    }
    let by_rule = name
        .parse::<RuleName>()
        .ok()
        .and_then(super::builtin_tool_for_rule);
    match by_rule.or_else(|| super::builtin_definition(name)) {
        Some(def) => &def.name,
        None => name,
    }
}

impl ToolList {
    /// The registry names of the listed tools, Claude Code's names mapped to ours by
    /// [`tool_name`] (see [`ToolList::names_with`]).
    pub(crate) fn names(&self) -> BTreeSet<String> {
        self.names_with(&tool_name)
    }

    /// The listed tools crew does not have (see [`is_known_tool`]), as mapped, for a
    /// warning each: they allow nothing.
    pub(crate) fn unknown(&self) -> Vec<String> {
        self.names()
            .into_iter()
            .filter(|n| !is_known_tool(n))
            .collect()
    }
}

/// Whether `name` (a registry name) is a tool crew has: a built-in, orchestration or
/// system tool, or an MCP tool (`mcp__server__tool`, known only once its server is up).
pub(crate) fn is_known_tool(name: &str) -> bool {
    name.starts_with("mcp__")
        || name == super::tool_search::NAME
        || super::builtin_definition(name).is_some_and(|d| d.name == name)
}

/// `Rule::parse`: the engine's rule parser with the built-in tools' names.
pub trait ParseRule: Sized {
    /// Parses one rule; `home` expands `~/` in path specifiers. A rule naming a tool by
    /// its own name or alias resolves against the built-in tools ([`own_rule_name`]).
    fn parse(
        text: &str,
        kind: RuleKind,
        layer: Layer,
        home: Option<&Path>,
    ) -> Result<Self, RuleError>;
}

impl ParseRule for Rule {
    fn parse(
        text: &str,
        kind: RuleKind,
        layer: Layer,
        home: Option<&Path>,
    ) -> Result<Rule, RuleError> {
        Rule::parse_with(text, kind, layer, home, &own_rule_name)
    }
}

/// `Policy::load`: the settings files read into a policy, with the built-in tools' names
/// and the user's trust list.
pub trait LoadPolicy: Sized {
    /// Loads the user, project and local settings of `project_root` (missing files are
    /// fine). `home` decides the user file, the trust list (`home/.crew/trusted.json`)
    /// and expands `~`. Rules naming a tool resolve against the built-in tools.
    fn load(
        project_root: &Path,
        home: Option<&Path>,
    ) -> Result<(Self, Vec<Warning>), SettingsError>;
}

impl LoadPolicy for Policy {
    fn load(
        project_root: &Path,
        home: Option<&Path>,
    ) -> Result<(Policy, Vec<Warning>), SettingsError> {
        crate::config::settings::load_policy_with(project_root, home, &own_rule_name, &|root| {
            crate::trust::policy_trust(root, home)
        })
    }
}
