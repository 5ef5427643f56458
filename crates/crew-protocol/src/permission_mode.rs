//! Permission modes: how the calls that no rule decided are treated, and `SharedMode`: the
//! one copy of an agent's mode that its running loop reads at each call, so a switch
//! (Shift+Tab in the TUI) applies to the very next call of a run. The fallback table
//! that gives each mode its meaning is `crewmaster::permission::mode::fallback`.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

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

/// A permission mode shared by whoever may change it (the lead actor) and the loops that
/// read it at each call (the lead's runs). Clones share the value.
#[derive(Clone)]
pub struct SharedMode(Arc<AtomicU8>);

impl SharedMode {
    /// A shared cell holding `mode`.
    pub fn new(mode: PermissionMode) -> Self {
        Self(Arc::new(AtomicU8::new(Self::index(mode))))
    }

    /// The current mode.
    pub fn get(&self) -> PermissionMode {
        let i = usize::from(self.0.load(Ordering::Acquire));
        // Only `set`/`new` store, and they store an index into ALL; fall back to the
        // strictest mode rather than panic should that ever change.
        PermissionMode::ALL
            .get(i)
            .copied()
            .unwrap_or(PermissionMode::Strict)
    }

    /// Switches every holder to `mode`; a running loop uses it from its next call.
    pub fn set(&self, mode: PermissionMode) {
        self.0.store(Self::index(mode), Ordering::Release);
    }

    fn index(mode: PermissionMode) -> u8 {
        PermissionMode::ALL
            .iter()
            .position(|m| *m == mode)
            .and_then(|i| u8::try_from(i).ok())
            .unwrap_or(0)
    }
}

impl std::fmt::Debug for SharedMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedMode").field(&self.get()).finish()
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

    #[test]
    fn shared_mode_clones_see_a_switch() {
        let a = SharedMode::new(PermissionMode::Default);
        let b = a.clone();
        for mode in PermissionMode::ALL {
            a.set(mode);
            assert_eq!(b.get(), mode);
        }
    }
}
