//! crew and the real Claude Code CLI side by side (issue 30): both run headless against
//! the same scripted Anthropic server in this process, on the same turns (each turn one
//! read of the same file, then a final text), in fresh homes and repositories.
//!
//! Printed, each the median of ROUNDS runs, with the ratio Claude Code ÷ crew:
//! - **start-up**: wall time of a run of one text turn;
//! - **first request**: from spawning the process to its first model request reaching the
//!   server, printed beside `git --version` measured in the same run (target for crew:
//!   20 ms or less);
//! - **per turn**: `(run of TURNS turns − run of one turn) ÷ (TURNS − 1)`, the cost of a
//!   turn beyond the model's (the server answers at once);
//! - **peak RSS**: the main process's `VmHWM`, sampled until it exits.
//!
//! The CLI comes from `scripts/install-claude-code.sh` (`$CREW_CLAUDE_CODE`, else its cache
//! directory); without it the bench says so and measures crew alone.
//! `cargo build --release && cargo run --release --example claude_code_bench -- [TURNS] [ROUNDS]`
//! (defaults 20 and 3).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a bench: it fails loudly and prints what it measures"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::{Value, json};

/// What the server knows of the run in progress.
#[derive(Default)]
struct Run {
    /// Tool turns before the final text.
    turns: usize,
    /// When the first model request of the run arrived.
    first: Option<Instant>,
    /// The file the tool calls read.
    file: PathBuf,
}

type Shared = Arc<Mutex<Run>>;

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

fn turn(block: Value, delta: Value, stop: &str) -> String {
    sse(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ])
}

/// One tool turn (`Read` for Claude Code, `read_file` for crew) while the run has turns
/// left, else the final text; any other request (one offering neither tool) gets text.
async fn messages(State(run): State<Shared>, body: String) -> impl IntoResponse {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (turns, file) = {
        let mut r = run.lock().unwrap();
        r.first.get_or_insert_with(Instant::now);
        (r.turns, r.file.clone())
    };
    let offers = |name: &str| {
        body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == name))
    };
    let done = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .count();
    let call = if offers("Read") {
        Some(("Read", json!({"file_path": file})))
    } else if offers("read_file") {
        Some(("read_file", json!({"path": "f.txt"})))
    } else {
        None
    };
    let text = match call {
        Some((name, input)) if done < turns => turn(
            json!({"type": "tool_use", "id": format!("toolu_{done}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        _ => turn(
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": "done"}),
            "end_turn",
        ),
    };
    ([("content-type", "text/event-stream")], text)
}

/// What one run measured.
struct Sample {
    wall: Duration,
    first: Option<Duration>,
    peak_kib: u64,
}

/// The main process's peak resident set so far, in KiB (`None` once it has exited).
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn run_once(program: &[String], url: &str, run: &Shared, turns: usize) -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let (home, repo) = (dir.path().join("home"), dir.path().join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    let file = repo.join("f.txt");
    std::fs::write(&file, "some source text\n".repeat(40)).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status();
    assert!(git.is_ok_and(|s| s.success()), "git init");
    *run.lock().unwrap() = Run {
        turns,
        first: None,
        file,
    };
    let start = Instant::now();
    let mut child = Command::new(&program[0])
        .args(&program[1..])
        .current_dir(&repo)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the program starts");
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak = peak.max(vm_hwm(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    };
    let wall = start.elapsed();
    assert!(status.success(), "{program:?} failed: {status}");
    let first = run.lock().unwrap().first.map(|t| t - start);
    Sample {
        wall,
        first,
        peak_kib: peak,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Start-up, first request, per-turn cost and peak RSS of `program` (its arguments end
/// with `--max-turns`, which this fills in).
fn measure(program: &[String], url: &str, run: &Shared, turns: usize, rounds: usize) -> [f64; 4] {
    let (mut one, mut many, mut first, mut peak) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..rounds {
        let a = run_once(program, url, run, 0);
        let b = run_once(program, url, run, turns);
        one.push(a.wall);
        many.push(b.wall);
        first.extend(a.first);
        peak = peak.max(a.peak_kib).max(b.peak_kib);
    }
    let (one, many) = (median(one), median(many));
    let per_turn = many.saturating_sub(one).as_secs_f64() / turns as f64;
    let first = if first.is_empty() {
        f64::NAN
    } else {
        median(first).as_secs_f64()
    };
    [one.as_secs_f64(), first, per_turn, peak as f64 / 1024.0]
}

fn claude_code() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CREW_CLAUDE_CODE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let cache = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache"))
        .unwrap_or_default()
        .join("crew-peers/claude-code/node/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    if cache.is_file() {
        Ok(cache)
    } else {
        Err(format!(
            "no $CREW_CLAUDE_CODE and no {}; run scripts/install-claude-code.sh",
            cache.display()
        ))
    }
}

fn crew_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("crew"))
        .expect("target dir");
    assert!(
        bin.exists(),
        "build the crew binary first: {}",
        bin.display()
    );
    bin
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let turns: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20)
        .max(1);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3).max(1);
    let run: Shared = Arc::default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/messages", axum::routing::post(messages))
        .with_state(run.clone());
    rt.spawn(async move { axum::serve(listener, app).await });

    let git: Vec<Duration> = (0..rounds * 2)
        .map(|_| {
            let t = Instant::now();
            let ok = Command::new("git")
                .arg("--version")
                .stdout(Stdio::null())
                .status();
            assert!(ok.is_ok_and(|s| s.success()));
            t.elapsed()
        })
        .collect();
    let git = median(git).as_secs_f64();
    let max_turns = (turns + 5).to_string();
    let crew = crew_bin().display().to_string();
    let crew_args: Vec<String> = [
        &crew,
        "-p",
        "go",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
        "--max-turns",
        &max_turns,
    ]
    .map(String::from)
    .to_vec();
    let ours = measure(&crew_args, &url, &run, turns, rounds);
    let theirs = match claude_code() {
        Ok(claude) => {
            let claude = claude.display().to_string();
            let args: Vec<String> = [
                &claude,
                "-p",
                "go",
                "--output-format",
                "json",
                "--max-turns",
                &max_turns,
            ]
            .map(String::from)
            .to_vec();
            Some(measure(&args, &url, &run, turns, rounds))
        }
        Err(why) => {
            println!("Claude Code skipped: {why}");
            None
        }
    };
    println!(
        "{turns} turns of one read, {rounds} rounds; git --version {:.1} ms",
        git * 1e3
    );
    println!(
        "{:<28}{:>12}{:>14}{:>10}",
        "", "crew", "Claude Code", "ratio"
    );
    let rows = [
        ("start-up (ms)", 1e3),
        ("first request (ms)", 1e3),
        ("per turn (ms)", 1e3),
        ("peak RSS (MiB)", 1.0),
    ];
    for (i, (name, scale)) in rows.iter().enumerate() {
        let c = ours[i] * scale;
        match &theirs {
            Some(t) => {
                let t = t[i] * scale;
                // A difference of medians can come out at or below zero when the cost is
                // under the machine's noise: no ratio then, rather than an infinite one.
                if c > 0.0 {
                    println!("{name:<28}{c:>12.2}{t:>14.2}{:>9.1}×", t / c);
                } else {
                    println!("{name:<28}{c:>12.2}{t:>14.2}{:>10}", "(noise)");
                }
            }
            None => println!("{name:<28}{c:>12.2}{:>14}", "-"),
        }
    }
    println!(
        "crew's first request: {:.1} ms, {:.1}× git --version (target: 20 ms or less)",
        ours[1] * 1e3,
        ours[1] / git
    );
}
