//! `crew workers list` asks the running lead (its snapshot under the project's state)
//! and falls back to connecting to the workers itself, with a note, when no lead runs.

use super::*;

fn list(f: &Fixture, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["workers", "list"];
    args.extend_from_slice(extra);
    support::crew(&f.root, &f.home, &args)
}

#[test]
fn workers_list_shows_the_running_leads_tasks_and_falls_back_to_a_probe_without_one() {
    let release = tempfile::tempdir().unwrap();
    let signal = release.path().join("release");
    let f = fixture(&[(
        "blocker",
        &remote_agent("blocker", "write_file, run_command"),
    )]);
    let w = start_worker(&f.home, &f.cookie, "a", 2);
    let wait = format!(
        "touch started && while [ ! -f {} ]; do sleep 0.05; done",
        signal.display()
    );
    let script = serde_json::json!({
        "turns": [{"tool_calls": [spawn_call("blocker", "listed job")]}, {"text": "waiting"}],
        "agents": {"blocker": {"turns": [
            {"tool_calls": [{"name": "run_command", "input": {"command": wait}}]},
            {"text": "done"}]}}
    });
    let (root, home, cookie, addr) = (
        f.root.clone(),
        f.home.clone(),
        f.cookie.clone(),
        w.addr.clone(),
    );
    let lead_run =
        std::thread::spawn(move || lead(&root, &home, &script, &[addr.as_str()], &cookie, &[]));
    let started = || {
        std::fs::read_dir(&w.workdir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("wt/started").exists())
    };
    wait_for("the blocker to start on worker a", started);
    // No --workers and no settings here: only the running lead can answer.
    let out = list(&f, &["--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["source"], "lead", "{doc:#}");
    assert!(doc["lead_pid"].as_u64().is_some(), "{doc:#}");
    let node = &doc["workers"][0];
    assert!(node["node"].as_str().unwrap().starts_with("a@"), "{doc:#}");
    assert_eq!(node["slots"], 2);
    assert_eq!(node["in_use"], 1);
    let running = node["tasks"][0].as_str().unwrap().to_string();
    let out = list(&f, &[]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("from the running lead"), "{said}");
    assert!(
        said.contains("1/2 slots in use") && said.contains(&running),
        "{said}"
    );
    // The worker saw one connection only, the lead's: the listing opened none.
    assert_eq!(w.log().matches("authenticated").count(), 1, "{}", w.log());

    std::fs::write(&signal, "go").unwrap();
    let out = lead_run.join().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let tasks = tasks_json(&f.root, &f.home);
    assert_eq!(
        tasks[0]["id"].as_str(),
        Some(running.as_str()),
        "{tasks:#?}"
    );

    // The lead is gone: its snapshot no longer answers, and the listing says so.
    let out = list(&f, &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains("no lead is running"), "{}", text(&out));
    let out = list(
        &f,
        &[
            "--workers",
            &w.addr,
            "--cookie-file",
            f.cookie.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("asked the workers directly"), "{said}");
    assert!(said.contains("a@127.0.0.1  0/2 slots in use"), "{said}");
}
