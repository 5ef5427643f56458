//! Long runs (issue 14), end to end through `crew -p` on the scripted model:
//! - a `run_command` printing 20 MB returns a preview naming the file its whole output
//!   was streamed to, and the model reads the middle of that file by offset;
//! - billed as Anthropic's prompt cache would from our breakpoints, turns ≥ 2 of a
//!   20-turn run with tool calls read ≥ 90 % of their input from the cache, and
//!   `--output-format json` reports each request's cached / created / uncached tokens;
//! - `--max-budget-usd` (and the `maxBudgetUsd` setting) stop a run at the turn whose
//!   cost passes the limit, after that turn's tool calls, and JSON says `budget_exhausted`.

use crate::support;

use support::{crew, crew_scripted, put};

/// `seq -f 'row %08.0f' 1 ROWS`: 13 bytes a line, about 20.8 MB.
const ROWS: usize = 1_600_000;

fn rows() -> String {
    (1..=ROWS).map(|i| format!("row {i:08}\n")).collect()
}

fn text_of_results(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_20_mb_command_output_is_previewed_saved_and_read_back_by_offset() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let proj = proj.path().canonicalize().unwrap();
    // Default mode: only this command is allowed, and the results directory (outside
    // the project) is readable only by the offload rule.
    put(
        &proj,
        ".crew/settings.local.json",
        r#"{"permissions":{"allow":["Bash(seq:*)"]}}"#,
    );
    let session = "offload-e2e";
    let results = home
        .path()
        .join(".crew/projects")
        .join(crewmaster::store::project_slug(&proj))
        .join(session)
        .join("results");
    let saved = results.join("call_1_1.txt");
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "run_command",
            "input": {"command": format!("seq -f 'row %08.0f' 1 {ROWS}")}}]},
        {"tool_calls": [{"name": "read_file",
            "input": {"path": saved, "offset": 800_000, "limit": 3}}]},
        {"text": "done"}
    ]});
    let (_, requests) = crew_scripted(
        &proj,
        home.path(),
        &script,
        &["-p", "print a lot", "--session-id", session],
    );
    // The whole output is on disk, byte for byte.
    let on_disk = std::fs::read(&saved).unwrap();
    assert_eq!(on_disk.len(), ROWS * 13);
    assert!(on_disk == rows().as_bytes(), "the saved output differs");
    assert_eq!(requests.len(), 3);
    // The model saw a preview: head, tail, size and path, not 20 MB.
    let preview = &text_of_results(&requests[1])[0];
    assert!(preview.len() < 20_000, "{} bytes shown", preview.len());
    assert!(preview.contains("row 00000001"), "{preview}");
    assert!(preview.contains(&format!("row {ROWS:08}")), "{preview}");
    assert!(
        preview.contains(&format!("all {} bytes ({ROWS} lines)", ROWS * 13)),
        "{preview}"
    );
    assert!(preview.contains(&saved.display().to_string()), "{preview}");
    assert!(!preview.contains("row 00800000"), "the middle was sent");
    // The model read the middle by offset, and was allowed to.
    let read = &text_of_results(&requests[2])[1];
    assert!(!read.starts_with("error"), "{read}");
    for (line, row) in [(800_000, 800_000), (800_002, 800_002)] {
        assert!(read.contains(&format!("{line}\trow {row:08}")), "{read}");
    }
    assert!(!read.contains("row 00800003"), "{read}");
}

/// Six turns that each write `tN.txt`, then a final answer; each turn costs 1,000
/// uncached input tokens on claude-sonnet-4-5 ($3 per million): $0.003.
fn writing_script() -> serde_json::Value {
    let mut turns: Vec<serde_json::Value> = (1..=6)
        .map(|i| {
            serde_json::json!({
                "tool_calls": [{"name": "write_file",
                    "input": {"path": format!("t{i}.txt"), "content": format!("turn {i}")}}],
                "usage": {"input_tokens": 1000, "output_tokens": 0}
            })
        })
        .collect();
    turns.push(serde_json::json!({"text": "all written"}));
    serde_json::json!({"model": "claude-sonnet-4-5", "turns": turns})
}

fn run_json(proj: &std::path::Path, home: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "-p",
        "write six files",
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ];
    args.extend_from_slice(extra);
    let (out, _) = support::crew_scripted_output(proj, home, &writing_script(), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    // A run its budget stopped is cut short: it must not exit as if done.
    let expected = if json["status"] == "budget_exhausted" {
        1
    } else {
        0
    };
    assert_eq!(out.status.code(), Some(expected), "{json}");
    json
}

