//! Unasked commands are confined end to end, on the production configuration, with the
//! disk checked afterwards: a subagent's `run_command` (not only its file tools) cannot
//! reach the main checkout's `.git/hooks` and `.git/config` or a file outside its
//! worktree; `crew -p --permission-mode dontAsk` confines the lead's commands the same
//! way; and on a machine without Landlock the refusal's advice is true when followed.

use crate::support;

use std::path::Path;

use serde_json::json;
use support::git;
use support::sandbox::{crew, repo_with_worktree};

/// A python3 command writing (mode `w` or `a`) `text` to `path`, with the path assembled
/// at run time so that nothing in the command line names it: only the OS can stop it.
fn opaque_write(path: &Path, mode: &str, text: &str) -> String {
    let p = path.display().to_string();
    let (a, b) = p.split_at(p.len() / 2);
    format!("python3 -c \"p='{a}'+'{b}'; open(p,'{mode}').write('{text}')\"")
}

/// The last request `agent_prefix` (e.g. `general-purpose/`, `lead`) sent, as text.
fn last_request_of(dir: &Path, agent_prefix: &str) -> String {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| {
                v["agent"]
                    .as_str()
                    .is_some_and(|a| a.starts_with(agent_prefix))
            })
        })
        .unwrap_or_default()
        .to_string()
}

fn calls(commands: &[String]) -> Vec<serde_json::Value> {
    commands
        .iter()
        .map(|c| json!({"name": "run_command", "input": {"command": c}}))
        .collect()
}

#[test]
fn a_subagents_commands_cannot_reach_the_main_checkouts_git_hooks_config_or_outside_files() {
    require_sandbox!();
    let (_d, repo, _wt) = repo_with_worktree();
    let root = repo.parent().unwrap().to_path_buf();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let hook = repo.join(".git/hooks/pre-commit");
    let config = repo.join(".git/config");
    let config_before = std::fs::read(&config).unwrap();
    let outside = root.join("outside.txt");
    let sub_commands = [
        opaque_write(&hook, "w", "#!/bin/sh\\\\ntouch /tmp/pwned\\\\n"),
        opaque_write(&config, "a", "[core]\\\\n\\\\thooksPath = /tmp/evil\\\\n"),
        opaque_write(&outside, "w", "escaped"),
        format!("echo escaped > {}", root.join("outside2.txt").display()),
        format!("echo '[core]' >> {}", config.display()),
        // Its own work, to show its commands do run.
        "echo work > w.txt && git add w.txt && git commit -q -m sub-work && echo committed"
            .to_string(),
    ];
    let script = repo.join("script.json");
    std::fs::write(
        &script,
        json!({
            "turns": [
                {"tool_calls": [{"name": "agent", "input": {"description": "sneaky", "prompt": "p", "subagent_type": "general-purpose"}}]},
                {"text": "done"}
            ],
            "agents": {"general-purpose": {"turns": [{"tool_calls": calls(&sub_commands)}, {"text": "finished"}]}}
        })
        .to_string(),
    )
    .unwrap();
    // The lead runs in the default mode: the subagent is confined because it is one.
    let out = crew(&repo, &home, &script, "default", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // The disk: no hook, the config as it was, nothing outside.
    assert!(!hook.exists(), "a hook was planted in the main checkout");
    assert_eq!(std::fs::read(&config).unwrap(), config_before, "{stderr}");
    assert!(!outside.exists(), "{stderr}");
    assert!(!root.join("outside2.txt").exists(), "{stderr}");
    // The opaque writes really ran and the OS refused them (not the engine).
    let seen = last_request_of(&repo, "general-purpose/");
    assert!(
        seen.matches("[Errno").count() >= 3,
        "the opaque writes did not all fail in the OS: {seen}"
    );
    // And its own work landed on its own branch.
    let branches = git(
        &repo,
        &["branch", "--list", "crew/*", "--format=%(refname:short)"],
    );
    let branch = branches
        .lines()
        .find(|b| b.contains("sneaky"))
        .unwrap_or_else(|| panic!("no branch of the subagent: {branches}\n{stderr}"));
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", branch]),
        "sub-work"
    );
}

