//! Output, disk and resource caps on what agents' commands do (issue 26, items 5 and 6),
//! through the real `crew` binary on a scripted model:
//! - a command that streams 1 GB is drained: crew's peak RSS grows by at most 64 MiB over
//!   a run of a tiny command, and the saved copy stops at the cap with the preview saying
//!   where;
//! - the session's budget for kept results cuts later results, and says so;
//! - a background command's log stops at the cap too;
//! - under dontAsk, a command that starts more processes than `limits.maxProcesses` is
//!   stopped by its pids cgroup, crew goes on with the next call, nothing is left running;
//! - `limits.maxFileSizeMiB` stops a command writing a larger file.

use crate::support;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use serde_json::{Value, json};
use support::kernel::{Feature, require};

/// Runs `crew -p go` in `dir` (HOME = `home`) on `script`, and returns its stdout, stderr,
/// the requests the model got, and crew's own peak RSS in KiB (from `wait4`).
fn crew_measured(dir: &Path, home: &Path, script: &Value, mode: &str) -> (String, Vec<Value>, i64) {
    let files = tempfile::tempdir().unwrap();
    let script_path = files.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let record = files.path().join("requests.jsonl");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "go", "--permission-mode", mode])
        .arg("--model")
        .arg(format!("script:{}", script_path.display()))
        .arg("--record-requests")
        .arg(&record)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let out = std::thread::spawn(move || {
        use std::io::Read;
        let mut child = child;
        let (mut o, mut e) = (String::new(), String::new());
        child.stdout.take().unwrap().read_to_string(&mut o).unwrap();
        child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
        (o, e, child)
    });
    let (stdout, stderr, child) = out.join().unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child with stack values.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    drop(child);
    let st = std::process::ExitStatus::from_raw(status);
    assert!(st.success(), "crew failed ({st}): {stderr}");
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (format!("{stdout}{stderr}"), requests, usage.ru_maxrss)
}

/// A script that runs each command in turn, then ends.
fn commands(cmds: &[&str]) -> Value {
    let mut turns: Vec<Value> = cmds
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"text": "running", "tool_calls": [
                {"name": "run_command", "id": format!("c{i}"), "input": {"command": c, "timeout_ms": 120000}}]})
        })
        .collect();
    turns.push(json!({"text": "done"}));
    json!({ "turns": turns })
}

/// The text of every tool result the model was sent, in order (from the last request).
fn results(requests: &[Value]) -> Vec<String> {
    let last = requests.last().expect("the model was asked");
    let mut out = Vec::new();
    for m in last["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push(b["content"].to_string());
            }
        }
    }
    out
}

fn settings(home: &Path, limits: Value) {
    support::put(
        home,
        ".crew/settings.json",
        &json!({ "limits": limits }).to_string(),
    );
}

/// Bytes of every file below `dir`.
fn bytes_below(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let m = e.metadata().unwrap();
        total += if m.is_dir() {
            bytes_below(&e.path())
        } else {
            m.len()
        };
    }
    total
}

#[test]
fn a_gigabyte_of_output_is_drained_without_memory_growth_and_kept_only_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (_, _, baseline) = crew_measured(
        dir.path(),
        home.path(),
        &commands(&["echo small"]),
        "bypassPermissions",
    );
    let (_, requests, peak) = crew_measured(
        dir.path(),
        home.path(),
        &commands(&["head -c 1000000000 /dev/zero | tr '\\0' a"]),
        "bypassPermissions",
    );
    let grown_kib = peak - baseline;
    assert!(
        grown_kib <= 64 * 1024,
        "crew's peak RSS grew by {grown_kib} KiB streaming 1 GB (baseline {baseline} KiB, peak {peak} KiB)"
    );
    let shown = results(&requests).pop().unwrap();
    assert!(shown.contains("1000000000 bytes"), "{shown}");
    assert!(
        shown.contains("maxResultMiB"),
        "the preview says where the copy was cut: {shown}"
    );
    // Nothing under ~/.crew holds more than the 32 MiB cap (plus the small files).
    let kept = bytes_below(&home.path().join(".crew"));
    assert!(kept < 33 << 20, "{kept} bytes kept under ~/.crew");
    assert!(kept >= 32 << 20, "the first 32 MiB are kept: {kept}");
}

