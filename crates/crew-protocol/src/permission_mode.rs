//! Permission modes: how the calls that no rule decided are treated. The fallback table
//! that gives each mode its meaning is `crewmaster::permission::mode::fallback`.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How calls that no rule decided are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Ask for everything.
    Strict,
    /// Allow reads; ask for writes and commands.
    #[default]
    Default,
    /// Allow reads and writes; ask for commands.
    AcceptEdits,
    /// Allow everything that passed the hard checks.
    BypassPermissions,
    /// Unattended (subagents): allow mode-fallback asks, deny explicit asks.
    DontAsk,
    /// Allow reads; a classifier model decides the writes, commands and MCP calls the
    /// mode would otherwise ask about (`crewmaster::permission::auto`).
    Auto,
}

impl PermissionMode {
    /// All modes, in Shift+Tab order where it applies.
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Strict,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
        PermissionMode::Auto,
    ];

    /// The name used in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Strict => "strict",
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Auto => "auto",
        }
    }

    /// Parses a mode name; an unknown name is `default` plus a warning — never bypass.
    pub fn parse_lenient(name: &str) -> (PermissionMode, Option<String>) {
        match name.parse() {
            Ok(m) => (m, None),
            Err(e) => (
                PermissionMode::Default,
                Some(format!("{e}; using `default`")),
            ),
        }
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unrecognised mode name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMode(pub String);

impl std::fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown permission mode `{}` (expected strict, default, acceptEdits, bypassPermissions, dontAsk or auto)",
            self.0
        )
    }
}

impl std::error::Error for UnknownMode {}

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownMode(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_mode_is_default_never_bypass() {
        let (m, warn) = PermissionMode::parse_lenient("yolo");
        assert_eq!(m, PermissionMode::Default);
        assert!(warn.unwrap().contains("yolo"));
        assert_eq!(
            "acceptedits".parse::<PermissionMode>().unwrap(),
            PermissionMode::AcceptEdits
        );
    }
}
