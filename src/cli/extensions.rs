//! `crew skills list` and `crew commands list`: the skills and custom slash commands that
//! loaded (plugins' and `--plugin-dir`'s too), where each came from, what it allows, what
//! crew ignored in them, and the files that did not load.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::commands::CommandCatalog;
use crate::plugins::Plugins;
use crate::skills::SkillCatalog;

/// `crew skills …`
#[derive(Debug, Subcommand)]
pub enum SkillsCmd {
    /// List the skills (`.claude/skills`, `.crew/skills`, the user's and plugins').
    List,
}

/// `crew commands …`
#[derive(Debug, Subcommand)]
pub enum CommandsCmd {
    /// List the custom slash commands (`.claude/commands`, `.crew/commands`, the user's
    /// and plugins').
    List,
}

fn tools(list: &Option<BTreeSet<String>>) -> String {
    match list {
        None => "all tools".into(),
        Some(t) => t.iter().cloned().collect::<Vec<_>>().join(", "),
    }
}

/// The project root of `cwd` (canonical when it can be) and the home directory.
pub(crate) fn roots(cwd: &Path) -> (PathBuf, Option<PathBuf>) {
    let root = crate::store::project_root(cwd);
    (
        std::fs::canonicalize(&root).unwrap_or(root),
        crate::store::home_dir(),
    )
}

/// The plugins that loaded, one line each (nothing without plugins).
pub(crate) fn list_plugins(plugins: &Plugins, out: &mut dyn Write) -> std::io::Result<()> {
    if plugins.is_empty() {
        return Ok(());
    }
    writeln!(out, "plugins:")?;
    for p in plugins.iter() {
        writeln!(out, "    {}", p.label())?;
    }
    Ok(())
}

/// Runs a skills subcommand; returns the exit code (1 when a file did not load).
pub(crate) fn skills(
    cmd: SkillsCmd,
    cwd: &Path,
    plugin_dirs: &[PathBuf],
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let SkillsCmd::List = cmd;
    let (root, home) = roots(cwd);
    let plugins = Plugins::load(&root, home.as_deref(), plugin_dirs)?;
    let mut catalog = SkillCatalog::load(&root, home.as_deref());
    catalog.add_plugins(&plugins);
    if catalog.is_empty() && catalog.errors.is_empty() {
        writeln!(
            out,
            "No skills. Put one in .claude/skills/NAME/SKILL.md or .crew/skills/NAME/SKILL.md."
        )?;
    }
    for s in catalog.iter() {
        let title = s
            .title
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        let scope = match &s.plugin {
            Some(p) => format!("plugin {p}"),
            None => s.scope.as_str().to_string(),
        };
        writeln!(
            out,
            "{:<18} {}{title}\n{:<18} tools: {}\n{:<18} from: {} ({scope})",
            s.name,
            s.description,
            "",
            tools(&s.allowed_tools),
            "",
            s.dir.join("SKILL.md").display(),
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

/// Runs a commands subcommand; returns the exit code (1 when a file did not load).
pub(crate) fn commands(
    cmd: CommandsCmd,
    cwd: &Path,
    plugin_dirs: &[PathBuf],
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let CommandsCmd::List = cmd;
    let (root, home) = roots(cwd);
    let plugins = Plugins::load(&root, home.as_deref(), plugin_dirs)?;
    let mut catalog = CommandCatalog::load(&root, home.as_deref());
    catalog.add_plugins(&plugins);
    if catalog.iter().next().is_none() && catalog.errors.is_empty() {
        writeln!(
            out,
            "No custom commands. Put one in .claude/commands/NAME.md or .crew/commands/NAME.md."
        )?;
    }
    for c in catalog.iter() {
        let names = catalog.names_of(c);
        let Some((first, others)) = names.split_first() else {
            continue;
        };
        let hint = c.argument_hint.as_deref().unwrap_or("");
        let also = if others.is_empty() {
            String::new()
        } else {
            let others: Vec<String> = others.iter().map(|n| format!("/{n}")).collect();
            format!(" (also {})", others.join(", "))
        };
        writeln!(
            out,
            "/{first} {hint}{also}\n    {} ({})\n    tools: {}{}\n    from: {}",
            c.description,
            c.origin(),
            tools(&c.allowed_tools),
            c.model
                .as_deref()
                .map(|m| format!(" · model: {m}"))
                .unwrap_or_default(),
            c.file.display()
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
