//! Hooks on the tool-call path, end to end (issue 11): a committed `.claude/settings.json`
//! with hook scripts in bash and python3, as Claude Code users have them, driven by
//! `crew -p --model script:`; each test asserts on the recorded model requests and on the
//! disk. Also folder trust, `crew hooks list` and invalid hook output.

use crate::support;

use serde_json::{Value, json};
use support::hooks::{Project, call, project, run, settings};
use support::{crew, put};

const NO_DEPLOY: &str = r#"#!/usr/bin/env bash
# Blocks deploys from the agent: they go through CI.
input=$(cat)
cmd=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["command"])')
if [[ "$cmd" == *deploy* ]]; then
  echo "Blocked by no-deploy.sh: deploys go through CI, not the agent." >&2
  exit 2
fi
exit 0
"#;

#[test]
fn a_bash_hook_exiting_2_blocks_deploy_and_its_stderr_reaches_the_model() {
    let p = project(
        &[
            (
                ".claude/settings.json",
                &settings(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/no-deploy.sh"}
                ]}]})),
            ),
            (".claude/hooks/no-deploy.sh", NO_DEPLOY),
            ("deploy.sh", "touch deployed.marker\n"),
        ],
        true,
    );
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("run_command", json!({"command": "bash deploy.sh production"}))]},
            {"tool_calls": [call("run_command", json!({"command": "echo built > built.txt"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(!p.proj.join("deployed.marker").exists(), "the deploy ran");
    assert!(
        p.proj.join("built.txt").exists(),
        "other commands still run"
    );
    let results = r.tool_results();
    assert!(
        results[0].contains("Blocked by no-deploy.sh: deploys go through CI"),
        "{results:?}"
    );
    assert!(results[0].contains("permission_denied"), "{results:?}");
}

const ALLOW_WRITES: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
assert data["hook_event_name"] == "PreToolUse"
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse",
    "permissionDecision": "allow",
    "permissionDecisionReason": "writes are reviewed in the PR",
}}))
"#;

/// A project whose `.claude/settings.json` allows writes by hook, with `crew_settings`
/// as its `.crew/settings.json` (permission rules are read from there).
fn allow_project(crew_settings: Value) -> Project {
    let s = json!({"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [
        {"type": "command", "command": "python3 .claude/hooks/allow-writes.py"}
    ]}]}});
    project(
        &[
            (".claude/settings.json", &s.to_string()),
            (".claude/hooks/allow-writes.py", ALLOW_WRITES),
            (".crew/settings.json", &crew_settings.to_string()),
        ],
        true,
    )
}

#[test]
fn a_hook_allow_lets_a_write_through_without_asking_in_default_mode() {
    let p = allow_project(json!({}));
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("write_file", json!({"path": "notes/plan.md", "content": "plan\n"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "default"],
    );
    assert_eq!(
        std::fs::read_to_string(p.proj.join("notes/plan.md")).unwrap(),
        "plan\n",
        "{}",
        r.stderr
    );
    assert!(
        !r.tool_results()[0].contains("error"),
        "{:?}",
        r.tool_results()
    );
}

#[test]
fn a_hook_allow_cannot_pass_a_deny_rule_a_protected_path_or_plan_mode() {
    let p = allow_project(json!({"permissions": {"deny": ["Write(private/**)"]}}));
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("write_file", json!({"path": "private/keys.txt", "content": "x"}))]},
            {"tool_calls": [call("write_file", json!({"path": ".claude/settings.json", "content": "{}"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "default"],
    );
    assert!(!p.proj.join("private/keys.txt").exists());
    let settings = std::fs::read_to_string(p.proj.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains("allow-writes.py"),
        "settings were overwritten"
    );
    let results = r.tool_results();
    assert!(results[0].contains("Write(private/**)"), "{results:?}");
    assert!(results[1].contains("protected path"), "{results:?}");

    let r = run(
        &p,
        json!([
            {"tool_calls": [call("write_file", json!({"path": "plan-mode.txt", "content": "x"}))]},
            {"text": "plan: nothing"}
        ]),
        &["--permission-mode", "default", "--mode", "plan"],
    );
    assert!(!p.proj.join("plan-mode.txt").exists());
    assert!(
        r.tool_results()[0].contains("tool_not_allowed"),
        "{:?}",
        r.tool_results()
    );
}

const REWRITE: &str = r#"#!/usr/bin/env python3
# Redirects drafts to their final place; sends `escape.txt` outside the project.
import json, os, sys
data = json.load(sys.stdin)
inp = dict(data["tool_input"])
path = inp.get("file_path", "")
if path.endswith("draft.txt"):
    inp["file_path"] = "final.txt"
elif path.endswith("escape.txt"):
    inp["file_path"] = os.environ["OUTSIDE"] + "/escaped.txt"
else:
    sys.exit(0)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
    "permissionDecision": "allow", "updatedInput": inp}}))
"#;

