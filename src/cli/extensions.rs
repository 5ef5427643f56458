//! `crew skills list` and `crew commands list`: the skills and custom slash commands that
//! loaded, where each came from, what it allows, and the files that did not load.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use crate::commands::CommandCatalog;
use crate::skills::SkillCatalog;

/// `crew skills …`
#[derive(Debug, Subcommand)]
pub enum SkillsCmd {
    /// List the skills (`.claude/skills`, `.crew/skills`, and the user's).
    List,
}

/// `crew commands …`
#[derive(Debug, Subcommand)]
pub enum CommandsCmd {
    /// List the custom slash commands (`.claude/commands`, `.crew/commands`, and the
    /// user's).
    List,
}

fn tools(list: &Option<BTreeSet<String>>) -> String {
    match list {
        None => "all tools".into(),
        Some(t) => t.iter().cloned().collect::<Vec<_>>().join(", "),
    }
}

fn roots(cwd: &Path) -> (std::path::PathBuf, Option<std::path::PathBuf>) {
    (crate::store::project_root(cwd), crate::store::home_dir())
}

/// Runs a skills subcommand; returns the exit code (1 when a file did not load).
pub(crate) fn skills(cmd: SkillsCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let SkillsCmd::List = cmd;
    let (root, home) = roots(cwd);
    let catalog = SkillCatalog::load(&root, home.as_deref());
    if catalog.is_empty() && catalog.errors.is_empty() {
        writeln!(
            out,
            "No skills. Put one in .claude/skills/NAME/SKILL.md or .crew/skills/NAME/SKILL.md."
        )?;
    }
    for s in catalog.iter() {
        writeln!(
            out,
            "{:<18} {}\n{:<18} tools: {}\n{:<18} from: {} ({})",
            s.name,
            s.description,
            "",
            tools(&s.allowed_tools),
            "",
            s.dir.join("SKILL.md").display(),
            s.scope.as_str()
        )?;
    }
    for e in &catalog.errors {
        writeln!(out, "not loaded: {e}")?;
    }
    Ok(if catalog.errors.is_empty() { 0 } else { 1 })
}

/// Runs a commands subcommand; returns the exit code (1 when a file did not load).
pub(crate) fn commands(cmd: CommandsCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let CommandsCmd::List = cmd;
    let (root, home) = roots(cwd);
    let catalog = CommandCatalog::load(&root, home.as_deref());
    if catalog.iter().next().is_none() && catalog.errors.is_empty() {
        writeln!(
            out,
            "No custom commands. Put one in .claude/commands/NAME.md or .crew/commands/NAME.md."
        )?;
    }
    for c in catalog.iter() {
        let hint = c.argument_hint.as_deref().unwrap_or("");
        writeln!(
            out,
            "/{} {hint}\n    {} ({})\n    tools: {}{}\n    from: {}",
            c.name,
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
    for e in &catalog.errors {
        writeln!(out, "not loaded: {e}")?;
    }
    Ok(if catalog.errors.is_empty() { 0 } else { 1 })
}