#[test]
fn max_budget_usd_stops_the_run_after_the_turn_that_passes_it() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    // $0.01: three turns cost $0.009, the fourth $0.012 — it is the last.
    let json = run_json(proj.path(), home.path(), &["--max-budget-usd", "0.01"]);
    assert_eq!(json["status"], "budget_exhausted", "{json}");
    assert_eq!(json["stop_reason"], "budget_exhausted", "{json}");
    assert_eq!(json["turns"], 4, "{json}");
    assert!(json["result"].as_str().unwrap().contains("$0.01"), "{json}");
    let cost = json["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.012).abs() < 1e-9, "{cost}");
    assert_eq!(json["requests"].as_array().unwrap().len(), 4, "{json}");
    // The fourth turn's write finished; nothing after it ran.
    for i in 1..=4 {
        let text = std::fs::read_to_string(proj.path().join(format!("t{i}.txt"))).unwrap();
        assert_eq!(text, format!("turn {i}"));
    }
    assert!(!proj.path().join("t5.txt").exists());

    // Without a limit the same script runs to its end.
    let other = tempfile::tempdir().unwrap();
    let json = run_json(other.path(), home.path(), &[]);
    assert_eq!(json["status"], "completed", "{json}");
    assert!(other.path().join("t6.txt").exists());
}

#[test]
fn the_max_budget_usd_setting_stops_a_run_too_and_the_lowest_layer_value_wins() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    put(
        home.path(),
        ".crew/settings.json",
        r#"{"maxBudgetUsd": 0.005}"#,
    );
    put(
        proj.path(),
        ".crew/settings.local.json",
        r#"{"maxBudgetUsd": 100}"#,
    );
    // $0.005: the second turn ($0.006) passes it.
    let json = run_json(proj.path(), home.path(), &[]);
    assert_eq!(json["status"], "budget_exhausted", "{json}");
    assert_eq!(json["turns"], 2, "{json}");
    assert!(proj.path().join("t2.txt").exists());
    assert!(!proj.path().join("t3.txt").exists());
}

#[test]
fn turns_after_the_first_read_at_least_90_percent_of_their_input_from_the_cache() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    for m in 0..8 {
        let body: String = (0..(m + 1) * 30)
            .map(|f| format!("pub fn f{f}(x: u32) -> u32 {{ x + {f} }} // mod {m}\n"))
            .collect();
        put(proj.path(), &format!("src/mod{m}.rs"), &body);
    }
    let mut turns: Vec<serde_json::Value> = (1..20)
        .map(|i| {
            let calls = match i % 3 {
                0 => serde_json::json!([{"name": "read_file", "input": {"path": format!("src/mod{}.rs", i % 8)}}]),
                1 => serde_json::json!([{"name": "search_code", "input": {"pattern": format!("fn f{i}\\b")}},
                                        {"name": "find_files", "input": {"pattern": "src/*.rs"}}]),
                _ => serde_json::json!([{"name": "run_command", "input": {"command": "wc -l src/*.rs"}}]),
            };
            serde_json::json!({"text": format!("Step {i}."), "tool_calls": calls})
        })
        .collect();
    turns.push(serde_json::json!({"text": "Done."}));
    let script = serde_json::json!({"model": "claude-sonnet-4-5", "cache": true, "turns": turns});
    let (out, _) = crew_scripted(
        proj.path(),
        home.path(),
        &script,
        &[
            "-p",
            "study the project",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "json",
        ],
    );
    let json: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(json["turns"], 20, "{json}");
    let requests = json["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 20);
    let n = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap();
    assert_eq!(
        n(&requests[0], "cached"),
        0,
        "nothing is cached before the first request"
    );
    assert!(n(&requests[0], "created") > 1024);
    let (mut read, mut input) = (0, 0);
    for r in &requests[1..] {
        read += n(r, "cached");
        input += n(r, "cached") + n(r, "created") + n(r, "uncached");
    }
    let share = read as f64 / input as f64;
    assert!(
        share >= 0.9,
        "cache share on turns >= 2: {share:.3} ({read} of {input})"
    );
    // The run's totals agree with its requests.
    let cached: u64 = requests.iter().map(|r| n(r, "cached")).sum();
    assert_eq!(json["cache"]["cached"].as_u64().unwrap(), cached);
    assert!(json["cost_usd"].as_f64().unwrap() > 0.0);
    // Each agent's spending is kept for `crew tasks list` and `crew team show`.
    let sessions = home.path().join(".crew/projects");
    let ledger = std::fs::read_dir(&sessions)
        .unwrap()
        .flat_map(|p| std::fs::read_dir(p.unwrap().path()).unwrap())
        .map(|s| s.unwrap().path().join("costs.json"))
        .find(|p| p.exists())
        .expect("costs.json");
    let ledger: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ledger).unwrap()).unwrap();
    assert_eq!(ledger["agents"]["lead"]["requests"], 20, "{ledger}");
}

