//! Approvals turned into rules: "allow for the session" adds session-layer allow rules
//! derived from the call; "always allow" also appends them, deduplicated, to
//! `<project>/.crew/settings.local.json`, where the next engine loads them.
//!
//! Derived rules are as narrow as the call: `Write(/src/main.rs)`, one `Bash(<exact
//! part>)` per part of a literal command, `Agent(<type>)`, `mcp__server__tool`. A command
//! with expansions is granted only as itself, `Bash(=<the whole command>)` (a per-part
//! `Bash(cat $VAR)` would also allow `X=~/.ssh/id_rsa; cat $X`). What a hard check or a
//! deny rule refuses cannot be granted.

use std::path::Path;

use super::classify::{self, Target};
use super::rules::{Rule, RuleKind, Subject, escape_glob};
use super::web::FetchUrl;
use super::{CheckRequest, Layer, PermissionMode, Policy, RuleName, Source, Verdict, check, shell};
use crew_config::settings::SettingsError;

/// Why a grant was refused.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// A hard check or deny rule refuses the call; no grant can change that.
    #[error("cannot grant this call: {0}")]
    Refused(String),
    /// The tool has no rule syntax (system tools, unknown tools).
    #[error("cannot grant `{0}`: the tool has no permission rules")]
    NoRule(String),
    /// Forever grants need a project root.
    #[error("cannot persist the grant: the engine has no project root")]
    NoProject,
    /// The settings file could not be written.
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

/// The allow rules (as text) that a grant of this call adds.
pub fn grant_rules(req: &CheckRequest, policy: &Policy) -> Result<Vec<String>, GrantError> {
    // Judge the call as an interactive user would see it, so dontAsk's conversions and
    // the mode fallback do not hide a hard refusal.
    let probe = CheckRequest {
        mode: PermissionMode::Strict,
        ..req.clone()
    };
    let d = check(&probe, policy);
    if d.verdict == Verdict::Deny {
        return Err(GrantError::Refused(d.reason));
    }
    if matches!(d.source, Source::Unknown) && req.spec.is_none() {
        return Err(GrantError::NoRule(req.call.name.clone()));
    }
    let c = classify::classify(&req.call.name, req.spec.as_ref(), &req.call.arguments)
        .map_err(|e| GrantError::Refused(e.to_string()))?;
    let mut out: Vec<String> = Vec::new();
    match &c.target {
        Target::Path(_) => {
            let real = d.target.clone().unwrap_or_default();
            // The tool's own rule name, from its permission spec.
            let Some(name) = c.rule_names.first().map(|n| n.as_str()) else {
                return Err(GrantError::NoRule(req.call.name.clone()));
            };
            let spec = match policy
                .project_root
                .as_deref()
                .and_then(|root| Path::new(&real).strip_prefix(root).ok())
            {
                Some(rel) if rel.as_os_str().is_empty() => "/".to_string(),
                Some(rel) => format!("/{}", escape_glob(&rel.to_string_lossy())),
                None => format!("/{}", escape_glob(&real)),
            };
            out.push(format!("{name}({spec})"));
        }
        Target::Command(cmd) => {
            let script = shell::parse(cmd).map_err(|e| GrantError::Refused(e.to_string()))?;
            let expanded = script.parts.iter().any(shell::Part::expanded);
            if expanded {
                out.push(exact_command(cmd)?);
            }
            for part in script
                .parts
                .iter()
                .filter(|p| !p.argv.is_empty() && !expanded)
            {
                let text = part.full_text();
                // `=` keeps `*`, `:*` and leading `=`/`~`/`!` literal.
                let rule = if text.contains('*') || text.starts_with(['=', '~', '!']) {
                    format!("Bash(={text})")
                } else {
                    format!("Bash({text})")
                };
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
        Target::Agent(t) => out.push(format!("Agent({t})")),
        Target::Url(u) => {
            let url = FetchUrl::parse(u).map_err(|e| GrantError::Refused(e.to_string()))?;
            // The host on every port, as a human approving "this site" means it.
            out.push(url.domain_rule());
        }
        Target::Mcp(n) => out.push(n.clone()),
        Target::None => return Err(GrantError::NoRule(req.call.name.clone())),
    }
    if out.is_empty() {
        return Err(GrantError::NoRule(req.call.name.clone()));
    }
    Ok(out)
}

/// The rule allowing exactly this command text, or a refusal when no rule can say it.
fn exact_command(cmd: &str) -> Result<String, GrantError> {
    let raw = cmd.trim();
    let text = format!("Bash(={raw})");
    let subject = Subject::command(raw);
    match Rule::parse_with(&text, RuleKind::Allow, Layer::Session, None, &no_tool_names) {
        Ok(rule) if rule.is_exact() && rule.matches(&subject) => Ok(text),
        _ => Err(GrantError::Refused(format!(
            "`{raw}` holds variables, globs or substitutions and cannot be written as an exact rule; approve it once"
        ))),
    }
}

/// The tool-name lookup for parsing granted rules: none is needed, since a grant names a
/// rule name (`Write(…)`, `Bash(…)`, `Agent(…)`, `WebFetch(…)`) or an `mcp__` tool, never
/// a tool's own name or alias.
fn no_tool_names(_: &str) -> Option<RuleName> {
    None
}

/// Adds the call's rules to the policy's session layer; returns them.
pub fn grant_session(req: &CheckRequest, policy: &mut Policy) -> Result<Vec<String>, GrantError> {
    let texts = grant_rules(req, policy)?;
    add(policy, &texts, Layer::Session, None)?;
    Ok(texts)
}

/// Appends allow rules to a settings file, deduplicated; returns how many were new
/// (`config::settings::append_allow`, which the engine's actor hands in).
pub type AppendAllow = dyn Fn(&Path, &[String]) -> Result<usize, SettingsError>;

/// Appends the call's rules to `<project>/.crew/settings.local.json` with `append` (which
/// deduplicates: `config::settings::append_allow`) and adds them to the policy's local
/// layer at once; returns them.
pub fn grant_forever(
    req: &CheckRequest,
    policy: &mut Policy,
    append: &AppendAllow,
) -> Result<Vec<String>, GrantError> {
    let texts = grant_rules(req, policy)?;
    let root = policy.project_root.clone().ok_or(GrantError::NoProject)?;
    let path = root.join(".crew/settings.local.json");
    append(&path, &texts)?;
    add(policy, &texts, Layer::Local, Some(&path))?;
    Ok(texts)
}

fn add(
    policy: &mut Policy,
    texts: &[String],
    layer: Layer,
    file: Option<&Path>,
) -> Result<(), GrantError> {
    for t in texts {
        if policy
            .rules
            .iter()
            .any(|r| r.text == *t && r.kind == RuleKind::Allow && r.layer == layer)
        {
            continue;
        }
        let mut rule = Rule::parse_with(
            t,
            RuleKind::Allow,
            layer,
            policy.home.as_deref(),
            &no_tool_names,
        )
        .map_err(|e| GrantError::Refused(e.to_string()))?;
        rule.file = file.map(Path::to_path_buf);
        policy.rules.push(rule);
    }
    Ok(())
}
