//! `crew hooks list`: the hooks that will run here — event, matcher, command, timeout, and
//! the file (and place in it) each comes from, agent definitions' hooks with scope
//! `agent:<type>`, plugins' with `plugin:<name>` — and the ones that will not (a project's
//! shared hooks in an untrusted folder, bad entries), with why.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;

/// `crew hooks …`
#[derive(Debug, Subcommand)]
pub enum HooksCmd {
    /// List the effective hooks and where each comes from.
    List {
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a hooks subcommand; returns the exit code.
pub(crate) fn run(
    cmd: HooksCmd,
    cwd: &Path,
    plugin_dirs: &[PathBuf],
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let HooksCmd::List { json } = cmd;
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let root = crate::store::project_root(&cwd);
    let home = crate::store::home_dir();
    let plugins = crate::plugins::Plugins::load(&root, home.as_deref(), plugin_dirs)?;
    let mut catalog = crate::agent::catalog::Catalog::load(&root, home.as_deref());
    catalog.add_plugins(&plugins);
    let effective =
        crate::hooks::listing::effective(&root, home.as_deref(), &plugins, catalog.hook_sources())?;
    if json {
        let list: Vec<_> = effective
            .hooks
            .iter()
            .map(|h| {
                json!({
                    "event": h.event.as_str(),
                    "matcher": h.matcher.text(),
                    "command": h.command,
                    "timeout_secs": h.timeout.as_secs_f64(),
                    "scope": h.origin.scope,
                    "file": h.origin.file,
                    "place": h.place,
                    "plugin_root": h.plugin_root,
                })
            })
            .collect();
        let skipped: Vec<String> = effective
            .plugin_warnings
            .iter()
            .cloned()
            .chain(effective.not_used.iter().map(ToString::to_string))
            .collect();
        writeln!(out, "{}", json!({ "hooks": list, "not_used": skipped }))?;
        return Ok(0);
    }
    write!(out, "{}", crate::hooks::listing::text(&root, &effective))?;
    Ok(0)
}
