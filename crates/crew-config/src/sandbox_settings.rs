//! The `sandbox` settings key, read as Claude Code writes it, from `.claude/` and `.crew/`
//! settings alike: `enabled`, `failIfUnavailable`, `allowUnsandboxedCommands`,
//! `excludedCommands`, `filesystem.allowWrite`/`denyWrite`/`denyRead`/`allowRead`, our
//! own `writableRoots`, and `network` (kept raw, per file, for the network sandbox).
//!
//! Values that widen power (`enabled: false`, `excludedCommands`, `allowWrite`,
//! `allowRead`, `allowUnsandboxedCommands: true`, `writableRoots`) are taken only from the
//! user's own files (user and untracked local settings); from project settings they are
//! ignored with a warning. Values that only narrow (`enabled: true`,
//! `failIfUnavailable: true`, `denyWrite`, `denyRead`) are taken from every layer. A value
//! of the wrong type is an error naming the file and the field. Keys we do not know
//! (Claude Code has more) are ignored.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::paths::absolute;
use crate::settings::{SettingsError, Source, Warning};

/// The OS sandbox settings, merged over every layer; the command runner applies them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSettings {
    /// `enabled: true` in some layer (commands are sandboxed anyway; kept for display).
    pub enabled: bool,
    /// `enabled: false` in the user's own settings: commands that are not unattended
    /// (every mode but dontAsk and auto) run outside the sandbox. Unsafe.
    pub disabled: bool,
    /// `failIfUnavailable: true` in some layer: a session does not start when a sandbox
    /// layer is missing on this machine.
    pub fail_if_unavailable: bool,
    /// `allowUnsandboxedCommands: true` in the user's own settings: a call may ask to
    /// run outside the sandbox (`run_command`'s `outside_sandbox`), which always asks a
    /// human. Off by default (Claude Code defaults it on).
    pub allow_unsandboxed_commands: bool,
    /// `excludedCommands` of the user's own settings: commands that run outside the
    /// sandbox (still decided by the permission rules).
    pub excluded_commands: Vec<String>,
    /// Extra directories sandboxed commands may write below (`writableRoots` and
    /// `filesystem.allowWrite` of the user's own settings).
    pub writable_roots: Vec<PathBuf>,
    /// Paths bound read-only in every sandboxed command (`filesystem.denyWrite`).
    pub deny_write: Vec<PathBuf>,
    /// Paths hidden from every sandboxed command (`filesystem.denyRead`).
    pub deny_read: Vec<PathBuf>,
    /// Paths the sandbox does not hide though they are credential stores
    /// (`filesystem.allowRead` of the user's own settings): the user's way to let `gh`
    /// or `aws` find their credentials.
    pub allow_read: Vec<PathBuf>,
    /// `network`, one entry per file that sets it, for the network sandbox to parse.
    pub network: Vec<RawNetwork>,
}

/// One file's `sandbox.network` object, unparsed (the network sandbox owns its keys).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawNetwork {
    /// The settings file.
    pub file: PathBuf,
    /// Whose file it is (shown as `own: true|false`, as before there was a type for it).
    #[serde(rename = "own", serialize_with = "own")]
    pub source: Source,
    /// The object as written.
    pub value: Value,
}

/// Writes a [`Source`] as the boolean `own` that `crew permissions --json` has always shown.
fn own<S: serde::Serializer>(source: &Source, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(source.is_own())
}

/// Where a `sandbox` object came from, for resolving and judging its values.
pub struct Origin<'a> {
    /// The settings file.
    pub file: &'a Path,
    /// Whose file it is.
    pub source: Source,
    /// The project root (base of relative paths).
    pub root: &'a Path,
    /// The home directory (for `~`).
    pub home: Option<&'a Path>,
}

fn malformed(origin: &Origin<'_>, field: &str, expected: &str) -> SettingsError {
    SettingsError::Field {
        path: origin.file.to_path_buf(),
        field: format!("sandbox.{field}"),
        message: format!("must be {expected}"),
    }
}

/// The boolean at `field` (dotted below `sandbox`; its last part is the key in `v`).
fn boolean(v: &Value, field: &str, origin: &Origin<'_>) -> Result<Option<bool>, SettingsError> {
    match v.get(field.rsplit('.').next().unwrap_or(field)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(malformed(origin, field, "true or false")),
    }
}

