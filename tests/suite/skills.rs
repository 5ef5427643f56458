//! Skills end to end: a `SKILL.md` shaped like the ones Claude Code users commit is listed
//! in the system prompt, loaded with the `skill` tool, and while it is active its
//! `allowed-tools` are what the gate lets the agent run — until the turn ends or another
//! skill is loaded. Through the real actors (fake tools that count their runs) and
//! through `crew -p` with the real tools (the disk is checked).

use crate::support;

use std::sync::Arc;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::permission::PermissionMode;
use crewmaster::tools::{Safety, Tool};
use serde_json::Value;
use support::{
    Behaviour, FakeTool, Setup, committed_repo, crew, crew_p_recorded, git, put, start,
    tool_results,
};

const REVIEW_SKILL: &str = "---
name: review
description: Review code changes for bugs, unclear names and missing tests. Use when the user asks for a review.
allowed-tools: read_file, search_code
---
# Code review

1. Read the files named in the request, and the checklist in `checklist.md` beside this file.
2. Search for the callers of anything that changed.
3. Report each finding as `file:line — problem — suggested fix`.

Do not modify files: the author applies the fixes.
";

const CHECKLIST: &str = "- [ ] errors name the file\n- [ ] no unwrap outside tests\n";

const CHANGELOG_SKILL: &str = "---
name: changelog
description: Add an entry to CHANGELOG.md for the change just made.
allowed-tools:
  - Write
---
Write the entry under `## Unreleased`.
";

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

fn fake(name: &str, safety: Safety) -> Arc<FakeTool> {
    Arc::new(FakeTool::new(name, safety, false, Behaviour::Succeed))
}

#[tokio::test]
async fn a_skill_limits_the_tools_until_its_turn_ends_or_another_skill_is_loaded() {
    let read = fake("read_file", Safety::ReadOnly);
    let search = fake("search_code", Safety::ReadOnly);
    let write = fake("write_file", Safety::SideEffect);
    let mut setup = Setup::new(
        r#"{"turns":[
            {"tool_calls":[{"name":"Skill","input":{"skill":"review"}}]},
            {"tool_calls":[
                {"name":"search_code","input":{"pattern":"fn main","path":"."}},
                {"name":"write_file","input":{"path":"REVIEW.md"}}]},
            {"text":"Findings listed."},
            {"tool_calls":[{"name":"skill","input":{"name":"review"}}]},
            {"tool_calls":[{"name":"skill","input":{"name":"changelog"}}]},
            {"tool_calls":[
                {"name":"write_file","input":{"path":"CHANGELOG.md"}},
                {"name":"read_file","input":{"path":"CHANGELOG.md"}}]},
            {"text":"Entry added."},
            {"tool_calls":[
                {"name":"write_file","input":{"path":"notes.md"}},
                {"name":"read_file","input":{"path":"notes.md"}}]},
            {"text":"Done."}
        ]}"#,
        vec![read.clone() as Arc<dyn Tool>, search.clone(), write.clone()],
    );
    setup.mode = PermissionMode::BypassPermissions;
    setup.skills = true;
    setup.files = vec![
        (".claude/skills/review/SKILL.md", REVIEW_SKILL.into()),
        (".claude/skills/review/checklist.md", CHECKLIST.into()),
        (".crew/skills/changelog/SKILL.md", CHANGELOG_SKILL.into()),
    ];
    let t = start(setup).await;

    // Turn 1: the skill is loaded; in the same turn the write is refused at the gate
    // (the engine allowed it: bypassPermissions) and the write tool never ran.
    t.session.run(chat("review my change")).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert!(!results[0].is_error, "{}", results[0].content);
    assert!(results[0].content.contains("Report each finding as"));
    assert!(
        !results[1].is_error,
        "search_code is in the skill's list: {}",
        results[1].content
    );
    assert_eq!(results[2].error_code.as_deref(), Some("tool_not_allowed"));
    assert!(
        results[2].content.contains("skill `review`")
            && results[2].content.contains("read_file, search_code"),
        "{}",
        results[2].content
    );
    assert_eq!((search.runs(), write.runs()), (1, 0));

    // Turn 2: loading another skill replaces the first one's list.
    t.session.run(chat("now the changelog")).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    let turn2 = &results[3..];
    assert!(
        !turn2[2].is_error,
        "changelog allows Write: {}",
        turn2[2].content
    );
    assert_eq!(turn2[3].error_code.as_deref(), Some("tool_not_allowed"));
    assert!(
        turn2[3].content.contains("skill `changelog`"),
        "{}",
        turn2[3].content
    );
    assert_eq!((write.runs(), read.runs()), (1, 0));

    // Turn 3: no skill is active any more.
    t.session.run(chat("write notes")).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert!(results[7..].iter().all(|r| !r.is_error), "{results:?}");
    assert_eq!((write.runs(), read.runs()), (2, 1));
}

