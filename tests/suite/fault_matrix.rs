//! The fault matrix on the real `crew` binary (issue 15): actors killed or panicking
//! under `CREW_FAULTS` (the test-only injector, on in `cargo test` builds), a restart
//! storm, a full disk under the transcript, and a settings file broken mid-session. Each
//! test checks that no transcript line is lost or duplicated, that the user is told, and
//! that the run ends. The other rows of the matrix are listed in the README with the test
//! that covers each.

use crate::support;

/// Actors killed or panicking, and a restart storm (tests/fault_matrix/actors.rs).
#[path = "fault_matrix/actors.rs"]
mod actors;
/// A full disk, broken settings, a deleted worktree (tests/fault_matrix/files.rs).
#[path = "fault_matrix/files.rs"]
mod files;
/// Provider errors and a torn stream (tests/fault_matrix/provider.rs).
#[path = "fault_matrix/provider.rs"]
mod provider;
/// SIGKILL of crew itself (tests/fault_matrix/sigkill.rs).
#[path = "fault_matrix/sigkill.rs"]
mod sigkill;

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
