//! The fallback table applied when no rule matched (design.md §4) to the permission modes
//! (the type itself is `crew_protocol::permission_mode`), and
//! `SharedMode`: the one copy of an agent's mode that its running loop reads at each call,
//! so a switch (Shift+Tab in the TUI) applies to the very next call of a run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use super::{Category, Verdict};

pub use crate::protocol::permission_mode::{PermissionMode, UnknownMode};

/// The fallback verdict for a category in a mode, when no rule decided (design.md §4).
pub fn fallback(mode: PermissionMode, category: Category) -> Verdict {
    use Category::*;
    use PermissionMode::*;
    match (mode, category) {
        (Strict, _) => Verdict::Ask,
        (Default, Read | Control) => Verdict::Allow,
        (Default, _) => Verdict::Ask,
        (AcceptEdits, Read | Write | Control) => Verdict::Allow,
        (AcceptEdits, _) => Verdict::Ask,
        // The Ask goes to the classifier, not to a human (`agent::pipeline`).
        (Auto, Read | Control) => Verdict::Allow,
        (Auto, _) => Verdict::Ask,
        (BypassPermissions | DontAsk, _) => Verdict::Allow,
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

/// The reason text for a fallback decision, saying how to change it.
pub fn fallback_reason(mode: PermissionMode, category: Category, verdict: Verdict) -> String {
    let cat = match category {
        Category::Read => "read",
        Category::Write => "write",
        Category::Exec => "exec",
        Category::Mcp => "mcp",
        Category::Control => "task-control",
    };
    match verdict {
        Verdict::Allow => format!("{mode} mode allows {cat} tools"),
        Verdict::Ask => format!("{mode} mode asks before {cat} tools"),
        Verdict::Deny => format!("{mode} mode denies {cat} tools"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_table_matches_design() {
        use Category::*;
        use Verdict::*;
        let table = [
            (PermissionMode::Strict, [Ask, Ask, Ask]),
            (PermissionMode::Default, [Allow, Ask, Ask]),
            (PermissionMode::AcceptEdits, [Allow, Allow, Ask]),
            (PermissionMode::BypassPermissions, [Allow, Allow, Allow]),
            (PermissionMode::DontAsk, [Allow, Allow, Allow]),
            (PermissionMode::Auto, [Allow, Ask, Ask]),
        ];
        for (mode, expected) in table {
            for (cat, want) in [Read, Write, Exec].into_iter().zip(expected) {
                assert_eq!(fallback(mode, cat), want, "{mode} {cat:?}");
            }
            // Task control (task_stop) falls back like a read.
            assert_eq!(fallback(mode, Control), expected[0], "{mode} control");
        }
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
