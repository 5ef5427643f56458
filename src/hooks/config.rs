//! Hook configuration: the `hooks` object of every settings layer, in Claude Code's
//! format — event → `[{matcher, hooks: [{type: "command", command, timeout?}]}]` — read
//! from `~/.claude/settings.json`, `~/.crew/settings.json` (user), the project's
//! `.claude/settings.json`, `.crew/settings.json` (project, shared) and
//! `settings.local.json` in both (local) — the files `config::layers` reads for every
//! settings reader. Agent definitions may carry the same object
//! (`Stop` there becomes `SubagentStop`).
//!
//! A project's shared hooks (the project files, and a local file git tracks) run only in a
//! folder the user trusted; elsewhere they are dropped with one warning per file naming
//! each. A file that is not JSON is an error naming file, line and column (dropping a
//! file's hooks silently could drop the hook that guards a deploy); one bad entry is
//! skipped with a warning naming its place.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::event::HookEvent;
use super::matcher::Matcher;
use crate::config::layers;
use crate::config::settings::{SettingsError, Warning};
use crate::permission::Layer;
use crate::trust::TrustStore;

/// How long a hook may run when its entry sets no `timeout`: Claude Code's default for
/// command hooks, 10 minutes (a formatter or test run in a hook must not be cut off where
/// Claude Code would let it finish).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Where a hook came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The settings file (or the agent definition's file).
    pub file: String,
    /// `user`, `project`, `local`, or `agent:<type>`.
    pub scope: String,
    /// Whether it came with the project (a shared settings file, a local file git tracks,
    /// or an agent definition inside the project): such hooks run sandboxed.
    #[serde(skip)]
    pub from_project: bool,
}

/// One configured hook command.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The event it runs on.
    pub event: HookEvent,
    /// Its group's matcher.
    pub matcher: Matcher,
    /// The shell command (`bash -c`).
    pub command: String,
    /// Its time limit.
    pub timeout: Duration,
    /// Its file and scope.
    pub origin: Origin,
    /// Where in the file: `hooks.PreToolUse[0].hooks[1]`.
    pub place: String,
    /// A plugin's hook's plugin directory, its `CLAUDE_PLUGIN_ROOT` (see
    /// `hooks::plugins`).
    pub plugin_root: Option<PathBuf>,
}

/// Parses a `hooks` object. `rename` maps an event before it is stored (an agent
/// definition's `Stop` is its `SubagentStop`). Bad entries become warnings.
pub fn parse(
    value: &Value,
    origin: &Origin,
    rename: fn(HookEvent) -> HookEvent,
    warnings: &mut Vec<Warning>,
) -> Vec<Hook> {
    let mut out = Vec::new();
    let mut warn = |message: String| {
        warnings.push(Warning {
            file: Some(PathBuf::from(&origin.file)),
            message,
        })
    };
    let Some(events) = value.as_object() else {
        warn("`hooks` is not an object of events; all its hooks were skipped".into());
        return out;
    };
    for (name, groups) in events {
        let Some(event) = HookEvent::parse(name) else {
            warn(format!(
                "hooks.{name}: unknown event (known: {}); skipped",
                HookEvent::ALL.map(HookEvent::as_str).join(", ")
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            warn(format!(
                "hooks.{name} is not a list of matcher groups; skipped"
            ));
            continue;
        };
        for (gi, group) in groups.iter().enumerate() {
            let at = format!("hooks.{name}[{gi}]");
            let text = match group.get("matcher") {
                None | Some(Value::Null) => "",
                Some(Value::String(s)) => s.as_str(),
                Some(_) => {
                    warn(format!(
                        "{at}.matcher is not a string; the group was skipped"
                    ));
                    continue;
                }
            };
            let matcher = match Matcher::parse(text) {
                Ok(m) => m,
                Err(e) => {
                    warn(format!(
                        "{at}.matcher `{text}` is not a valid regex ({e}); the group was skipped — fix the matcher"
                    ));
                    continue;
                }
            };
            let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                warn(format!("{at}.hooks is missing or not a list; skipped"));
                continue;
            };
            for (hi, h) in list.iter().enumerate() {
                let place = format!("{at}.hooks[{hi}]");
                match h.get("type").and_then(Value::as_str) {
                    Some("command") => {}
                    other => {
                        warn(format!(
                            "{place}: type {} is not supported (only `command`); skipped",
                            other.map(|t| format!("`{t}`")).unwrap_or("(none)".into())
                        ));
                        continue;
                    }
                }
                let Some(command) = h.get("command").and_then(Value::as_str) else {
                    warn(format!(
                        "{place}.command is missing or not a string; skipped"
                    ));
                    continue;
                };
                let timeout = match h.get("timeout") {
                    None | Some(Value::Null) => DEFAULT_TIMEOUT,
                    Some(v) => match v.as_f64() {
                        Some(s) if s > 0.0 && s.is_finite() => {
                            Duration::from_secs_f64(s.min(86_400.0))
                        }
                        _ => {
                            warn(format!(
                                "{place}.timeout must be a positive number of seconds; using {} s",
                                DEFAULT_TIMEOUT.as_secs()
                            ));
                            DEFAULT_TIMEOUT
                        }
                    },
                };
                out.push(Hook {
                    event: rename(event),
                    matcher: matcher.clone(),
                    command: command.to_string(),
                    timeout,
                    origin: origin.clone(),
                    place: place.clone(),
                    plugin_root: None,
                });
            }
        }
    }
    out
}

fn scope(layer: Layer) -> &'static str {
    match layer {
        Layer::Local | Layer::Session => "local",
        Layer::Project => "project",
        Layer::User => "user",
    }
}