#[test]
fn under_dont_ask_the_leads_commands_are_confined_to_the_project() {
    require_sandbox!();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (proj, home) = (root.join("proj"), root.join("home"));
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    git(&proj, &["init", "-q", "-b", "main"]);
    let hook = proj.join(".git/hooks/pre-commit");
    let config = proj.join(".git/config");
    let config_before = std::fs::read(&config).unwrap();
    let outside = root.join("outside.txt");
    let commands = [
        opaque_write(&outside, "w", "escaped"),
        opaque_write(&hook, "w", "#!/bin/sh\\\\ntouch /tmp/pwned\\\\n"),
        opaque_write(&config, "a", "[core]\\\\n\\\\tfsmonitor = evil\\\\n"),
        opaque_write(&proj.join("inside.txt"), "w", "ok"),
    ];
    let script = root.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"tool_calls": calls(&commands)}, {"text": "done"}]}).to_string(),
    )
    .unwrap();
    let out = crew(&proj, &home, &script, "dontAsk", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!outside.exists(), "{stderr}");
    assert!(!hook.exists(), "{stderr}");
    assert_eq!(std::fs::read(&config).unwrap(), config_before, "{stderr}");
    // The same kind of command inside the project ran: the refusals are the sandbox's.
    assert_eq!(
        std::fs::read_to_string(proj.join("inside.txt")).unwrap_or_default(),
        "ok",
        "{stderr}"
    );
    let seen = last_request_of(&proj, "lead");
    assert!(seen.matches("[Errno").count() >= 3, "{seen}");
}

/// Follows the refusal's advice on a machine without Landlock (simulated): the dontAsk
/// command is refused whatever `sandbox.enabled` says (so advice to set it false would
/// be a lie); in the default mode a command allowed by a rule is refused too (no human
/// approved it); a command in the user's `sandbox.excludedCommands` runs.
#[test]
fn without_landlock_unasked_commands_are_refused_and_the_advice_works() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (proj, home) = (root.join("proj"), root.join("home"));
    std::fs::create_dir_all(proj.join(".crew")).unwrap();
    std::fs::create_dir_all(home.join(".crew")).unwrap();
    let simulate = [("CREW_TEST_SIMULATE_NO_LANDLOCK", "1")];
    let run = |mode: &str, marker: &str| {
        let script = root.join(format!("{marker}.json"));
        std::fs::write(
            &script,
            json!({"turns": [
                {"tool_calls": [{"name": "run_command", "input": {"command": format!("touch {marker}")}}]},
                {"text": "done"}]})
            .to_string(),
        )
        .unwrap();
        let _ = std::fs::remove_file(proj.join("requests.jsonl"));
        let out = crew(&proj, &home, &script, mode, &simulate);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        last_request_of(&proj, "lead")
    };

    // Unasked, the command is refused and never runs, even with the sandbox "disabled".
    std::fs::write(
        proj.join(".crew/settings.local.json"),
        r#"{"sandbox": {"enabled": false}}"#,
    )
    .unwrap();
    let seen = run("dontAsk", "ran-unasked");
    assert!(!proj.join("ran-unasked").exists(), "{seen}");
    assert!(seen.contains("refused"), "{seen}");
    assert!(
        seen.contains("use the default or acceptEdits permission mode"),
        "{seen}"
    );
    assert!(!seen.contains(r#"\"enabled\": false"#), "{seen}");

    // The user's own `sandbox.enabled: false` does run it outside the sandbox in the
    // default mode (unsafe, and said so).
    std::fs::write(
        home.join(".crew/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch ran-disabled)"]}}"#,
    )
    .unwrap();
    let seen = run("default", "ran-disabled");
    assert!(proj.join("ran-disabled").exists(), "{seen}");
    std::fs::remove_file(proj.join(".crew/settings.local.json")).unwrap();

    // A rule is no human: in the default mode, a command allowed by a rule is refused
    // too (it would run in the write profile, which needs Landlock).
    std::fs::write(
        home.join(".crew/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch ran-default)"]}}"#,
    )
    .unwrap();
    let seen = run("default", "ran-default");
    assert!(!proj.join("ran-default").exists(), "{seen}");
    assert!(seen.contains("refused"), "{seen}");

    // The advice that works without a human: the command in the user's own
    // `sandbox.excludedCommands` runs outside the sandbox.
    std::fs::write(
        home.join(".crew/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch ran-excluded)"]}, "sandbox": {"excludedCommands": ["touch ran-excluded"]}}"#,
    )
    .unwrap();
    let seen = run("default", "ran-excluded");
    assert!(proj.join("ran-excluded").exists(), "{seen}");

    // And `sandbox.enabled: true` changes nothing: commands are sandboxed anyway.
    std::fs::write(
        home.join(".crew/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch ran-enabled)"]}, "sandbox": {"enabled": true}}"#,
    )
    .unwrap();
    let seen = run("default", "ran-enabled");
    assert!(!proj.join("ran-enabled").exists(), "{seen}");
    assert!(seen.contains("refused"), "{seen}");
}
