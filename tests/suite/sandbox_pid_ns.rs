//! Confined commands in their own PID namespace, against real programs: they see no
//! other process (so not crew's environment), nothing they start outlives them (a
//! double-forked `setsid` daemon included), and their exit status and output, the
//! timeout kill and background tasks work as before. Fails where the kernel has no
//! Landlock or no PID namespaces, unless knowingly opted out (`support::kernel`).

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use crewmaster::tools::Tool;
use crewmaster::tools::run_command::RunCommand;
use serde_json::json;
use support::sandbox::{confined, crew, repo, run};

macro_rules! require_pid_ns {
    () => {
        require_features!(Landlock, Python3, PidNamespaces);
    };
}

/// Command lines of the live processes (as this test sees them) that contain `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            // Zombies run nothing.
            std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .map(|r| !r.trim_start().starts_with('Z'))
                })
                .unwrap_or(false)
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// A python3 daemon (double fork, `setsid`, standard streams closed or kept) that sleeps
/// `secs`; the unusual duration names it in the process list.
fn daemon(secs: &str, close_streams: bool) -> String {
    let close = if close_streams {
        "[os.close(f) for f in (0,1,2)]; "
    } else {
        ""
    };
    format!(
        "python3 -c \"import os,time; os.fork() and os._exit(0); os.setsid(); os.fork() and os._exit(0); {close}time.sleep({secs})\""
    )
}

#[tokio::test]
async fn a_confined_command_sees_only_its_own_processes() {
    require_pid_ns!();
    let (_d, root) = repo();
    let me = std::env::current_exe().unwrap();
    let me = me.file_name().unwrap().to_string_lossy().into_owned();
    let out = run(
        confined(&root),
        "echo pid=$$; cat /proc/$PPID/environ; \
         for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done; \
         echo err >&2; exit 7",
    )
    .await;
    assert!(out.contains("pid=1"), "{out}");
    assert!(!out.contains(&me), "the test process is visible: {out}");
    assert!(!out.contains("PATH="), "an environment was readable: {out}");
    // Status and both streams reach the caller unchanged.
    assert!(out.contains("exit code: 7"), "{out}");
    assert!(out.contains("err"), "{out}");
}

#[tokio::test]
async fn nothing_a_confined_command_starts_outlives_it() {
    require_pid_ns!();
    let (_d, root) = repo();
    let started = Instant::now();
    let out = run(
        confined(&root),
        &format!(
            "setsid sh -c 'sleep 313' </dev/null >/dev/null 2>&1 & {}; {}; echo started",
            daemon("317", true),
            // This one keeps the output pipe open: it used to hold the reader.
            daemon("319", false)
        ),
    )
    .await;
    assert!(out.contains("started"), "{out}");
    assert!(processes_with("sleep 313").is_empty());
    assert!(processes_with("time.sleep(317)").is_empty());
    assert!(processes_with("time.sleep(319)").is_empty());
    assert!(!out.contains("kept the output open"), "{out}");
    // Not held until the daemons end (300+ s); loose for loaded machines.
    assert!(started.elapsed() < Duration::from_secs(15), "{out}");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_namespace_promptly() {
    require_pid_ns!();
    let (_d, root) = repo();
    let started = Instant::now();
    let err = RunCommand::new()
        .run(
            json!({
                "command": format!("{}; sleep 331; echo never", daemon("329", false)),
                "timeout_ms": 1000
            }),
            confined(&root),
        )
        .await;
    let text = match err {
        Ok(t) => t,
        Err(e) => e.to_string(),
    };
    assert!(text.contains("did not finish"), "{text}");
    assert!(!text.contains("never"), "{text}");
    assert!(processes_with("sleep 331").is_empty());
    assert!(processes_with("time.sleep(329)").is_empty());
    // The kill did not wait for the command (sleep 331) nor hang on the daemon holding the
    // output pipe; typically ~1.3 s: SIGTERM ends the intermediate process and the shell
    // dies with it, with no need to wait out the grace before SIGKILL. The bound is loose
    // for loaded machines.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}: {text}");
}

#[test]
fn a_confined_background_task_reports_its_status_and_leaves_nothing_behind() {
    require_pid_ns!();
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let script = root.join("script.json");
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "run_command", "input": {
            "command": format!("{}; echo bg-out; exit 3", daemon("337", true)),
            "run_in_background": true}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "sleep 2"}}]},
        {"text": "done"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(processes_with("time.sleep(337)").is_empty());
    let list = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["tasks", "list", "--json"])
        .current_dir(&root)
        .env("HOME", &home)
        .output()
        .unwrap();
    let tasks: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let result = tasks[0]["result"].as_str().unwrap_or_default();
    assert!(result.contains("exit code: 3"), "{tasks}");
    let log = tasks[0]["output_file"].as_str().unwrap_or_default();
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(log.contains("bg-out"), "{tasks}: {log}");
}

#[test]
fn a_worktree_subagent_delegated_in_default_mode_cannot_read_crews_environment() {
    require_pid_ns!();
    let (_d, root, _wt) = support::sandbox::repo_with_worktree();
    let home = root.parent().unwrap().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let script = root.join("script.json");
    let sub_call = json!({"name": "run_command", "input": {"command": format!(
        "echo pid=$$; tr '\\0' '\\n' < /proc/$PPID/environ; \
         for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done; {}; echo sub-ran",
        daemon("349", true)
    )}});
    std::fs::write(
        &script,
        json!({
            "turns": [
                {"tool_calls": [{"name": "agent", "input": {"description": "peek", "prompt": "p", "subagent_type": "general-purpose"}}]},
                {"text": "done"}
            ],
            "agents": {"general-purpose": {"turns": [{"tool_calls": [sub_call]}, {"text": "finished"}]}}
        })
        .to_string(),
    )
    .unwrap();
    let out = crew(
        &root,
        &home,
        &script,
        "default",
        &[("ANTHROPIC_API_KEY", "sk-ant-PIDNS-LEAK")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let requests = std::fs::read_to_string(root.join("requests.jsonl")).unwrap_or_default();
    assert!(
        requests.contains("sub-ran"),
        "the subagent's command ran: {stderr}"
    );
    assert!(
        !requests.contains("sk-ant-PIDNS-LEAK"),
        "crew's key reached the model"
    );
    assert!(
        requests.contains("pid=1"),
        "the command ran in its own PID namespace"
    );
    assert!(processes_with("time.sleep(349)").is_empty());
}
