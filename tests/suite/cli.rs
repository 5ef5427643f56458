//! End-to-end tests of the `crew` binary in headless mode with the built-in demo and
//! scripted models.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

fn crew(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("crew runs")
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        "# Sample\n\nTODO: write docs\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.md"), "FIXME later\n").unwrap();
    dir
}

#[test]
fn demo_runs_end_to_end_without_a_key_and_refuses_the_write_headless() {
    let dir = project();
    let out = crew(dir.path(), &["-p", "show me around"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("built-in demo"), "{stderr}");
    assert!(stdout.contains("Demo complete"), "{stdout}");
    // The read tools really ran on this directory.
    assert!(stderr.contains("✓ find_files"), "{stderr}");
    assert!(stderr.contains("✓ read_file"), "{stderr}");
    // The write asked for approval and nobody could answer.
    assert!(
        stderr.contains("✗ write_file [permission_denied]"),
        "{stderr}"
    );
    assert!(!dir.path().join(".crew/demo-report.md").exists());
}

#[test]
fn demo_writes_its_report_under_accept_edits() {
    let dir = project();
    let out = crew(
        dir.path(),
        &["-p", "go", "--permission-mode", "acceptEdits"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(dir.path().join(".crew/demo-report.md")).unwrap();
    assert!(report.contains("crewmaster demo report"));
}

#[test]
fn json_output_is_one_object_with_the_result() {
    let dir = project();
    let out = crew(dir.path(), &["-p", "go", "--output-format", "json"]);
    assert!(out.status.success());
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    assert!(v["result"].as_str().unwrap().contains("Demo complete"));
    assert_eq!(v["status"], "completed");
    assert_eq!(v["tool_calls"], 4);
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(v["tasks"], serde_json::json!([]));
    assert!(v["session_id"].as_str().is_some_and(|s| !s.is_empty()));
}

#[test]
fn stream_json_emits_one_event_per_line_then_the_result() {
    let dir = project();
    let out = crew(dir.path(), &["-p", "go", "--output-format", "events"]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|v| v["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"run_started"));
    assert_eq!(types.last(), Some(&"result"));
    assert_eq!(
        types.iter().filter(|t| **t == "tool_call_started").count(),
        4
    );
    assert!(types.contains(&"approval_refused"));
}

#[test]
fn plan_mode_from_the_cli_refuses_writes_even_under_bypass() {
    let dir = project();
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "pwned.txt", "content": "x"}}]},
        {"text": "plan: nothing"}
    ]});
    let (out, requests) = support::crew_scripted(
        dir.path(),
        dir.path(),
        &script,
        &[
            "-p",
            "plan it",
            "--mode",
            "plan",
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    assert!(!dir.path().join("pwned.txt").exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("tool_not_allowed"));
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "find_files",
            "search_code",
            "web_fetch",
            "task_list",
            "task_output",
            "todo_get",
            "todo_list"
        ]
    );
}

#[test]
fn bad_arguments_get_clear_errors() {
    let dir = project();
    let out = crew(dir.path(), &["-p", "x", "--mode", "do"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--plan-file"));
    let out = crew(dir.path(), &["-p", "x", "--cwd", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cwd /no/such/dir"));
    let out = crew(dir.path(), &["-p", "x", "--model", "script:/no/such.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such.json"));
}

/// Issue 9, class 1: commands that pass for reads but write files ran unasked in default
/// mode. Driven end to end by the scripted model; headless, nobody can approve, so each
/// must be refused and the disk must show nothing was written — while a real read runs.
#[test]
fn read_only_lookalikes_are_refused_in_default_mode_and_write_nothing() {
    let dir = project();
    let calls = [
        "env -vS'touch pwned-env'",
        "/usr/bin/time -o pwned-time true",
        "xxd -r -p - pwned-xxd",
        "sort --compress-program=sh -o pwned-sort README.md",
        "echo 'touch pwned-stdin' | bash",
        "ls README.md",
    ];
    let tool_calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|c| serde_json::json!({"name": "run_command", "input": {"command": c}}))
        .collect();
    let script = serde_json::json!({"turns": [{"tool_calls": tool_calls}, {"text": "done"}]});
    let (out, _) = support::crew_scripted(dir.path(), dir.path(), &script, &["-p", "go"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("✗ run_command [permission_denied]").count(),
        5,
        "{stderr}"
    );
    assert!(stderr.contains("✓ run_command"), "the read ran: {stderr}");
    for f in [
        "pwned-env",
        "pwned-time",
        "pwned-xxd",
        "pwned-sort",
        "pwned-stdin",
    ] {
        assert!(!dir.path().join(f).exists(), "{f} was written: {stderr}");
    }
}

#[test]
fn a_bad_worker_count_is_named_and_crew_runs_on_one() {
    let dir = project();
    let out = Command::new(env!("CARGO_BIN_EXE_crew"))
        .arg("--version")
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("TOKIO_WORKER_THREADS", "two")
        .output()
        .expect("crew runs");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TOKIO_WORKER_THREADS=two is not a positive number"),
        "{stderr}"
    );
}
