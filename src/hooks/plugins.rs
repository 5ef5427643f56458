//! The hooks of plugins: each plugin's `hooks/hooks.json`, in Claude Code's plugin
//! format — `{"description": …, "hooks": {event: [{matcher, hooks: [{type: "command",
//! command}]}]}}` — run with `CLAUDE_PLUGIN_ROOT` set to the plugin's directory, so
//! `"${CLAUDE_PLUGIN_ROOT}/hooks/check.sh"` runs the plugin's own script.
//!
//! A plugin that came with the project (a `--plugin-dir` inside it) is the project's
//! shared content: its hooks run only in a folder the user trusted, and then confined like
//! the project's hooks; elsewhere a warning names each hook that will not run. The other
//! plugins (installed and enabled by the user, or a `--plugin-dir` outside the project)
//! are the user's own, and their hooks run as the user's settings' do. A `hooks.json` that
//! cannot be read or is not JSON is a warning naming it: its hooks do not run.

use std::path::Path;

use serde_json::Value;

use super::config::{Hook, Origin, canonical, is_trusted, parse};
use crate::config::settings::Warning;
use crate::front_matter::FrontMatterError;
use crate::plugins::{ConfineError, Plugin, Plugins};

/// The hooks of every plugin in `plugins`, for the project at `project_root`.
pub(crate) fn load(
    plugins: &Plugins,
    project_root: &Path,
    home: Option<&Path>,
) -> (Vec<Hook>, Vec<Warning>) {
    let root = canonical(project_root);
    let trusted = is_trusted(&root, home);
    let mut hooks = Vec::new();
    let mut warnings = Vec::new();
    for plugin in plugins.iter() {
        let file = plugin.part("hooks").join("hooks.json");
        if std::fs::symlink_metadata(&file).is_err() {
            continue;
        }
        let warn = |message: String| Warning {
            file: Some(file.clone()),
            message,
        };
        let value = match read(plugin, &file) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(warn(format!(
                    "{e}; the hooks of plugin `{}` will not run",
                    plugin.name
                )));
                continue;
            }
        };
        let Some(object) = value.as_object() else {
            warnings.push(warn(format!(
                "not an object like {{\"hooks\": {{\"PreToolUse\": […]}}}}; the hooks of plugin `{}` will not run",
                plugin.name
            )));
            continue;
        };
        for key in object
            .keys()
            .filter(|k| !matches!(k.as_str(), "hooks" | "description"))
        {
            warnings.push(warn(format!(
                "field `{key}` is not one crew knows; it is ignored"
            )));
        }
        let Some(events) = object.get("hooks").filter(|v| !v.is_null()) else {
            warnings.push(warn(format!(
                "field `hooks` is missing; the plugin `{}` has no hooks",
                plugin.name
            )));
            continue;
        };
        let came_with = plugin.came_with(&root);
        let origin = Origin {
            file: file.display().to_string(),
            scope: format!("plugin:{}", plugin.name),
            from_project: came_with,
        };
        let mut found = parse(events, &origin, |e| e, &mut warnings);
        if found.is_empty() {
            continue;
        }
        if came_with && !trusted {
            let names: Vec<String> = found
                .iter()
                .map(|h| format!("{} {}: `{}`", h.event, h.place, h.command))
                .collect();
            warnings.push(warn(format!(
                "the plugin `{}` is inside this folder, which is not trusted, so its hooks will not run: {}. If you trust this repository, run `crew trust {}`",
                plugin.name,
                names.join("; "),
                root.display()
            )));
            continue;
        }
        for hook in &mut found {
            hook.plugin_root = Some(plugin.root.clone());
        }
        hooks.extend(found);
    }
    (hooks, warnings)
}

