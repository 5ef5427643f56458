//! The fallback table applied when no rule matched (design.md §4) to the permission modes
//! (the type itself, and `SharedMode`, the one copy of an agent's mode that its running
//! loop reads at each call, are `crew_protocol::permission_mode`).

use super::{Category, Verdict};

pub use crew_protocol::permission_mode::{PermissionMode, SharedMode, UnknownMode};

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
        // Network (web_fetch) asks from strict to auto through the arms above; under
        // dontAsk `check::web` denies a host nothing lists before this table is read.
        (BypassPermissions | DontAsk, _) => Verdict::Allow,
    }
}

/// Whether nobody watches calls in `mode`: the modes in which no human sees a call
/// before it runs.
pub fn unattended(mode: PermissionMode) -> bool {
    matches!(mode, PermissionMode::DontAsk | PermissionMode::Auto)
}

/// The reason text for a fallback decision, saying how to change it.
pub fn fallback_reason(mode: PermissionMode, category: Category, verdict: Verdict) -> String {
    let cat = match category {
        Category::Read => "read",
        Category::Write => "write",
        Category::Exec => "exec",
        Category::Mcp => "mcp",
        Category::Network => "network",
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
            // A fetch from an unlisted host falls back like a command.
            assert_eq!(fallback(mode, Network), expected[2], "{mode} network");
        }
    }
}
