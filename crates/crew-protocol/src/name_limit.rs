//! A narrowing of an agent's tools that a loaded skill or a custom slash command puts in
//! force for the rest of its turn, and that the gate applies.

use std::collections::HashSet;

/// What narrowed an agent's tools for the rest of its turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitOwner {
    /// A loaded skill, by name.
    Skill(String),
    /// A custom slash command, by name (without the `/`).
    Command(String),
}

impl std::fmt::Display for LimitOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitOwner::Skill(name) => write!(f, "skill `{name}`"),
            LimitOwner::Command(name) => write!(f, "command `/{name}`"),
        }
    }
}

/// An `allowed-tools` list in force: only these tools (and System tools) run while it is.
/// It only ever narrows: the agent's own tool list and Plan Mode still apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameLimit {
    /// Whose list it is (named in refusals).
    pub owner: LimitOwner,
    /// The registry names it allows; `None`: its owner sets no list (a skill without
    /// `allowed-tools` still replaces the active skill's list).
    pub names: Option<HashSet<String>>,
}
