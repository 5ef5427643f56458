//! Settings files and the `Policy` built from them: `~/.crew/settings.json` and
//! `~/.claude/settings.json` (user), `<project>/.crew/settings.json` and
//! `<project>/.claude/settings.json` (project), and `settings.local.json` beside each
//! (local) — the files and their precedence are in `layers.rs`. A malformed file is an error naming file, line and column; one malformed or
//! unknown rule is skipped with a warning naming file and index.
//!
//! A cloned repository's project file must not unlock what the user did not: its
//! `defaultMode: bypassPermissions`/`dontAsk`, `additionalDirectories` and the `sandbox`
//! values that widen power (`sandbox_settings.rs`) are always ignored with a warning (put
//! them in settings.local.json). Its allow rules, a `defaultMode` looser than `default` and
//! `worktree.setup` apply only in a folder the user trusted (`trust.rs`); elsewhere one
//! warning names each ignored entry. Its deny and ask rules always apply: they only
//! tighten. Claude Code's `.claude` files follow the same rules as ours; from them a
//! `model` is taken only when it is a full id (`claude-…`), and `worktree` is not read.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::layers;
use crate::permission::rules::{Rule, RuleKind};
use crate::permission::{Layer, PermissionMode, Policy, RuleName, sandbox};

pub(crate) use crew_config::settings::{LayeredLimits, SettingsError, Source, Warning};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawSettings {
    permissions: RawPermissions,
    /// Parsed by `sandbox_settings` (Claude Code's keys, with field-named errors).
    sandbox: Option<Value>,
    model: Option<String>,
    #[serde(rename = "maxConcurrentAgents")]
    max_concurrent_agents: Option<usize>,
    #[serde(rename = "maxBudgetUsd")]
    max_budget_usd: Option<f64>,
    /// Read only to report an ignored `worktree.setup` (the worktree module applies it).
    worktree: Option<Value>,
    #[serde(rename = "commandEnv")]
    command_env: Option<RawCommandEnv>,
    #[serde(rename = "autoMode")]
    auto_mode: Option<RawAutoMode>,
    /// Resource limits and result caps, resolved by `sandbox::limits`.
    limits: Option<Value>,
}

/// `autoMode`: whether auto mode may be used, and its classifier.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RawAutoMode {
    enabled: Option<bool>,
    model: Option<String>,
    timeout_ms: Option<u64>,
}

/// `commandEnv`: which secret-looking variables commands may still inherit.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawCommandEnv {
    passthrough: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RawPermissions {
    allow: Vec<Value>,
    ask: Vec<Value>,
    deny: Vec<Value>,
    default_mode: Option<String>,
    additional_directories: Vec<String>,
    /// Claude Code's key: `"disable"` refuses bypassPermissions.
    disable_bypass_permissions_mode: Option<String>,
}

pub(crate) use super::layers::files;

