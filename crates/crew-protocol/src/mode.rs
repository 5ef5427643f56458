//! Agent Mode: what a run is for (`chat`, `plan`, `do`). Orthogonal to the permission
//! mode: a call must pass both. What follows from a mode — its prompts, the tools it
//! shows, its reminder — is decided in `crewmaster::agent::mode`.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a run is for. Orthogonal to the permission mode: a call must pass both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentMode {
    /// Ordinary conversation or direct work.
    #[default]
    Chat,
    /// Investigate with read-only tools and produce a plan.
    Plan,
    /// Carry out an approved plan.
    Do,
}

impl AgentMode {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::Chat => "chat",
            AgentMode::Plan => "plan",
            AgentMode::Do => "do",
        }
    }

    /// The mode of a fork of an agent in this mode: a planner's fork plans too; a fork
    /// of a Do run has no plan of its own and works as in Chat.
    pub fn forked(self) -> Self {
        match self {
            AgentMode::Plan => AgentMode::Plan,
            AgentMode::Chat | AgentMode::Do => AgentMode::Chat,
        }
    }
}

impl FromStr for AgentMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chat" => Ok(AgentMode::Chat),
            "plan" => Ok(AgentMode::Plan),
            "do" => Ok(AgentMode::Do),
            other => Err(format!(
                "unknown agent mode `{other}` (expected chat, plan or do)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_match_the_wire() {
        for m in [AgentMode::Chat, AgentMode::Plan, AgentMode::Do] {
            assert_eq!(m.as_str().parse::<AgentMode>(), Ok(m));
            assert_eq!(
                serde_json::to_value(m).unwrap(),
                serde_json::Value::String(m.as_str().into())
            );
        }
        let err = "Plan".parse::<AgentMode>().unwrap_err();
        assert!(
            err.contains("`Plan`") && err.contains("chat, plan or do"),
            "{err}"
        );
    }

    #[test]
    fn a_fork_plans_only_under_a_planner() {
        assert_eq!(AgentMode::Plan.forked(), AgentMode::Plan);
        assert_eq!(AgentMode::Do.forked(), AgentMode::Chat);
        assert_eq!(AgentMode::Chat.forked(), AgentMode::Chat);
    }
}
