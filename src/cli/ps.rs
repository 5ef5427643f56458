//! `crew ps`: every live session (of every project, or of one with `--project`), and in
//! each every agent — lead, subagents, teammates, remote ones with their node — with what
//! it is doing, its worktree and branch, tokens and cost, then the background commands.
//! `--json` prints the same as data; `-w` refreshes it in place.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};

use crate::session::live::{board::Board, control, registry, snapshot};

/// `crew ps [--project DIR] [--json] [-w]`
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Only the sessions of the project at (or above) this directory.
    #[arg(long)]
    pub project: Option<PathBuf>,
    /// Print `{"sessions": [...]}` instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Refresh every second, in place, until interrupted.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

/// The live sessions, each as its control socket (or, failing that, its files) shows it.
pub(crate) async fn sessions(project: Option<&Path>) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in registry::live() {
        if project.is_some_and(|p| p != entry.project) {
            continue;
        }
        let answered = match &entry.socket {
            Some(socket) => control::ask(socket, "snapshot").await.ok(),
            None => None,
        };
        out.push(answered.unwrap_or_else(|| snapshot::snapshot(&entry, &Board::default())));
    }
    out
}

/// Runs `crew ps`; returns the exit code.
pub(crate) async fn run(
    args: PsArgs,
    cwd: &Path,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    let project = match &args.project {
        Some(dir) => {
            let dir = cwd.join(dir);
            let dir = dir
                .canonicalize()
                .with_context(|| format!("--project {}: no such directory", dir.display()))?;
            Some(crate::store::project_root(&dir))
        }
        None => None,
    };
    loop {
        let sessions = sessions(project.as_deref()).await;
        if args.watch {
            // Home, then clear to the end: the new table replaces the old in place.
            write!(out, "\x1b[H\x1b[2J")?;
        }
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json!({ "sessions": sessions }))?
            )?;
        } else {
            table(&sessions, out)?;
        }
        out.flush()?;
        if !args.watch {
            return Ok(0);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn table(sessions: &[Value], out: &mut (dyn Write + Send)) -> anyhow::Result<()> {
    if sessions.is_empty() {
        writeln!(out, "no live crew sessions")?;
    }
    let now = crate::tasks::now_ms();
    for s in sessions {
        let age = now.saturating_sub(s["started"].as_u64().unwrap_or(now)) / 1000;
        writeln!(
            out,
            "session {}  pid {}  up {}  {}",
            text(&s["id"]),
            s["pid"],
            duration(age),
            text(&s["project"])
        )?;
        for a in s["agents"].as_array().into_iter().flatten() {
            let mut state = text(&a["state"]);
            if let Some(tool) = a["tool"].as_str() {
                let secs = a["tool_seconds"].as_u64().unwrap_or(0);
                state = match state.as_str() {
                    "waiting for approval" => format!("waiting for approval of {tool} ({secs}s)"),
                    _ => format!("running {tool} for {secs}s"),
                };
            }
            let mut line = format!(
                "  {:<10} {:<16} {:<8} {}",
                text(&a["id"]),
                text(&a["name"]),
                text(&a["kind"]),
                state
            );
            if let Some(node) = a["node"].as_str() {
                line += &format!("  on {node}");
            }
            if let Some(branch) = a["branch"].as_str().filter(|_| a["kind"] != "lead") {
                line += &format!("  branch {branch}");
            }
            line += &format!("  {} tokens", a["tokens"].as_u64().unwrap_or(0));
            if let Some(cost) = a["cost_usd"].as_f64() {
                line += &format!("  ${cost:.4}");
            }
            if let Some(d) = a["description"].as_str().filter(|d| !d.is_empty()) {
                line += &format!("  — {}", first_line(d));
            }
            writeln!(out, "{line}")?;
        }
        for c in s["commands"].as_array().into_iter().flatten() {
            writeln!(
                out,
                "  {:<10} command  {:<9} {}",
                text(&c["id"]),
                text(&c["status"]),
                first_line(c["command"].as_str().unwrap_or_default())
            )?;
        }
    }
    Ok(())
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

fn duration(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}