/// Loads every settings file's hooks for `project_root`. Untrusted shared hooks are left
/// out, with a warning naming them.
pub fn load(
    project_root: &Path,
    home: Option<&Path>,
) -> Result<(Vec<Hook>, Vec<Warning>), SettingsError> {
    let root = canonical(project_root);
    let mut warnings = Vec::new();
    let trusted = is_trusted(&root, home);
    let mut hooks = Vec::new();
    for file in layers::read_all(&root, home)? {
        let (layer, path) = (file.layer, file.path.clone());
        let Some(value) = file
            .parse::<Value>()?
            .get("hooks")
            .filter(|v| !v.is_null())
            .cloned()
        else {
            continue;
        };
        let origin = Origin {
            file: path.display().to_string(),
            scope: scope(layer).into(),
            from_project: file.shared.is_some(),
        };
        let found = parse(&value, &origin, |e| e, &mut warnings);
        if !trusted && file.shared.is_some() && !found.is_empty() {
            let names: Vec<String> = found
                .iter()
                .map(|h| format!("{} {}: `{}`", h.event, h.place, h.command))
                .collect();
            warnings.push(Warning {
                file: Some(path.clone()),
                message: format!(
                    "this folder is not trusted, so its shared hooks will not run: {}. If you trust this repository, run `crew trust {}`",
                    names.join("; "),
                    root.display()
                ),
            });
            continue;
        }
        hooks.extend(found);
    }
    Ok((hooks, warnings))
}

pub(crate) fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Whether the project's shared content may run. Fail closed: no home or an unreadable
/// trust list means not trusted (the permission policy's loader reports the list).
pub(crate) fn is_trusted(root: &Path, home: Option<&Path>) -> bool {
    home.map(TrustStore::for_home)
        .is_some_and(|s| s.is_trusted(root).unwrap_or(false))
}

/// One agent type's `hooks` object, as its definition carries it (the agent catalog lists
/// them: `agent::catalog::Catalog::hook_sources`).
#[derive(Debug, Clone, Copy)]
pub struct AgentHooks<'a> {
    /// The agent type's name.
    pub name: &'a str,
    /// Where its definition came from (`built-in`, or a file path).
    pub origin: &'a str,
    /// Its `hooks` object (Claude Code's format).
    pub hooks: &'a Value,
}

