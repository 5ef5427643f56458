//! Long runs and context compaction, end to end through `crew -p` on the scripted model
//! with a small context window set in the project's settings:
//! - a 200-turn run whose tool results total five windows completes; every request stays
//!   under the window, compaction happens at the threshold, the summary request holds the
//!   task and the plan, and after it the model sees the summary and the newest exchanges
//!   with no orphaned tool result;
//! - a run killed (SIGKILL) during a compaction, or just after one, resumes with
//!   `crew --continue` from the state before or the state after, never a mix.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The model's context window in these tests, in tokens.
const WINDOW: u64 = 12_000;
/// 80 % of it: the default `autoCompact` threshold.
const THRESHOLD: u64 = WINDOW * 8 / 10;
const TASK: &str = "TASK-7f3a: read every data file and report what they hold";
const PLAN: &str = "PLAN-91c2: 1. read data/f1.txt to the last file in order. 2. report.";

/// A project whose settings give the scripted model a `WINDOW`-token window, with `n`
/// data files of about `size` bytes each, and a home directory beside it.
fn project(n: usize, size: usize) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let dir = root.join("proj");
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    support::put(
        &dir,
        ".crew/settings.json",
        &json!({ "contextWindows": { "script": WINDOW } }).to_string(),
    );
    for i in 1..=n {
        let line = format!("MARK-{i}: the quick brown fox jumps over the lazy dog\n");
        support::put(
            &dir,
            &format!("data/f{i}.txt"),
            &line.repeat(size / line.len()),
        );
    }
    (tmp, dir, home)
}

/// A lead turn that reads data file `i` (call id `r<i>`).
fn read_turn(i: usize) -> Value {
    json!({
        "text": format!("Reading file {i}."),
        "tool_calls": [{ "id": format!("r{i}"), "name": "read_file", "input": { "path": format!("data/f{i}.txt") } }]
    })
}

/// Estimated tokens of a recorded request, as the accounting counts them: the JSON size
/// of the system prompt, the tool definitions and each message, four bytes a token.
fn tokens(request: &Value) -> u64 {
    let t = |bytes: usize| bytes.div_ceil(4) as u64;
    let system = request["system"].as_str().unwrap().len();
    let tools = request["tools"].to_string().len();
    let messages: u64 = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| t(m.to_string().len()))
        .sum();
    t(system) + t(tools) + messages
}

fn blocks(request: &Value) -> Vec<&Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .collect()
}

/// Tool results whose call does not come before them in the request.
fn orphans(request: &Value) -> Vec<String> {
    let mut calls = std::collections::HashSet::new();
    let mut orphans = Vec::new();
    for b in blocks(request) {
        match b["type"].as_str() {
            Some("tool_use") => {
                calls.insert(b["id"].as_str().unwrap().to_string());
            }
            Some("tool_result") => {
                let id = b["tool_use_id"].as_str().unwrap();
                if !calls.contains(id) {
                    orphans.push(id.to_string());
                }
            }
            _ => {}
        }
    }
    orphans
}

fn result_ids(request: &Value) -> Vec<String> {
    blocks(request)
        .into_iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap().to_string())
        .collect()
}

