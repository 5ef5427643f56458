//! The built-in tool catalog's names for permission rules: a rule may name a tool by its
//! own name or alias (`write_file(src/**)`, `Task(Explore)`), which stands for the tool's
//! own rule name. The engine's parser ([`Rule::parse_with`]) and the settings loader
//! ([`Policy::load_with`]) take that lookup as an argument, so neither imports the
//! catalog; the catalog hands it in here: [`Rule::parse`] and [`Policy::load`] are the
//! two with the built-in tools' names.

use std::path::Path;

use crate::config::{SettingsError, Warning};
use crate::permission::rules::{RuleError, RuleKind};
use crate::permission::{Layer, Policy, Rule, RuleName};

/// The own rule name of the built-in tool called or aliased `name` (`run_command` →
/// `Bash`, `Task` → `Agent`); `None` for an unknown tool or one without rule names.
pub fn own_rule_name(name: &str) -> Option<RuleName> {
    super::builtin_permission(name).and_then(|s| s.own_rule_name())
}

impl Rule {
    /// Parses one rule; `home` expands `~/` in path specifiers. A rule naming a tool by
    /// its own name or alias resolves against the built-in tools ([`own_rule_name`]).
    pub fn parse(
        text: &str,
        kind: RuleKind,
        layer: Layer,
        home: Option<&Path>,
    ) -> Result<Rule, RuleError> {
        Rule::parse_with(text, kind, layer, home, &own_rule_name)
    }
}

impl Policy {
    /// Loads the user, project and local settings of `project_root` (missing files are
    /// fine). `home` decides the user file, the trust list (`home/.crew/trusted.json`)
    /// and expands `~`. Rules naming a tool resolve against the built-in tools.
    pub fn load(
        project_root: &Path,
        home: Option<&Path>,
    ) -> Result<(Policy, Vec<Warning>), SettingsError> {
        Policy::load_with(project_root, home, &own_rule_name)
    }
}
