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
    /// Holds the project and the home (and so every worktree).
    root: PathBuf,
    dir: PathBuf,
    home: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (dir, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    // A repository with one commit, so that "no work lost" has something to check.
    support::put(&dir, ".gitignore", "started\ngo\n");
    support::git(&dir, &["init", "-q"]);
    support::git(&dir, &["add", "."]);
    support::git(&dir, &["commit", "-qm", "init"]);
    Place {
        _tmp: tmp,
        root,
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
    run_prompt(p, "go", script, mode, env)
}

/// [`run_spawned`] with the prompt `prompt`.
fn run_prompt(
    p: &Place,
    prompt: &str,
    script: &Value,
    mode: &str,
    env: &[(&str, &str)],
) -> std::process::Child {
    crew_command(p, prompt, script, mode, env).spawn().unwrap()
}

/// The `crew -p` command of [`run_prompt`], not yet started.
fn crew_command(
    p: &Place,
    prompt: &str,
    script: &Value,
    mode: &str,
    env: &[(&str, &str)],
) -> Command {
    let path = p.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", prompt, "--permission-mode", mode])
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
    cmd
}

/// Every line of the session's transcripts (the lead's and its agents'), each checked
/// whole: no line torn, lost or duplicated, each call answered exactly once.
fn transcript(home: &Path) -> Vec<Value> {
    support::faults::assert_transcripts_whole(home)
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

/// The properties every row checks beyond its own (the transcripts were checked whole as
/// they were read): no process the run started is left, no work was lost, and the user
/// was told `told` (on stderr or in the transcript).
fn assert_survived(p: &Place, stderr: &str, lines: &[Value], told: &str) {
    support::faults::assert_no_process_under(&p.root);
    support::faults::assert_no_work_lost(&p.dir, &[]);
    support::faults::assert_told(stderr, lines, told);
}

fn read_turn(id: &str, path: &str) -> Value {
    json!({"text": format!("step {id}"), "tool_calls": [{"name": "read_file", "id": id, "input": {"path": path}}]})
}

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
    // Read while the run goes on: a line may be half written, so only look for the event.
    let restarted = || {
        support::faults::transcript_files(&p.home)
            .iter()
            .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("\"actor_restarted\"")))
    };
    support::wait_until_blocking("the task manager's restart", restarted);
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

/// The process group of live process `pid`, from `/proc`.
fn pgid_of(pid: u32) -> u32 {
    support::faults::processes()
        .into_iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("process {pid} is not running"))
        .pgid
}

/// The pid a command wrote to `file` (waited for, bounded).
fn pid_in(file: &Path) -> u32 {
    let read = || {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
    };
    support::wait_until_blocking(&format!("{} to hold a pid", file.display()), || {
        read().is_some()
    });
    read().unwrap()
}