/// Why a plugin's `hooks.json` is not read (its hooks do not run).
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// It leads outside the plugin, or cannot be resolved.
    #[error(transparent)]
    Confine(#[from] ConfineError),
    /// It cannot be read (too large, not a regular file, no permission).
    #[error(transparent)]
    Read(#[from] FrontMatterError),
    /// It is not JSON; the parser's error names the line and column.
    #[error("line {}, column {}: not JSON ({error}); fix the file", .error.line(), .error.column())]
    NotJson {
        /// The parser's error.
        error: serde_json::Error,
    },
}

/// The JSON of a plugin's `hooks.json`: a small regular file inside the plugin.
fn read(plugin: &Plugin, file: &Path) -> Result<Value, ReadError> {
    let real = plugin.confine(file)?;
    let text = crate::front_matter::read(&real)?;
    serde_json::from_str(&text).map_err(|error| ReadError::NotJson { error })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::HookEvent;
    use crate::plugins::testing::plugin;

    const HOOKS: &str = r#"{"description": "Guards", "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh\"", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}]}}"#;

    #[test]
    fn a_plugins_hooks_load_with_its_root_and_scope() {
        let tmp = tempfile::tempdir().unwrap();
        let kit = plugin(tmp.path(), "kit", &[("hooks/hooks.json", HOOKS)]);
        let project = tempfile::tempdir().unwrap();
        let (hooks, warnings) = load(&Plugins::of(vec![kit.clone()]), project.path(), None);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(hooks.len(), 2);
        let pre = hooks
            .iter()
            .find(|h| h.event == HookEvent::PreToolUse)
            .unwrap();
        assert_eq!(pre.command, "\"${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh\"");
        assert_eq!(pre.plugin_root.as_deref(), Some(kit.root.as_path()));
        assert_eq!(pre.origin.scope, "plugin:kit");
        assert!(pre.origin.file.ends_with("kit/hooks/hooks.json"));
        assert!(!pre.origin.from_project);
    }

    #[test]
    fn a_plugin_inside_an_untrusted_project_runs_no_hooks_and_a_trusted_one_runs_confined() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, project) = (base.join("home"), base.join("proj"));
        std::fs::create_dir_all(&home).unwrap();
        let vendored = plugin(
            &project.join("tools"),
            "vendored",
            &[("hooks/hooks.json", HOOKS)],
        );
        let plugins = Plugins::of(vec![vendored]);
        let (hooks, warnings) = load(&plugins, &project, Some(&home));
        assert!(hooks.is_empty(), "{hooks:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = warnings[0].to_string();
        assert!(
            w.contains("plugin `vendored` is inside this folder, which is not trusted")
                && w.contains("guard.sh")
                && w.contains("crew trust"),
            "{w}"
        );
        crate::trust::TrustStore::for_home(&home)
            .trust(&project)
            .unwrap();
        let (hooks, warnings) = load(&plugins, &project, Some(&home));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(hooks.len(), 2);
        assert!(hooks.iter().all(|h| h.origin.from_project), "{hooks:?}");
    }

    #[test]
    fn a_hooks_file_that_links_out_or_is_not_json_runs_nothing_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("elsewhere.json");
        std::fs::write(&outside, HOOKS).unwrap();
        let linked = plugin(tmp.path(), "linked", &[]);
        std::fs::create_dir_all(linked.part("hooks")).unwrap();
        std::os::unix::fs::symlink(&outside, linked.part("hooks").join("hooks.json")).unwrap();
        let broken = plugin(
            tmp.path(),
            "broken",
            &[("hooks/hooks.json", "{\"hooks\": ")],
        );
        let odd = plugin(
            tmp.path(),
            "odd",
            &[("hooks/hooks.json", r#"{"hook": {}, "hooks": {"Stop": []}}"#)],
        );
        let (hooks, warnings) = load(&Plugins::of(vec![linked, broken, odd]), tmp.path(), None);
        assert!(hooks.is_empty(), "{hooks:?}");
        let all: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(all.len(), 3, "{all:?}");
        assert!(
            all[0].contains("linked/hooks/hooks.json") && all[0].contains("outside the plugin")
        );
        assert!(all[1].contains("broken/hooks/hooks.json") && all[1].contains("not JSON"));
        assert!(
            all[2].contains("field `hook` is not one crew knows"),
            "{all:?}"
        );
    }
}
