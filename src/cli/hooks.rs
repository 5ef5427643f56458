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
    let (mut hooks, mut warnings) = crate::hooks::config::load(&root, home.as_deref())?;
    let (plugin_hooks, plugin_warnings) =
        crate::hooks::plugins::load(&plugins, &root, home.as_deref());
    hooks.extend(plugin_hooks);
    warnings.extend(plugin_warnings);
    let mut catalog = crate::agent::catalog::Catalog::load(&root, home.as_deref());
    catalog.add_plugins(&plugins);
    let (by_type, agent_warnings) =
        crate::hooks::config::load_agents(catalog.hook_sources(), &root, home.as_deref());
    warnings.extend(agent_warnings);
    // Agent definitions' hooks last, in type order: they run only for that agent type.
    let mut types: Vec<_> = by_type.into_iter().collect();
    types.sort_by(|a, b| a.0.cmp(&b.0));
    hooks.extend(types.into_iter().flat_map(|(_, h)| h));
    if json {
        let list: Vec<_> = hooks
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
        let skipped: Vec<String> = plugins
            .warnings
            .iter()
            .cloned()
            .chain(warnings.iter().map(ToString::to_string))
            .collect();
        writeln!(out, "{}", json!({ "hooks": list, "not_used": skipped }))?;
        return Ok(0);
    }
    if hooks.is_empty() {
        writeln!(out, "no hooks run in {}", root.display())?;
    }
    for h in &hooks {
        let matcher = match h.matcher.text() {
            "" => "*",
            m => m,
        };
        let root = h
            .plugin_root
            .as_deref()
            .map(|r| format!(" · CLAUDE_PLUGIN_ROOT={}", r.display()))
            .unwrap_or_default();
        writeln!(
            out,
            "{:<17} {:<16} {}\n{:<17} timeout {} s · {} · {} ({}){root}",
            h.event.as_str(),
            matcher,
            h.command,
            "",
            h.timeout.as_secs_f64(),
            h.origin.scope,
            h.origin.file,
            h.place
        )?;
    }
    for w in &plugins.warnings {
        writeln!(out, "not used: {w}")?;
    }
    for w in &warnings {
        writeln!(out, "not used: {w}")?;
    }
    Ok(0)
}
