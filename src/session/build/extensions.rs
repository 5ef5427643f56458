//! The extensions a session loads from files: the plugins (`--plugin-dir` and the
//! installed ones the settings enable), agent definitions (and `--agents`), skills, slash
//! commands, and the hooks of the settings, of agent definitions and of plugins. What
//! could not be used goes to `warn`, naming the file; a `--plugin-dir` or `--agents` the
//! user gave that cannot be used is an error.

use std::path::Path;

use crate::agent::catalog::Catalog;
use crate::commands::CommandCatalog;
use crate::hooks::HookTable;
use crate::plugins::Plugins;
use crate::skills::SkillCatalog;

use super::Options;

/// What [`load`] found.
pub(super) struct Extensions {
    /// The agent definitions.
    pub(super) catalog: Catalog,
    /// The skills.
    pub(super) skills: SkillCatalog,
    /// The slash commands (skills among them).
    pub(super) commands: CommandCatalog,
    /// The hooks that may run.
    pub(super) hooks: HookTable,
}

/// Loads the extensions of `project_root` (canonical) and `home` as `opts` asks.
pub(super) fn load(
    opts: &Options,
    project_root: &Path,
    home: Option<&Path>,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<Extensions> {
    let plugins = Plugins::load(project_root, home, &opts.plugin_dirs)?;
    for w in &plugins.warnings {
        warn(format!("plugin: {w}"));
    }
    // Hooks from every settings layer; a project's shared hooks only in a trusted folder.
    let (mut session, hook_warnings) = crate::hooks::config::load(project_root, home)?;
    for w in hook_warnings {
        warn(w.to_string());
    }
    let (plugin_hooks, plugin_warnings) = crate::hooks::plugins::load(&plugins, project_root, home);
    for w in plugin_warnings {
        warn(w.to_string());
    }
    session.extend(plugin_hooks);
    let mut catalog = Catalog::load(project_root, home);
    catalog.add_plugins(&plugins);
    if let Some(json) = &opts.agents_json {
        // A definition the user typed that cannot be used is an error, not a warning.
        catalog.add_json(json)?;
    }
    for w in catalog.warnings() {
        warn(w.to_string());
    }
    for e in &catalog.errors {
        warn(format!("agent definition not loaded: {e}"));
    }
    let mut skills = SkillCatalog::load(project_root, home);
    skills.add_plugins(&plugins);
    for w in skills.warnings() {
        warn(w.to_string());
    }
    for e in &skills.errors {
        warn(format!("skill not loaded: {e}"));
    }
    let mut commands = CommandCatalog::load(project_root, home);
    commands.add_plugins(&plugins);
    commands.add_skills(&skills);
    for w in commands.warnings() {
        warn(w.to_string());
    }
    for e in &commands.errors {
        warn(format!("slash command not loaded: {e}"));
    }
    let (by_agent_type, agent_warnings) =
        crate::hooks::config::load_agents(catalog.hook_sources(), project_root, home);
    for w in agent_warnings {
        warn(w.to_string());
    }
    Ok(Extensions {
        catalog,
        skills,
        commands,
        hooks: HookTable {
            session,
            by_agent_type,
        },
    })
}