#[tokio::test]
async fn plan_mode_still_refuses_a_write_a_skill_allows() {
    let write = fake("write_file", Safety::SideEffect);
    let mut setup = Setup::new(
        r#"{"turns":[
            {"tool_calls":[{"name":"skill","input":{"name":"changelog"}}]},
            {"tool_calls":[{"name":"write_file","input":{"path":"CHANGELOG.md"}}]},
            {"text":"plan: add an entry"}
        ]}"#,
        vec![write.clone() as Arc<dyn Tool>],
    );
    setup.mode = PermissionMode::BypassPermissions;
    setup.skills = true;
    setup.files = vec![(".crew/skills/changelog/SKILL.md", CHANGELOG_SKILL.into())];
    let t = start(setup).await;
    let plan = RunRequest {
        mode: AgentMode::Plan,
        ..chat("plan the changelog")
    };
    t.session.run(plan).await.unwrap();
    let results = tool_results(&t.session.conversation().await.unwrap());
    assert!(
        !results[0].is_error,
        "a skill loads in Plan Mode: {}",
        results[0].content
    );
    assert_eq!(results[1].error_code.as_deref(), Some("tool_not_allowed"));
    assert!(
        results[1].content.contains("current mode"),
        "{}",
        results[1].content
    );
    assert_eq!(write.runs(), 0);
}

/// A git repository with one commit, a home outside it, and `script` as the model.
fn repo(script: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "src/main.rs",
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    put(dir.path(), ".claude/skills/review/SKILL.md", REVIEW_SKILL);
    put(dir.path(), ".claude/skills/review/checklist.md", CHECKLIST);
    committed_repo(dir.path(), &[]);
    put(home.path(), "script.json", script);
    (dir, home)
}

/// The results in a recorded request's last message.
fn last_results(request: &Value) -> Vec<Value> {
    let messages = request["messages"].as_array().unwrap();
    let content = messages.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .clone();
    content
        .into_iter()
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

#[test]
fn crew_p_refuses_a_write_while_a_read_only_skill_is_active_and_writes_nothing() {
    let (dir, home) = repo(
        r#"{"turns":[
            {"tool_calls":[{"name":"Skill","input":{"skill":"review"}}]},
            {"tool_calls":[
                {"name":"read_file","input":{"path":".claude/skills/review/checklist.md"}},
                {"name":"write_file","input":{"path":"REVIEW.md","content":"pwned"}}]},
            {"text":"Two findings."}
        ]}"#,
    );
    let (out, requests) = crew_p_recorded(
        dir.path(),
        home.path(),
        "review src/main.rs",
        "bypassPermissions",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(requests.len(), 3, "{stderr}");
    let system = requests[0]["system"].as_str().unwrap();
    assert!(
        system.contains("- review: Review code changes for bugs"),
        "{system}"
    );
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"skill"), "{tools:?}");
    let loaded = last_results(&requests[1]);
    assert!(
        loaded[0].to_string().contains("Do not modify files"),
        "{loaded:?}"
    );
    let results = last_results(&requests[2]);
    assert!(
        results[0].to_string().contains("no unwrap outside tests"),
        "{results:?}"
    );
    let refused = results[1].to_string();
    assert!(
        refused.contains("tool_not_allowed") && refused.contains("skill `review`"),
        "{refused}"
    );
    assert!(
        !dir.path().join("REVIEW.md").exists(),
        "the write never ran"
    );
    assert!(git(dir.path(), &["status", "--porcelain"]).is_empty());
}

#[test]
fn files_beside_a_users_skill_are_readable_but_not_writable_and_nothing_else_opens() {
    let (dir, home) = repo("{}");
    let home_path = home.path().canonicalize().unwrap();
    let skill_dir = home_path.join(".claude/skills/style");
    put(
        &skill_dir,
        "SKILL.md",
        "---\nname: style\ndescription: House style for Rust code\n---\nFollow `style.md` beside this file.\n",
    );
    put(
        &skill_dir,
        "style.md",
        "Doc comments on every public item.\n",
    );
    put(&home_path, "diary.txt", "private\n");
    let style = skill_dir.join("style.md");
    let script = serde_json::json!({"turns": [
        {"tool_calls": [
            {"name": "skill", "input": {"name": "style"}},
            {"name": "read_file", "input": {"path": style}},
            {"name": "read_file", "input": {"path": home_path.join("diary.txt")}},
            {"name": "write_file", "input": {"path": skill_dir.join("SKILL.md"), "content": "pwned"}}
        ]},
        {"text": "ok"}
    ]});
    put(&home_path, "script.json", &script.to_string());
    let (out, requests) = crew_p_recorded(dir.path(), home.path(), "tidy up", "bypassPermissions");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = last_results(&requests[1]);
    assert!(
        results[0]
            .to_string()
            .contains(&skill_dir.display().to_string())
    );
    assert!(
        results[1]
            .to_string()
            .contains("Doc comments on every public item"),
        "{:?}",
        results[1]
    );
    assert!(
        results[2].to_string().contains("outside the sandbox"),
        "{:?}",
        results[2]
    );
    assert!(
        results[3].to_string().contains("outside the sandbox"),
        "{:?}",
        results[3]
    );
    let skill = std::fs::read_to_string(skill_dir.join("SKILL.md")).unwrap();
    assert!(
        skill.contains("House style"),
        "the skill file was not rewritten"
    );
}

