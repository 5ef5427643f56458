//! The fault matrix on the real `crew` binary (issue 15): actors killed or panicking
//! under `CREW_FAULTS` (the test-only injector, on in `cargo test` builds), a restart
//! storm, a full disk under the transcript, and a settings file broken mid-session. Each
//! test checks that no transcript line is lost or duplicated, that the user is told, and
//! that the run ends. The other rows of the matrix are listed in the README with the test
//! that covers each.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// A project directory and a home, both temporary.
struct Place {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    home: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (dir, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    Place {
        _tmp: tmp,
        dir,
        home,
    }
}

/// Runs `crew -p` on `script` under `mode` with extra environment (text output: what the
/// user reads), the requests recorded to `home/requests.jsonl`.
fn run(p: &Place, script: &Value, mode: &str, env: &[(&str, &str)]) -> Output {
    run_spawned(p, script, mode, env)
        .wait_with_output()
        .unwrap()
}

fn run_spawned(p: &Place, script: &Value, mode: &str, env: &[(&str, &str)]) -> std::process::Child {
    let path = p.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", "go", "--permission-mode", mode])
        .arg("--model")
        .arg(format!("script:{}", path.display()))
        .arg("--record-requests")
        .arg(p.home.join("requests.jsonl"))
        .current_dir(&p.dir)
        .env("HOME", &p.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CREW_FAULTS")
        .env_remove("CREW_RESTART_LIMIT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Every line of the session's lead transcript, parsed: a line that does not parse (a
/// torn or spliced line) fails the test.
fn transcript(home: &Path) -> Vec<Value> {
    let mut lines = Vec::new();
    for project in std::fs::read_dir(home.join(".crew/projects"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(project.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(f.path()).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
                        panic!("{} line {}: {e}: {line}", f.path().display(), i + 1)
                    });
                    lines.push(v);
                }
            }
        }
    }
    lines
}

/// How many times each call id has a `tool_call_finished` line.
fn finished_ids(lines: &[Value]) -> HashMap<String, usize> {
    let mut ids = HashMap::new();
    for l in lines.iter().filter(|l| l["type"] == "tool_call_finished") {
        *ids.entry(l["call_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    ids
}

/// The `tool_call_finished` line of call `id`.
fn finished<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["type"] == "tool_call_finished" && l["call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// The tool results the model was sent, by call id, from the last recorded request.
fn results_sent(home: &Path) -> HashMap<String, (bool, String)> {
    let text = std::fs::read_to_string(home.join("requests.jsonl")).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut out = HashMap::new();
    for m in last["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let id = b["tool_use_id"].as_str().unwrap().to_string();
                let is_error = b["is_error"].as_bool().unwrap_or(false);
                let previous = out.insert(id.clone(), (is_error, b["content"].to_string()));
                assert!(previous.is_none(), "{id} was sent twice");
            }
        }
    }
    out
}

fn restarts(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l["type"] == "actor_restarted")
        .map(|l| l["actor"].as_str().unwrap())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The processes (pids) whose command line contains `token`: a command a test started
/// that outlived its run.
fn processes_with(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(token) {
            found.push(pid);
        }
    }
    found
}

fn read_turn(id: &str, path: &str) -> Value {
    json!({"text": format!("step {id}"), "tool_calls": [{"name": "read_file", "id": id, "input": {"path": path}}]})
}

#[test]
fn a_hundred_kills_during_a_fifty_call_run_every_call_gets_a_result_and_the_run_completes() {
    let p = place();
    support::put(&p.dir, "a.txt", "alpha\n");
    // A repository, so that the session has a worktree manager to kill too.
    support::git(&p.dir, &["init", "-q"]);
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
    assert!(
        stderr(&out).contains("restarted the gate"),
        "{}",
        stderr(&out)
    );
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
        assert!(
            stderr(&out).contains(&format!("restarted the {actor}")),
            "{actor}: {}",
            stderr(&out)
        );
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
    let lines = transcript(&p.home);
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
}

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
    for _ in 0..1200 {
        if p.dir.join("started").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(p.dir.join("started").exists(), "the first call never ran");
    std::fs::write(
        p.dir.join(".crew/settings.json"),
        "{\"permissions\": {\"deny\": [",
    )
    .unwrap();
    std::fs::write(p.dir.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        processes_with("settings-wait-7f3a"),
        Vec::<u32>::new(),
        "left running"
    );
    let lines = transcript(&p.home);
    assert_eq!(restarts(&lines), ["permission"]);
    let after = finished(&lines, "after");
    assert_eq!(after["error_code"], "permission_denied", "{after}");
    let requests = std::fs::read_to_string(p.home.join("requests.jsonl")).unwrap();
    assert!(
        !requests.contains("TOP-SECRET-VALUE"),
        "the secret reached the model"
    );
    // The next session refuses to start on the broken file, naming it.
    let out = support::crew(
        &p.dir,
        &p.home,
        &["-p", "again", "--model", "script:/dev/null"],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("settings.json"), "{}", stderr(&out));
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
    let restarted = || {
        std::fs::read_dir(p.home.join(".crew/projects"))
            .is_ok_and(|_| !restarts(&transcript(&p.home)).is_empty())
    };
    for _ in 0..1200 {
        if restarted() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(restarted(), "the task manager was never restarted");
    std::fs::write(p.dir.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("bg noticed"));
    assert_eq!(
        processes_with("tasks-bg-91c2"),
        Vec::<u32>::new(),
        "left running"
    );
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
        "---\nname: w\ndescription: worker\ntools: run_command, write_file, read_file\n---\nWork.\n"
            .to_string(),
    )];
    let t = support::start(setup).await;
    let main = t.cwd();
    let run = tokio::spawn({
        let lead = t.session.lead().clone();
        async move {
            lead.call(
                |r| {
                    crewmaster::agent::lead::LeadMsg::Run(
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
    let mut wt = None;
    for _ in 0..1200 {
        wt = walk_for(&worktrees, "marker");
        if wt.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let wt = wt.expect("the subagent's command never started");
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
    assert_eq!(
        processes_with("wt-wait-5d0e"),
        Vec::<u32>::new(),
        "left running"
    );
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
