//! The official Claude Agent SDK for Python drives crew as it drives Claude Code:
//! `ClaudeAgentOptions(cli_path=crew)` starts crew with `--input-format stream-json
//! --output-format stream-json` and speaks the control protocol on its standard input and
//! output. The program is `tests/peers/agent_sdk_client.py`; crew plays a scripted model.
//! Each test checks what the SDK parsed and, for writes, the disk.
//!
//! The SDK comes from `scripts/install-claude-agent-sdk.sh` (its python in
//! `$CREW_AGENT_SDK_PYTHON`, else the script's cache directory). Without it the tests are
//! skipped, saying so on stderr and in the test ledger.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The SDK's python, or why the tests cannot run.
fn sdk_python() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CREW_AGENT_SDK_PYTHON").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_default()
        .join("crew-peers/claude-agent-sdk/venv/bin/python");
    let imports = Command::new(&cache)
        .args(["-c", "import claude_agent_sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if imports {
        return Ok(cache);
    }
    Err(format!(
        "the Claude Agent SDK is not installed (no $CREW_AGENT_SDK_PYTHON, no {}); run \
         scripts/install-claude-agent-sdk.sh",
        cache.display()
    ))
}

/// The SDK's python, or `None` after recording the skip.
fn sdk_or_skip(test: &str) -> Option<PathBuf> {
    let name = format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        support::own_test(module_path!(), test)
    );
    match sdk_python() {
        Ok(p) => {
            support::kernel::record_ran(&name, "Claude Agent SDK");
            Some(p)
        }
        Err(why) => {
            support::kernel::record_skip(&name, &why);
            None
        }
    }
}

/// Runs `scenario` of the SDK program against crew on the scripted model `turns`;
/// returns the lines it printed.
fn run_sdk(python: &Path, scenario: &str, home: &Path, repo: &Path, turns: Value) -> Vec<Value> {
    let script = home.join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/agent_sdk_client.py");
    let out = Command::new(python)
        .arg(program)
        .arg(scenario)
        .arg(env!("CARGO_BIN_EXE_crew"))
        .arg(repo)
        .arg(format!("script:{}", script.display()))
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("the SDK program runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        out.status.success() && lines.iter().all(|l| l.get("error").is_none()),
        "the SDK program failed: {lines:#?}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines
}

fn of<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["message"] == kind).collect()
}

fn write_turns() -> Value {
    json!([
        {"text": "writing", "tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "from the sdk\n"}}]},
        {"text": "done"},
    ])
}

#[test]
fn query_runs_a_prompt_and_reads_the_result() {
    let Some(python) = sdk_or_skip("query_runs_a_prompt_and_reads_the_result") else {
        return;
    };
    let (_tmp, home, repo) = support::repo_and_home();
    let lines = run_sdk(
        &python,
        "query",
        &home,
        &repo,
        json!([{"text": "hello from crew"}]),
    );
    let system = of(&lines, "system");
    assert_eq!(system.len(), 1, "{lines:#?}");
    assert_eq!(system[0]["subtype"], "init");
    let assistant = of(&lines, "assistant");
    assert_eq!(assistant[0]["blocks"][0]["text"], "hello from crew");
    assert_eq!(assistant[0]["model"], "script");
    let result = of(&lines, "result");
    assert_eq!(result.len(), 1, "{lines:#?}");
    assert_eq!(result[0]["subtype"], "success");
    assert_eq!(result[0]["is_error"], false);
    assert_eq!(result[0]["result"], "hello from crew");
    assert_eq!(result[0]["num_turns"], 1);
    assert_eq!(result[0]["session_id"], system[0]["session_id"]);
}

#[test]
fn a_client_conversation_keeps_one_session_and_switches_mode() {
    let Some(python) = sdk_or_skip("a_client_conversation_keeps_one_session_and_switches_mode")
    else {
        return;
    };
    let (_tmp, home, repo) = support::repo_and_home();
    let mut turns = vec![json!({"text": "answer one"}), json!({"text": "answer two"})];
    turns.extend(write_turns().as_array().unwrap().iter().cloned());
    let lines = run_sdk(&python, "client", &home, &repo, Value::Array(turns));
    let results = of(&lines, "result");
    let texts: Vec<&str> = results
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["answer one", "answer two", "done"], "{lines:#?}");
    assert!(
        results
            .iter()
            .all(|r| r["session_id"] == results[0]["session_id"]),
        "one session throughout: {results:#?}"
    );
    // set_permission_mode("acceptEdits") took effect: the write ran without a callback.
    assert_eq!(
        std::fs::read_to_string(repo.join("out.txt")).unwrap(),
        "from the sdk\n"
    );
    let user = of(&lines, "user");
    assert_eq!(
        user.last().unwrap()["results"][0]["is_error"],
        false,
        "{lines:#?}"
    );
}

/// The attack: the model writes a file the program's permission callback refuses. The
/// refusal must hold (nothing on disk) and reach the model as the callback's message.
#[test]
fn a_can_use_tool_callback_that_denies_stops_the_write() {
    let Some(python) = sdk_or_skip("a_can_use_tool_callback_that_denies_stops_the_write") else {
        return;
    };
    let (_tmp, home, repo) = support::repo_and_home();
    let lines = run_sdk(&python, "deny", &home, &repo, write_turns());
    let callbacks: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("callback").is_some())
        .collect();
    assert_eq!(callbacks.len(), 1, "{lines:#?}");
    assert_eq!(callbacks[0]["callback"], "Write", "Claude Code's tool name");
    assert_eq!(callbacks[0]["input"]["path"], "out.txt");
    assert!(!repo.join("out.txt").exists(), "the denied write ran");
    let user = of(&lines, "user");
    assert_eq!(user[0]["results"][0]["is_error"], true);
    assert!(
        user[0]["results"][0]["content"]
            .as_str()
            .unwrap()
            .contains("the SDK test denies every tool call"),
        "{user:#?}"
    );
    let result = of(&lines, "result");
    assert_eq!(result[0]["permission_denials"].as_array().unwrap().len(), 1);
}

#[test]
fn a_can_use_tool_callback_that_allows_lets_the_write_run() {
    let Some(python) = sdk_or_skip("a_can_use_tool_callback_that_allows_lets_the_write_run") else {
        return;
    };
    let (_tmp, home, repo) = support::repo_and_home();
    let lines = run_sdk(&python, "allow", &home, &repo, write_turns());
    assert_eq!(
        lines.iter().filter(|l| l.get("callback").is_some()).count(),
        1,
        "{lines:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("out.txt")).unwrap(),
        "from the sdk\n"
    );
    let result = of(&lines, "result");
    assert_eq!(result[0]["subtype"], "success");
    assert!(
        result[0]["permission_denials"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
