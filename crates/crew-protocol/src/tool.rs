//! The part of the tool contract that crosses layers: what the model is shown of a tool
//! ([`ToolSpec`], sent by every provider) and its coarse side-effect class ([`Safety`],
//! which Plan Mode and the gate trust). The full contract — `Definition`, the context a
//! tool runs with, the registry — stays with the tools in `crewmaster::tools`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool's coarse side-effect class. Plan Mode and the gate trust only this label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Safety {
    /// Observes state only: no changes to files, external systems or processes.
    ReadOnly,
    /// May change files, external systems, or start processes.
    SideEffect,
}

impl Safety {
    /// The snake_case name used in settings and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::ReadOnly => "read_only",
            Safety::SideEffect => "side_effect",
        }
    }
}

/// What the model is shown of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safety_names_match_the_wire() {
        for s in [Safety::ReadOnly, Safety::SideEffect] {
            let wire = serde_json::to_value(s).unwrap();
            assert_eq!(wire, Value::String(s.as_str().into()));
            assert_eq!(serde_json::from_value::<Safety>(wire).unwrap(), s);
        }
    }
}
