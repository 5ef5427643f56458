//! Hooks end to end (issue 11): a committed `.claude/settings.json` with hook scripts in
//! bash and python3, as Claude Code users have them, driven by `crew -p --model script:`;
//! each test asserts on the recorded model requests and on the disk.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use common::{crew, git, put};
use serde_json::{Value, json};

/// A temporary home and a git project below it holding `files`; trusted when asked.
struct Project {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
    /// A directory beside the project (outside every sandbox root).
    outside: PathBuf,
}

fn project(files: &[(&str, &str)], trusted: bool) -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    let proj = home.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    put(&proj, "README.md", "# proj\n");
    for (rel, text) in files {
        put(&proj, rel, text);
        if rel.starts_with(".claude/hooks/") {
            std::fs::set_permissions(proj.join(rel), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
    }
    git(&proj, &["init", "-q"]);
    git(&proj, &["add", "."]);
    git(&proj, &["commit", "-qm", "initial"]);
    if trusted {
        let out = crew(&proj, &home, &["trust", proj.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Project {
        _tmp: tmp,
        home,
        proj,
        outside,
    }
}

/// What one `crew -p` run left: its output and the requests the model was sent.
struct Run {
    stderr: String,
    requests: Vec<Value>,
}

impl Run {
    /// Every tool result text the model was shown, in order.
    fn tool_results(&self) -> Vec<String> {
        let last = self.requests.last().expect("a request was recorded");
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// All the text of the last request.
    fn last_request(&self) -> String {
        self.requests
            .last()
            .expect("a request was recorded")
            .to_string()
    }
}

fn run(p: &Project, turns: Value, args: &[&str]) -> Run {
    let script = p.home.join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let record = p.home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let model = format!("script:{}", script.display());
    let mut all = vec![
        "-p",
        "do the task",
        "--model",
        &model,
        "--record-requests",
        record.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = crew(&p.proj, &p.home, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "crew failed: {stderr}");
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Run { stderr, requests }
}

fn call(name: &str, input: Value) -> Value {
    json!({ "name": name, "input": input })
}

fn settings(hooks: Value) -> String {
    json!({ "hooks": hooks }).to_string()
}

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
    let p = project(
        &[
            (
                ".claude/settings.json",
                &settings(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": ".claude/hooks/hang.sh", "timeout": 1}
                ]}]})),
            ),
            (".claude/hooks/hang.sh", HANG),
        ],
        true,
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
    assert_eq!(leader, pgid, "the hook leads its own process group");
    assert!(!alive(leader), "the hook's shell outlived its timeout");
    assert!(!alive(child), "the hook's background child outlived it");
    assert!(
        !crewmaster::tools::process::group_alive(nix::unistd::Pid::from_raw(pgid)),
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

#[test]
fn a_stop_hook_makes_the_lead_go_on_with_its_reason_once() {
    let stop = r#"python3 -c '
import json, sys
d = json.load(sys.stdin)
if not d["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "Run the test suite before you finish."}))
'"#;
    let p = project(
        &[(
            ".crew/settings.json",
            &settings(json!({"Stop": [{"hooks": [{"type": "command", "command": stop}]}]})),
        )],
        true,
    );
    let r = run(
        &p,
        json!([{"text": "all done"}, {"text": "tests pass, done"}]),
        &[],
    );
    assert_eq!(r.requests.len(), 2, "{}", r.stderr);
    assert!(
        r.last_request()
            .contains("Run the test suite before you finish."),
        "{}",
        r.last_request()
    );
}

#[test]
fn user_prompt_submit_adds_context_and_session_start_runs() {
    let p = project(
        &[(
            ".claude/settings.json",
            &settings(json!({
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'Sprint goal: ship the parser.'"}]}],
                "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'Branch policy: never push to main.'"}]}]
            })),
        )],
        true,
    );
    let r = run(&p, json!([{"text": "ok"}]), &[]);
    let first = r.requests[0].to_string();
    assert!(first.contains("Sprint goal: ship the parser."), "{first}");
    assert!(
        first.contains("Branch policy: never push to main."),
        "{first}"
    );
    assert!(first.contains("do the task"), "{first}");
}

const REVIEWER: &str = r#"---
name: reviewer
description: Reviews changes without pushing them
tools: Bash, Read
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "echo 'reviewers only read: no commands' >&2; exit 2"
  Stop:
    - hooks:
        - type: command
          command: "python3 -c 'import json,os,sys; d=json.load(sys.stdin); open(os.environ[\"CLAUDE_PROJECT_DIR\"]+\"/stop-event.txt\",\"w\").write(d[\"hook_event_name\"]+\" \"+d[\"agent_type\"])'"
---
You review the change you are given.
"#;

