//! What an agent started in a directory gets of its memory files, for people to read:
//! the files loaded under the project's deny rules, where each came from, and the files
//! not loaded with the reason. `crew memory show` and the terminal UI's `/memory` print it.

use crate::tools::rule_names::LoadPolicy;
use std::path::Path;
use std::sync::Arc;

use super::{Memory, inspect};
use crate::permission::Policy;
use crate::permission::walk::WalkFilter;

/// The memory files for an agent in `cwd` (canonical) with the user's home `home`, under
/// the project's deny rules.
pub(crate) fn load(cwd: &Path, home: Option<&Path>) -> anyhow::Result<Memory> {
    let root = crate::store::project_root(cwd);
    let (policy, _) = Policy::load(&root, home)?;
    Ok(inspect(&Arc::new(WalkFilter::new(&policy)), cwd, home))
}

/// The report as text (`crew memory show` and the TUI's `/memory`).
pub(crate) fn text(cwd: &Path, memory: &Memory) -> String {
    let mut s = String::new();
    if memory.files.is_empty() {
        s.push_str(&format!(
            "No memory files for {} (CLAUDE.md, AGENTS.md, CREW.md, CLAUDE.local.md from the repository root down, ~/.claude/CLAUDE.md, ~/.crew/CREW.md).\n",
            cwd.display()
        ));
    } else {
        s.push_str(&format!(
            "Memory files in the system prompt of an agent in {}:\n",
            cwd.display()
        ));
    }
    for f in &memory.files {
        let indent = "  ".repeat(f.depth + 1);
        let from = match &f.imported_by {
            Some(by) => format!(", imported by {}", by.display()),
            None => String::new(),
        };
        s.push_str(&format!(
            "{indent}{} ({}, {} bytes{from})\n",
            f.path.display(),
            f.scope.as_str(),
            f.text.len()
        ));
    }
    let warnings: Vec<_> = memory.skipped.iter().filter(|k| k.is_warning()).collect();
    if !warnings.is_empty() {
        s.push_str("Not loaded:\n");
        for k in warnings {
            s.push_str(&format!("  {}\n", k.warning()));
        }
    }
    s.push_str(
        "Memory files of directories below the working directory are added when an agent first reads, edits or writes a file there.\n",
    );
    s
}
