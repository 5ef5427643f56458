//! Per-turn cost of the agent loop end to end (issue 15, "Per-call overhead"): the lead
//! of a real session — scripted model, permission engine, gate, executor, hooks actor,
//! transcript written through — runs N turns, each making one `read_file` call, then
//! ends. Printed: µs per turn for the whole run, for its first and last 10% of turns (a
//! cost per turn that grows with the conversation shows as a gap), and the same-process
//! baseline: the scripted model streaming the same turns plus the same `read_file` run
//! directly, with no loop around them.
//!
//! Two sessions are measured: one without hooks, and one with a hook configured for an
//! event no tool call fires (`Notification`), which starts the hooks actor.
//!
//! `cargo run --release --example turn_bench -- [TURNS] [ROUNDS]` (defaults 400 and 3)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{AgentSpec, RunRequest};
use crewmaster::events::EventBus;
use crewmaster::hooks::{HookEvent, HookTable, Origin};
use crewmaster::provider::scripted::{Script, ScriptedProvider};
use crewmaster::provider::{ModelRequest, Provider, StreamEvent};
use crewmaster::session::{Orchestration, SessionConfig, SessionHandle, SessionHooks};
use crewmaster::tools::{CommandSandbox, Registry, ToolContext, builtin_tools};
use futures::StreamExt;

/// The file each turn reads: about what a small source file gives back.
fn write_project(cwd: &Path) -> anyhow::Result<()> {
    let text: String = (0..40)
        .map(|i| format!("line {i:>3}: some source text of a typical width, \"quoted\"\n"))
        .collect();
    std::fs::write(cwd.join("a.txt"), text)?;
    Ok(())
}

fn script(turns: usize) -> anyhow::Result<Script> {
    let mut list: Vec<serde_json::Value> = (0..turns)
        .map(|_| {
            serde_json::json!({"text": "Reading.",
                "tool_calls": [{"name": "read_file", "input": {"path": "a.txt"}}]})
        })
        .collect();
    list.push(serde_json::json!({"text": "Done."}));
    Ok(serde_json::from_value(
        serde_json::json!({ "turns": list }),
    )?)
}

/// A hook table with one hook on an event no tool call fires.
fn unrelated_hook() -> HookTable {
    let value =
        serde_json::json!({"Notification": [{"hooks": [{"type": "command", "command": "true"}]}]});
    let origin = Origin {
        file: "bench".into(),
        scope: "user".into(),
        from_project: false,
    };
    let mut warnings = Vec::new();
    let session = crewmaster::hooks::config::parse(&value, &origin, |e| e, &mut warnings);
    assert_eq!(session.len(), 1, "{warnings:?}");
    assert_eq!(session[0].event, HookEvent::Notification);
    HookTable {
        session,
        by_agent_type: Default::default(),
    }
}

