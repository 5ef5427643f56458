//! Time to result of an adopted speculation against the same prompt run cold, in one run.
//!
//! A scripted model with a fixed latency per turn answers a three-turn task (read a
//! file, write one, answer). Cold: the user submits the prompt and the lead runs it.
//! Speculated: after the lead's previous turn the model suggests the prompt, a fork runs
//! it ahead while the user "reads" for READ_MS, then the user submits exactly the
//! suggestion and the speculation is adopted (the user submits at once, half-way
//! through the speculation, and after READ_MS) (its write goes through the lead's normal
//! write path). Both are timed from the submission to the result; medians of N runs,
//! each in a fresh session and directory.
//!
//! `cargo run --release --example speculation_bench -- [TURN_MS] [READ_MS] [N]`
//! (defaults 300, 1500 and 5).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::{AgentSpec, RunRequest};
use crewmaster::permission::PermissionMode;
use crewmaster::provider::scripted::{Script, ScriptedProvider};
use crewmaster::session::{SessionConfig, SessionHandle};
use crewmaster::speculation::{Limits, Resolution, Speculation, ahead};
use crewmaster::tools::{CommandSandbox, Registry};

const PROMPT: &str = "add a notes file";

fn task_turns(turn_ms: u64) -> String {
    format!(
        r#"[
  {{"delay_ms":{turn_ms},"tool_calls":[{{"name":"read_file","input":{{"path":"a.txt"}}}}]}},
  {{"delay_ms":{turn_ms},"tool_calls":[{{"name":"write_file","input":{{"path":"notes.txt","content":"notes\n"}}}}]}},
  {{"delay_ms":{turn_ms},"text":"Wrote notes.txt."}}
]"#
    )
}

/// The script of one session: the lead's turns, the suggestion and the speculation.
fn script(turn_ms: u64, cold: bool) -> Script {
    let task = task_turns(turn_ms);
    let lead = if cold {
        task.clone()
    } else {
        format!(r#"[{{"delay_ms":{turn_ms},"text":"I looked at a.txt."}}]"#)
    };
    let text = format!(
        r#"{{"turns":{lead},"agents":{{
            "suggestion":{{"turns":[{{"delay_ms":{turn_ms},"text":"{PROMPT}"}}]}},
            "speculation":{{"turns":{task}}}}}}}"#
    );
    serde_json::from_str(&text).expect("the bench script parses")
}

async fn session(dir: &std::path::Path, script: Script) -> SessionHandle {
    std::fs::write(dir.join("a.txt"), "alpha\n").expect("write a.txt");
    SessionHandle::start(
        SessionConfig::builder(
            dir.to_path_buf(),
            Arc::new(ScriptedProvider::new(script)),
            AgentSpec {
                id: "lead".into(),
                model: "script".into(),
                system_prompt: "bench".into(),
                allowed_tools: None,
                max_turns: 20,
                max_tokens: 1000,
            },
            Arc::new(Registry::with_tools(crewmaster::tools::builtin_tools()).expect("tools")),
        )
        .permission_mode(PermissionMode::AcceptEdits)
        .sandbox(CommandSandbox::None)
        .tool_timeout(Duration::from_secs(30))
        .build(),
    )
    .await
    .expect("the session starts")
}

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

/// Submission to result, cold.
async fn cold(turn_ms: u64) -> Duration {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().canonicalize().expect("canonical");
    let s = session(&dir, script(turn_ms, true)).await;
    let start = Instant::now();
    let outcome = s.run(chat(PROMPT)).await.expect("the cold run");
    let took = start.elapsed();
    assert_eq!(outcome.result, "Wrote notes.txt.");
    assert!(dir.join("notes.txt").exists());
    s.shutdown().await;
    took
}

/// Submission to result, speculated and adopted after the user read for `read`.
async fn speculated(turn_ms: u64, read: Duration) -> Duration {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().canonicalize().expect("canonical");
    let s = session(&dir, script(turn_ms, false)).await;
    s.run(chat("look at a.txt")).await.expect("the first run");
    let lead = s.lead().clone();
    let snapshot = ahead::snapshot(&lead).await.expect("idle lead");
    let suggestion = ahead::suggest(&snapshot).await.expect("a suggestion");
    let overlays = tempfile::tempdir().expect("tempdir");
    let spec = Speculation::start(
        lead,
        snapshot,
        suggestion,
        "speculation/1",
        overlays.path(),
        Limits::default(),
    )
    .await
    .expect("the speculation starts");
    // The user reads the answer (and sees the suggestion) before pressing Enter.
    tokio::time::sleep(read).await;
    let start = Instant::now();
    let resolution = spec.resolve(PROMPT).await;
    let took = start.elapsed();
    let Resolution::Adopted { outcome, .. } = resolution else {
        panic!("not adopted: {resolution:?}");
    };
    assert_eq!(outcome.result, "Wrote notes.txt.");
    assert!(dir.join("notes.txt").exists());
    s.shutdown().await;
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let turn_ms = args.first().copied().unwrap_or(300);
    let read_ms = args.get(1).copied().unwrap_or(1500);
    let n = args.get(2).copied().unwrap_or(5).max(1);
    println!(
        "scripted model: {turn_ms} ms per turn, 3-turn task; the user reads {read_ms} ms; {n} runs each"
    );
    // Submitted at once, half-way through the speculation's three turns, and after it.
    let reads = [0, turn_ms * 3 / 2, read_ms].map(Duration::from_millis);
    for read in reads {
        let (mut c, mut sp) = (Vec::new(), Vec::new());
        for _ in 0..n {
            c.push(cold(turn_ms).await);
            sp.push(speculated(turn_ms, read).await);
        }
        let (c, sp) = (median(c), median(sp));
        println!(
            "read {:>5} ms: cold {:>8.1} ms, adopted speculation {:>8.1} ms, ratio {:.3}",
            read.as_millis(),
            c.as_secs_f64() * 1e3,
            sp.as_secs_f64() * 1e3,
            sp.as_secs_f64() / c.as_secs_f64()
        );
    }
}
