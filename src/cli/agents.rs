//! `crew agents list`: the agent definitions that loaded (plugins' and `--plugin-dir`'s
//! too), where from, what crew ignored in them, and the files that did not load.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::agent::catalog::Catalog;

/// `crew agents …`
#[derive(Debug, Subcommand)]
pub enum AgentsCmd {
    /// List the agent definitions and where each came from.
    List,
}

/// Runs an agents subcommand; returns the exit code (1 when a file did not load).
pub(crate) fn run(
    cmd: AgentsCmd,
    cwd: &Path,
    plugin_dirs: &[PathBuf],
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let AgentsCmd::List = cmd;
    let (root, home) = super::extensions::roots(cwd);
    let plugins = crate::plugins::Plugins::load(&root, home.as_deref(), plugin_dirs)?;
    let mut catalog = Catalog::load(&root, home.as_deref());
    catalog.add_plugins(&plugins);
    for def in catalog.agents.values() {
        let tools = match &def.tools {
            None => "all tools".to_string(),
            Some(t) => {
                let mut t: Vec<&str> = t.iter().map(String::as_str).collect();
                t.sort();
                t.join(", ")
            }
        };
        let plugin = def
            .plugin
            .as_deref()
            .map(|p| format!(" (plugin {p})"))
            .unwrap_or_default();
        writeln!(
            out,
            "{:<18} {}\n{:<18} tools: {tools}\n{:<18} from: {}{plugin}",
            def.name, def.description, "", "", def.origin
        )?;
    }
    super::extensions::list_plugins(&plugins, out)?;
    for w in plugins
        .warnings
        .iter()
        .map(String::as_str)
        .chain(catalog.warnings())
    {
        writeln!(out, "warning: {w}")?;
    }
    for e in &catalog.errors {
        writeln!(out, "not loaded: {e}")?;
    }
    Ok(if catalog.errors.is_empty() { 0 } else { 1 })
}
