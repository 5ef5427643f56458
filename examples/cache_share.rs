//! Prompt-cache share of a scripted agent run (issue 14). A lead with the real built-in
//! tools and system prompt makes N model turns (default 20), each calling tools on a
//! small project (reading files of 1–12 KB, listing, searching, running commands). The
//! scripted model bills every request as Anthropic's prompt cache would, from the
//! breakpoints our Anthropic codec sends (`provider::cache_sim`). Prints each request's
//! cached / created / uncached input tokens and the share of input read from the cache
//! over turns ≥ 2 (target: ≥ 90 %).
//!
//! `cargo run --release --example cache_share -- [N]`
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
use crewmaster::events::{EventBus, EventKind};
use crewmaster::offload::ResultsDir;
use crewmaster::permission::{PermissionMode, Policy};
use crewmaster::provider::scripted::ScriptedProvider;
use crewmaster::session::{Orchestration, SessionConfig, SessionHandle};
use crewmaster::tools::{CommandSandbox, Registry, builtin_tools};
use serde_json::{Value, json};

/// The tool calls of turn `i` (1-based), cycling through typical work.
fn calls(i: usize) -> Value {
    let file = format!("src/mod{:02}.rs", i % 12);
    match i % 4 {
        0 => json!([{"name": "read_file", "input": {"path": file}}]),
        1 => json!([{"name": "search_code", "input": {"pattern": format!("fn f{}", i % 7)}},
                    {"name": "read_file", "input": {"path": "README.md"}}]),
        2 => json!([{"name": "run_command", "input": {"command": "ls -la src | head -20"}}]),
        _ => json!([{"name": "find_files", "input": {"pattern": "src/*.rs"}},
                    {"name": "read_file", "input": {"path": file, "offset": 1, "limit": 40}}]),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let turns: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let root = tempfile::tempdir()?;
    let cwd = root.path().join("project");
    std::fs::create_dir_all(cwd.join("src"))?;
    for m in 0..12 {
        // 1 KB to 12 KB files.
        let body: String = (0..(m + 1) * 25)
            .map(|f| format!("pub fn f{f}(x: u32) -> u32 {{ x + {f} }} // mod {m}\n"))
            .collect();
        std::fs::write(cwd.join(format!("src/mod{m:02}.rs")), body)?;
    }
    std::fs::write(
        cwd.join("README.md"),
        "# demo\n\nA small project.\n".repeat(20),
    )?;
    let session_dir = root.path().join("session");
    let policy = Policy {
        results_dir: Some(ResultsDir::of_session(&session_dir).ensure()?),
        ..Policy::default()
    };
    let mut script_turns: Vec<Value> = (1..turns)
        .map(|i| json!({"text": format!("Step {i}: looking further."), "tool_calls": calls(i)}))
        .collect();
    script_turns.push(json!({"text": "Done: the project is understood."}));
    let script = json!({"model": "claude-sonnet-4-5", "cache": true, "turns": script_turns});
    let provider = ScriptedProvider::new(serde_json::from_value(script)?);
    let events = EventBus::new();
    let mut rx = events.subscribe();
    let session = SessionHandle::start(
        SessionConfig::builder(
            cwd.clone(),
            Arc::new(provider),
            AgentSpec {
                id: "lead".into(),
                model: "claude-sonnet-4-5".into(),
                system_prompt: crewmaster::agent::prompt::lead_system_prompt(&cwd),
                allowed_tools: None,
                max_turns: turns as u32 + 1,
                max_tokens: 8192,
            },
            Arc::new(Registry::with_tools(builtin_tools())?),
        )
        .permission_mode(PermissionMode::BypassPermissions)
        .policy(policy)
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(60))
        .events(events.clone())
        .orchestration(Orchestration {
            session_dir,
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
    let outcome = session
        .run(RunRequest {
            mode: AgentMode::Chat,
            task: "Get to know this project.".into(),
            plan: None,
        })
        .await?;
    session.shutdown().await;
    events.close();
    println!("turn   cached  created uncached   share     cost");
    let (mut read, mut input, mut cost) = (0u64, 0u64, 0.0);
    while let Some(event) = rx.recv().await {
        if let EventKind::RequestUsage {
            turn,
            cached,
            created,
            uncached,
            cost_usd,
            ..
        } = event.kind
        {
            let all = cached + created + uncached;
            let share = cached as f64 / all.max(1) as f64;
            let c = cost_usd.unwrap_or(0.0);
            println!(
                "{turn:>4} {cached:>8} {created:>8} {uncached:>8} {:>6.1} % ${c:.4}",
                share * 100.0
            );
            cost += c;
            if turn >= 2 {
                read += cached;
                input += all;
            }
        }
    }
    println!(
        "{} turns ({:?}); cost ${cost:.4}; cache share on turns >= 2: {:.1} % ({read} of {input} input tokens)",
        outcome.turns,
        outcome.status,
        read as f64 * 100.0 / input.max(1) as f64
    );
    Ok(())
}
