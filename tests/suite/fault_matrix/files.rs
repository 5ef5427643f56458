//! Faults in the files a run depends on: a full disk under the transcript, a settings
//! file broken mid-session, a worktree deleted under a running subagent.

use super::*;

#[test]
fn a_full_disk_under_the_transcript_loses_and_duplicates_no_line() {
    let script = json!({"turns": [
        read_turn("r1", "a.txt"),
        read_turn("r2", "a.txt"),
        read_turn("r3", "a.txt"),
        read_turn("r4", "a.txt"),
        {"text": "done"}
    ]});
    let count = |lines: &[Value]| {
        let mut by_type: HashMap<String, usize> = HashMap::new();
        for l in lines.iter().filter(|l| l["type"] != "error") {
            *by_type
                .entry(l["type"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        by_type
    };
    let clean = place();
    support::put(&clean.dir, "a.txt", "alpha\n");
    let out = run(&clean, &script, "bypassPermissions", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = count(&transcript(&clean.home));

    let full = place();
    support::put(&full.dir, "a.txt", "alpha\n");
    let out = run(
        &full,
        &script,
        "bypassPermissions",
        &[("CREW_FAULTS", "full:transcript@every3")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("No space left on device"),
        "{}",
        stderr(&out)
    );
    // Every line parses (no torn line was left between others) …
    let lines = transcript(&full.home);
    // … and holds the same events, none lost, none twice.
    assert_eq!(count(&lines), expected);
    assert!(finished_ids(&lines).values().all(|n| *n == 1));
    // The transcript still resumes.
    let script = full.home.join("script.json");
    std::fs::write(&script, r#"{"turns":[{"text":"resumed"}]}"#).unwrap();
    assert_survived(&full, &stderr(&out), &lines, "No space left on device");
    let out = support::crew(
        &full.dir,
        &full.home,
        &[
            "--continue",
            "-p",
            "again",
            "--model",
            &format!("script:{}", script.display()),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn settings_broken_mid_session_keep_the_last_good_policy_across_an_engine_restart() {
    let p = place();
    support::put(&p.dir, "secret.txt", "TOP-SECRET-VALUE\n");
    support::put(
        &p.dir,
        ".crew/settings.json",
        r#"{"permissions": {"deny": ["Read(secret.txt)"]}}"#,
    );
    let script = json!({"turns": [
        {"text": "wait", "tool_calls": [{"name": "run_command", "id": "wait", "input": {"command": ": settings-wait-7f3a; touch started; while [ ! -f go ]; do sleep 0.05; done; echo resumed"}}]},
        read_turn("crash", "secret.txt"),
        read_turn("after", "secret.txt"),
        {"text": "done"}
    ]});
    // The engine's second decision panics: the engine restarts after the file broke.
    let child = run_spawned(
        &p,
        &script,
        "bypassPermissions",
        &[("CREW_FAULTS", "panic:permission@2")],
    );
    support::wait_until_blocking("the first call to run", || p.dir.join("started").exists());
    std::fs::write(
        p.dir.join(".crew/settings.json"),
        "{\"permissions\": {\"deny\": [",
    )
    .unwrap();
    std::fs::write(p.dir.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    support::faults::assert_no_process_with("settings-wait-7f3a");
    let lines = transcript(&p.home);
    assert_eq!(restarts(&lines), ["permission"]);
    let after = finished(&lines, "after");
    assert_eq!(after["error_code"], "permission_denied", "{after}");
    let requests = std::fs::read_to_string(p.home.join("requests.jsonl")).unwrap();
    assert!(
        !requests.contains("TOP-SECRET-VALUE"),
        "the secret reached the model"
    );
    assert_survived(&p, &stderr(&out), &lines, "restarted the permission");
    // The next session refuses to start on the broken file, naming it.
    let out = support::crew(
        &p.dir,
        &p.home,
        &["-p", "again", "--model", "script:/dev/null"],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("settings.json"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_deleted_under_a_running_subagent_keeps_its_branch_and_the_lead_is_told() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"agent","id":"sub","input":{"description":"worker","prompt":"p","subagent_type":"w"}}]},
        {"text":"lead done"}],
      "agents":{"w":{"turns":[
        {"tool_calls":[{"name":"run_command","id":"wait","input":{"command":": wt-wait-5d0e; touch marker; while [ -e marker ]; do sleep 0.05; done; echo gone"}}]},
        {"tool_calls":[{"name":"write_file","id":"after","input":{"path":"after.txt","content":"x"}}]},
        {"text":"sub done"}]}}}"#;
    let mut setup = support::Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![(
        ".crew/agents/w.md",
        "---\nname: w\ndescription: worker\nisolation: worktree\ntools: run_command, write_file, read_file\n---\nWork.\n"
            .to_string(),
    )];
    let t = support::start(setup).await;
    let main = t.cwd();
    let run = tokio::spawn({
        let lead = t.session.lead().clone();
        async move {
            lead.call(
                |r| {
                    crewmaster::agent::lead_actor::LeadMsg::Run(
                        crewmaster::agent::runner::RunRequest {
                            mode: crewmaster::agent::mode::AgentMode::Chat,
                            task: "delegate".into(),
                            plan: None,
                        },
                        r,
                    )
                },
                Some(Duration::from_secs(300)),
            )
            .await
        }
    });
    // The subagent's command is running in its worktree: find the worktree by its marker.
    let worktrees = t
        .home
        .path()
        .canonicalize()
        .unwrap()
        .join(".crew/worktrees");
    support::wait_until("the subagent's command to start", || {
        walk_for(&worktrees, "marker").is_some()
    })
    .await;
    let wt = walk_for(&worktrees, "marker").expect("the subagent's command started");
    // Work committed on its branch, then the directory deleted from under it.
    support::git(
        &wt,
        &["commit", "-q", "--allow-empty", "-m", "work saved by hand"],
    );
    std::fs::remove_dir_all(&wt).unwrap();
    let outcome = run.await.unwrap().unwrap();
    let ractor::rpc::CallResult::Success(Ok(outcome)) = outcome else {
        panic!("the lead's run did not end")
    };
    assert_eq!(outcome.result, "lead done");
    support::faults::assert_no_process_with("wt-wait-5d0e");
    // The branch with its commit is still there.
    let log = support::git(&main, &["log", "--all", "--format=%s"]);
    assert!(
        log.contains("work saved by hand"),
        "the branch was deleted: {log}"
    );
    // The lead was told what became of the subagent and where its work is.
    let conv = t.session.conversation().await.unwrap();
    let told = support::tool_results(&conv)
        .into_iter()
        .find(|r| r.tool_use_id == "sub")
        .expect("the agent call got a result");
    assert!(told.content.contains("sub done"), "{}", told.content);
    assert!(told.content.contains("is missing"), "{}", told.content);
    let branches = support::git(&main, &["branch", "--list", "crew/*"]);
    let branch = branches.trim().trim_start_matches(['*', '+', ' ']);
    assert!(
        !branch.is_empty() && told.content.contains(branch),
        "{branches} / {}",
        told.content
    );
    // No call answered twice or left unanswered; nothing of the branch lost (the deleted
    // directory was the test's doing); nothing left running under the project or home.
    let results = support::tool_results(&conv);
    let mut ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "a call answered twice: {ids:?}");
    support::faults::assert_no_work_lost(&main, &[&wt]);
    support::faults::assert_no_process_under(&t.home.path().canonicalize().unwrap());
    support::faults::assert_no_process_under(&main);
}

/// The directory below `root` (two levels at most) that holds `name`.
fn walk_for(root: &Path, name: &str) -> Option<PathBuf> {
    for a in std::fs::read_dir(root).ok()?.flatten() {
        if a.path().join(name).exists() {
            return Some(a.path());
        }
        for b in std::fs::read_dir(a.path()).into_iter().flatten().flatten() {
            if b.path().join(name).exists() {
                return Some(b.path());
            }
        }
    }
    None
}