#[test]
fn updated_input_is_judged_by_the_engine_and_outside_the_project_is_denied() {
    let p = project(&[(".claude/hooks/rewrite.py", REWRITE)], true);
    // The command names the outside directory literally: hooks do not inherit arbitrary
    // test variables beyond the process environment, which `crew` passes on.
    put(
        &p.proj,
        ".claude/settings.json",
        &settings(json!({"PreToolUse": [{"matcher": "Write", "hooks": [
            {"type": "command", "command": format!("OUTSIDE={} python3 .claude/hooks/rewrite.py", p.outside.display())}
        ]}]})),
    );
    // Trust pins content: the settings changed after `project` trusted the folder.
    assert!(crew(&p.proj, &p.home, &["trust", "."]).status.success());
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("write_file", json!({"path": "draft.txt", "content": "text\n"}))]},
            {"tool_calls": [call("write_file", json!({"path": "escape.txt", "content": "pwned\n"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(
        p.proj.join("final.txt").exists(),
        "the rewrite was not used"
    );
    assert!(!p.proj.join("draft.txt").exists());
    assert!(
        !p.outside.join("escaped.txt").exists(),
        "wrote outside the project"
    );
    assert!(!p.proj.join("escape.txt").exists());
    let results = r.tool_results();
    assert!(results[1].contains("permission_denied"), "{results:?}");
    assert!(results[1].contains("outside the sandbox"), "{results:?}");
    assert!(
        r.stderr
            .contains("PreToolUse hook rewrote the arguments of write_file")
            && r.stderr.contains("escaped.txt"),
        "{}",
        r.stderr
    );
}

const POST_LOG: &str = r#"#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "post-input.json"), "w") as f:
    json.dump(data, f)
first = data["tool_response"]["content"].splitlines()[0]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
    "additionalContext": "lint-bot: the output began with " + first}}))
"#;

#[test]
fn post_tool_use_gets_the_tool_response_and_its_context_reaches_the_model() {
    let p = project(
        &[
            (
                ".claude/settings.json",
                &settings(json!({"PostToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/post.py\""}
                ]}]})),
            ),
            (".claude/hooks/post.py", POST_LOG),
        ],
        true,
    );
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("run_command", json!({"command": "echo hello-from-the-tool"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "bypassPermissions"],
    );
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(p.proj.join("post-input.json")).unwrap())
            .unwrap();
    assert_eq!(seen["hook_event_name"], "PostToolUse");
    assert_eq!(seen["tool_name"], "Bash");
    assert_eq!(seen["tool_input"]["command"], "echo hello-from-the-tool");
    assert!(
        seen["tool_response"]["content"]
            .as_str()
            .unwrap()
            .contains("hello-from-the-tool"),
        "{seen}"
    );
    let results = r.tool_results();
    assert!(
        results[0].contains("lint-bot: the output began with"),
        "{results:?}"
    );
}

const HANG: &str = r#"#!/usr/bin/env bash
# Records its pid, its group and a background child's pid, then hangs.
echo "$$ $(ps -o pgid= $$ | tr -d ' ')" > "$CLAUDE_PROJECT_DIR/hook.pids"
sleep 300 &
echo "$!" >> "$CLAUDE_PROJECT_DIR/hook.pids"
sleep 300
"#;

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
            state != 'Z'
        }
    }
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_whole_group() {
    let p = project(&[(".claude/hooks/hang.sh", HANG)], true);
    // The user's own hook (it runs unconfined, so its pids are the host's; a project hook
    // runs in the sandbox's PID namespace).
    put(
        &p.home,
        ".claude/settings.json",
        &settings(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": ".claude/hooks/hang.sh", "timeout": 1}
        ]}]})),
    );
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("run_command", json!({"command": "touch ran.marker"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "bypassPermissions"],
    );
    let pids = std::fs::read_to_string(p.proj.join("hook.pids")).unwrap();
    let nums: Vec<i32> = pids
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let (leader, pgid, child) = (nums[0], nums[1], nums[2]);
    // The hook's shell runs in a process group of its own (led by its guardian, which
    // kills the group should crew die), not in crew's.
    assert_ne!(
        pgid,
        nix::unistd::getpgrp().as_raw(),
        "the hook runs in its own process group"
    );
    assert!(!alive(leader), "the hook's shell outlived its timeout");
    assert!(!alive(child), "the hook's background child outlived it");
    assert!(
        !crewmaster::sandbox::process::group_alive(nix::unistd::Pid::from_raw(pgid)),
        "a process of the hook's group is still running"
    );
    assert!(
        r.stderr.contains("did not finish within its timeout"),
        "{}",
        r.stderr
    );
    // A timeout is a non-blocking error: the call goes on.
    assert!(p.proj.join("ran.marker").exists());
}