#[test]
fn crew_skills_list_shows_where_each_skill_comes_from_and_what_failed() {
    let (dir, home) = repo("{}");
    put(
        home.path(),
        ".crew/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Keep meeting notes\nallowed-tools: Read Write\n---\nx",
    );
    put(
        dir.path(),
        ".crew/skills/broken/SKILL.md",
        "---\nname: broken\n---\nno description",
    );
    let out = crew(dir.path(), home.path(), &["skills", "list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("review") && stdout.contains("tools: read_file, search_code"));
    assert!(
        stdout.contains(".claude/skills/review/SKILL.md (project)"),
        "{stdout}"
    );
    assert!(stdout.contains("notes") && stdout.contains("tools: read_file, write_file"));
    assert!(stdout.contains("(user)"), "{stdout}");
    assert!(
        stdout.contains("not loaded:")
            && stdout.contains("broken/SKILL.md")
            && stdout.contains("description"),
        "{stdout}"
    );
}

#[test]
fn subagents_and_teammates_that_can_load_skills_see_the_skill_list() {
    let (dir, home) = repo(
        r#"{"turns":[
            {"tool_calls":[
                {"name":"agent","input":{"description":"r","prompt":"Review src/main.rs.","subagent_type":"reviewer"}},
                {"name":"agent","input":{"description":"g","prompt":"Grep for unwrap.","subagent_type":"grepper"}},
                {"name":"agent","input":{"description":"t","prompt":"Check things.","subagent_type":"mate","name":"tina"}}]},
            {"text":"started"},
            {"text":"done"}
        ],
        "agents":{
            "reviewer":{"turns":[{"text":"reviewed"}]},
            "grepper":{"turns":[{"text":"nothing"}]},
            "tina":{"turns":[{"text":"checked"}]}}}"#,
    );
    put(
        dir.path(),
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code\nisolation: worktree\ntools: Read, Grep, Skill\n---\nYou review.\n",
    );
    put(
        dir.path(),
        ".claude/agents/grepper.md",
        "---\nname: grepper\ndescription: Greps\nisolation: worktree\ntools: Grep\n---\nYou grep.\n",
    );
    put(
        dir.path(),
        ".claude/agents/mate.md",
        "---\nname: mate\ndescription: A teammate\nisolation: worktree\n---\nYou help.\n",
    );
    let (out, requests) = crew_p_recorded(dir.path(), home.path(), "go", "acceptEdits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let system_of = |prefix: &str| -> String {
        requests
            .iter()
            .find(|r| r["agent"].as_str().unwrap_or("").starts_with(prefix))
            .unwrap_or_else(|| panic!("no request of {prefix}: {stderr}"))["system"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let listed = "- review: Review code changes for bugs";
    let reviewer = system_of("reviewer/");
    assert!(
        reviewer.contains("You review.") && reviewer.contains(listed),
        "{reviewer}"
    );
    let teammate = system_of("mate/tina");
    assert!(teammate.contains(listed), "{teammate}");
    // An agent without the `skill` tool is not told about skills it cannot load.
    let grepper = system_of("grepper/");
    assert!(
        grepper.contains("You grep.") && !grepper.contains(listed),
        "{grepper}"
    );
}

#[test]
fn a_skill_runs_as_slash_name_with_its_instructions_and_its_tools() {
    let (dir, home) = repo(
        r#"{"turns":[
            {"tool_calls":[{"name":"write_file","input":{"path":"REVIEW.md","content":"pwned"}}]},
            {"text":"One finding."}
        ]}"#,
    );
    let (out, requests) = crew_p_recorded(
        dir.path(),
        home.path(),
        "/review src/main.rs",
        "bypassPermissions",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The turn's message is the skill's instructions, then the arguments.
    let first = requests[0]["messages"][0].to_string();
    assert!(
        first.contains("Report each finding as") && first.contains("ARGUMENTS: src/main.rs"),
        "{first}"
    );
    // Its allowed-tools narrow the turn, even under bypassPermissions: no write happened.
    assert!(!dir.path().join("REVIEW.md").exists(), "{stderr}");
    let results = last_results(&requests[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
}
