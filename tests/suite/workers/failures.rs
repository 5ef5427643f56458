//! A worker or the lead dies mid-run: a killed worker's task fails and is rescheduled on
//! another worker with no branch lost; a lead that dies leaves its task's branch on the
//! worker once the orphan timeout passes.

use super::*;

#[test]
fn a_killed_worker_fails_its_task_which_is_rescheduled_and_no_branch_is_lost() {
    let release = tempfile::tempdir().unwrap();
    let signal = release.path().join("release");
    let f = fixture(&[
        ("quick", &remote_agent("quick", "write_file")),
        (
            "blocker",
            &remote_agent("blocker", "write_file, run_command"),
        ),
    ]);
    let a = start_worker(&f.home, &f.cookie, "a", 1);
    let b = start_worker(&f.home, &f.cookie, "b", 1);
    // The blocker marks that it runs, then waits for the test's signal file: "mid-task"
    // is a state, not a moment.
    let wait = format!(
        "touch started && while [ ! -f {} ]; do sleep 0.05; done && echo released",
        signal.display()
    );
    let script = serde_json::json!({
        // The lead's first run starts the quick task and ends; its completion starts the
        // second run, which starts the blocker.
        "turns": [
            {"tool_calls": [spawn_call("quick", "quick job")]},
            {"text": "waiting"},
            {"tool_calls": [spawn_call("blocker", "blocking job")]},
            {"text": "waiting again"},
        ],
        "agents": {
            "quick": {"turns": [
                {"tool_calls": [{"name": "write_file", "input": {"path": "quick.txt", "content": "quick\n"}}]},
                {"text": "quick done"}]},
            "blocker": {"turns": [
                {"tool_calls": [{"name": "run_command", "input": {"command": wait}}]},
                {"tool_calls": [{"name": "write_file", "input": {"path": "blocked.txt", "content": "after\n"}}]},
                {"text": "blocker done"}]},
        }
    });
    let root = f.root.clone();
    let home = f.home.clone();
    let cookie = f.cookie.clone();
    let (a_addr, b_addr) = (a.addr.clone(), b.addr.clone());
    let lead_run = std::thread::spawn(move || {
        lead(
            &root,
            &home,
            &script,
            &[a_addr.as_str(), b_addr.as_str()],
            &cookie,
            &[],
        )
    });
    // The quick task ran on `a` (first, least loaded) and its branch came back; then the
    // blocker started on `a` as well.
    let started = || {
        std::fs::read_dir(&a.workdir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("wt/started").exists())
    };
    wait_for("the blocker to start on worker a", started);
    let quick_before = tasks_json(&f.root, &f.home)
        .into_iter()
        .find(|t| t["agent_type"] == "quick")
        .expect("the quick task is recorded");
    assert_eq!(quick_before["status"], "completed", "{quick_before:#}");
    let quick_branch = branch_of(&f.root, quick_before["id"].as_str().unwrap());
    assert!(!quick_branch.is_empty());
    // kill -9 the worker mid-task.
    let mut a = a;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(a.child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = a.child.wait();
    std::fs::write(&signal, "go").unwrap();
    let out = lead_run.join().unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let tasks = tasks_json(&f.root, &f.home);
    let blockers: Vec<_> = tasks
        .iter()
        .filter(|t| t["agent_type"] == "blocker")
        .collect();
    assert_eq!(blockers.len(), 2, "{tasks:#?}");
    let lost = blockers
        .iter()
        .find(|t| t["status"] == "failed")
        .expect("a failed try");
    let lost_result = lost["result"].as_str().unwrap();
    assert!(lost_result.contains("worker lost"), "{lost_result}");
    assert!(lost["node"].as_str().unwrap().starts_with("a@"));
    let again = blockers
        .iter()
        .find(|t| t["status"] == "completed")
        .expect("a rescheduled try");
    assert!(
        again["node"].as_str().unwrap().starts_with("b@"),
        "{again:#}"
    );
    assert!(
        lost_result.contains(again["id"].as_str().unwrap()),
        "{lost_result}"
    );
    let branch = branch_of(&f.root, again["id"].as_str().unwrap());
    assert_eq!(
        git(&f.root, &["show", &format!("{branch}:blocked.txt")]),
        "after"
    );
    // The branch that came back from the killed worker before it died is still there.
    assert_eq!(
        git(&f.root, &["show", &format!("{quick_branch}:quick.txt")]),
        "quick"
    );
    // The lead was told: a request after the loss carries the failure.
    let requests = std::fs::read_to_string(f.home.join("requests.jsonl")).unwrap();
    assert!(
        requests
            .lines()
            .filter(|l| l.contains("\"agent\":\"lead\""))
            .any(|l| l.contains("worker lost")),
        "the lead never heard of the loss"
    );
    drop(b);
}

#[test]
fn a_lead_that_dies_leaves_its_branch_on_the_worker_after_the_orphan_timeout() {
    let release = tempfile::tempdir().unwrap();
    let signal = release.path().join("release");
    let f = fixture(&[(
        "blocker",
        &remote_agent("blocker", "write_file, run_command"),
    )]);
    let w = start_worker_with(&f.home, &f.cookie, "a", 1, &["--orphan-timeout", "1"]);
    let wait = format!(
        "echo work > started && while [ ! -f {} ]; do sleep 0.05; done",
        signal.display()
    );
    let script = serde_json::json!({
        "turns": [{"tool_calls": [spawn_call("blocker", "orphaned job")]}],
        "agents": {"blocker": {"turns": [
            {"tool_calls": [{"name": "run_command", "input": {"command": wait}}]},
            {"text": "done"}]}}
    });
    let mut lead = lead_command(
        &f.root,
        &f.home,
        &script,
        &[w.addr.as_str()],
        &f.cookie,
        &[],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let task_dir = || {
        std::fs::read_dir(&w.workdir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("wt/started").exists())
    };
    wait_for("the task to start on the worker", || task_dir().is_some());
    let dir = task_dir().unwrap();
    lead.kill().unwrap();
    let _ = lead.wait();
    std::fs::write(&signal, "go").unwrap();
    wait_for("the worker to give up on the orphan", || {
        w.log().contains("never handed back")
    });
    wait_for("the orphan's worktree to go", || !dir.join("wt").exists());
    // Its branch, with the work, stays in the task's repository on the worker.
    let repo = dir.join("repo.git");
    let branches = git(
        &repo,
        &["branch", "--list", "crew/*", "--format=%(refname:short)"],
    );
    let branch = branches.trim();
    assert!(!branch.is_empty(), "{}", w.log());
    assert_eq!(git(&repo, &["show", &format!("{branch}:started")]), "work");
    assert!(w.log().contains("went away"), "{}", w.log());
}
