//! `crew permissions check|list`: the permission engine from the command line, reading
//! the same settings files an agent would. `HOME` decides the user file; the project root
//! is the nearest ancestor of `--cwd` (default: the current directory) holding `.git` or
//! `.crew` (never `HOME` itself), else `--cwd` itself — see `find_project_root`.
//!
//! Exit codes of `check`: 0 allow, 2 ask, 3 deny (errors are left to the caller).

use crate::tools::rule_names::LoadPolicy;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::Print;
use crate::config::settings;
use crate::permission::{
    CheckRequest, Decision, PermissionMode, Policy, Verdict, check, find_project_root,
};
use crate::protocol::ToolCall;

/// Exit code of `check` for Allow.
pub const EXIT_ALLOW: i32 = 0;
/// Exit code of `check` for Ask (2 is kept for bad arguments, as everywhere in crew).
pub const EXIT_ASK: i32 = 1;
/// Exit code of `check` for Deny.
pub const EXIT_DENY: i32 = 3;

/// `crew permissions …`
#[derive(Debug, Clone, clap::Subcommand)]
pub enum PermissionsCmd {
    /// Decide one tool call as an agent's permission engine would, and print why.
    Check {
        /// The tool name as a model would send it (`read_file`, `run_command`, `mcp__s__t`),
        /// or Claude Code's (`Bash`, `Read`, `Edit`, `Write`, `Glob`, `Grep`, …). An unknown
        /// tool is an error (exit 2).
        #[arg(long)]
        tool: String,
        /// The raw JSON arguments; text that is not valid JSON is a Deny, not an error.
        #[arg(long)]
        input: String,
        /// strict, default, acceptEdits, bypassPermissions, dontAsk or auto (default: the
        /// settings' defaultMode; in auto, an Ask is what the classifier would judge).
        #[arg(long = "permission-mode", value_parser = parse_mode)]
        permission_mode: Option<PermissionMode>,
        /// The agent's working directory (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Print one JSON object (`decision`, `source`, `reason`, `rule`, `category`,
        /// `target`, `explicit_ask`, `mode`, `warnings`).
        #[arg(long)]
        json: bool,
    },
    /// Show the effective rules by layer and the file each came from.
    List {
        /// The directory whose project settings to read (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn parse_mode(s: &str) -> Result<PermissionMode, crate::permission::mode::UnknownMode> {
    s.parse()
}

/// Runs a `crew permissions` subcommand, writing to `out`; returns the exit code.
pub fn run(cmd: PermissionsCmd, out: &mut dyn Write) -> anyhow::Result<i32> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    run_with_home(cmd, out, home.as_deref())
}

/// `run` with an explicit home directory (tests; `run` passes `$HOME`).
pub fn run_with_home(
    cmd: PermissionsCmd,
    out: &mut dyn Write,
    home: Option<&Path>,
) -> anyhow::Result<i32> {
    match cmd {
        PermissionsCmd::Check {
            tool,
            input,
            permission_mode,
            cwd,
            json,
        } => {
            let (cwd, policy, warnings, known) = load(cwd, home)?;
            let tool = known_tool(&tool, &known)?;
            let mode = permission_mode.unwrap_or(policy.default_mode);
            let req = CheckRequest {
                spec: crate::tools::builtin_permission(&tool),
                call: ToolCall {
                    id: "cli".into(),
                    name: tool,
                    arguments: input,
                },
                cwd,
                mode,
            };
            let d = check(&req, &policy);
            print_decision(out, &d, mode, &warnings, Print::json_if(json))?;
            Ok(match d.verdict {
                Verdict::Allow => EXIT_ALLOW,
                Verdict::Ask => EXIT_ASK,
                Verdict::Deny => EXIT_DENY,
            })
        }
        PermissionsCmd::List { cwd, json } => {
            let (cwd, policy, warnings, _) = load(cwd, home)?;
            print_list(out, &cwd, &policy, home, &warnings, Print::json_if(json))?;
            Ok(0)
        }
    }
}

/// `--tool` as the registry names it: Claude Code's names map to crew's (`Bash` is
/// `run_command`), MCP tools (`mcp__server__tool`) pass as given, and anything else no
/// session would have is an error naming the tools there are.
fn known_tool(tool: &str, known: &[String]) -> anyhow::Result<String> {
    let name = crate::tools::rule_names::tool_name(tool);
    if known.iter().any(|k| k == name) || name.starts_with("mcp__") {
        return Ok(name.to_string());
    }
    anyhow::bail!(
        "--tool {tool}: no such tool; use a crew tool name ({}), Claude Code's (Bash, Read, \
         Edit, Write, Glob, Grep), or an MCP tool's mcp__SERVER__TOOL",
        known.join(", ")
    )
}