/// Loads the user, project and local settings of `project_root` (missing files are
/// fine). `home` decides the user file, the trust list (`home/.crew/trusted.json`)
/// and expands `~`. `tool_rule_name` resolves rules that name a tool by its own name
/// or alias ([`Rule::parse_with`]); `trust` says whether the (canonical) project root
/// is trusted, with what the check has to report (`crate::trust::policy_trust`).
/// `Policy::load` (`crate::tools::rule_names::LoadPolicy`) passes the built-in tools' lookup and
/// the trust list of `home`.
pub(crate) fn load_policy_with(
    project_root: &Path,
    home: Option<&Path>,
    tool_rule_name: &dyn Fn(&str) -> Option<RuleName>,
    trust: &dyn Fn(&Path) -> (bool, Vec<Warning>),
) -> Result<(Policy, Vec<Warning>), SettingsError> {
    let root = std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf());
    let mut warnings = Vec::new();
    let (trusted, trust_warnings) = trust(&root);
    warnings.extend(trust_warnings);
    let mut policy = Policy {
        project_root: Some(root.clone()),
        home: home.map(Path::to_path_buf),
        trusted,
        ..Policy::default()
    };
    let mut mode_set = false;
    // Highest layer first: single values come from the highest layer that sets them.
    for file in layers::read_all(&root, home)? {
        let (layer, path) = (file.layer, file.path.clone());
        let raw: RawSettings = file.parse()?;
        let warn = |warnings: &mut Vec<Warning>, message: String| {
            warnings.push(Warning {
                file: Some(path.clone()),
                message,
            })
        };
        // A local file that git tracks came with the clone: shared, like the project's.
        if layer == Layer::Local
            && let Some(why) = &file.shared
        {
            warn(
                &mut warnings,
                format!(
                    "{why}: it is treated as shared project settings, not your own (its allow rules, looser modes and model need trust; directories, writable roots and passthrough are ignored). Keep your own settings untracked (`git rm --cached` it and add it to .gitignore)"
                ),
            );
        }
        let shared = file.shared.is_some();
        let claude = file.is_claude();
        // What an untrusted shared file asked for and did not get.
        let shared_untrusted = shared && !trusted;
        let mut ignored: Vec<String> = Vec::new();
        for (kind, list, key) in [
            (RuleKind::Deny, &raw.permissions.deny, "deny"),
            (RuleKind::Ask, &raw.permissions.ask, "ask"),
            (RuleKind::Allow, &raw.permissions.allow, "allow"),
        ] {
            for (index, v) in list.iter().enumerate() {
                let Some(text) = v.as_str() else {
                    warn(
                        &mut warnings,
                        format!("permissions.{key}[{index}] is not a string; skipped"),
                    );
                    continue;
                };
                if shared_untrusted && kind == RuleKind::Allow {
                    ignored.push(format!("permissions.{key}[{index}] `{text}`"));
                    continue;
                }
                match Rule::parse_with(text, kind, layer, home, tool_rule_name) {
                    Ok(mut rule) => {
                        rule.file = Some(path.clone());
                        rule.index = index;
                        policy.rules.push(rule);
                    }
                    Err(e) => warn(
                        &mut warnings,
                        format!("permissions.{key}[{index}]: {e}; skipped"),
                    ),
                }
            }
        }
        let own = !shared;
        let source = if own { Source::Own } else { Source::Shared };
        if let Some(name) = &raw.permissions.default_mode
            && !mode_set
        {
            let (mode, w) = PermissionMode::parse_lenient(name);
            if let Some(w) = w {
                warn(&mut warnings, format!("permissions.defaultMode: {w}"));
            }
            if shared_untrusted
                && matches!(mode, PermissionMode::AcceptEdits | PermissionMode::Auto)
            {
                ignored.push(format!("permissions.defaultMode `{mode}`"));
            } else if !own
                && matches!(
                    mode,
                    PermissionMode::BypassPermissions | PermissionMode::DontAsk
                )
            {
                warn(
                    &mut warnings,
                    format!(
                        "permissions.defaultMode `{mode}` is ignored in project settings (a cloned repository cannot lower your guard); set it in .crew/settings.local.json"
                    ),
                );
            } else {
                policy.default_mode = mode;
                mode_set = true;
            }
        }
        for (index, dir) in raw.permissions.additional_directories.iter().enumerate() {
            if !own {
                warn(
                    &mut warnings,
                    format!(
                        "permissions.additionalDirectories[{index}] `{dir}` is ignored in project settings; set it in .crew/settings.local.json"
                    ),
                );
                continue;
            }
            let abs = sandbox::absolute(dir, &root, home);
            match std::fs::canonicalize(&abs) {
                Ok(real) => policy.additional_roots.push(real),
                Err(e) => warn(
                    &mut warnings,
                    format!("permissions.additionalDirectories[{index}] `{dir}`: {e}; skipped"),
                ),
            }
        }
        if let Some(sb) = &raw.sandbox {
            let origin = super::sandbox_settings::Origin {
                file: &path,
                source,
                root: &root,
                home,
            };
            policy.sandbox.merge(sb, &origin, &mut warnings)?;
        }
        let doc: Value = file.parse()?;
        for w in policy.network.merge(&doc, &path, source)? {
            warn(&mut warnings, w);
        }
        if let Some(value) = &raw.limits {
            policy.limits.push(LayeredLimits {
                file: path.clone(),
                source,
                value: value.clone(),
            });
        }
        if let Some(env) = &raw.command_env {
            // A cloned repository must not hand the user's secrets to commands.
            if own {
                policy
                    .env_passthrough
                    .extend(env.passthrough.iter().cloned());
            } else if !env.passthrough.is_empty() {
                warn(&mut warnings, "commandEnv.passthrough is ignored in project settings; set it in .crew/settings.local.json".into());
            }
        }
        // `worktree` is ours: the worktree module reads it from `.crew` only.
        if shared_untrusted
            && !claude
            && let Some(setup) = raw.worktree.as_ref().and_then(|w| w.get("setup"))
        {
            ignored.push(format!("worktree.setup {setup}"));
        }
        // Claude Code's aliases (`opus`, `sonnet`…) are not our model names: from its
        // files only a full model id (`claude-…`) is taken.
        let model = raw
            .model
            .clone()
            .filter(|m| !claude || m.starts_with("claude-"));
        // The model decides what runs (a `script:` model replays a file's tool calls).
        if shared_untrusted && let Some(model) = &model {
            ignored.push(format!("model `{model}`"));
        } else if policy.model.is_none() {
            policy.model = model;
        }
        if !ignored.is_empty() {
            warn(
                &mut warnings,
                format!(
                    "this folder is not trusted, so these shared settings were ignored: {}. Its deny and ask rules still apply. If you trust this repository's settings, run `crew trust {}`",
                    ignored.join(", "),
                    root.display()
                ),
            );
        }
        if policy.max_concurrent_agents.is_none() {
            policy.max_concurrent_agents = raw.max_concurrent_agents;
        }
        // Switching bypass or auto off only tightens: any layer may.
        if raw.permissions.disable_bypass_permissions_mode.as_deref() == Some("disable") {
            policy.bypass_disabled = true;
        }
        if let Some(auto) = &raw.auto_mode {
            policy.auto_mode.disabled |= auto.enabled == Some(false);
            // The classifier decides what runs, like `model`: shared files need trust.
            if shared_untrusted && let Some(model) = &auto.model {
                warn(
                    &mut warnings,
                    format!(
                        "autoMode.model `{model}` is ignored: this folder is not trusted (run `crew trust {}`)",
                        root.display()
                    ),
                );
            } else if policy.auto_mode.model.is_none() {
                policy.auto_mode.model = auto.model.clone();
            }
            if policy.auto_mode.timeout_ms.is_none() {
                policy.auto_mode.timeout_ms = auto.timeout_ms;
            }
        }
        match raw.max_budget_usd {
            Some(usd) if usd.is_finite() && usd >= 0.0 => {
                policy.max_budget_usd =
                    Some(policy.max_budget_usd.map_or(usd, |b: f64| b.min(usd)));
            }
            Some(usd) => warn(
                &mut warnings,
                format!(
                    "maxBudgetUsd {usd} in {} is not a non-negative number of US dollars; it was ignored",
                    path.display()
                ),
            ),
            None => {}
        }
    }
    Ok((policy, warnings))
}