#[test]
fn crew_tasks_list_shows_what_each_subagent_cost() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    put(proj.path(), "README.md", "# p\n");
    // The subagent's one turn costs 2,000 input tokens on claude-sonnet-4-5: $0.006.
    let script = serde_json::json!({"model": "claude-sonnet-4-5",
    "turns": [
        {"tool_calls": [{"name": "agent", "input": {"description": "look", "prompt": "p",
            "subagent_type": "explore"}}]},
        {"text": "the explorer reported"}
    ],
    "agents": {"explore": {"turns": [
        {"text": "nothing here", "usage": {"input_tokens": 2000, "output_tokens": 0}}
    ]}}});
    crew_scripted(proj.path(), home.path(), &script, &["-p", "explore"]);
    let out = crew(proj.path(), home.path(), &["tasks", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = &list.as_array().unwrap()[0];
    assert_eq!(task["kind"], "agent", "{list}");
    let cost = task["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.006).abs() < 1e-9, "{cost}");
    let out = crew(proj.path(), home.path(), &["tasks", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cost $0.0060"), "{text}");
}

#[test]
fn old_large_results_are_stubbed_in_requests_in_one_batch_and_kept_on_disk() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    // 25 turns each printing 4,893 bytes (saved to a file, shown whole), then an answer.
    let mut turns: Vec<serde_json::Value> = (1..=25)
        .map(|_| {
            serde_json::json!({"tool_calls": [{"name": "run_command",
            "input": {"command": "seq 1 1200"}}]})
        })
        .collect();
    turns.push(serde_json::json!({"text": "done"}));
    let (_, requests) = crew_scripted(
        proj.path(),
        home.path(),
        &serde_json::json!({"turns": turns}),
        &[
            "-p",
            "count",
            "--permission-mode",
            "bypassPermissions",
            "--max-turns",
            "30",
        ],
    );
    assert_eq!(requests.len(), 26);
    let full: String = (1..=1200).map(|i| format!("{i}\n")).collect();
    let is_stub = |t: &str| t.starts_with("[old tool result left out");
    // Up to 19 exchanges nothing is stubbed (10 are always kept, and 9 older ones are
    // not yet a batch).
    assert!(text_of_results(&requests[19]).iter().all(|t| !is_stub(t)));
    // From the 21st request on, the 10 oldest results are stubs naming their files, which
    // hold the whole result; the newer ones are sent whole.
    let at_21 = text_of_results(&requests[20]);
    assert_eq!(at_21.len(), 20);
    for (i, t) in at_21.iter().enumerate() {
        if i < 10 {
            assert!(is_stub(t), "result {i}: {t}");
            let path = t
                .split("saved in full to ")
                .nth(1)
                .unwrap()
                .split(';')
                .next()
                .unwrap();
            let saved = std::fs::read_to_string(path).unwrap();
            assert!(saved.contains(&full), "result {i} file: {}", saved.len());
        } else {
            assert!(!is_stub(t) && t.contains(&full), "result {i}");
        }
    }
    // The batch is stable: the last request starts with the 21st request's messages.
    let m21 = requests[20]["messages"].as_array().unwrap();
    let m26 = requests[25]["messages"].as_array().unwrap();
    assert_eq!(&m26[..m21.len() - 1], &m21[..m21.len() - 1]);
    // The transcript keeps every result whole.
    let escaped = serde_json::to_string(&full).unwrap();
    let escaped = escaped.trim_matches('"');
    let transcript = std::fs::read_dir(home.path().join(".crew/projects"))
        .unwrap()
        .flat_map(|p| std::fs::read_dir(p.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a transcript");
    let text = std::fs::read_to_string(transcript).unwrap();
    assert_eq!(text.matches(escaped).count(), 25);
}
