//! Peak memory of a `run_command` that prints 20 MB (issue 14). The output streams to
//! the session's `results` directory, so the process's peak RSS should barely move.
//! Prints the peak RSS after a warm-up run (a tiny command through the same path), the
//! peak after the 20 MB command and a read of the middle of its saved output, and the
//! difference (target: at most 50 MB).
//!
//! `cargo run --release --example offload_rss`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::sync::Arc;
use std::time::Duration;

use crewmaster::agent::catalog::Catalog;
use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{AgentSpec, RunRequest};
use crewmaster::offload::ResultsDir;
use crewmaster::permission::{PermissionMode, Policy};
use crewmaster::provider::scripted::ScriptedProvider;
use crewmaster::session::{Orchestration, SessionConfig, SessionHandle};
use crewmaster::tools::{CommandSandbox, Registry, builtin_tools};

/// Lines of `row %08.0f`: 13 bytes each, 20.8 MB.
const ROWS: usize = 1_600_000;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmHWM:")
                .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0))
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let root = tempfile::tempdir()?;
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&cwd)?;
    let session_dir = root.path().join("session");
    let results = ResultsDir::of_session(&session_dir);
    let policy = Policy {
        results_dir: Some(results.ensure()?),
        ..Policy::default()
    };
    let saved = results.path().join("big.txt");
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"id": "warm", "name": "run_command",
            "input": {"command": "seq -f 'row %08.0f' 1 1000"}}]},
        {"text": "warmed up"},
        {"tool_calls": [{"id": "big", "name": "run_command",
            "input": {"command": format!("seq -f 'row %08.0f' 1 {ROWS}")}}]},
        {"tool_calls": [{"id": "mid", "name": "read_file",
            "input": {"path": saved, "offset": ROWS / 2, "limit": 2}}]},
        {"text": "done"}
    ]});
    let provider = ScriptedProvider::new(serde_json::from_value(script)?);
    let session = SessionHandle::start(
        SessionConfig::builder(
            cwd.clone(),
            Arc::new(provider.clone()),
            AgentSpec {
                id: "lead".into(),
                model: "script".into(),
                system_prompt: "lead".into(),
                allowed_tools: None,
                max_turns: 10,
                max_tokens: 1000,
            },
            Arc::new(Registry::with_tools(builtin_tools())?),
        )
        .permission_mode(PermissionMode::BypassPermissions)
        .policy(policy)
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(120))
        .orchestration(Orchestration {
            session_dir: session_dir.clone(),
            catalog: Arc::new(Catalog::default()),
            worktrees: false,
            worktree_base: None,
            max_concurrent_agents: 1,
            subagent_max_turns: 5,
            teams_dir: None,
            restore_team: None,
            workers: None,
        })
        .build(),
    )
    .await?;
    let chat = |task: &str| RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    };
    session.run(chat("warm up")).await?;
    let baseline = peak_rss_kib();
    session.run(chat("print 20 MB")).await?;
    let peak = peak_rss_kib();
    let size = std::fs::metadata(&saved)?.len();
    let requests = provider.requests();
    let last = requests
        .last()
        .map(|r| r.messages.to_vec())
        .unwrap_or_default();
    let results: Vec<String> = last
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            crewmaster::protocol::ContentBlock::ToolResult(r) => Some(r.content.clone()),
            _ => None,
        })
        .collect();
    let preview = results.iter().rev().nth(1).map_or(0, String::len);
    let middle = results.last().cloned().unwrap_or_default();
    println!("command output saved: {size} bytes in {}", saved.display());
    println!("preview shown to the model: {preview} bytes");
    println!(
        "middle read back: {}",
        middle.trim_end().replace('\n', " | ")
    );
    println!(
        "peak RSS after warm-up (baseline): {:.1} MB",
        baseline as f64 / 1024.0
    );
    println!(
        "peak RSS after the 20 MB command:  {:.1} MB",
        peak as f64 / 1024.0
    );
    let growth = peak.saturating_sub(baseline) as f64 / 1024.0;
    println!(
        "growth: {growth:.1} MB ({} the 50 MB target)",
        if growth <= 50.0 { "within" } else { "OVER" }
    );
    session.shutdown().await;
    Ok(())
}