#[test]
fn sigkill_of_crew_leaves_no_command_hook_task_or_server_behind() {
    // Each command starts `sleep 1000` in its group, writes its pid, and waits for it.
    let sleeper =
        |name: &str| format!(": orphan-{name}-3b7e; sleep 1000 & echo $! > {name}.pid; wait");
    // Or one that leaves the group and the session (`setsid -f`), with its pid written
    // after it left, while the command's shell sleeps in the group.
    let escaper = |name: &str| {
        format!(
            ": orphan-{name}-3b7e; setsid -f sh -c 'echo $$ > {name}.tmp; mv {name}.tmp {name}.pid; exec sleep 1000'; sleep 1000"
        )
    };
    let command = |id: &str, background: bool| {
        let run = if id.starts_with("esc") {
            escaper(id)
        } else {
            sleeper(id)
        };
        json!({"text": id, "tool_calls": [{"name": "run_command", "id": id, "input": {
            "command": run, "run_in_background": background}}]})
    };
    // Each scenario: the script, what is running when crew is killed (by the files
    // their pids are in), and whether a tool call is in flight then.
    struct Scenario {
        name: &'static str,
        script: Value,
        running: &'static [&'static str],
        call_in_flight: bool,
    }
    let scenarios = [
        // A background task, then a foreground command, both running.
        Scenario {
            name: "command and task",
            script: json!({"turns": [command("bg", true), command("fg", false), {"text": "never"}]}),
            running: &["bg", "fg"],
            call_in_flight: true,
        },
        // The same with processes that escaped the command's group and session.
        Scenario {
            name: "escaped from command and task",
            script: json!({"turns": [command("escbg", true), command("escfg", false), {"text": "never"}]}),
            running: &["escbg", "escfg"],
            call_in_flight: true,
        },
        // A PreToolUse hook running.
        Scenario {
            name: "hook",
            script: json!({"turns": [read_turn("read", "a.txt"), {"text": "never"}]}),
            running: &["hook"],
            call_in_flight: true,
        },
        // An MCP stdio server (one that never answers the handshake) running.
        Scenario {
            name: "MCP server",
            script: json!({"turns": [{"text": "never"}]}),
            running: &["mcp"],
            call_in_flight: false,
        },
    ];
    for s in scenarios {
        let p = place();
        support::put(&p.dir, "a.txt", "alpha\n");
        if s.running.contains(&"hook") {
            let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
                {"type": "command", "command": sleeper("hook")}]}]}});
            support::put(&p.home, ".crew/settings.json", &settings.to_string());
        }
        let mut crew = crew_command(&p, "go", &s.script, "bypassPermissions", &[]);
        if s.running.contains(&"mcp") {
            let config = p.home.join("mcp.json");
            let servers =
                json!({"mcpServers": {"t": {"command": "bash", "args": ["-c", sleeper("mcp")]}}});
            std::fs::write(&config, servers.to_string()).unwrap();
            crew.arg("--mcp-config").arg(&config);
        }
        let mut child = crew.spawn().unwrap();
        let scenario = s.name;

        let pids: Vec<u32> = s
            .running
            .iter()
            .map(|f| pid_in(&p.dir.join(format!("{f}.pid"))))
            .collect();
        let groups: Vec<u32> = pids.iter().map(|pid| pgid_of(*pid)).collect();
        for (pid, g) in pids.iter().zip(&groups) {
            // An escaped process leads its own group: no group kill could reach it.
            let escaped = pid == g;
            assert_eq!(
                escaped,
                scenario.starts_with("escaped"),
                "{scenario}: {pid} in {g}"
            );
        }
        for g in &groups {
            assert!(
                !support::faults::group_members(*g).is_empty(),
                "{scenario}: group {g}"
            );
        }

        // SIGKILL: crew can clean nothing up itself.
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{scenario}");

        // No command, task, hook or server, nor anything in their groups, is left.
        for g in &groups {
            support::faults::assert_no_orphans(*g);
        }
        for pid in &pids {
            assert!(
                !support::faults::processes().iter().any(|q| q.pid == *pid),
                "{scenario}: sleep {pid} outlived crew"
            );
        }
        support::faults::assert_no_process_under(&p.root);
        support::faults::assert_no_work_lost(&p.dir, &[]);
        if !s.call_in_flight {
            continue;
        }
        // The transcript is whole up to the kill, the call in flight recorded.
        let lines: Vec<Value> = support::faults::transcript_files(&p.home)
            .iter()
            .flat_map(|f| support::faults::assert_transcript_whole_but_cut(f))
            .collect();
        assert!(
            lines.iter().any(|l| l["type"] == "tool_call_started"),
            "{scenario}: the call in flight was recorded before it ran"
        );
        // The user sees what happened: resuming closes the killed call as interrupted.
        let again = p.home.join("again.json");
        std::fs::write(&again, r#"{"turns":[{"text":"resumed"}]}"#).unwrap();
        let requests = p.home.join("again.jsonl");
        let out = support::crew(
            &p.dir,
            &p.home,
            &[
                "--continue",
                "-p",
                "again",
                "--model",
                &format!("script:{}", again.display()),
                "--record-requests",
                &requests.display().to_string(),
            ],
        );
        assert!(out.status.success(), "{scenario}: {}", stderr(&out));
        let seen = std::fs::read_to_string(&requests).unwrap();
        assert!(seen.contains("interrupted"), "{scenario}: {seen}");
    }
}

