//! Claude Code's headless protocol on crew, without the SDK: `--output-format stream-json`
//! and `json` in Claude Code's message schema (crew's events under `events`), and
//! `--input-format stream-json` driven by hand — the initialize handshake and its agent
//! definitions, user messages, control requests and their errors, SDK hook callbacks
//! refused, and the flag combinations that are errors. The Agent SDK itself drives crew in
//! `claude_agent_sdk.rs`; the real CLI is compared in `claude_code_stream.rs`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# Sample\n\nTODO: docs\n").unwrap();
    dir
}

/// `crew ARGS…` in `dir` (its own home) with `stdin` piped in, on the built-in demo.
fn crew(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crew runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match l["subtype"].as_str() {
            Some(s) if l["type"] == "system" => format!("system/{s}"),
            _ => l["type"].as_str().unwrap_or("?").to_string(),
        })
        .collect()
}

#[test]
fn stream_json_output_is_claude_codes_message_schema() {
    let dir = project();
    let out = crew(
        dir.path(),
        &["-p", "go", "--output-format", "stream-json"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let lines = lines(&out);
    let kinds = kinds(&lines);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("system/init"),
        "{kinds:?}"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("result"),
        "{kinds:?}"
    );
    let init = &lines[0];
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "read_file"),
        "{init}"
    );
    let session = init["session_id"].as_str().unwrap();
    for l in &lines {
        assert_eq!(l["session_id"], session, "{l}");
    }
    // The demo's calls: assistant tool_use blocks, answered by user tool_result blocks.
    let uses: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .flat_map(|l| l["message"]["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_use")
        .collect();
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().unwrap())
        .collect();
    assert_eq!(uses.len(), 4, "{lines:#?}");
    assert_eq!(results.len(), 4, "{lines:#?}");
    for (u, r) in uses.iter().zip(&results) {
        assert_eq!(u["id"], r["tool_use_id"]);
        assert!(u["input"].is_object(), "input is the parsed arguments: {u}");
    }
    assert!(
        lines.iter().all(|l| l["type"] != "tool_call_started"),
        "no crew events here"
    );
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert!(result["duration_ms"].is_u64() && result["duration_api_ms"].is_u64());
    // The demo's write is refused headless, and listed as a denial.
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool_name"], "write_file");
    assert!(denials[0]["tool_input"].is_object());
}

#[test]
fn json_and_events_outputs_end_with_the_same_result_keys() {
    let dir = project();
    let out = crew(dir.path(), &["-p", "go", "--output-format", "json"], "");
    assert!(out.status.success(), "{out:?}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "subtype",
        "is_error",
        "duration_ms",
        "duration_api_ms",
        "num_turns",
        "session_id",
        "total_cost_usd",
        "usage",
        "status",
        "tasks",
        "requests",
    ] {
        assert!(result.get(key).is_some(), "{key}: {result}");
    }
    let out = crew(dir.path(), &["-p", "go", "--output-format", "events"], "");
    let events = lines(&out);
    assert_eq!(events[0]["type"], "run_started");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["subtype"], "success");
}

#[test]
fn partial_messages_stream_the_text_as_it_arrives() {
    let dir = project();
    let args = [
        "-p",
        "go",
        "--output-format",
        "stream-json",
        "--include-partial-messages",
    ];
    let lines = lines(&crew(dir.path(), &args, ""));
    let streamed: String = lines
        .iter()
        .filter(|l| l["type"] == "stream_event")
        .filter_map(|l| l["event"]["delta"]["text"].as_str())
        .collect();
    let said: String = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .flat_map(|l| l["message"]["content"].as_array().unwrap())
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(!streamed.is_empty(), "{lines:#?}");
    assert_eq!(streamed, said, "the deltas add up to the messages' text");
}

fn stdin_lines(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn user(text: &str) -> Value {
    json!({"type": "user", "session_id": "", "message": {"role": "user", "content": text}, "parent_tool_use_id": null})
}

#[test]
fn stream_json_input_answers_the_handshake_and_runs_each_message() {
    let dir = project();
    let input = stdin_lines(&[
        json!({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": null,
            "agents": {"checker": {"description": "Checks things", "prompt": "You check."}}}}),
        user("first"),
        json!({"type": "control_request", "request_id": "req_2", "request": {"subtype": "set_permission_mode", "mode": "wild"}}),
        json!({"type": "control_request", "request_id": "req_3", "request": {"subtype": "rewind_files"}}),
        user("second"),
    ]);
    let args = [
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ];
    let out = crew(dir.path(), &args, &input);
    assert!(out.status.success(), "{out:?}");
    let lines = lines(&out);
    let response = |id: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {lines:#?}"))
    };
    assert_eq!(response("req_1")["response"]["subtype"], "success");
    assert!(response("req_1")["response"]["response"]["commands"].is_array());
    let bad_mode = &response("req_2")["response"];
    assert_eq!(bad_mode["subtype"], "error");
    assert!(
        bad_mode["error"].as_str().unwrap().contains("wild"),
        "{bad_mode}"
    );
    assert!(
        response("req_3")["response"]["error"]
            .as_str()
            .unwrap()
            .contains("rewind_files")
    );
    let init = lines.iter().find(|l| l["subtype"] == "init").unwrap();
    assert!(
        init["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "checker"),
        "{init}"
    );
    // End of input ended the input, not the runs: both messages ran, one result each.
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{lines:#?}");
    assert!(
        results
            .iter()
            .all(|r| r["session_id"] == init["session_id"])
    );
}

/// An SDK hook is the program's guard; crew cannot call it back, so it refuses to start
/// rather than run without it.
#[test]
fn sdk_hook_callbacks_are_refused_before_anything_runs() {
    let dir = project();
    let input = stdin_lines(&[
        json!({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize",
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}}}),
        user("go"),
    ]);
    let out = crew(
        dir.path(),
        &[
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ],
        &input,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = lines(&out);
    assert_eq!(lines.len(), 1, "only the refusal: {lines:#?}");
    assert_eq!(lines[0]["response"]["subtype"], "error");
    assert!(
        lines[0]["response"]["error"]
            .as_str()
            .unwrap()
            .contains("hook")
    );
}

#[test]
fn stream_json_input_flag_errors_exit_2() {
    let dir = project();
    for (args, says) in [
        (
            vec!["--input-format", "stream-json"],
            "needs --output-format stream-json",
        ),
        (
            vec![
                "-p",
                "a task",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
            ],
            "standard input",
        ),
        (
            vec![
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--permission-prompt-tool",
                "mcp__auth__ok",
            ],
            "stdio",
        ),
    ] {
        let out = crew(dir.path(), &args, &stdin_lines(&[user("go")]));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
