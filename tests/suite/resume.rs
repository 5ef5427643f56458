//! Crash and resume: a run killed with SIGKILL in the middle of a tool call resumes with
//! `crew --continue` holding every completed message, no duplicate, and no half call.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

fn wait_for(cond: impl FnMut() -> bool, what: &str) {
    support::wait_until_blocking(what, cond);
}

fn transcript_text(home: &Path) -> String {
    let mut text = String::new();
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
                text.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
            }
        }
    }
    text
}

#[test]
fn sigkill_mid_run_then_continue_resumes_without_duplicates_or_half_calls() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let home = dir.join("home");
    let first = dir.join("first.json");
    std::fs::write(
        &first,
        r#"{"turns":[
            {"text":"Writing the file.","tool_calls":[{"name":"write_file","id":"w1","input":{"path":"a.txt","content":"A"}}]},
            {"text":"Now a long step.","tool_calls":[{"name":"run_command","id":"r1","input":{"command":"echo $$ > long.pid; exec sleep 300"}}]},
            {"text":"never reached"}]}"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "write a then run the long step",
            "--permission-mode",
            "bypassPermissions",
            "--model",
        ])
        .arg(format!("script:{}", first.display()))
        .current_dir(&dir)
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        || dir.join("long.pid").exists() && transcript_text(&home).contains("\"r1\""),
        "the long step",
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // SIGKILL gives crew no chance to clean up; end the orphaned command ourselves.
    if let Ok(pid) = std::fs::read_to_string(dir.join("long.pid")) {
        let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    }

    let second = dir.join("second.json");
    std::fs::write(&second, r#"{"turns":[{"text":"Resumed and checked."}]}"#).unwrap();
    let record = dir.join("requests.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["--continue", "-p", "carry on", "--model"])
        .arg(format!("script:{}", second.display()))
        .arg("--record-requests")
        .arg(&record)
        .args(["--output-format", "json"])
        .current_dir(&dir)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "Resumed and checked.");

    let request: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&record)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let messages = request["messages"].as_array().unwrap();
    let blocks: Vec<&serde_json::Value> = messages
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .collect();
    let count = |kind: &str, key: &str, id: &str| {
        blocks
            .iter()
            .filter(|b| b["type"] == kind && b[key] == id)
            .count()
    };
    // Every completed message once: the task, both tool calls, both results.
    assert_eq!(count("tool_use", "id", "w1"), 1);
    assert_eq!(count("tool_result", "tool_use_id", "w1"), 1);
    assert_eq!(count("tool_use", "id", "r1"), 1);
    assert_eq!(count("tool_result", "tool_use_id", "r1"), 1);
    let r1 = blocks
        .iter()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "r1")
        .unwrap();
    assert_eq!(r1["error_code"], "interrupted");
    assert!(
        messages[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("write a then run the long step")
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["text"] == "carry on")
    );
    // Roles alternate, as the APIs require.
    for pair in messages.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"]);
    }
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "A");

    // The session list shows it, and a third resume sees the second run too.
    let listed = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["sessions", "list"])
        .current_dir(&dir)
        .env("HOME", &home)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("write a then run the long step"));
    let third = dir.join("third.json");
    std::fs::write(&third, r#"{"turns":[{"text":"Third."}]}"#).unwrap();
    let third_record = dir.join("third.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["--continue", "-p", "and once more", "--model"])
        .arg(format!("script:{}", third.display()))
        .arg("--record-requests")
        .arg(&third_record)
        .current_dir(&dir)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = std::fs::read_to_string(&third_record).unwrap();
    let first_line = sent.lines().next().unwrap();
    for seen in [
        "write a then run the long step",
        "carry on",
        "Resumed and checked.",
        "and once more",
    ] {
        assert!(
            first_line.contains(seen),
            "the third run lacks {seen:?}: {first_line}"
        );
    }
}