/// µs per turn of one run of `turns` turns: (whole run, first 10%, last 10%).
async fn session_run(turns: usize, hooks: Option<HookTable>) -> anyhow::Result<(f64, f64, f64)> {
    let root = tempfile::tempdir()?;
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&cwd)?;
    write_project(&cwd)?;
    let session_dir = root.path().join("session");
    let events = EventBus::new();
    // The binary's transcript: every line written through inside `publish`.
    let transcript = root.path().join("transcript.jsonl");
    let recorder =
        crewmaster::transcript::record(&events, transcript.clone(), root.path().join("agents"));
    // Turn boundaries as the loop reports them, timed as they happen.
    let mut finished = events.subscribe();
    let marks = tokio::spawn(async move {
        let mut at = Vec::new();
        while let Some(e) = finished.recv().await {
            if let crewmaster::events::EventKind::TurnFinished { .. } = e.kind {
                at.push(Instant::now());
            }
        }
        at
    });
    let provider = ScriptedProvider::new(script(turns)?).without_memory();
    // No auto-compaction: its summary request would take a turn of the script, and
    // this measures the loop, not the compaction (`tests/suite/compaction.rs` has that).
    let session = SessionHandle::start(
        SessionConfig::builder(
            cwd.clone(),
            Arc::new(provider),
            AgentSpec {
                id: "lead".into(),
                model: "script".into(),
                system_prompt: "lead".into(),
                allowed_tools: None,
                max_turns: turns as u32 + 1,
                max_tokens: 1000,
            },
            Arc::new(Registry::with_tools(builtin_tools())?),
        )
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(60))
        .events(events.clone())
        .orchestration(Orchestration {
            session_dir,
            catalog: Default::default(),
            worktrees: false,
            worktree_base: None,
            max_concurrent_agents: 1,
            subagent_max_turns: 5,
            teams_dir: None,
            restore_team: None,
            workers: None,
        })
        .hooks(hooks.map(|hooks| SessionHooks {
            hooks,
            project_dir: cwd.clone(),
            session_id: "bench".into(),
            transcript_path: transcript.clone(),
            source: "startup",
        }))
        .context(crewmaster::agent::context::ContextSettings {
            auto_compact: None,
            ..Default::default()
        })
        .build(),
    )
    .await?;
    let start = Instant::now();
    let outcome = session
        .run(RunRequest {
            mode: AgentMode::Chat,
            task: "read a.txt again and again".into(),
            plan: None,
        })
        .await?;
    let total = start.elapsed();
    anyhow::ensure!(
        outcome.turns as usize == turns + 1 && outcome.tool_calls as usize == turns,
        "the run took {} turns and {} calls: {}",
        outcome.turns,
        outcome.tool_calls,
        outcome.result
    );
    session.shutdown().await;
    events.close();
    let _ = recorder.await;
    let at = marks.await?;
    let tenth = (turns / 10).max(1);
    let span =
        |from: usize, to: usize| (at[to] - at[from]).as_secs_f64() * 1e6 / (to - from) as f64;
    Ok((
        total.as_secs_f64() * 1e6 / (turns + 1) as f64,
        span(0, tenth),
        span(at.len() - 1 - tenth, at.len() - 1),
    ))
}

/// µs per turn of the same work without the loop: the scripted model streams the same
/// turns (a one-message request each) and `read_file` runs directly.
async fn baseline(turns: usize) -> anyhow::Result<f64> {
    let root = tempfile::tempdir()?;
    write_project(root.path())?;
    let provider = ScriptedProvider::new(script(turns)?).without_memory();
    let registry = Registry::with_tools(builtin_tools())?;
    let tool = registry
        .get("read_file")
        .ok_or_else(|| anyhow::anyhow!("no read_file tool"))?;
    let request = ModelRequest {
        model: "script".into(),
        system: "lead".into(),
        messages: vec![crewmaster::protocol::Message::user_text("task")].into(),
        tools: Vec::new().into(),
        max_tokens: 1000,
        agent: "lead".into(),
    };
    let start = Instant::now();
    for _ in 0..=turns {
        let mut stream = provider.stream(request.clone());
        while let Some(event) = stream.next().await {
            if let Ok(StreamEvent::ToolCall { call }) = event {
                let input = serde_json::from_str(&call.arguments)?;
                let ctx = ToolContext::new(root.path().to_path_buf(), "lead");
                std::hint::black_box(tool.run(input, ctx).await?);
            }
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / (turns + 1) as f64)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let turns: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(400);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(3);
    println!("{turns} turns, one read_file call each, {rounds} rounds");
    for round in 1..=rounds {
        let base = baseline(turns).await?;
        let (plain, p_first, p_last) = session_run(turns, None).await?;
        let (hooked, h_first, h_last) = session_run(turns, Some(unrelated_hook())).await?;
        println!(
            "round {round}: baseline {base:.1} µs/turn | no hooks {plain:.1} µs/turn ({:.1}×; first 10% {p_first:.1}, last 10% {p_last:.1}) | unrelated hook {hooked:.1} µs/turn ({:.1}×; first {h_first:.1}, last {h_last:.1})",
            plain / base,
            hooked / base,
        );
    }
    Ok(())
}
