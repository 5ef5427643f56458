//! Claude Code's command line on crew: the task from standard input (`-p` alone or `-p -`),
//! `--dangerously-skip-permissions`, `--permission-mode plan`, `--verbose`, and the exit
//! codes a script relies on (a bad `--permission-mode` exits 2 before anything runs).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// `crew ARGS…` with `stdin` piped in, on the scripted model `script`; returns the
/// output and the recorded requests.
fn crew_with_stdin(
    dir: &std::path::Path,
    script: &Value,
    args: &[&str],
    stdin: &str,
) -> (std::process::Output, Vec<Value>) {
    let files = tempfile::tempdir().unwrap();
    let (path, record) = (files.path().join("s.json"), files.path().join("r.jsonl"));
    std::fs::write(&path, script.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .arg("--model")
        .arg(format!("script:{}", path.display()))
        .arg("--record-requests")
        .arg(&record)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, requests)
}

fn first_user_text(requests: &[Value]) -> String {
    requests
        .first()
        .map(|r| r["messages"][0].to_string())
        .unwrap_or_default()
}

#[test]
fn the_task_comes_from_stdin_with_p_alone_or_p_dash() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "Read you."}]});
    for args in [&["-p"][..], &["-p", "-"][..], &["--print"][..]] {
        let (out, requests) = crew_with_stdin(dir.path(), &script, args, "summarise STDIN-TASK\n");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("Read you."));
        let sent = first_user_text(&requests);
        assert!(sent.contains("summarise STDIN-TASK"), "{args:?}: {sent}");
        assert!(!sent.contains("\"-\""), "{sent}");
    }
    // Nothing on stdin: a clear error, exit 2, and no model call.
    let (out, requests) = crew_with_stdin(dir.path(), &script, &["-p"], "  \n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input held no task"));
    assert!(requests.is_empty());
}

#[test]
fn an_unknown_permission_mode_exits_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "should not run"}]});
    let (out, requests) = crew_with_stdin(
        dir.path(),
        &script,
        &["-p", "hi", "--permission-mode", "yolo"],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--permission-mode") && stderr.contains("yolo"),
        "{stderr}"
    );
    assert!(requests.is_empty(), "no model call was made");
}

#[test]
fn dangerously_skip_permissions_runs_what_default_mode_refuses_headless() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "run_command", "input": {"command": "echo made > made.txt"}}]},
        {"text": "done"}]});
    // Default mode: nobody can approve the command headless, so it does not run.
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = crew_with_stdin(dir.path(), &script, &["-p", "make it"], "");
    assert!(out.status.success());
    assert!(!dir.path().join("made.txt").exists());
    // Claude Code's flag is bypassPermissions: it runs.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-p",
        "make it",
        "--dangerously-skip-permissions",
        "--verbose",
    ];
    let (out, _) = crew_with_stdin(dir.path(), &script, &args, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "made\n"
    );
    // With an explicit mode as well, clap refuses the pair (exit 2).
    let both = [
        "-p",
        "x",
        "--dangerously-skip-permissions",
        "--permission-mode",
        "default",
    ];
    let (out, _) = crew_with_stdin(dir.path(), &script, &both, "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn permission_mode_plan_plans_with_read_only_tools() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "1. read 2. change"}]});
    let (out, requests) = crew_with_stdin(
        dir.path(),
        &script,
        &["-p", "plan it", "--permission-mode", "plan"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"read_file"), "{tools:?}");
    assert!(
        !tools.contains(&"write_file") && !tools.contains(&"run_command"),
        "{tools:?}"
    );
}

#[test]
fn allowed_and_disallowed_tools_are_rules_of_this_session() {
    let write = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "kept"}}]},
        {"text": "done"}]});
    // Default mode headless: nobody approves the write.
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = crew_with_stdin(dir.path(), &write, &["-p", "write"], "");
    assert!(out.status.success());
    assert!(!dir.path().join("notes.txt").exists());
    // `--allowedTools Write` allows it, for this run only.
    for flag in ["--allowedTools", "--allowed-tools"] {
        let dir = tempfile::tempdir().unwrap();
        let (out, _) = crew_with_stdin(
            dir.path(),
            &write,
            &["-p", "write", flag, "Bash(git log:*), Write"],
            "",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "kept",
            "{flag}"
        );
        assert!(
            !dir.path().join(".crew/settings.local.json").exists(),
            "nothing is saved"
        );
    }
    // `--disallowedTools` denies, even under bypassPermissions.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-p",
        "write",
        "--permission-mode",
        "bypassPermissions",
        "--disallowedTools",
        "Write(notes.txt)",
    ];
    let (out, _) = crew_with_stdin(dir.path(), &write, &args, "");
    assert!(
        !dir.path().join("notes.txt").exists(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("✗ write_file"));
    // A rule that does not parse is refused before anything runs.
    let (out, requests) = crew_with_stdin(
        dir.path(),
        &write,
        &["-p", "x", "--disallowedTools", "Bash("],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--disallowedTools `Bash(`"));
    assert!(requests.is_empty());
}

#[test]
fn the_system_prompt_can_be_replaced_or_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "ok"}]});
    let args = ["-p", "hi", "--append-system-prompt", "EXTRA-HOUSE-RULE"];
    let (_, requests) = crew_with_stdin(dir.path(), &script, &args, "");
    let system = requests[0]["system"].as_str().unwrap();
    assert!(system.ends_with("EXTRA-HOUSE-RULE"), "{system}");
    assert!(
        system.len() > 200,
        "crew's own prompt is still there: {system}"
    );
    let args = ["-p", "hi", "--system-prompt", "ONLY-THIS-PROMPT"];
    let (_, requests) = crew_with_stdin(dir.path(), &script, &args, "");
    assert_eq!(requests[0]["system"], "ONLY-THIS-PROMPT");
}
