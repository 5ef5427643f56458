//! `crew ps` and the registry of live sessions: a headless run with two background
//! subagents busy in a tool is listed, with each agent's state, tool, description and
//! tokens, from another process; a second, quick session in the same project neither hides
//! it from `crew tasks list`, `crew team show` nor `crew ps`; entries of dead crews are reconciled away;
//! the registration and its socket are gone once the run ends.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

fn ps(dir: &Path, home: &Path, args: &[&str]) -> Value {
    let out = support::crew(dir, home, &[&["ps", "--json"][..], args].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("crew ps --json prints JSON")
}

fn agents(session: &Value) -> Vec<Value> {
    session["agents"].as_array().cloned().unwrap_or_default()
}

#[test]
fn ps_lists_every_live_session_and_what_each_agent_is_doing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let home = dir.join("home");
    let release = dir.join("release");
    // Each subagent runs a command that lasts until the test releases it.
    let busy = format!(
        r#"{{"turns":[
            {{"tool_calls":[{{"name":"run_command","input":{{"command":"while [ ! -e {r} ]; do sleep 0.05; done"}}}}],
              "usage":{{"input_tokens":120,"output_tokens":30}}}},
            {{"text":"finished"}}]}}"#,
        r = release.display()
    );
    let script = format!(
        r#"{{"turns":[
            {{"tool_calls":[
              {{"name":"agent","input":{{"description":"scan the docs","prompt":"p","subagent_type":"general-purpose","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"write the notes","prompt":"p","subagent_type":"general-purpose","run_in_background":true}}}}]}},
            {{"text":"Both started."}},
            {{"text":"One is done."}},
            {{"text":"Both are done."}}],
          "agents":{{"general-purpose":{busy}}}}}"#
    );
    std::fs::write(dir.join("script.json"), script).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args([
            "-p",
            "scan and write",
            "--permission-mode",
            "bypassPermissions",
        ])
        .args(["--model", "script:script.json"])
        .current_dir(&dir)
        .env("HOME", &home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Both subagents show up running their command, from another process.
    let mut listed = Value::Null;
    support::wait_until_blocking("both subagents running run_command in `crew ps`", || {
        listed = ps(&dir, &home, &[]);
        let Some(s) = listed["sessions"].as_array().and_then(|s| s.first()) else {
            return false;
        };
        let running = agents(s)
            .iter()
            .filter(|a| a["kind"] == "subagent" && a["state"] == "running")
            .count();
        running == 2
    });
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed:#}");
    let session = &sessions[0];
    assert_eq!(session["pid"], run.id(), "{session:#}");
    assert_eq!(session["project"], dir.display().to_string());
    let all = agents(session);
    assert_eq!(all[0]["kind"], "lead");
    assert_eq!(all[0]["description"], "scan and write");
    let mut subs: Vec<&Value> = all.iter().filter(|a| a["kind"] == "subagent").collect();
    subs.sort_by_key(|a| a["description"].as_str().unwrap_or_default().to_string());
    assert_eq!(subs[0]["description"], "scan the docs");
    assert_eq!(subs[0]["name"], "general-purpose");
    assert_eq!(subs[1]["description"], "write the notes");
    for sub in &subs {
        assert_eq!(sub["tool"], "run_command", "{sub:#}");
        assert!(
            sub["tokens"].as_u64().unwrap() >= 150,
            "its first turn's usage: {sub:#}"
        );
        assert!(
            sub["id"].as_str().unwrap().starts_with('t'),
            "a task id: {sub:#}"
        );
    }
    let text = String::from_utf8(support::crew(&dir, &home, &["ps"]).stdout).unwrap();
    assert!(text.contains("running run_command for"), "{text}");
    assert!(text.contains("scan the docs"), "{text}");

    // The registration is private: directory 0700, socket 0600.
    let run_dir = home.join(".crew/run");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&run_dir), 0o700);
    let socket = session_socket(&run_dir);
    assert_eq!(mode(&socket), 0o600, "{}", socket.display());

    // A quick second session in the same project hides neither the tasks nor the session.
    std::fs::write(
        dir.join("quick.json"),
        r#"{"turns":[{"text":"Quick answer."}]}"#,
    )
    .unwrap();
    let quick = support::crew(
        &dir,
        &home,
        &["-p", "quick question", "--model", "script:quick.json"],
    );
    assert!(
        quick.status.success(),
        "{}",
        String::from_utf8_lossy(&quick.stderr)
    );
    let tasks = support::crew(&dir, &home, &["tasks", "list", "--json"]);
    let tasks: Value = serde_json::from_slice(&tasks.stdout).unwrap();
    let ids: Vec<&str> = tasks
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    for sub in &subs {
        assert!(ids.contains(&sub["id"].as_str().unwrap()), "{tasks:#}");
    }
    let sessions_text =
        String::from_utf8(support::crew(&dir, &home, &["sessions", "list"]).stdout).unwrap();
    assert!(
        sessions_text.contains(&format!("[live, pid {}]", run.id())),
        "{sessions_text}"
    );
    assert_eq!(
        ps(&dir, &home, &["--project", "."])["sessions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let other = ps(&dir, &home, &["--project", "elsewhere"]);
    assert_eq!(
        other["sessions"],
        serde_json::json!([]),
        "another project has none"
    );

    // The entry of a crew that died is removed by the next reader, with its socket.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = run_dir.join(format!("{dead}.0.json"));
    let stale_socket = run_dir.join(format!("{dead}.0.sock"));
    std::fs::write(&stale_socket, "").unwrap();
    // The entry names another file as its socket: the reader must not delete that one.
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    let entry = serde_json::json!({"session": "s-dead", "project": dir, "session_dir": dir.join("nowhere"),
        "pid": dead, "pid_start": null, "started_ms": 1, "socket": victim});
    std::fs::write(&stale, entry.to_string()).unwrap();
    assert_eq!(
        ps(&dir, &home, &[])["sessions"].as_array().unwrap().len(),
        1
    );
    assert!(
        !stale.exists() && !stale_socket.exists(),
        "the dead crew's entry is reconciled away"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "keep",
        "a crafted entry makes the reader delete nothing else"
    );

    // Released, the run ends; its registration goes with it.
    std::fs::write(&release, "").unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ps(&dir, &home, &[])["sessions"], serde_json::json!([]));
    let left: Vec<_> = std::fs::read_dir(&run_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "nothing is left in ~/.crew/run: {left:?}");
}

/// The one socket in the run directory.
fn session_socket(run_dir: &Path) -> std::path::PathBuf {
    let sockets: Vec<_> = std::fs::read_dir(run_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sock"))
        .collect();
    assert_eq!(sockets.len(), 1, "{sockets:?}");
    sockets[0].clone()
}
