//! The effective hooks of a project and where each comes from: every settings layer's
//! hooks (a project's shared ones only in a trusted folder), then agent definitions'
//! hooks by type, with the ones that will not run and why. `crew hooks list` prints it,
//! and so does the TUI's `/hooks`.

use std::path::Path;

use super::config::{self, AgentHooks, Hook};
use crate::config::settings::{SettingsError, Warning};

/// What runs in a project, and what does not.
#[derive(Debug, Default)]
pub(crate) struct Effective {
    /// The hooks that run: the settings layers' first, then agent definitions' (in type
    /// order; they run only for that agent type).
    pub hooks: Vec<Hook>,
    /// What will not run, and why (an untrusted folder's shared hooks, bad entries).
    pub not_used: Vec<Warning>,
    /// What of the plugins was not loaded, and why.
    pub plugin_warnings: Vec<String>,
}

/// The effective hooks of the project at `root`, with those of the agent definitions
/// `agents` (the catalog's `hook_sources`); an error names a settings file that is not
/// JSON.
pub(crate) fn effective<'a>(
    root: &Path,
    home: Option<&Path>,
    plugins: &crate::plugins::Plugins,
    agents: impl IntoIterator<Item = AgentHooks<'a>>,
) -> Result<Effective, SettingsError> {
    let (mut hooks, mut not_used) = config::load(root, home)?;
    let (plugin_hooks, plugin_not_used) = super::plugins::load(plugins, root, home);
    hooks.extend(plugin_hooks);
    not_used.extend(plugin_not_used);
    let (by_type, agent_warnings) = config::load_agents(agents, root, home);
    not_used.extend(agent_warnings);
    let mut types: Vec<_> = by_type.into_iter().collect();
    types.sort_by(|a, b| a.0.cmp(&b.0));
    hooks.extend(types.into_iter().flat_map(|(_, h)| h));
    Ok(Effective {
        hooks,
        not_used,
        plugin_warnings: plugins.warnings.clone(),
    })
}

/// The hooks as a table: event, matcher, command, then timeout, scope, file and place;
/// `not used:` lines last.
pub(crate) fn text(root: &Path, e: &Effective) -> String {
    let mut out = String::new();
    if e.hooks.is_empty() {
        out.push_str(&format!("no hooks run in {}\n", root.display()));
    }
    for h in &e.hooks {
        let matcher = match h.matcher.text() {
            "" => "*",
            m => m,
        };
        let plugin = h
            .plugin_root
            .as_deref()
            .map(|r| format!(" · CLAUDE_PLUGIN_ROOT={}", r.display()))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<17} {:<16} {}\n{:<17} timeout {} s · {} · {} ({}){plugin}\n",
            h.event.as_str(),
            matcher,
            h.command,
            "",
            h.timeout.as_secs_f64(),
            h.origin.scope,
            h.origin.file,
            h.place
        ));
    }
    for w in &e.plugin_warnings {
        out.push_str(&format!("not used: {w}\n"));
    }
    for w in &e.not_used {
        out.push_str(&format!("not used: {w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_hooks_are_listed_with_their_file_and_the_default_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(
            home.join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
        )
        .unwrap();
        let e = effective(&root, Some(&home), &Default::default(), []).unwrap();
        let listed = text(&root, &e);
        assert!(
            listed.contains("PreToolUse") && listed.contains("Bash"),
            "{listed}"
        );
        assert!(
            listed.contains("./guard.sh") && listed.contains("timeout 600 s"),
            "{listed}"
        );
        assert!(listed.contains(".claude/settings.json"), "{listed}");
        let none = text(&root, &Effective::default());
        assert!(none.starts_with("no hooks run in"), "{none}");
    }
}
