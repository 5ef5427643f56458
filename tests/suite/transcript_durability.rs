//! The transcript is written through before a tool runs (issue 15): the assistant message
//! holding a call's `tool_use` and the call's `tool_call_started` line are in the file
//! (written to the OS) before the tool starts, so a command can read them, and a SIGKILL of
//! crew while the tool runs leaves them on disk.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Every line of every transcript under `home`, parsed (a torn line fails the test).
fn transcript_lines(home: &Path) -> Vec<Value> {
    let mut lines = Vec::new();
    let projects = home.join(".crew/projects");
    for project in std::fs::read_dir(projects).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(f.path()).unwrap();
                for line in text.lines() {
                    lines.push(serde_json::from_str(line).unwrap());
                }
            }
        }
    }
    lines
}

/// Whether the lines hold the `tool_use` of call `id` (in an appended assistant message)
/// and its `tool_call_started` line: `(tool_use lines, started lines)`.
fn recorded_call(lines: &[Value], id: &str) -> (usize, usize) {
    let uses = lines
        .iter()
        .filter(|l| l["type"] == "message_appended")
        .filter(|l| {
            l["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|b| b["type"] == "tool_use" && b["id"] == id)
        })
        .count();
    let started = lines
        .iter()
        .filter(|l| l["type"] == "tool_call_started" && l["call"]["id"] == id)
        .count();
    (uses, started)
}

#[test]
fn a_command_finds_its_own_tool_use_line_already_in_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (project, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    // The command counts, in the transcript files as they are when it runs, the lines of
    // its own call. The JSON patterns are written with their quotes, which the
    // transcript escapes inside the command's own text, so only real fields match.
    let command = r#"cat "$HOME"/.crew/projects/*/*.jsonl > seen.jsonl; echo "started=$(grep -F '"id":"dur-1"' seen.jsonl | grep -cF '"type":"tool_call_started"') message=$(grep -F '"id":"dur-1"' seen.jsonl | grep -cF '"type":"message_appended"')""#;
    // crew's home (transcripts included) is hidden from sandboxed commands, so the check
    // runs as a script the user's own settings exclude from the sandbox.
    std::fs::write(project.join("check.sh"), format!("{command}\n")).unwrap();
    support::put(
        &home,
        ".crew/settings.json",
        r#"{"sandbox": {"excludedCommands": ["bash check.sh"]}}"#,
    );
    let script = serde_json::json!({"turns": [
        {"text": "checking", "tool_calls": [
            {"name": "run_command", "id": "dur-1", "input": {"command": "bash check.sh"}}]},
        {"text": "done"}
    ]});
    std::fs::write(home.join("script.json"), script.to_string()).unwrap();
    let (out, requests) =
        support::crew_p_recorded(&project, &home, "check the transcript", "bypassPermissions");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = requests.last().expect("a second request");
    let result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "dur-1")
        .expect("the command's result");
    let content = result["content"].to_string();
    assert!(
        content.contains("started=1 message=1"),
        "the command did not find its own lines in the transcript: {content}"
    );
    // And the file it copied holds them as whole lines.
    let seen: Vec<Value> = std::fs::read_to_string(project.join("seen.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recorded_call(&seen, "dur-1"), (1, 1));
}

#[test]
fn sigkill_while_a_tool_runs_leaves_its_tool_use_line_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (project, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let script = home.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns":[
            {"text":"a long step","tool_calls":[{"name":"run_command","id":"long-1","input":{"command":"echo $$ > long.pid; exec sleep 300"}}]},
            {"text":"never reached"}]}"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "run the long step",
            "--permission-mode",
            "bypassPermissions",
        ])
        .arg("--model")
        .arg(format!("script:{}", script.display()))
        .current_dir(&project)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed as soon as the tool runs: nothing else is waited for.
    support::wait_until_blocking("the long step to start", || {
        std::fs::read_to_string(project.join("long.pid")).is_ok_and(|p| p.ends_with('\n'))
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    if let Ok(pid) = std::fs::read_to_string(project.join("long.pid")) {
        // SIGKILL gives crew no chance to end the command; end it ourselves.
        let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    }
    let lines = transcript_lines(&home);
    assert_eq!(
        recorded_call(&lines, "long-1"),
        (1, 1),
        "the running call's tool_use and tool_call_started lines must be on disk: {lines:#?}"
    );
    // It never finished, so no result line claims it did.
    assert!(
        !lines
            .iter()
            .any(|l| l["type"] == "tool_call_finished" && l["call_id"] == "long-1")
    );
}
