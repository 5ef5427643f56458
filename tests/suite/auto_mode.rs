//! Auto mode end to end: the real `crew -p` in `--permission-mode auto`, with the scripted
//! model playing both the lead and the classifier (its `classifier` agent entry). Each
//! test checks the disk (did the command run?), what the lead was told, what the
//! classifier was asked, and the `auto_mode` summary of `--output-format json`.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{committed_repo, crew, put};

/// Auto mode sees everything it allows (tests/auto_mode/seen.rs).
#[path = "auto_mode/seen.rs"]
mod seen;

struct Run {
    result: Value,
    requests: Vec<Value>,
    stderr: String,
}

impl Run {
    fn of(&self, agent: &str) -> Vec<&Value> {
        self.requests
            .iter()
            .filter(|r| {
                r["agent"].as_str().is_some_and(|a| {
                    a == agent
                        || a.ends_with(&format!("/{agent}"))
                        || a.starts_with(&format!("{agent}/"))
                })
            })
            .collect()
    }

    /// Every tool result the lead was sent, as text.
    fn lead_saw(&self) -> String {
        self.of("lead")
            .last()
            .map(|r| r["messages"].to_string())
            .unwrap_or_default()
    }
}

fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    (dir, work, home)
}

fn answer(decision: &str, reason: &str) -> Value {
    json!({ "text": json!({ "decision": decision, "reason": reason }).to_string() })
}

fn command(cmd: &str) -> Value {
    json!({ "tool_calls": [ { "name": "run_command", "input": { "command": cmd } } ] })
}

