//! `crew memory show [--json]`: the memory files an agent started here would get in its
//! system prompt, where each came from (found in a directory, or imported by which file),
//! and the files that were not loaded with the reason — the headless `/memory`.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;
use serde_json::json;

use crate::memory::Memory;
use crate::memory::report::{load, text};

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
pub(crate) fn run(cmd: MemoryCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
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