/// The project's working directory, its policy, the settings' warnings and the names of
/// the tools a session there has (built-in and orchestration).
fn load(
    cwd: Option<PathBuf>,
    home: Option<&Path>,
) -> anyhow::Result<(PathBuf, Policy, Vec<String>, Vec<String>)> {
    let cwd = match cwd {
        Some(c) => c,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    let root = find_project_root(&cwd, home);
    let (mut policy, warnings) = Policy::load(&root, home)?;
    // `agent` calls are decided from the agent types, as in a session.
    let mut catalog = crate::agent::catalog::Catalog::load(&root, home);
    // The installed plugins' agents count too (without `--plugin-dir` this cannot fail).
    if let Ok(plugins) = crate::plugins::Plugins::load(&root, home, &[]) {
        catalog.add_plugins(&plugins);
    }
    let tools: Vec<_> = crate::tools::builtin_tools()
        .into_iter()
        .chain(crate::tools::orchestration_tools(&catalog.agent_types()))
        .collect();
    let known = tools.iter().map(|t| t.definition().name.clone()).collect();
    if let Ok(registry) = crate::tools::Registry::with_tools(tools) {
        let worktrees = crate::agent::delegate::worktrees_at(&cwd);
        policy.delegation = crate::agent::delegate::delegation(&catalog, &registry, worktrees);
    }
    Ok((
        cwd,
        policy,
        warnings.iter().map(ToString::to_string).collect(),
        known,
    ))
}

fn name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn print_decision(
    out: &mut dyn Write,
    d: &Decision,
    mode: PermissionMode,
    warnings: &[String],
    print: Print,
) -> anyhow::Result<()> {
    if print == Print::Json {
        let v = serde_json::json!({
            "decision": name(&d.verdict),
            "source": d.source.to_string(),
            "reason": d.reason,
            "rule": d.rule,
            "category": d.category.map(|c| name(&c)),
            "target": d.target,
            "explicit_ask": d.explicit_ask,
            "mode": mode.as_str(),
            "warnings": warnings,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    for w in warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(out, "decision: {}", name(&d.verdict))?;
    writeln!(out, "source:   {}", d.source)?;
    writeln!(out, "reason:   {}", d.reason)?;
    writeln!(out, "mode:     {mode}")?;
    if let Some(c) = d.category {
        writeln!(out, "category: {}", name(&c))?;
    }
    if let Some(t) = &d.target {
        writeln!(out, "target:   {t}")?;
    }
    if let Some(r) = &d.rule {
        writeln!(out, "rule:     {r}")?;
    }
    Ok(())
}

fn print_list(
    out: &mut dyn Write,
    cwd: &Path,
    policy: &Policy,
    home: Option<&Path>,
    warnings: &[String],
    print: Print,
) -> anyhow::Result<()> {
    let root = policy
        .project_root
        .clone()
        .unwrap_or_else(|| cwd.to_path_buf());
    let files: Vec<(String, PathBuf, bool)> = settings::files(&root, home)
        .into_iter()
        .map(|(l, p)| {
            let exists = p.exists();
            (name(&l), p, exists)
        })
        .collect();
    let rules = policy.rule_infos();
    if print == Print::Json {
        let v = serde_json::json!({
            "project_root": root,
            "files": files.iter().map(|(l, p, e)| serde_json::json!({"layer": l, "path": p, "exists": e})).collect::<Vec<_>>(),
            "default_mode": policy.default_mode.as_str(),
            "additional_directories": policy.additional_roots,
            "sandbox": policy.sandbox,
            "model": policy.model,
            "rules": rules,
            "warnings": warnings,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    for w in warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(out, "project root: {}", root.display())?;
    for (layer, path, exists) in &files {
        let state = if *exists { "" } else { " (absent)" };
        writeln!(out, "{layer:<8} {}{state}", path.display())?;
    }
    writeln!(out, "defaultMode: {}", policy.default_mode)?;
    for d in &policy.additional_roots {
        writeln!(out, "additionalDirectory: {}", d.display())?;
    }
    if rules.is_empty() {
        writeln!(out, "no rules")?;
    }
    for r in &rules {
        let origin = r
            .file
            .as_ref()
            .map(|f| format!("{} [{}]", f.display(), r.index))
            .unwrap_or_else(|| "this session".into());
        let suspended = r
            .suspended_in_auto
            .as_ref()
            .map(|why| format!("  [suspended in auto: {why}]"))
            .unwrap_or_default();
        writeln!(
            out,
            "{:<8} {:<5} {}  ({origin}){suspended}",
            name(&r.layer),
            name(&r.kind),
            r.rule
        )?;
    }
    Ok(())
}