/// The hooks of each agent type's definition (`Stop` there is `SubagentStop`). A
/// definition inside the project came with the repository: its hooks need the folder's
/// trust, like the project's settings.
pub fn load_agents<'a>(
    agents: impl IntoIterator<Item = AgentHooks<'a>>,
    project_root: &Path,
    home: Option<&Path>,
) -> (HashMap<String, Vec<Hook>>, Vec<Warning>) {
    let root = canonical(project_root);
    let trusted = is_trusted(&root, home);
    let mut warnings = Vec::new();
    let mut out = HashMap::new();
    for def in agents {
        let value = def.hooks;
        let shared = canonical(Path::new(def.origin)).starts_with(&root);
        let origin = Origin {
            file: def.origin.to_string(),
            scope: format!("agent:{}", def.name),
            from_project: shared,
        };
        let found = parse(value, &origin, agent_event, &mut warnings);
        if found.is_empty() {
            continue;
        }
        if shared && !trusted {
            let names: Vec<String> = found
                .iter()
                .map(|h| format!("{} {}: `{}`", h.event, h.place, h.command))
                .collect();
            warnings.push(Warning {
                file: Some(PathBuf::from(def.origin)),
                message: format!(
                    "this folder is not trusted, so the hooks of agent `{}` will not run: {}. If you trust this repository, run `crew trust {}`",
                    def.name,
                    names.join("; "),
                    root.display()
                ),
            });
            continue;
        }
        out.insert(def.name.to_string(), found);
    }
    (out, warnings)
}

/// An agent definition's `Stop` hook is its `SubagentStop`.
pub fn agent_event(e: HookEvent) -> HookEvent {
    match e {
        HookEvent::Stop => HookEvent::SubagentStop,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn origin() -> Origin {
        Origin {
            file: ".claude/settings.json".into(),
            scope: "project".into(),
            from_project: true,
        }
    }

    #[test]
    fn claude_code_format_parses() {
        let v = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./guard.sh", "timeout": 5}
            ]}],
            "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}]
        });
        let mut w = Vec::new();
        let hooks = parse(&v, &origin(), |e| e, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(hooks.len(), 2);
        let pre = hooks
            .iter()
            .find(|h| h.event == HookEvent::PreToolUse)
            .unwrap();
        assert_eq!(pre.timeout, Duration::from_secs(5));
        assert_eq!(pre.matcher.text(), "Bash");
        let stop = hooks.iter().find(|h| h.command == "echo done").unwrap();
        // Claude Code's default for command hooks: 10 minutes.
        assert_eq!(stop.timeout, Duration::from_secs(600));
        let as_agent = parse(&v, &origin(), agent_event, &mut w);
        assert!(as_agent.iter().any(|h| h.event == HookEvent::SubagentStop));
    }

    #[test]
    fn a_committed_local_file_needs_trust_and_a_user_file_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, proj) = (base.join("home"), base.join("home/proj"));
        let hooks = |cmd: &str| {
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": cmd}]}]}})
                .to_string()
        };
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(proj.join(".claude/settings.local.json"), hooks("committed")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), hooks("mine")).unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&proj)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "x"]);
        let (loaded, warnings) = load(&proj, Some(&home)).unwrap();
        let commands: Vec<&str> = loaded.iter().map(|h| h.command.as_str()).collect();
        assert_eq!(commands, ["mine"]);
        assert!(
            warnings.iter().any(|w| w.message.contains("`committed`")),
            "{warnings:?}"
        );
        TrustStore::for_home(&home).trust(&proj).unwrap();
        let (loaded, _) = load(&proj, Some(&home)).unwrap();
        assert_eq!(loaded.len(), 2);
    }

    #[test]
    fn a_malformed_file_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".claude")).unwrap();
        std::fs::write(tmp.path().join(".claude/settings.json"), "{\"hooks\": ").unwrap();
        let e = load(tmp.path(), None).unwrap_err();
        assert!(e.to_string().contains(".claude/settings.json"), "{e}");
    }

    #[test]
    fn bad_entries_are_skipped_with_their_place() {
        let v = json!({
            "PreToolUse": [
                {"matcher": "(", "hooks": [{"type": "command", "command": "x"}]},
                {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "?"}, {"type": "command"}]}
            ],
            "OnSave": []
        });
        let mut w = Vec::new();
        let hooks = parse(&v, &origin(), |e| e, &mut w);
        assert!(hooks.is_empty());
        let all: Vec<String> = w.iter().map(|w| w.message.clone()).collect();
        assert!(
            all.iter()
                .any(|m| m.contains("hooks.PreToolUse[0].matcher")),
            "{all:?}"
        );
        assert!(
            all.iter()
                .any(|m| m.contains("hooks.PreToolUse[1].hooks[0]")),
            "{all:?}"
        );
        assert!(
            all.iter()
                .any(|m| m.contains("hooks.PreToolUse[1].hooks[1].command")),
            "{all:?}"
        );
        assert!(all.iter().any(|m| m.contains("hooks.OnSave")), "{all:?}");
    }
}
