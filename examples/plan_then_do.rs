//! Plan, approve, do: a scripted model first investigates read-only in Plan mode (its
//! attempt to write is refused by the gate), then carries out the approved plan in Do
//! mode, where the write goes through.
//!
//! Run with `cargo run --example plan_then_do`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::sync::Arc;
use std::time::Duration;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{AgentSpec, RunRequest};
use crewmaster::events::{Event, EventBus, EventKind};
use crewmaster::permission::PermissionMode;
use crewmaster::provider::scripted::ScriptedProvider;
use crewmaster::session::{SessionConfig, SessionHandle};
use crewmaster::tools::{CommandSandbox, Registry, builtin_tools};

const SCRIPT: &str = r#"{
  "turns": [
    { "text": "Let me see what is there.",
      "tool_calls": [ { "name": "find_files", "input": { "pattern": "**/*" } },
                      { "name": "read_file", "input": { "path": "greeting.txt" } } ] },
    { "text": "I will try to fix it right away.",
      "tool_calls": [ { "name": "write_file", "input": { "path": "greeting.txt", "content": "too early\n" } } ] },
    { "text": "Plan:\n1. Replace `helo` with `hello` in greeting.txt.\n2. Read the file back to check." },
    { "text": "Following the approved plan.",
      "tool_calls": [ { "name": "edit_file", "input": { "path": "greeting.txt", "old_string": "helo", "new_string": "hello" } } ] },
    { "tool_calls": [ { "name": "read_file", "input": { "path": "greeting.txt" } } ] },
    { "text": "Done: greeting.txt now says hello." }
  ]
}"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let cwd = std::fs::canonicalize(dir.path())?;
    std::fs::write(cwd.join("greeting.txt"), "helo, world\n")?;

    let provider = ScriptedProvider::new(ScriptedProvider::parse(SCRIPT, "example".as_ref())?);
    let events = EventBus::new();
    let mut rx = events.subscribe();
    let session = SessionHandle::start(
        SessionConfig::builder(
            cwd.clone(),
            Arc::new(provider.clone()),
            AgentSpec {
                id: "lead".into(),
                model: "script".into(),
                system_prompt: "You are a careful coding agent.".into(),
                allowed_tools: None,
                max_turns: 10,
                max_tokens: 4096,
            },
            Arc::new(Registry::with_tools(builtin_tools())?),
        )
        .permission_mode(PermissionMode::AcceptEdits)
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(60))
        .events(events.clone())
        .build(),
    )
    .await?;

    let task = "Fix the typo in greeting.txt".to_string();
    let plan = session
        .run(RunRequest {
            mode: AgentMode::Plan,
            task: task.clone(),
            plan: None,
        })
        .await?;
    print_events(&mut rx);
    println!("\nplan proposed:\n{}", plan.result);
    println!("(approving it)");
    let done = session
        .run(RunRequest {
            mode: AgentMode::Do,
            task,
            plan: Some(plan.result),
        })
        .await?;
    print_events(&mut rx);
    println!("\nresult: {}", done.result);
    println!(
        "greeting.txt: {}",
        std::fs::read_to_string(cwd.join("greeting.txt"))?.trim()
    );

    let requests = provider.requests();
    println!(
        "\nmodel saw {} tools while planning and {} while doing",
        requests[0].tools.len(),
        requests[3].tools.len()
    );
    session.shutdown().await;
    Ok(())
}

/// Prints what happened so far: runs, tool calls and their results.
fn print_events(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) {
    while let Ok(e) = rx.try_recv() {
        match e.kind {
            EventKind::RunStarted { mode, .. } => println!("\n=== {mode} run ==="),
            EventKind::ToolCallStarted { call } => println!("→ {} {}", call.name, call.arguments),
            EventKind::ToolCallFinished {
                name,
                is_error,
                summary,
                ..
            } => {
                println!("{} {name}: {summary}", if is_error { "✗" } else { "✓" })
            }
            _ => {}
        }
    }
}