#[test]
fn the_sessions_budget_cuts_later_results_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    settings(
        home.path(),
        json!({"maxResultMiB": 2, "sessionResultsMiB": 3}),
    );
    let print = "head -c 2500000 /dev/zero | tr '\\0' b";
    let (_, requests, _) = crew_measured(
        dir.path(),
        home.path(),
        &commands(&[print, print, print]),
        "bypassPermissions",
    );
    let shown = results(&requests);
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert!(shown[0].contains("maxResultMiB"), "{}", shown[0]);
    assert!(shown[1].contains("sessionResultsMiB"), "{}", shown[1]);
    assert!(shown[2].contains("sessionResultsMiB"), "{}", shown[2]);
    let kept = bytes_below(&home.path().join(".crew"));
    assert!(kept < (3 << 20) + 100_000, "{kept} bytes kept");
}

#[test]
fn a_background_commands_log_stops_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    settings(home.path(), json!({"maxResultMiB": 1}));
    let script = json!({"turns": [
        {"text": "start", "tool_calls": [{"name": "run_command", "id": "b1", "input": {
            "command": "head -c 50000000 /dev/zero | tr '\\0' c; echo finished", "run_in_background": true}}]},
        {"text": "wait", "tool_calls": [{"name": "run_command", "id": "w1", "input": {"command": "sleep 3"}}]},
        {"text": "done"}
    ]});
    let (_, _, _) = crew_measured(dir.path(), home.path(), &script, "bypassPermissions");
    let logs: Vec<_> = walk(&home.path().join(".crew"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let text = std::fs::read(&logs[0]).unwrap();
    assert!(
        text.len() < (1 << 20) + 10_000,
        "log of {} bytes",
        text.len()
    );
    let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(2000)..]).to_string();
    assert!(
        tail.contains("not kept") && tail.contains("maxResultMiB"),
        "{tail}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn too_many_processes_under_dont_ask_end_in_their_cgroup_and_crew_goes_on() {
    if !require(&[Feature::Landlock, Feature::PidsCgroup, Feature::Python3]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    settings(home.path(), json!({"maxProcesses": 24}));
    // A unique sleep length marks this test's processes in /proc.
    let marker = format!("30.0{}", std::process::id());
    // Not a literal fork bomb (the blacklist denies those): 200 sleepers, far past the limit.
    let many = format!("for i in $(seq 1 200); do sleep {marker} & done; wait");
    // The marker is in the bomb's command line too, so that the check below finds this
    // test's processes only (other tests in the same process run python3 forkers of
    // their own).
    let python_bomb = format!(
        "python3 -c 'import os\nmark = \"{marker}\"\nwhile True:\n  try: os.fork()\n  except OSError: pass' ; echo after"
    );
    let script = json!({"turns": [
        {"text": "a", "tool_calls": [{"name": "run_command", "id": "m", "input": {"command": many, "timeout_ms": 8000}}]},
        {"text": "b", "tool_calls": [{"name": "run_command", "id": "p", "input": {"command": python_bomb, "timeout_ms": 3000}}]},
        {"text": "c", "tool_calls": [{"name": "run_command", "id": "n", "input": {"command": "echo still-working > ok.txt"}}]},
        {"text": "done"}
    ]});
    let (_, requests, _) = crew_measured(dir.path(), home.path(), &script, "dontAsk");
    let shown = results(&requests);
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert!(
        shown[0].contains("Resource temporarily unavailable") || shown[0].contains("retry"),
        "the 200 sleepers were stopped by the limit: {}",
        shown[0]
    );
    assert!(
        shown[1].contains("did not finish") || shown[1].contains("killed"),
        "{}",
        shown[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ok.txt")).unwrap(),
        "still-working\n"
    );
    // Nothing of either command is left running.
    let left: Vec<_> = support::faults::processes()
        .into_iter()
        .filter(|p| p.cmdline.contains(&marker))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_file_larger_than_the_limit_is_not_written() {
    if !require(&[Feature::Landlock]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    settings(home.path(), json!({"maxFileSizeMiB": 1}));
    let (_, requests, _) = crew_measured(
        dir.path(),
        home.path(),
        &commands(&["head -c 3000000 /dev/zero > big.bin; echo status $?"]),
        "dontAsk",
    );
    let shown = results(&requests).pop().unwrap();
    assert!(
        shown.contains("File size limit exceeded") || shown.contains("status 153"),
        "{shown}"
    );
    let size = std::fs::metadata(dir.path().join("big.bin")).unwrap().len();
    assert!(size <= 1 << 20, "big.bin has {size} bytes");
}
