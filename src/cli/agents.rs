//! `crew agents list`: the agent definitions that loaded, where from, and the files that
//! did not load.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use crate::agent::catalog::Catalog;

/// `crew agents …`
#[derive(Debug, Subcommand)]
pub enum AgentsCmd {
    /// List the agent definitions and where each came from.
    List,
}

/// Runs an agents subcommand; returns the exit code.
pub(crate) fn run(cmd: AgentsCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let AgentsCmd::List = cmd;
    let root = crate::store::project_root(cwd);
    let home = crate::store::crew_home().and_then(|h| h.parent().map(Path::to_path_buf));
    let catalog = Catalog::load(&root, home.as_deref());
    for def in catalog.agents.values() {
        let tools = match &def.tools {
            None => "all tools".to_string(),
            Some(t) => {
                let mut t: Vec<&str> = t.iter().map(String::as_str).collect();
                t.sort();
                t.join(", ")
            }
        };
        writeln!(
            out,
            "{:<18} {}\n{:<18} tools: {tools}\n{:<18} from: {}",
            def.name, def.description, "", "", def.origin
        )?;
    }
    for w in catalog.warnings() {
        writeln!(out, "warning: {w}")?;
    }
    for e in &catalog.errors {
        writeln!(out, "not loaded: {e}")?;
    }
    Ok(if catalog.errors.is_empty() { 0 } else { 1 })
}