/// Appends `rules` to `permissions.allow` of a settings file, skipping rules already
/// there, creating the file and its directory if needed and keeping every other key.
/// Returns how many rules were added.
pub(crate) fn append_allow(path: &Path, rules: &[String]) -> Result<usize, SettingsError> {
    let werr = |message: String| SettingsError::Write {
        path: path.to_path_buf(),
        message,
    };
    let mut doc: Value = match std::fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| SettingsError::Malformed {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let root = doc
        .as_object_mut()
        .ok_or_else(|| werr("the file is not a JSON object".into()))?;
    let perms = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()
        .ok_or_else(|| werr("`permissions` is not an object".into()))?;
    let allow = perms
        .entry("allow")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| werr("`permissions.allow` is not an array".into()))?;
    let mut added = 0;
    for r in rules {
        if !allow.iter().any(|v| v.as_str() == Some(r)) {
            allow.push(Value::String(r.clone()));
            added += 1;
        }
    }
    if added == 0 {
        return Ok(0);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| werr(e.to_string()))?;
    }
    let text = serde_json::to_string_pretty(&doc).map_err(|e| werr(e.to_string()))?;
    // Write a sibling and rename, so a crash never leaves a torn settings file.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n").map_err(|e| werr(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| werr(e.to_string()))?;
    Ok(added)
}