#[test]
fn sigkill_of_crew_leaves_no_confined_subagent_command_behind() {
    // A subagent's command runs confined (Landlock, mount and PID namespaces) in its
    // worktree: the guardian, the namespace's intermediate and the shell inside.
    let p = place();
    support::put(
        &p.dir,
        ".crew/agents/w.md",
        "---\nname: w\ndescription: worker\ntools: run_command\n---\nWork.\n",
    );
    support::git(&p.dir, &["add", "."]);
    support::git(&p.dir, &["commit", "-qm", "agent"]);
    let script = json!({"turns": [
        {"tool_calls": [{"name": "agent", "id": "sub", "input": {"description": "worker", "prompt": "p", "subagent_type": "w"}}]},
        {"text": "never"}],
      "agents": {"w": {"turns": [
        {"tool_calls": [{"name": "run_command", "id": "wait", "input": {"command": ": orphan-sub-3b7e; sleep 1000 & wait"}}]},
        {"text": "never"}]}}});
    let mut child = crew_command(&p, "go", &script, "bypassPermissions", &[])
        .spawn()
        .unwrap();
    let marked = || -> Vec<u32> {
        support::faults::processes()
            .into_iter()
            .filter(|q| q.cmdline.contains("orphan-sub-3b7e"))
            .map(|q| q.pgid)
            .collect()
    };
    support::wait_until_blocking("the subagent's command to start", || {
        marked()
            .iter()
            .any(|g| support::faults::group_members(*g).len() >= 2)
    });
    let groups = marked();
    child.kill().unwrap();
    let _ = child.wait_with_output().unwrap();
    for g in groups {
        support::faults::assert_no_orphans(g);
    }
    support::faults::assert_no_process_with("orphan-sub-3b7e");
    support::faults::assert_no_process_under(&p.root);
    support::faults::assert_no_work_lost(&p.dir, &[]);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_errors_and_a_torn_stream_in_a_real_run_lose_nothing_and_are_shown() {
    use support::provider::*;
    use wiremock::{Mock, MockServer, ResponseTemplate, matchers};
    let p = place();
    support::put(&p.dir, "a.txt", "alpha-content\n");
    let turn = |blocks: Vec<Value>| {
        let mut e = vec![a_message_start(10, 0)];
        e.extend(blocks);
        e.extend(a_end("tool_use", 5));
        sse_response(anthropic_sse(&e))
    };
    let command = r#"{"command":": prov-cmd-88a1; echo ran-one"}"#;
    // A torn stream: text, then the connection ends mid-output.
    let mut torn = vec![a_message_start(5, 0)];
    torn.push(
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    );
    torn.push(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading"}}));
    let mut second = a_text_block(0, &["Reading", " now"]);
    second.extend(a_tool_block(
        1,
        "toolu_2",
        "read_file",
        &[r#"{"path":"a.txt"}"#],
    ));
    let sequence = Sequence::new(vec![
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(json!({"type":"error","error":{"type":"rate_limit_error","message":"rate limited"}})),
        turn(a_tool_block(0, "toolu_1", "run_command", &[command])),
        ResponseTemplate::new(529)
            .set_body_json(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
        ResponseTemplate::new(500)
            .set_body_json(json!({"type":"error","error":{"type":"api_error","message":"Internal server error"}})),
        sse_response(anthropic_sse(&torn)),
        turn(second),
        sse_response(a_text_turn(&["all done"])),
    ]);
    let server = MockServer::start().await;
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/messages"))
        .respond_with(sequence.clone())
        .mount(&server)
        .await;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .args(["--model", "anthropic:claude-sonnet-4-5"])
        .current_dir(&p.dir)
        .env("HOME", &p.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.uri())
        .env_remove("OPENAI_API_KEY")
        .env_remove("CREW_FAULTS");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("all done"));
    // Seven requests: each error and the torn stream were retried once.
    assert_eq!(sequence.arrivals().len(), 7);
    // No line lost or twice: both calls started, finished and answered exactly once, and
    // the torn text was not appended twice.
    let lines = transcript(&p.home);
    let ids = finished_ids(&lines);
    assert_eq!(ids.get("toolu_1"), Some(&1));
    assert_eq!(ids.get("toolu_2"), Some(&1));
    let texts: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "message_appended" && l["message"]["role"] == "assistant")
        .map(|l| l["message"].to_string())
        .collect();
    assert_eq!(
        texts.iter().filter(|t| t.contains("Reading now")).count(),
        1,
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("\"Reading\"")),
        "{texts:?}"
    );
    // The user saw each retry and its reason.
    for reason in ["429", "overloaded", "500", "interrupted"] {
        assert_told(&err, &lines, reason);
    }
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "retrying").count(),
        4,
        "one event per retry"
    );
    support::faults::assert_no_process_with("prov-cmd-88a1");
    assert_survived(&p, &err, &lines, "retrying");
}

/// [`support::faults::assert_told`], for the rows that check several messages.
fn assert_told(stderr: &str, lines: &[Value], needle: &str) {
    support::faults::assert_told(stderr, lines, needle);
}
