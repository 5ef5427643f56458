//! Hooks of the agent loop and the session, end to end (issue 11): Stop, UserPromptSubmit,
//! SessionStart, agent definitions' hooks (their Stop is SubagentStop), TaskCompleted,
//! Notification and TeammateIdle, driven by `crew -p --model script:`.

use crate::support;

use serde_json::json;
use support::crew;
use support::hooks::{call, project, run, run_leaving_work, run_script, settings};

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
isolation: worktree
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
    let r = run_script(
        &p,
        script,
        "get it reviewed",
        &["--permission-mode", "bypassPermissions"],
    );
    assert!(
        p.proj.join("lead.marker").exists(),
        "the lead's command was blocked: {}",
        r.stderr
    );
    let reviewer_saw = r
        .requests
        .iter()
        .map(|q| q.to_string())
        .rfind(|l| l.contains("\"agent\":\"reviewer/"))
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
    // The hook keeps the item open, so the run ends with it undone (and exits 1).
    let r = run_leaving_work(
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
    assert!(
        r.stderr.contains("#1 write the docs (pending)"),
        "{}",
        r.stderr
    );
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
                "---\nname: w\ndescription: test teammate\nisolation: worktree\ntools: read_file, send_message\n---\nDo your part.\n",
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
    let r = run_script(
        &p,
        script,
        "start tina",
        &["--permission-mode", "acceptEdits"],
    );
    assert_eq!(
        std::fs::read_to_string(p.proj.join("idle-blocked.txt")).unwrap(),
        "TeammateIdle"
    );
    let tina: Vec<String> = r
        .requests
        .iter()
        .filter(|q| q["agent"] == "w/tina")
        .map(|q| q.to_string())
        .collect();
    assert_eq!(tina.len(), 2, "{}", r.stderr);
    assert!(
        tina[1].contains("Finish the checklist before going idle."),
        "{}",
        tina[1]
    );
}

#[test]
fn user_prompt_submit_fires_only_for_the_users_prompt_and_teams_are_named() {
    // Logs every prompt it is given, and the team name of each event.
    let log = r#"python3 -c '
import json, os, sys
d = json.load(sys.stdin)
with open(os.environ["CLAUDE_PROJECT_DIR"] + "/events.log", "a") as f:
    f.write(json.dumps([d["hook_event_name"], d.get("prompt"), d.get("team_name")]) + "\n")
'"#;
    let hook = json!([{"hooks": [{"type": "command", "command": log}]}]);
    let p = project(
        &[
            (
                ".claude/settings.json",
                &settings(json!({"UserPromptSubmit": hook, "TeammateIdle": hook})),
            ),
            (
                ".crew/agents/w.md",
                "---\nname: w\ndescription: test teammate\nisolation: worktree\ntools: read_file, send_message\n---\nDo your part.\n",
            ),
        ],
        true,
    );
    let script = json!({
        "turns": [
            {"tool_calls": [call("agent", json!({
                "description": "t", "prompt": "Check things.", "subagent_type": "w", "name": "tina"
            }))]},
            {"text": "team started"},
            {"text": "tina is done; final report"}
        ],
        "agents": {"tina": {"turns": [{"text": "checked"}]}}
    });
    let r = run_script(
        &p,
        script,
        "start tina",
        &["--permission-mode", "acceptEdits"],
    );
    // The lead did get a follow-up run for the team's news…
    let lead: Vec<String> = r
        .requests
        .iter()
        .filter(|q| q["agent"] == "lead")
        .map(|q| q.to_string())
        .collect();
    assert!(
        lead.iter()
            .any(|q| q.contains("Your team has news for you")),
        "{lead:?} {}",
        r.stderr
    );
    // …but UserPromptSubmit fired once, for the user's prompt.
    let events: Vec<serde_json::Value> = std::fs::read_to_string(p.proj.join("events.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let prompts: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e[0] == "UserPromptSubmit")
        .map(|e| &e[1])
        .collect();
    assert_eq!(prompts, [&json!("start tina")], "{events:?}");
    // The team exists, so events carry its name: the session's team directory.
    let teams: Vec<String> = std::fs::read_dir(p.home.join(".crew/teams"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(teams.len(), 1, "{teams:?}");
    let idle = events
        .iter()
        .find(|e| e[0] == "TeammateIdle")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(idle[2], json!(teams[0]), "{events:?}");
}
