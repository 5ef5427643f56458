//! A `placement: remote` subagent under a lead in auto mode: its calls are judged by the
//! lead's classifier like a local subagent's (they used to run under dontAsk on the
//! worker, never classified). Checked on the branch that comes back, in the lead's
//! `auto_mode` summary and in the task's log.

use super::*;

fn answer(decision: &str, reason: &str) -> serde_json::Value {
    serde_json::json!({ "text": serde_json::json!({ "decision": decision, "reason": reason }).to_string() })
}

fn command(cmd: &str) -> serde_json::Value {
    serde_json::json!({"tool_calls": [{"name": "run_command", "input": {"command": cmd}}]})
}

#[test]
fn a_remote_subagents_calls_go_to_the_leads_classifier_in_auto() {
    let f = fixture(&[("far", &remote_agent("far", "run_command"))]);
    let worker = start_worker(&f.home, &f.cookie, "a", 1);
    let script = serde_json::json!({
        "turns": [{"tool_calls": [spawn_call("far", "remote job")]}],
        "agents": {
            "far": {"turns": [
                command("touch denied.txt"),
                command("touch allowed.txt"),
                // Dangerous: for a human, not the classifier (headless: denied).
                command("git reset --hard HEAD && touch after-reset.txt"),
                {"text": "far done"},
            ]},
            "classifier": {"turns": [
                answer("allow", "the helper serves the task"),
                answer("deny", "the task needs no denied.txt"),
                answer("allow", "allowed.txt serves the task"),
                answer("allow", "would allow anything"),
            ]}
        }
    });
    let out = lead(
        &f.root,
        &f.home,
        &script,
        &[worker.addr.as_str()],
        &f.cookie,
        &["--permission-mode", "auto", "--output-format", "json"],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let result: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON result: {all}"));
    let task = &tasks_json(&f.root, &f.home)[0];
    let branch = branch_of(&f.root, task["id"].as_str().unwrap());
    let tree = git(&f.root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(
        tree.contains("allowed.txt"),
        "the allowed call did not run: {tree}\n{all}"
    );
    assert!(!tree.contains("denied.txt"), "the denied call ran: {tree}");
    assert!(
        !tree.contains("after-reset.txt"),
        "the dangerous call ran: {tree}"
    );
    // The lead's classifier judged the agent start and the two writes, nothing more.
    let auto = &result["auto_mode"];
    let decisions = auto["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 3, "{auto}");
    for d in &decisions[1..] {
        assert!(
            d["agent"].as_str().unwrap().starts_with("far/"),
            "judged as someone else: {d}"
        );
        assert_eq!(d["tool"], "run_command");
    }
    assert_eq!(decisions[1]["decision"], "deny");
    assert_eq!(decisions[2]["decision"], "allow");
    // The remote agent was told why, as a local one is.
    let log = std::fs::read_to_string(task["output_file"].as_str().unwrap()).unwrap();
    assert!(
        log.contains("classifier denied this call: the task needs no denied.txt"),
        "{log}"
    );
}

#[test]
fn a_remote_teammates_calls_go_to_the_leads_classifier_in_auto() {
    let f = fixture(&[("far", &remote_agent("far", "run_command"))]);
    let worker = start_worker(&f.home, &f.cookie, "a", 1);
    let spawn = serde_json::json!({"tool_calls": [{"name": "agent", "input": {
        "description": "remote mate", "prompt": "do the remote part",
        "subagent_type": "far", "name": "alice"}}]});
    let script = serde_json::json!({
        "turns": [spawn, {"text": "started"}, {"text": "read"}, {"text": "read"}],
        "agents": {
            "alice": {"turns": [
                command("touch denied-mate.txt"),
                command("touch allowed-mate.txt"),
                {"text": "alice done"},
            ]},
            "classifier": {"turns": [
                answer("allow", "the teammate serves the task"),
                answer("deny", "the task needs no denied-mate.txt"),
                answer("allow", "allowed-mate.txt serves the task"),
            ]}
        }
    });
    let out = lead(
        &f.root,
        &f.home,
        &script,
        &[worker.addr.as_str()],
        &f.cookie,
        &["--permission-mode", "auto", "--output-format", "json"],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let result: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON result: {all}"));
    let auto = &result["auto_mode"];
    let decisions = auto["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 3, "{auto}\n{all}");
    for d in &decisions[1..] {
        assert!(d["agent"].as_str().unwrap().contains("alice"), "{d}");
    }
    assert_eq!(decisions[1]["decision"], "deny");
    assert_eq!(decisions[2]["decision"], "allow");
    // What came back: the allowed write on alice's branch, the denied one nowhere.
    let files = git(&f.root, &["log", "--all", "--name-only", "--format="]);
    assert!(files.contains("allowed-mate.txt"), "{files}\n{all}");
    assert!(!files.contains("denied-mate.txt"), "{files}");
    for dir in [&f.root, &f.home] {
        let found = std::process::Command::new("find")
            .arg(dir)
            .args(["-name", "denied-mate.txt"])
            .output()
            .unwrap();
        assert!(
            found.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&found.stdout)
        );
    }
}