#[test]
fn an_agent_definitions_hooks_run_only_for_that_agent_and_its_stop_is_subagent_stop() {
    let p = project(&[(".claude/agents/reviewer.md", REVIEWER)], true);
    let script = json!({
        "turns": [
            {"tool_calls": [call("agent", json!({
                "subagent_type": "reviewer", "description": "review", "prompt": "review it"
            }))]},
            {"tool_calls": [call("run_command", json!({"command": "touch lead.marker"}))]},
            {"text": "done"}
        ],
        "agents": {"reviewer": {"turns": [
            {"tool_calls": [call("run_command", json!({"command": "touch reviewer.marker"}))]},
            {"text": "reviewed"}
        ]}}
    });
    let path = p.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let record = p.home.join("requests.jsonl");
    let out = crew(
        &p.proj,
        &p.home,
        &[
            "-p",
            "get it reviewed",
            "--permission-mode",
            "bypassPermissions",
            "--model",
            &format!("script:{}", path.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        p.proj.join("lead.marker").exists(),
        "the lead's command was blocked: {stderr}"
    );
    let reviewer_saw = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .rfind(|l| l.contains("\"agent\":\"reviewer/"))
        .map(str::to_string)
        .expect("the reviewer made requests");
    // Refused by its hook before the engine: the command never ran.
    assert!(
        reviewer_saw
            .contains("a PreToolUse hook blocked this call: reviewers only read: no commands"),
        "{reviewer_saw}"
    );
    assert_eq!(
        std::fs::read_to_string(p.proj.join("stop-event.txt")).unwrap(),
        "SubagentStop reviewer"
    );
    let listed = crew(&p.proj, &p.home, &["hooks", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("agent:reviewer") && listed.contains("SubagentStop"),
        "{listed}"
    );
}

#[test]
fn a_task_completed_hook_keeps_a_work_list_item_open() {
    let guard = r#"python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.stderr.write("item " + d["task_id"] + ": the docs are not written yet")
sys.exit(2)
'"#;
    let p = project(
        &[(
            ".claude/settings.json",
            &settings(
                json!({"TaskCompleted": [{"hooks": [{"type": "command", "command": guard}]}]}),
            ),
        )],
        true,
    );
    let r = run(
        &p,
        json!([
            {"tool_calls": [call("todo_add", json!({"subject": "write the docs"}))]},
            {"tool_calls": [call("todo_update", json!({"id": "1", "status": "completed"}))]},
            {"tool_calls": [call("todo_list", json!({}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "bypassPermissions"],
    );
    let results = r.tool_results();
    assert!(
        results[1].contains("item 1: the docs are not written yet"),
        "{results:?} {}",
        r.stderr
    );
    assert!(!results[2].contains("completed"), "{results:?}");
    assert!(results[2].contains("write the docs"), "{results:?}");
}

#[test]
fn a_notification_hook_runs_when_an_approval_is_needed() {
    let notify = r#"python3 -c '
import json, os, sys
d = json.load(sys.stdin)
open(os.environ["CLAUDE_PROJECT_DIR"] + "/notified.txt", "w").write(d["notification_type"] + ": " + d["message"])
'"#;
    let p = project(
        &[(
            ".claude/settings.json",
            &settings(
                json!({"Notification": [{"matcher": "permission_prompt", "hooks": [
                    {"type": "command", "command": notify}
                ]}]}),
            ),
        )],
        true,
    );
    run(
        &p,
        json!([
            {"tool_calls": [call("write_file", json!({"path": "a.txt", "content": "x"}))]},
            {"text": "done"}
        ]),
        &["--permission-mode", "default"],
    );
    assert_eq!(
        std::fs::read_to_string(p.proj.join("notified.txt")).unwrap(),
        "permission_prompt: crew needs your permission to use write_file"
    );
    // Headless refuses what needs asking: the hook only notified.
    assert!(!p.proj.join("a.txt").exists());
}

#[test]
fn a_teammate_idle_hook_keeps_the_teammate_working_once() {
    // Blocks the first time only (a marker in the project remembers it).
    let idle = r#"python3 -c '
import json, os, sys
d = json.load(sys.stdin)
m = os.environ["CLAUDE_PROJECT_DIR"] + "/idle-blocked.txt"
if d["teammate_name"] == "tina" and not os.path.exists(m):
    open(m, "w").write(d["hook_event_name"])
    sys.stderr.write("Finish the checklist before going idle.")
    sys.exit(2)
'"#;
    let p = project(
        &[
            (
                ".claude/settings.json",
                &settings(
                    json!({"TeammateIdle": [{"hooks": [{"type": "command", "command": idle}]}]}),
                ),
            ),
            (
                ".crew/agents/w.md",
                "---\nname: w\ndescription: test teammate\ntools: read_file, send_message\n---\nDo your part.\n",
            ),
        ],
        true,
    );
    let script = json!({
        "turns": [
            {"tool_calls": [call("agent", json!({
                "description": "t", "prompt": "Check things.", "subagent_type": "w", "name": "tina"
            }))]},
            {"text": "team started"}
        ],
        "agents": {"tina": {"turns": [{"text": "idle now"}, {"text": "checklist done"}]}}
    });
    let path = p.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let record = p.home.join("requests.jsonl");
    let out = crew(
        &p.proj,
        &p.home,
        &[
            "-p",
            "start tina",
            "--permission-mode",
            "acceptEdits",
            "--model",
            &format!("script:{}", path.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(p.proj.join("idle-blocked.txt")).unwrap(),
        "TeammateIdle"
    );
    let tina: Vec<String> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"agent\":\"w/tina\""))
        .map(str::to_string)
        .collect();
    assert_eq!(tina.len(), 2, "{stderr}");
    assert!(
        tina[1].contains("Finish the checklist before going idle."),
        "{}",
        tina[1]
    );
}
