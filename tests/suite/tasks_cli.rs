//! `crew tasks …` from another process while a headless run waits on a background task:
//! list it, read its log, stop it; the run then ends with the completion delivered.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

fn crew(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .output()
        .expect("crew runs")
}

fn wait_for<T>(mut probe: impl FnMut() -> Option<T>, what: &str) -> T {
    let mut found = None;
    support::wait_until_blocking(what, || {
        found = probe();
        found.is_some()
    });
    found.unwrap()
}

/// The live (not zombie) processes of session `sid`, from `/proc/*/stat`. The task's
/// guardian leads its session (its pid is the task's `pgid`); a sandboxed command's shell,
/// PID 1 of its own namespace, leads a process group of its own inside that session.
fn session_members(sid: i64) -> Vec<i64> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i64 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command name: state, ppid, pgrp, session.
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let state = fields.next()?;
            let session: i64 = fields.nth(2)?.parse().ok()?;
            (session == sid && state != "Z").then_some(pid)
        })
        .collect()
}

#[test]
fn tasks_can_be_listed_followed_and_stopped_from_another_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns":[
            {"tool_calls":[{"name":"run_command","input":{"command":"(sleep 300 &); sleep 301 & setsid -f sh -c 'echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 302'; echo serving; wait","run_in_background":true,"description":"dev server"}}]},
            {"text":"The server runs in the background."},
            {"text":"The server was stopped."}]}"#,
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "serve",
            "--permission-mode",
            "bypassPermissions",
            "--model",
        ])
        .arg(format!("script:{}", script.display()))
        .args(["--output-format", "json"])
        .current_dir(&dir)
        .env("HOME", dir.join("home"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let task = wait_for(
        || {
            let out = crew(&dir, &["tasks", "list", "--json"]);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            let t = v.as_array()?.first()?.clone();
            (t["status"] == "running").then_some(t)
        },
        "the background task to run",
    );
    assert_eq!(task["kind"], "command");
    assert_eq!(task["description"], "dev server");
    let id = task["id"].as_str().unwrap().to_string();
    let pgid = task["pgid"].as_i64().unwrap();
    wait_for(
        || {
            String::from_utf8_lossy(&crew(&dir, &["tasks", "logs", &id]).stdout)
                .contains("serving")
                .then_some(())
        },
        "the log to show the output",
    );
    // The shell, its sleep and the double-forked one: the whole session is there.
    let members = wait_for(
        || Some(session_members(pgid)).filter(|m| m.len() >= 3),
        "the shell and both sleeps to be in the task's session",
    );
    assert!(members.contains(&pgid), "{members:?}");
    // And one that left the group and the session runs as long as the task does.
    // Its pid file holds its pid in the command's PID namespace: find it on the host.
    wait_for(
        || std::fs::read_to_string(dir.join("esc.pid")).ok(),
        "the escaped sleep to write its pid",
    );
    let escaped = wait_for(
        || {
            support::faults::processes()
                .into_iter()
                .find(|p| p.cmdline.trim_end() == "sleep 302")
                .map(|p| i64::from(p.pid))
        },
        "the escaped sleep to run",
    );
    assert!(!session_members(escaped).is_empty() && !members.contains(&escaped));

    let stop = crew(&dir, &["tasks", "stop", &id]);
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stdout)
    );
    assert!(String::from_utf8_lossy(&stop.stdout).contains("cancelled"));

    // The waiting run receives the completion, lets the lead react, and exits.
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "The server was stopped.");
    assert_eq!(result["tasks"][0]["id"], id.as_str());
    assert_eq!(result["tasks"][0]["status"], "cancelled");
    let listed: serde_json::Value =
        serde_json::from_slice(&crew(&dir, &["tasks", "list", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["status"], "cancelled");
    // Every member is gone, not only the group leader.
    wait_for(
        || session_members(pgid).is_empty().then_some(()),
        "every process of the task's session to be gone",
    );
    wait_for(
        || session_members(escaped).is_empty().then_some(()),
        "the escaped sleep to be gone with its task",
    );
}

#[test]
fn tasks_commands_explain_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = crew(dir.path(), &["tasks", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sessions with tasks"));
}
