//! Actors killed or panicking under `CREW_FAULTS` mid-run (tools, the approver, the gate,
//! the task manager) and a restart storm: every call still gets exactly one result, the
//! replacement picks up where the old one was, and the user is told.

use super::*;

#[test]
fn a_hundred_kills_during_a_fifty_call_run_every_call_gets_a_result_and_the_run_completes() {
    let p = place();
    support::put(&p.dir, "a.txt", "alpha\n");
    // The place is a repository, so the session has a worktree manager to kill too.
    support::git(&p.dir, &["add", "."]);
    support::git(&p.dir, &["commit", "-qm", "init"]);
    // Ten turns of five calls: fifty calls; four services killed on every second call
    // (100 kills), the worktree manager on every tenth (5 more).
    let mut turns: Vec<Value> = (0..10)
        .map(|t| {
            let calls: Vec<Value> = (1..=5)
                .map(|i| {
                    let id = format!("c{}", t * 5 + i);
                    json!({"name": "read_file", "id": id, "input": {"path": "a.txt"}})
                })
                .collect();
            json!({"text": format!("batch {t}"), "tool_calls": calls})
        })
        .collect();
    turns.push(json!({"text": "all fifty done"}));
    let out = run(
        &p,
        &json!({ "turns": turns }),
        "bypassPermissions",
        &[
            (
                "CREW_FAULTS",
                "kill:permission+approver+gate+executor@every2",
            ),
            ("CREW_RESTART_LIMIT", "1000/600s"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("all fifty done"));

    let lines = transcript(&p.home);
    // 25 kill commands × 4 services, each a restart event.
    let restarted = restarts(&lines);
    assert_eq!(restarted.len(), 100, "{restarted:?}");
    for actor in ["permission", "approver", "gate", "executor"] {
        assert_eq!(
            restarted.iter().filter(|a| **a == actor).count(),
            25,
            "{actor}"
        );
    }
    // Every call has exactly one result, in the transcript and in what the model saw.
    let ids = finished_ids(&lines);
    let sent = results_sent(&p.home);
    for n in 1..=50 {
        let id = format!("c{n}");
        assert_eq!(ids.get(&id), Some(&1), "{id} in the transcript");
        assert!(sent.contains_key(&id), "{id} was never answered");
    }
    assert_eq!(ids.len(), 50);
    assert_eq!(sent.len(), 50);
    // Most calls still succeed: the kills cost only the calls they caught in flight.
    let ok = sent.values().filter(|(err, _)| !err).count();
    assert!(ok > 0, "no call succeeded");
    assert_survived(&p, &stderr(&out), &lines, "restarted the gate");
}

#[test]
fn a_call_in_flight_when_its_actor_panics_gets_an_error_and_the_next_call_succeeds() {
    for actor in ["permission", "gate", "executor"] {
        let p = place();
        support::put(&p.dir, "a.txt", "alpha-content\n");
        let script = json!({"turns": [
            read_turn("first", "a.txt"),
            read_turn("second", "a.txt"),
            {"text": "done"}
        ]});
        let fault = format!("panic:{actor}@1");
        let out = run(&p, &script, "bypassPermissions", &[("CREW_FAULTS", &fault)]);
        assert!(out.status.success(), "{actor}: {}", stderr(&out));
        let lines = transcript(&p.home);
        assert_eq!(restarts(&lines), [actor], "{actor}");
        let first = finished(&lines, "first");
        assert_eq!(first["is_error"], true, "{actor}: {first}");
        assert!(
            first["summary"]
                .as_str()
                .unwrap()
                .contains("stopped before answering")
                || first["error_code"] == "actor_restarted",
            "{actor}: {first}"
        );
        // The next call reaches the restarted actor, which kept the lead's registration
        // (gate) and the policy (engine).
        let sent = results_sent(&p.home);
        let (is_error, content) = &sent["second"];
        assert!(
            !is_error && content.contains("alpha-content"),
            "{actor}: {content}"
        );
        assert_eq!(finished_ids(&lines).values().sum::<usize>(), 2, "{actor}");
        assert_survived(&p, &stderr(&out), &lines, &format!("restarted the {actor}"));
    }
}

#[test]
fn an_approver_that_panics_with_a_question_in_flight_is_refused_then_asks_again() {
    let p = place();
    let write = |id: &str| json!({"text": id, "tool_calls": [{"name": "write_file", "id": id, "input": {"path": format!("{id}.txt"), "content": "x"}}]});
    let script = json!({"turns": [write("first"), write("second"), {"text": "done"}]});
    let out = run(
        &p,
        &script,
        "default",
        &[("CREW_FAULTS", "panic:approver@1")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = transcript(&p.home);
    assert_eq!(restarts(&lines), ["approver"]);
    let sent = results_sent(&p.home);
    assert!(
        sent["first"].0
            && sent["first"]
                .1
                .contains("approver stopped before answering")
    );
    // The restarted approver answers (headless: refused, with how to allow it).
    assert!(sent["second"].0 && !sent["second"].1.contains("stopped before answering"));
    // Neither write happened: a crashed approver never turns into an allow.
    assert!(!p.dir.join("first.txt").exists() && !p.dir.join("second.txt").exists());
    assert_survived(&p, &stderr(&out), &lines, "restarted the approver");
}

#[test]
fn a_registration_lost_with_a_crashed_gate_still_holds_in_its_replacement() {
    let p = place();
    support::put(&p.dir, "a.txt", "alpha-content\n");
    // The command's allowed-tools narrow the lead's registered policy for its turn.
    support::put(
        &p.dir,
        ".crew/commands/look.md",
        "---\ndescription: Look only\nallowed-tools: Read\n---\nLook at a.txt\n",
    );
    let script = json!({"turns": [
        read_turn("first", "a.txt"),
        read_turn("read", "a.txt"),
        {"text": "write", "tool_calls": [{"name": "write_file", "id": "write", "input": {"path": "w.txt", "content": "x"}}]},
        {"text": "done"}
    ]});
    // The gate panics as it handles its first `Register` (the lead's, sent at start): the
    // registration dies unread with it, and so may the first call if it was queued behind
    // (it then gets an error result). Bypass: only the gate stands in the write's way.
    let out = run_prompt(
        &p,
        "/look",
        &script,
        "bypassPermissions",
        &[("CREW_FAULTS", "panic:gate.register@1")],
    )
    .wait_with_output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = transcript(&p.home);
    assert_eq!(restarts(&lines), ["gate"]);
    let sent = results_sent(&p.home);
    // The replacement knew the lead: its read passed …
    let (is_error, content) = &sent["read"];
    assert!(!is_error && content.contains("alpha-content"), "{content}");
    // … under the policy it registered: the command's limit still refuses the write
    // (refused by that policy, not as an unknown agent), and nothing was written.
    let (is_error, content) = &sent["write"];
    assert!(
        *is_error && content.contains("command `/look`"),
        "{content}"
    );
    assert!(
        !p.dir.join("w.txt").exists(),
        "a lost policy allowed the write"
    );
    assert_eq!(finished_ids(&lines).values().sum::<usize>(), 3);
    assert_survived(&p, &stderr(&out), &lines, "restarted the gate");
}

#[test]
fn a_restart_storm_ends_the_session_with_the_reason() {
    let p = place();
    support::put(&p.dir, "a.txt", "alpha\n");
    let turns: Vec<Value> = (1..=8)
        .map(|i| read_turn(&format!("r{i}"), "a.txt"))
        .collect();
    let out = run(
        &p,
        &json!({ "turns": turns }),
        "bypassPermissions",
        &[
            ("CREW_FAULTS", "panic:permission@every1"),
            ("CREW_RESTART_LIMIT", "3/600s"),
        ],
    );
    assert!(!out.status.success(), "a storm must not look like success");
    let err = stderr(&out);
    assert!(err.contains("restart storm"), "{err}");
    assert!(err.contains("CREW_RESTART_LIMIT"), "{err}");
    // The storm cut the run: the last message's calls may be left open (resume closes
    // them); everything before is whole.
    let lines: Vec<Value> = support::faults::transcript_files(&p.home)
        .iter()
        .flat_map(|f| support::faults::assert_transcript_whole_but_cut(f))
        .collect();
    assert_eq!(restarts(&lines).len(), 3);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "error"
                && l["message"].as_str().unwrap().contains("restart storm")),
        "the reason is in the transcript"
    );
    // Calls after the storm were never started; each started call has one result.
    assert!(finished_ids(&lines).values().all(|n| *n == 1));
    assert_survived(&p, &err, &lines, "restart storm");
}

#[test]
fn a_killed_task_manager_comes_back_from_its_records_and_its_running_task_still_reports() {
    let p = place();
    let script = json!({"turns": [
        {"text": "start", "tool_calls": [{"name": "run_command", "id": "bg", "input": {
            "command": ": tasks-bg-91c2; while [ ! -f go ]; do sleep 0.05; done; echo bg-done",
            "run_in_background": true}}]},
        {"text": "list", "tool_calls": [{"name": "task_list", "id": "list", "input": {}}]},
        {"text": "waiting for it"},
        {"text": "bg noticed"}
    ]});
    // The manager is killed as the second call (task_list) starts.
    let child = run_spawned(
        &p,
        &script,
        "bypassPermissions",
        &[("CREW_FAULTS", "kill:tasks@2")],
    );
    // Read while the run goes on: a line may be half written, so only look for the events.
    // The task is let go only once the first run has ended, so it is its end that wakes
    // the lead (ending earlier, its notice would reach the first run's last turn).
    let restarted = || {
        support::faults::transcript_files(&p.home).iter().any(|f| {
            std::fs::read_to_string(f)
                .is_ok_and(|t| t.contains("\"actor_restarted\"") && t.contains("\"run_finished\""))
        })
    };
    support::wait_until_blocking(
        "the task manager's restart and the first run's end",
        restarted,
    );
    std::fs::write(p.dir.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("bg noticed"));
    support::faults::assert_no_process_with("tasks-bg-91c2");
    let lines = transcript(&p.home);
    assert_eq!(restarts(&lines), ["tasks"]);
    // The restarted manager knew the task (from its record) and saw it complete.
    let list = finished(&lines, "list");
    assert_eq!(list["is_error"], false, "{list}");
    let started = lines
        .iter()
        .find(|l| l["type"] == "task_changed")
        .expect("the task was announced");
    let id = started["id"].as_str().unwrap();
    assert!(
        results_sent(&p.home)["list"].1.contains(id),
        "task_list lost the task"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "task_changed" && l["id"] == id && l["status"] == "completed"),
        "the task's end never reached the restarted manager"
    );
    assert_eq!(finished_ids(&lines).values().sum::<usize>(), 2);
    assert_survived(&p, &stderr(&out), &lines, "restarted the tasks");
}