/// Runs `crew -p` in `mode` on `script` with `--output-format json`: its JSON result, the
/// requests it recorded and its stderr.
fn run(work: &Path, home: &Path, mode: &str, script: Value) -> Run {
    let (out, requests) = support::crew_scripted_output(
        work,
        home,
        &script,
        &[
            "-p",
            "make the build green",
            "--permission-mode",
            mode,
            "--output-format",
            "json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let result = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or_else(|| panic!("no JSON result; stdout:\n{stdout}\nstderr:\n{stderr}"));
    Run {
        result,
        requests,
        stderr,
    }
}

/// [`run`] of a lead that calls `run_command` once for each of `commands` and then ends,
/// the classifier answering `answers` in order.
fn run_commands(
    work: &Path,
    home: &Path,
    mode: &str,
    commands: &[&str],
    answers: Vec<Value>,
) -> Run {
    let mut turns: Vec<Value> = commands.iter().map(|c| command(c)).collect();
    turns.push(json!({ "text": "done" }));
    let script = json!({ "turns": turns, "agents": { "classifier": { "turns": answers } } });
    run(work, home, mode, script)
}

/// [`run`] in auto of a lead that starts one agent with the `agent` tool's `input`; that
/// agent (scripted under `agent`) runs `cmd`, which the classifier denies for `reason`
/// after allowing the agent itself. Checks the two decisions and that the agent was told
/// the reason as a tool error; returns the run and the id of the agent that was denied.
fn run_delegated(
    work: &Path,
    home: &Path,
    input: Value,
    agent: &str,
    cmd: &str,
    reason: &str,
) -> (Run, String) {
    committed_repo(work, &[("README.md", "hi\n")]);
    let r = run(
        work,
        home,
        "auto",
        json!({
            "turns": [ { "tool_calls": [ { "name": "agent", "input": input } ] }, { "text": "done" } ],
            "agents": {
                agent: { "turns": [ command(cmd), { "text": "gives up" } ] },
                "classifier": { "turns": [ answer("allow", "the helper serves the task"), answer("deny", reason) ] }
            }
        }),
    );
    let auto = &r.result["auto_mode"];
    let decisions = auto["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 2, "{auto}\n{}", r.stderr);
    assert_eq!(decisions[0]["tool"], "agent");
    assert_eq!(decisions[1]["tool"], "run_command");
    assert_eq!(auto["denied"], 1);
    let told = r
        .of(agent)
        .last()
        .map(|q| q["messages"].to_string())
        .unwrap_or_default();
    assert!(
        told.contains(&format!("classifier denied this call: {reason}")),
        "{told}"
    );
    let denied = decisions[1]["agent"].as_str().unwrap().to_string();
    (r, denied)
}

#[test]
fn the_classifier_allows_with_its_reason_and_the_command_runs() {
    let (_d, work, home) = dirs();
    let mut allow = answer("allow", "creating a file in the project serves the task");
    // As a provider reports a call whose fixed instructions came from cache.
    allow["usage"] = json!({ "input_tokens": 310, "output_tokens": 22, "cache_read_input_tokens": 1400, "cache_creation_input_tokens": 0 });
    let r = run_commands(&work, &home, "auto", &["touch allowed.txt"], vec![allow]);
    assert!(work.join("allowed.txt").exists(), "{}", r.stderr);
    let asked = r.of("classifier");
    assert_eq!(asked.len(), 1);
    // The classifier got the fixed instructions as its system prompt and the call,
    // the task and no tools.
    assert_eq!(
        asked[0]["system"].as_str().unwrap(),
        crewmaster::auto_mode::classifier::SYSTEM_PROMPT
    );
    let prompt = asked[0]["messages"].to_string();
    assert!(
        prompt.contains("touch allowed.txt") && prompt.contains("make the build green"),
        "{prompt}"
    );
    assert_eq!(asked[0]["tools"], json!([]));
    let auto = &r.result["auto_mode"];
    assert_eq!(auto["allowed"], 1, "{auto}");
    assert_eq!(auto["denied"], 0);
    assert_eq!(auto["decisions"][0]["decision"], "allow");
    assert_eq!(
        auto["decisions"][0]["reason"],
        "creating a file in the project serves the task"
    );
    // The classifier's cost is kept apart, cache reads included.
    assert_eq!(auto["usage"]["cache_read_input_tokens"], 1400, "{auto}");
    assert_eq!(auto["usage"]["input_tokens"], 310);
}

#[test]
fn the_classifier_denies_with_its_reason_and_the_model_is_told() {
    let (_d, work, home) = dirs();
    let r = run_commands(
        &work,
        &home,
        "auto",
        &["touch denied.txt"],
        vec![answer("deny", "the task does not need new files")],
    );
    assert!(
        !work.join("denied.txt").exists(),
        "a denied command must not run"
    );
    let saw = r.lead_saw();
    assert!(
        saw.contains("classifier denied this call: the task does not need new files"),
        "{saw}"
    );
    let auto = &r.result["auto_mode"];
    assert_eq!(auto["denied"], 1, "{auto}");
    assert_eq!(auto["decisions"][0]["agent"], "lead");
    assert_eq!(auto["decisions"][0]["tool"], "run_command");
    assert_eq!(
        auto["decisions"][0]["reason"],
        "the task does not need new files"
    );
}

#[test]
fn a_malformed_answer_and_a_timeout_both_deny() {
    let (_d, work, home) = dirs();
    // The classifier may take 300 ms; its second answer would take 10 minutes.
    put(
        &home,
        ".crew/settings.json",
        r#"{"autoMode": {"timeoutMs": 300}}"#,
    );
    let mut late = answer("allow", "too late");
    late["delay_ms"] = json!(600000);
    let r = run_commands(
        &work,
        &home,
        "auto",
        &["touch malformed.txt", "touch slow.txt"],
        vec![
            json!({ "text": "Sure, that looks fine to me! {\"decision\": \"allow\"" }),
            late,
        ],
    );
    assert!(!work.join("malformed.txt").exists());
    assert!(!work.join("slow.txt").exists());
    let auto = &r.result["auto_mode"];
    assert_eq!(auto["allowed"], 0, "{auto}");
    assert_eq!(auto["denied"], 2, "{auto}");
    let reasons: Vec<&str> = auto["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["reason"].as_str().unwrap())
        .collect();
    assert!(reasons[0].contains("could not be used"), "{reasons:?}");
    assert!(
        reasons[1].contains("did not answer within 300 ms"),
        "{reasons:?}"
    );
    let saw = r.lead_saw();
    assert!(saw.contains("did not answer within 300 ms"), "{saw}");
}

#[test]
fn three_denials_in_a_row_trip_the_breaker_and_calls_ask_again() {
    let (_d, work, home) = dirs();
    let deny = answer("deny", "not needed");
    let files = ["one.txt", "two.txt", "three.txt", "four.txt"];
    let commands = files.map(|f| format!("touch {f}"));
    // A fourth answer would allow: it must never be asked for.
    let answers = vec![deny.clone(), deny.clone(), deny, answer("allow", "fine")];
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let r = run_commands(&work, &home, "auto", &commands, answers);
    assert_eq!(
        r.of("classifier").len(),
        3,
        "the breaker stops asking the classifier"
    );
    for f in files {
        assert!(!work.join(f).exists(), "{f}");
    }
    let auto = &r.result["auto_mode"];
    assert_eq!(auto["denied"], 3);
    assert_eq!(
        auto["breaker"]["tripped"],
        "the classifier denied 3 calls in a row"
    );
    // The fourth call was asked as in default mode: headless, nobody can answer.
    let saw = r.lead_saw();
    assert!(saw.contains("nobody can answer in headless mode"), "{saw}");
}

#[test]
fn a_python_allow_rule_is_suspended_in_auto_and_back_outside_it() {
    let (_d, work, home) = dirs();
    put(
        &home,
        ".crew/settings.json",
        r#"{"permissions": {"allow": ["Bash(python:*)", "Bash(touch kept.txt)"]}}"#,
    );
    let cmd = "python -c \"open('py.txt','w')\" ; touch kept.txt";
    // In auto the rule is set aside: the classifier is consulted (and refuses).
    let deny = answer("deny", "runs arbitrary python");
    let r = run_commands(&work, &home, "auto", &[cmd], vec![deny]);
    let asked = r.of("classifier");
    assert_eq!(asked.len(), 1, "the classifier must judge the python call");
    assert!(asked[0]["messages"].to_string().contains("python -c"));
    assert!(!work.join("kept.txt").exists());
    // Outside auto the rule applies again: no classifier, and the command is allowed.
    let r = run_commands(
        &work,
        &home,
        "default",
        &[cmd],
        vec![answer("deny", "unused")],
    );
    assert!(r.of("classifier").is_empty());
    assert!(
        !r.lead_saw().contains("permission_denied"),
        "{}",
        r.lead_saw()
    );
    assert!(work.join("kept.txt").exists(), "{}", r.stderr);
    // `crew permissions list` says which rule is suspended in auto.
    let out = crew(&work, &home, &["permissions", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |rule: &str| {
        text.lines()
            .find(|l| l.contains(rule))
            .unwrap_or_else(|| panic!("{rule} not listed:\n{text}"))
            .to_string()
    };
    assert!(
        line("Bash(python:*)").contains("suspended in auto"),
        "{text}"
    );
    assert!(
        !line("Bash(touch kept.txt)").contains("suspended in auto"),
        "{text}"
    );
}

#[test]
fn a_subagent_under_auto_asks_the_classifier_and_gets_its_denial_as_a_tool_error() {
    let (_d, work, home) = dirs();
    let input = json!({ "description": "helper", "prompt": "create a marker", "subagent_type": "general-purpose" });
    let reason = "the helper does not need a marker file";
    let (_r, sub) = run_delegated(
        &work,
        &home,
        input,
        "general-purpose",
        "touch sub.txt",
        reason,
    );
    assert!(sub.starts_with("general-purpose/"), "{sub}");
    let marker_anywhere = walk(&work).into_iter().any(|p| p.ends_with("sub.txt"));
    assert!(!marker_anywhere, "the denied command must not run");
}

/// Every path below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

#[test]
fn bypass_and_auto_are_refused_at_start_when_settings_forbid_them() {
    let (_d, work, home) = dirs();
    put(
        &home,
        ".crew/settings.json",
        r#"{"permissions": {"disableBypassPermissionsMode": "disable"}, "autoMode": {"enabled": false}}"#,
    );
    std::fs::write(home.join("script.json"), r#"{"turns":[{"text":"hi"}]}"#).unwrap();
    let script = format!("script:{}", home.join("script.json").display());
    for (mode, says) in [
        ("bypassPermissions", "disableBypassPermissionsMode"),
        ("auto", "autoMode.enabled: false"),
    ] {
        let out = crew(
            &work,
            &home,
            &["-p", "hi", "--permission-mode", mode, "--model", &script],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mode} must be refused");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn auto_needs_a_classifier_the_demo_model_cannot_be_one() {
    let (_d, work, home) = dirs();
    let out = crew(&work, &home, &["-p", "hi", "--permission-mode", "auto"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("autoMode.model"), "{err}");
}

#[test]
fn an_explicit_ask_rule_still_goes_to_a_human_not_the_classifier() {
    let (_d, work, home) = dirs();
    put(
        &home,
        ".crew/settings.json",
        r#"{"permissions": {"ask": ["Bash(touch asked.txt)"]}}"#,
    );
    // Were it asked, the classifier would allow.
    let allow = answer("allow", "fine");
    let r = run_commands(&work, &home, "auto", &["touch asked.txt"], vec![allow]);
    assert!(
        r.of("classifier").is_empty(),
        "the user's ask rule is for a human"
    );
    assert!(!work.join("asked.txt").exists());
    assert!(r.lead_saw().contains("nobody can answer in headless mode"));
}

#[test]
fn a_teammate_under_auto_asks_the_classifier_and_gets_its_denial_as_a_tool_error() {
    let (_d, work, home) = dirs();
    let input = json!({ "description": "helper", "prompt": "make a marker",
        "subagent_type": "general-purpose", "name": "alice" });
    let reason = "a marker file is not part of the task";
    let (r, mate) = run_delegated(&work, &home, input, "alice", "touch mate.txt", reason);
    assert!(mate.contains("alice"), "{}", r.result["auto_mode"]);
    assert!(!walk(&work).into_iter().any(|p| p.ends_with("mate.txt")));
    assert!(!walk(&home).into_iter().any(|p| p.ends_with("mate.txt")));
}
