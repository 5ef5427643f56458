//! `crew memory show [--json]`: the memory files an agent started here would get in its
//! system prompt, where each came from (found in a directory, or imported by which file),
//! and the files that were not loaded with the reason — the headless `/memory`.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use clap::Subcommand;
use serde_json::json;

use crate::memory::{Memory, inspect};
use crate::permission::Policy;
use crate::permission::walk::WalkFilter;

/// `crew memory …`
#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// Show the memory files loaded for this directory and where each came from.
    Show {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a memory subcommand; returns the exit code.
pub fn run(cmd: MemoryCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let MemoryCmd::Show { json } = cmd;
    let cwd =
        std::fs::canonicalize(cwd).map_err(|e| anyhow::anyhow!("--cwd {}: {e}", cwd.display()))?;
    let memory = load(&cwd, crate::store::home_dir().as_deref())?;
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&as_json(&cwd, &memory))?
        )?;
    } else {
        out.write_all(text(&cwd, &memory).as_bytes())?;
    }
    Ok(0)
}

/// The memory files for an agent in `cwd` (canonical) with the user's home `home`, under
/// the project's deny rules.
pub fn load(cwd: &Path, home: Option<&Path>) -> anyhow::Result<Memory> {
    let root = crate::store::project_root(cwd);
    let (policy, _) = Policy::load(&root, home)?;
    Ok(inspect(&Arc::new(WalkFilter::new(&policy)), cwd, home))
}

/// The report as text (shared with the TUI's `/memory`).
pub fn text(cwd: &Path, memory: &Memory) -> String {
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

fn as_json(cwd: &Path, memory: &Memory) -> serde_json::Value {
    let files: Vec<_> = memory
        .files
        .iter()
        .map(|f| {
            json!({
                "path": f.path,
                "scope": f.scope,
                "imported_by": f.imported_by,
                "depth": f.depth,
                "bytes": f.text.len(),
            })
        })
        .collect();
    let skipped: Vec<_> = memory
        .skipped
        .iter()
        .map(|k| {
            json!({
                "path": k.path,
                "imported_by": k.imported_by,
                "reason": k.reason.to_string(),
                "detail": k.reason,
            })
        })
        .collect();
    json!({ "cwd": cwd, "files": files, "skipped": skipped })
}