/// The strings at `field` (dotted below `sandbox`; its last part is the key in `v`).
fn strings(v: &Value, field: &str, origin: &Origin<'_>) -> Result<Vec<String>, SettingsError> {
    match v.get(field.rsplit('.').next().unwrap_or(field)) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                _ => Err(malformed(
                    origin,
                    &format!("{field}[{i}]"),
                    "a non-empty string",
                )),
            })
            .collect(),
        Some(_) => Err(malformed(origin, field, "an array of strings")),
    }
}

impl SandboxSettings {
    /// Merges one file's `sandbox` value into these settings (files come highest layer
    /// first; lists add up, flags that narrow win from any layer).
    pub fn merge(
        &mut self,
        value: &Value,
        origin: &Origin<'_>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SettingsError> {
        if !value.is_object() {
            return Err(SettingsError::Field {
                path: origin.file.to_path_buf(),
                field: "sandbox".into(),
                message: "must be an object".into(),
            });
        }
        let mut ignored: Vec<String> = Vec::new();
        let path = |p: &String| absolute(p, origin.root, origin.home);
        match boolean(value, "enabled", origin)? {
            Some(true) => self.enabled = true,
            Some(false) if origin.source.is_own() => self.disabled = true,
            Some(false) => ignored.push("sandbox.enabled: false".into()),
            None => {}
        }
        if boolean(value, "failIfUnavailable", origin)? == Some(true) {
            self.fail_if_unavailable = true;
        }
        match boolean(value, "allowUnsandboxedCommands", origin)? {
            Some(true) if origin.source.is_own() => self.allow_unsandboxed_commands = true,
            Some(true) => ignored.push("sandbox.allowUnsandboxedCommands: true".into()),
            _ => {}
        }
        let excluded = strings(value, "excludedCommands", origin)?;
        if origin.source.is_own() {
            self.excluded_commands.extend(excluded);
        } else if !excluded.is_empty() {
            ignored.push("sandbox.excludedCommands".into());
        }
        let roots = strings(value, "writableRoots", origin)?;
        let fs = match value.get("filesystem") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(malformed(origin, "filesystem", "an object")),
        };
        let allow_write = strings(&fs, "filesystem.allowWrite", origin)?;
        let allow_read = strings(&fs, "filesystem.allowRead", origin)?;
        self.deny_write.extend(
            strings(&fs, "filesystem.denyWrite", origin)?
                .iter()
                .map(path),
        );
        self.deny_read.extend(
            strings(&fs, "filesystem.denyRead", origin)?
                .iter()
                .map(path),
        );
        if origin.source.is_own() {
            self.writable_roots
                .extend(roots.iter().chain(&allow_write).map(path));
            self.allow_read.extend(allow_read.iter().map(path));
        } else {
            for (list, key) in [
                (&roots, "sandbox.writableRoots"),
                (&allow_write, "sandbox.filesystem.allowWrite"),
                (&allow_read, "sandbox.filesystem.allowRead"),
            ] {
                if !list.is_empty() {
                    ignored.push(key.into());
                }
            }
        }
        match value.get("network") {
            None | Some(Value::Null) => {}
            Some(v @ Value::Object(_)) => self.network.push(RawNetwork {
                file: origin.file.to_path_buf(),
                source: origin.source,
                value: v.clone(),
            }),
            Some(_) => return Err(malformed(origin, "network", "an object")),
        }
        if !ignored.is_empty() {
            warnings.push(Warning {
                file: Some(origin.file.to_path_buf()),
                message: format!(
                    "{} ignored in project settings: values that widen the sandbox count only in your own settings; set them in ~/.crew/settings.json or .crew/settings.local.json",
                    ignored.join(", ")
                ),
            });
        }
        Ok(())
    }

    /// Whether `command` is one of `excludedCommands`: the entry itself, or the entry
    /// followed by arguments (`docker` covers `docker ps`; `docker:*` is the same). Only
    /// a single plain command qualifies: anything with shell operators, substitutions or
    /// redirects (`docker ps; rm -rf ~`) never runs outside the sandbox this way.
    pub fn excludes(&self, command: &str) -> bool {
        let command = command.trim();
        if command.is_empty()
            || command.chars().any(|c| {
                matches!(
                    c,
                    ';' | '&'
                        | '|'
                        | '<'
                        | '>'
                        | '$'
                        | '`'
                        | '('
                        | ')'
                        | '\n'
                        | '\r'
                        | '\\'
                        | '*'
                        | '?'
                        | '{'
                        | '}'
                        | '~'
                        | '#'
                        | '!'
                )
            })
        {
            return false;
        }
        self.excluded_commands.iter().any(|entry| {
            let entry = entry.trim();
            let entry = entry.strip_suffix(":*").unwrap_or(entry).trim();
            !entry.is_empty()
                && (command == entry
                    || command
                        .strip_prefix(entry)
                        .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('\t')))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merge(v: Value, source: Source) -> (Result<SandboxSettings, SettingsError>, Vec<Warning>) {
        let mut s = SandboxSettings::default();
        let mut w = Vec::new();
        let origin = Origin {
            file: Path::new("/p/.claude/settings.json"),
            source,
            root: Path::new("/p"),
            home: Some(Path::new("/h")),
        };
        let r = s.merge(&v, &origin, &mut w).map(|()| s);
        (r, w)
    }

    #[test]
    fn widening_values_count_only_from_the_users_own_files() {
        let v = json!({"enabled": false, "excludedCommands": ["docker"], "allowUnsandboxedCommands": true,
            "filesystem": {"allowWrite": ["~/.cache/x"], "denyWrite": ["secrets"], "denyRead": ["~/.vault"], "allowRead": ["~/.config/gh"]}});
        let (own, w) = merge(v.clone(), Source::Own);
        let own = own.unwrap();
        assert!(own.disabled && own.allow_unsandboxed_commands && w.is_empty());
        assert_eq!(own.excluded_commands, ["docker"]);
        assert_eq!(own.writable_roots, [PathBuf::from("/h/.cache/x")]);
        assert_eq!(own.allow_read, [PathBuf::from("/h/.config/gh")]);
        let (shared, w) = merge(v, Source::Shared);
        let shared = shared.unwrap();
        assert!(!shared.disabled && !shared.allow_unsandboxed_commands);
        assert!(shared.excluded_commands.is_empty() && shared.writable_roots.is_empty());
        assert!(shared.allow_read.is_empty());
        // What narrows applies from the project too.
        assert_eq!(shared.deny_write, [PathBuf::from("/p/secrets")]);
        assert_eq!(shared.deny_read, [PathBuf::from("/h/.vault")]);
        let text = w[0].to_string();
        for key in [
            "excludedCommands",
            "enabled: false",
            "allowWrite",
            "allowRead",
            "allowUnsandboxedCommands",
        ] {
            assert!(text.contains(key), "{key}: {text}");
        }
    }

    #[test]
    fn a_malformed_value_names_the_file_and_the_field() {
        for (v, field) in [
            (json!({"enabled": "yes"}), "sandbox.enabled"),
            (
                json!({"excludedCommands": "docker"}),
                "sandbox.excludedCommands",
            ),
            (
                json!({"excludedCommands": ["ok", 3]}),
                "sandbox.excludedCommands[1]",
            ),
            (
                json!({"filesystem": {"denyRead": [true]}}),
                "sandbox.filesystem.denyRead[0]",
            ),
            (json!({"filesystem": []}), "sandbox.filesystem"),
            (json!({"network": 1}), "sandbox.network"),
            (json!("on"), "sandbox"),
        ] {
            let err = merge(v, Source::Own).0.unwrap_err().to_string();
            assert!(err.contains("/p/.claude/settings.json"), "{err}");
            assert!(err.contains(&format!("`{field}`")), "{field}: {err}");
        }
    }

    #[test]
    fn excluded_commands_match_one_plain_command_only() {
        let s = SandboxSettings {
            excluded_commands: vec!["docker".into(), "gh:*".into()],
            ..Default::default()
        };
        for yes in ["docker", "docker ps -a", "gh pr list"] {
            assert!(s.excludes(yes), "{yes}");
        }
        for no in [
            "dockerd",
            "docker ps; rm -rf ~",
            "docker ps && touch x",
            "docker run $(cat f)",
            "docker ps > out",
            "gh pr list | sh",
            "ghx",
            "echo docker",
        ] {
            assert!(!s.excludes(no), "{no}");
        }
    }
}