fn first_text(request: &Value) -> String {
    request["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The events of the project's session transcripts (the lead's files).
fn transcript(home: &Path) -> Vec<Value> {
    let mut events = Vec::new();
    for project in std::fs::read_dir(home.join(".crew/projects"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                events.extend(read_lines(&f.path()));
            }
        }
    }
    events
}

fn is_compact(request: &Value) -> bool {
    request["agent"] == "lead/compact"
}

#[test]
fn a_200_turn_run_over_five_windows_of_results_compacts_at_the_threshold_and_completes() {
    let (_tmp, dir, home) = project(199, 1_300);
    let mut turns: Vec<Value> = (1..=199).map(read_turn).collect();
    turns.push(json!({ "text": "All 199 files read." }));
    let summaries: Vec<Value> = (1..=60)
        .map(|k| json!({ "text": format!("SUMMARY-{k}: files read so far are noted; next, the following file.") }))
        .collect();
    let script = json!({ "turns": turns, "agents": { "compact": { "turns": summaries } } });
    std::fs::write(home.join("plan.md"), PLAN).unwrap();
    let (out, requests) = support::crew_scripted(
        &dir,
        &home,
        &script,
        &[
            "-p",
            TASK,
            "--mode",
            "do",
            "--plan-file",
            home.join("plan.md").to_str().unwrap(),
            "--max-turns",
            "250",
            "--output-format",
            "json",
        ],
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["turns"], 200);
    assert_eq!(result["result"], "All 199 files read.");

    let lead: Vec<&Value> = requests.iter().filter(|r| r["agent"] == "lead").collect();
    assert_eq!(lead.len(), 200);
    let events = transcript(&home);
    // The tool results the run produced total five windows and more.
    let result_tokens: u64 = events
        .iter()
        .filter(|e| e["type"] == "message_appended")
        .flat_map(|e| e["message"]["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap().len() as u64 / 4)
        .sum();
    assert!(
        result_tokens >= 5 * WINDOW,
        "{result_tokens} tokens of results"
    );

    // Every request stays under the window; no request shows an orphaned result.
    for (i, r) in requests.iter().enumerate() {
        assert!(tokens(r) < WINDOW, "request {i}: {} tokens", tokens(r));
        assert!(orphans(r).is_empty(), "request {i}: {:?}", orphans(r));
    }
    // Compaction happens at the threshold: no model turn is sent at or above it, and
    // each compaction started within one exchange of reaching it.
    for (i, r) in lead.iter().enumerate() {
        assert!(
            tokens(r) < THRESHOLD,
            "lead request {i}: {} tokens",
            tokens(r)
        );
    }
    let compactions: Vec<&Value> = events.iter().filter(|e| e["type"] == "compacted").collect();
    let summary_requests: Vec<usize> = (0..requests.len())
        .filter(|i| is_compact(&requests[*i]))
        .collect();
    assert!(compactions.len() >= 5, "{} compactions", compactions.len());
    eprintln!(
        "{} requests, {} compactions, {result_tokens} tokens of tool results, largest request {} tokens",
        requests.len(),
        compactions.len(),
        requests.iter().map(tokens).max().unwrap()
    );
    assert_eq!(compactions.len(), summary_requests.len());
    for c in &compactions {
        let before = c["tokens_before"].as_u64().unwrap();
        let after = c["tokens_after"].as_u64().unwrap();
        assert_eq!(c["trigger"], "auto");
        assert!((THRESHOLD..THRESHOLD + 800).contains(&before), "{c}");
        assert!(after * 3 < before * 2, "{c}");
    }
    for (k, &i) in summary_requests.iter().enumerate() {
        let summary_request = &requests[i];
        // The summary request holds the task and the plan.
        let asked = summary_request["messages"].to_string();
        assert!(
            asked.contains(TASK) && asked.contains(PLAN),
            "summary request {k}"
        );
        assert!(asked.contains("<compact-request>"));
        // Then the model is shown the summary and the newest exchanges, verbatim.
        let next = &requests[i + 1];
        assert_eq!(next["agent"], "lead");
        let summary = first_text(next);
        assert!(summary.starts_with("<compact-summary"), "{summary}");
        assert!(
            summary.contains(&format!("SUMMARY-{}:", k + 1)),
            "{summary}"
        );
        assert!(summary.contains(TASK) && summary.contains(PLAN));
        // The files the calls read are listed from the calls themselves.
        assert!(summary.contains("<files-touched>") && summary.contains(".txt (read)"));
        let shown = next["messages"].as_array().unwrap();
        let before = summary_request["messages"].as_array().unwrap();
        let kept = &shown[1..];
        assert!(!kept.is_empty() && kept[0]["role"] == "assistant", "{next}");
        // Every kept message is the one before it, verbatim (the last one carried the
        // summary request's instructions besides).
        let tail = &before[before.len() - kept.len()..];
        assert_eq!(kept[..kept.len() - 1], tail[..tail.len() - 1]);
        let last_kept = kept.last().unwrap()["content"].as_array().unwrap();
        let last_before = tail.last().unwrap()["content"].as_array().unwrap();
        assert_eq!(last_kept[..], last_before[..last_kept.len()]);
        // What was summarised is gone from the request.
        let dropped = result_ids(summary_request);
        let kept_ids = result_ids(next);
        assert!(dropped.len() > kept_ids.len());
        assert!(kept_ids.iter().all(|id| dropped.contains(id)));
    }
    // Caching: each request extends the one before it (system, tools and messages, the
    // last message possibly grown), so the cached prefix holds, except once per
    // compaction: at the first model turn after it.
    let mut breaks = 0;
    for pair in requests.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!((&a["system"], &a["tools"]), (&b["system"], &b["tools"]));
        let (a, b) = (
            a["messages"].as_array().unwrap(),
            b["messages"].as_array().unwrap(),
        );
        if b.len() < a.len() || a[..a.len() - 1] != b[..a.len() - 1] {
            breaks += 1;
        }
    }
    assert_eq!(breaks, compactions.len());
    // The first file's content is never shown again after the first compaction.
    let after_first = &requests[summary_requests[0] + 1..];
    assert!(
        after_first
            .iter()
            .all(|r| !r.to_string().contains("MARK-1:"))
    );
}

/// Starts `crew -p TASK` in the background on `script`, recording requests to `record`.
fn spawn_crew(dir: &Path, home: &Path, task: &str, script: &Path, record: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", task, "--model"])
        .arg(format!("script:{}", script.display()))
        .arg("--record-requests")
        .arg(record)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until `cond` holds (the suite's one bounded wait).
fn wait_for(cond: impl FnMut() -> bool, what: &str) {
    support::wait_until_blocking(what, cond);
}

/// `crew --continue -p "go on"` on `script`; returns its recorded requests.
fn continue_run(dir: &Path, home: &Path, script: &Value) -> Vec<Value> {
    let (out, requests) = support::crew_scripted(
        dir,
        home,
        script,
        &["--continue", "-p", "go on", "--output-format", "json"],
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "resumed fine", "{result}");
    requests
}

#[test]
fn killed_during_a_compaction_the_run_resumes_from_the_state_before_it() {
    let (_tmp, dir, home) = project(30, 3_000);
    let never = home.join("never.flag");
    let script = json!({
        "turns": (1..=30).map(read_turn).collect::<Vec<_>>(),
        // The summary turn holds until a file that never comes: the kill lands in it.
        "agents": { "compact": { "turns": [ { "text": "not reached", "wait_for": never } ] } }
    });
    let first = home.join("first.json");
    std::fs::write(&first, script.to_string()).unwrap();
    let record = home.join("first.jsonl");
    let mut child = spawn_crew(&dir, &home, TASK, &first, &record);
    // The summary request is out, and the transcript holds every message it shows.
    let mut summary_request = Value::Null;
    wait_for(
        || match read_lines(&record).into_iter().find(is_compact) {
            Some(r) => {
                summary_request = r;
                true
            }
            None => false,
        },
        "the summary request",
    );
    let last = result_ids(&summary_request).pop().unwrap();
    wait_for(
        || {
            transcript(&home).iter().any(|e| {
                e["type"] == "message_appended"
                    && e["message"]
                        .to_string()
                        .contains(&format!("\"tool_use_id\":\"{last}\""))
            })
        },
        "the last result in the transcript",
    );
    child.kill().unwrap(); // SIGKILL, mid-compaction
    child.wait().unwrap();
    assert!(transcript(&home).iter().all(|e| e["type"] != "compacted"));

    let requests = continue_run(
        &dir,
        &home,
        &json!({
            "turns": [ { "text": "resumed fine" } ],
            "agents": { "compact": { "turns": [ { "text": "SUMMARY-RESUMED: all read." } ] } }
        }),
    );
    // Resumed from the state before: the whole conversation, still over the threshold,
    // so the resumed run compacts first — its summary request shows every result the
    // killed one did, in order, and no summary.
    let resumed = &requests[0];
    assert!(is_compact(resumed), "{resumed}");
    assert_eq!(result_ids(resumed), result_ids(&summary_request));
    assert!(!resumed.to_string().contains("<compact-summary"));
    assert!(first_text(resumed).contains(TASK));
    let resumed_messages = resumed["messages"].as_array().unwrap();
    let killed_messages = summary_request["messages"].as_array().unwrap();
    assert_eq!(resumed_messages.len(), killed_messages.len());
    assert_eq!(
        resumed_messages[..resumed_messages.len() - 1],
        killed_messages[..killed_messages.len() - 1]
    );
    // Then the model sees the new summary, the newest exchanges, and the new prompt.
    let next = &requests[1];
    assert!(first_text(next).contains("SUMMARY-RESUMED"));
    assert!(next.to_string().contains("go on"));
    assert!(orphans(next).is_empty(), "{:?}", orphans(next));
}

#[test]
fn killed_just_after_a_compaction_the_run_resumes_from_the_state_after_it() {
    let (_tmp, dir, home) = project(30, 3_000);
    // Lead turn t (t >= 2) holds until `flag-t` exists; the test lets turns go one by one
    // until a compaction has come before the turn that holds, then kills the run there.
    let turns: Vec<Value> = (1..=30)
        .map(|i| {
            let mut t = read_turn(i);
            if i >= 2 {
                t["wait_for"] = json!(home.join(format!("flag-{i}")));
            }
            t
        })
        .collect();
    let script = json!({
        "turns": turns,
        "agents": { "compact": { "turns": [ { "text": "SUMMARY-ONE: files read so far noted." } ] } }
    });
    let first = home.join("first.json");
    std::fs::write(&first, script.to_string()).unwrap();
    let record = home.join("first.jsonl");
    let mut child = spawn_crew(&dir, &home, TASK, &first, &record);
    let mut held = Value::Null;
    for t in 2..=30 {
        wait_for(
            || {
                read_lines(&record)
                    .iter()
                    .filter(|r| r["agent"] == "lead")
                    .count()
                    >= t
            },
            "the next lead request",
        );
        let requests = read_lines(&record);
        if requests.iter().any(is_compact) {
            held = requests.last().unwrap().clone();
            break;
        }
        std::fs::write(home.join(format!("flag-{t}")), "").unwrap();
    }
    assert_eq!(held["agent"], "lead", "no compaction within 30 turns");
    wait_for(
        || transcript(&home).iter().any(|e| e["type"] == "compacted"),
        "the compaction in the transcript",
    );
    child.kill().unwrap(); // SIGKILL, while the first turn after the compaction runs
    child.wait().unwrap();

    let requests = continue_run(
        &dir,
        &home,
        &json!({ "turns": [ { "text": "resumed fine" } ] }),
    );
    // Resumed from the state after: what the held turn was shown, then the new prompt.
    let resumed = &requests[0];
    assert_eq!(resumed["agent"], "lead", "{resumed}");
    assert!(first_text(resumed).contains("SUMMARY-ONE"));
    assert_eq!(result_ids(resumed), result_ids(&held));
    assert!(!resumed.to_string().contains("MARK-1:"));
    let resumed_messages = resumed["messages"].as_array().unwrap();
    let held_messages = held["messages"].as_array().unwrap();
    assert_eq!(resumed_messages.len(), held_messages.len());
    assert_eq!(
        resumed_messages[..resumed_messages.len() - 1],
        held_messages[..held_messages.len() - 1]
    );
    assert!(
        resumed_messages
            .last()
            .unwrap()
            .to_string()
            .contains("go on")
    );
    assert!(orphans(resumed).is_empty());
}

/// A short run that reaches the threshold on its fifth read or so, its summary turn
/// scripted by `summary`; returns the output and the recorded requests.
fn short_run(dir: &Path, home: &Path, summary: Value) -> (std::process::Output, Vec<Value>) {
    let mut turns: Vec<Value> = (1..=20).map(read_turn).collect();
    turns.push(json!({ "text": "done" }));
    let script = json!({ "turns": turns, "agents": { "compact": { "turns": [summary] } } });
    support::crew_scripted_output(dir, home, &script, &["-p", TASK, "--output-format", "json"])
}

#[test]
fn a_failed_compaction_stops_the_run_with_a_clear_error_and_loses_nothing() {
    let (_tmp, dir, home) = project(20, 3_000);
    let (out, requests) = short_run(&dir, &home, json!({ "error": "overloaded" }));
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "failed");
    let message = result["result"].as_str().unwrap();
    assert!(
        message.contains("context compaction failed")
            && message.contains("overloaded")
            && message.contains("Nothing was lost")
            && message.contains("crew --continue"),
        "{message}"
    );
    // The run stopped at the summary request: no model turn after it.
    assert!(is_compact(requests.last().unwrap()));
    let shown = requests.last().unwrap().clone();
    assert!(transcript(&home).iter().all(|e| e["type"] != "compacted"));
    // Everything is still there to resume from.
    let resumed = continue_run(
        &dir,
        &home,
        &json!({
            "turns": [ { "text": "resumed fine" } ],
            "agents": { "compact": { "turns": [ { "text": "SUMMARY-AGAIN" } ] } }
        }),
    );
    assert!(is_compact(&resumed[0]));
    assert_eq!(result_ids(&resumed[0]), result_ids(&shown));
    assert!(first_text(&resumed[1]).contains("SUMMARY-AGAIN"));
}

#[test]
fn pre_compact_hooks_run_with_the_trigger_and_their_context_reaches_the_summary_request() {
    let (_tmp, dir, home) = project(20, 3_000);
    let seen = home.join("pre-compact.json");
    let command = format!(
        "cat > '{}'; echo '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreCompact\",\"additionalContext\":\"HOOK-CTX-5d1\"}}}}'",
        seen.display()
    );
    // User settings: hooks there run without trusting the project.
    support::put(
        &home,
        ".crew/settings.json",
        &json!({ "hooks": { "PreCompact": [ { "matcher": "auto", "hooks": [ { "type": "command", "command": command } ] } ] } })
            .to_string(),
    );
    let (out, requests) = short_run(&dir, &home, json!({ "text": "SUMMARY-H" }));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "auto");
    assert_eq!(input["custom_instructions"], "");
    let summary_request = requests.iter().find(|r| is_compact(r)).unwrap();
    assert!(summary_request.to_string().contains("HOOK-CTX-5d1"));
}

#[tokio::test]
async fn compact_on_request_summarises_with_the_users_instructions_and_keeps_recent_turns() {
    use crewmaster::agent::lead_actor::LeadMsg;
    use crewmaster::agent::runner::RunRequest;
    use crewmaster::tools::Safety;
    let tool = support::FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        support::Behaviour::Succeed,
    );
    let todo = json!({ "tool_calls": [{ "id": "t1", "name": "todo_add", "input": { "subject": "write the API notes" } }] });
    let turns: Vec<Value> = std::iter::once(todo)
        .chain((1..=6).map(|i| json!({ "tool_calls": [{ "id": format!("c{i}"), "name": "read_file", "input": { "path": "a" } }] })))
        .chain([json!({ "text": "done reading" }), json!({ "text": "after compaction" })])
        .collect();
    let script = json!({ "turns": turns, "agents": { "compact": { "turns": [ { "text": "SUMMARY-MANUAL" } ] } } });
    let mut setup = support::Setup::new(script.to_string(), vec![std::sync::Arc::new(tool)]);
    // Automatic compaction off: only the request compacts.
    setup.context.auto_compact = None;
    // A team, so the lead has a work list.
    setup.orchestration = true;
    let t = support::start(setup).await;
    let chat = |task: &str| RunRequest {
        mode: crewmaster::agent::mode::AgentMode::Chat,
        task: task.into(),
        plan: None,
    };
    t.session.run(chat("read a six times")).await.unwrap();
    let done = t
        .session
        .lead()
        .call(
            |r| LeadMsg::Compact(Some("keep the API notes".into()), r),
            Some(Duration::from_secs(60)),
        )
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(done.tokens_after < done.tokens_before, "{done:?}");
    let requests = t.provider.requests();
    let asked = requests.last().unwrap();
    assert_eq!(asked.agent, "lead/compact");
    let asked_text = serde_json::to_string(&asked.messages).unwrap();
    assert!(asked_text.contains("keep the API notes") && asked_text.contains("read a six times"));
    // The open work-list item is named from the session, not left to the model.
    assert!(
        asked_text.contains("work-list item 1 [pending]: write the API notes"),
        "{asked_text}"
    );
    t.session.run(chat("and now?")).await.unwrap();
    let next = serde_json::to_value(t.provider.requests().last().unwrap()).unwrap();
    assert!(first_text(&next).contains("SUMMARY-MANUAL"));
    assert!(first_text(&next).contains("trigger=\"manual\""));
    assert!(first_text(&next).contains("work-list item 1 [pending]: write the API notes"));
    // The newest exchanges (three by default) stay, whole; the first calls are gone.
    let ids = result_ids(&next);
    assert_eq!(ids, ["c5", "c6"], "{next}");
    assert!(orphans(&next).is_empty());
    assert!(next.to_string().contains("and now?"));
}

/// While a run is going on, the lead refuses a second run and a compaction, each with the
/// kind its caller can act on (wait for the run), and the run itself goes on.
#[tokio::test]
async fn a_busy_lead_refuses_a_second_run_and_a_compaction_by_kind() {
    use crewmaster::agent::lead_actor::{LeadError, LeadMsg};
    use crewmaster::agent::runner::RunRequest;
    use crewmaster::session::SessionError;
    use crewmaster::tools::Safety;
    let tool = support::FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        support::Behaviour::Hang,
    );
    let runs = tool.runs.clone();
    let script = json!({ "turns": [
        { "tool_calls": [{ "id": "h1", "name": "read_file", "input": { "path": "a" } }] },
        { "text": "never reached" }
    ] });
    let t = support::start(support::Setup::new(
        script.to_string(),
        vec![std::sync::Arc::new(tool)],
    ))
    .await;
    let chat = |task: &str| RunRequest {
        mode: crewmaster::agent::mode::AgentMode::Chat,
        task: task.into(),
        plan: None,
    };
    let lead = t.session.lead().clone();
    let req = chat("hang on a read");
    let first = tokio::spawn(async move {
        lead.call(|r| LeadMsg::Run(req, r), Some(Duration::from_secs(120)))
            .await
    });
    // The first run is inside its tool call once the tool has started.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while runs.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never reached its tool"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    match t.session.run(chat("a second request")).await {
        Err(SessionError::Refused(LeadError::Running)) => {}
        other => panic!("a second run while one is going on: {other:?}"),
    }
    let compact = t
        .session
        .lead()
        .call(|r| LeadMsg::Compact(None, r), Some(Duration::from_secs(30)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(compact.unwrap_err(), LeadError::Busy);
    assert!(!first.is_finished(), "the refusals must not end the run");
    t.session.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(30), first).await;
}