#[test]
fn untrusted_project_hooks_never_run_and_the_warning_names_them() {
    let marker_hook = "touch \"$CLAUDE_PROJECT_DIR/hook-ran.marker\"";
    let p = project(
        &[(
            ".claude/settings.json",
            &settings(json!({
                "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": marker_hook}]}],
                "SessionStart": [{"hooks": [{"type": "command", "command": marker_hook}]}]
            })),
        )],
        false,
    );
    let turns = json!([
        {"tool_calls": [call("read_file", json!({"path": "README.md"}))]},
        {"text": "done"}
    ]);
    let r = run(&p, turns.clone(), &[]);
    assert!(
        !p.proj.join("hook-ran.marker").exists(),
        "an untrusted hook ran"
    );
    assert!(r.stderr.contains("not trusted"), "{}", r.stderr);
    assert!(r.stderr.contains("hook-ran.marker"), "{}", r.stderr);
    assert!(r.stderr.contains("PreToolUse"), "{}", r.stderr);
    let listed = crew(&p.proj, &p.home, &["hooks", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("not used") && listed.contains("hook-ran.marker"),
        "{listed}"
    );

    let out = crew(&p.proj, &p.home, &["trust", p.proj.to_str().unwrap()]);
    assert!(out.status.success());
    run(&p, turns, &[]);
    assert!(
        p.proj.join("hook-ran.marker").exists(),
        "trusted hooks did not run"
    );
}

#[test]
fn hooks_list_shows_each_hook_and_where_it_comes_from() {
    let p = project(
        &[(
            ".claude/settings.json",
            &settings(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./guard.sh", "timeout": 5}
            ]}]})),
        )],
        true,
    );
    put(
        &p.home,
        ".crew/settings.json",
        &settings(
            json!({"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}),
        ),
    );
    let out = crew(&p.proj, &p.home, &["hooks", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = v["hooks"].as_array().unwrap();
    let guard = hooks.iter().find(|h| h["command"] == "./guard.sh").unwrap();
    assert_eq!(guard["event"], "PreToolUse");
    assert_eq!(guard["matcher"], "Bash");
    assert_eq!(guard["scope"], "project");
    assert_eq!(guard["timeout_secs"], 5.0);
    assert!(
        guard["file"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.json")
    );
    let stop = hooks.iter().find(|h| h["event"] == "Stop").unwrap();
    assert_eq!(stop["scope"], "user");
    assert!(
        stop["file"]
            .as_str()
            .unwrap()
            .ends_with(".crew/settings.json")
    );
    let text = crew(&p.proj, &p.home, &["hooks", "list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("PreToolUse") && text.contains("./guard.sh"),
        "{text}"
    );
}

#[test]
fn a_hook_printing_invalid_json_is_reported_not_obeyed() {
    let bad = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "alow"}}'"#;
    let p = project(
        &[(
            ".claude/settings.json",
            &settings(json!({"PreToolUse": [{"matcher": "Write", "hooks": [
                {"type": "command", "command": bad}
            ]}]})),
        )],
        true,
    );
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("write_file", json!({"path": "a.txt", "content": "x"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "default"],
    );
    // Not obeyed: default mode still asks, and headless refuses.
    assert!(!p.proj.join("a.txt").exists());
    assert!(r.stderr.contains("not valid hook output"), "{}", r.stderr);
}

const POLICY: &str = r#"#!/usr/bin/env python3
# JSON decisions: deny `rm`, ask before reading .env files, say nothing otherwise.
import json, sys
d = json.load(sys.stdin)
inp = d["tool_input"]
out = None
if d["tool_name"] == "Bash" and inp["command"].startswith("rm "):
    out = {"permissionDecision": "deny", "permissionDecisionReason": "use git rm so the change is reviewed"}
elif d["tool_name"] == "Read" and inp["file_path"].endswith(".env"):
    out = {"permissionDecision": "ask", "permissionDecisionReason": ".env may hold secrets"}
if out:
    out["hookEventName"] = "PreToolUse"
    print(json.dumps({"hookSpecificOutput": out}))
"#;

#[test]
fn json_deny_is_final_even_under_bypass_and_ask_makes_the_engine_ask() {
    let p = project(
        &[
            (
                ".claude/settings.json",
                &settings(json!({"PreToolUse": [{"matcher": "Bash|Read", "hooks": [
                    {"type": "command", "command": "python3 .claude/hooks/policy.py"}
                ]}]})),
            ),
            (".claude/hooks/policy.py", POLICY),
            ("keep.txt", "kept\n"),
            ("app.env", "TOKEN=x\n"),
        ],
        true,
    );
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("run_command", json!({"command": "rm keep.txt"}))]},
            {"tool_calls": [call("read_file", json!({"path": "app.env"}))]},
            {"tool_calls": [call("read_file", json!({"path": "README.md"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "default"],
    );
    assert!(p.proj.join("keep.txt").exists(), "the denied command ran");
    let results = r.tool_results();
    assert!(
        results[0].contains("use git rm so the change is reviewed"),
        "{results:?}"
    );
    // Default mode would read it unasked; the hook's ask makes it ask, and headless
    // refuses what needs asking.
    assert!(results[1].contains("permission_denied"), "{results:?}");
    assert!(results[1].contains(".env may hold secrets"), "{results:?}");
    assert!(!results[1].contains("TOKEN=x"), "{results:?}");
    assert!(results[2].contains("# proj"), "{results:?}");

    // bypassPermissions does not lift a hook's deny.
    run(
        &p,
        json!([
            {"tool_calls": [call("run_command", json!({"command": "rm keep.txt"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(
        p.proj.join("keep.txt").exists(),
        "the denied command ran under bypass"
    );
}
