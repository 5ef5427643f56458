//! The work-list tools (`todo_add`, `todo_update`, `todo_get`, `todo_list` and Claude Code's
//! `TaskCreate`/`TaskUpdate`/`TaskGet`/`TaskList` aliases): called as the lead and as
//! teammates through their `ToolContext`'s team handle, judged by the permission engine, and
//! end to end through `crew -p` on a scripted model, checking the files on disk afterwards.

use crate::support;

use std::sync::Arc;

use crewmaster::agent::catalog::Catalog;
use crewmaster::agent::mode::{AgentMode, visible_definitions};
use crewmaster::permission::{Category, PermissionMode, Verdict};
use crewmaster::team::{Member, MemberName, Team, TeamHandle, TodoId, TodoStatus};
use crewmaster::tools::{Registry, ToolContext, ToolError, orchestration_tools};
use serde_json::{Value, json};

/// Who may change an item's owner; the team's lock out of sandboxes' reach
/// (tests/team_tools/authority.rs).
#[path = "team_tools/authority.rs"]
mod authority;

fn name(s: &str) -> MemberName {
    MemberName::parse(s).unwrap()
}

fn registry() -> Registry {
    Registry::with_tools(orchestration_tools(&Catalog::default().agent_types())).unwrap()
}

/// A team `t` with teammates alice and bob, and a tool context for each member.
struct Fixture {
    _root: tempfile::TempDir,
    team: Arc<Team>,
    registry: Registry,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let team = Arc::new(Team::open(root.path(), "t").unwrap());
        for n in ["alice", "bob"] {
            team.add_member(Member::new(name(n), n, "general-purpose", None))
                .unwrap();
        }
        Self {
            _root: root,
            team,
            registry: registry(),
        }
    }

    fn ctx(&self, member: &str) -> ToolContext {
        let mut ctx = ToolContext::new("/", member);
        ctx.team = Some(TeamHandle::new(self.team.clone(), name(member)));
        ctx
    }

    /// Calls `tool` (or an alias) as `member`.
    async fn call(&self, member: &str, tool: &str, input: Value) -> Result<String, ToolError> {
        let t = self.registry.get(tool).expect("tool registered");
        t.run(input, self.ctx(member)).await
    }
}

#[tokio::test]
async fn a_blocked_item_cannot_be_claimed_until_its_blocker_is_completed() {
    let f = Fixture::new();
    let one = f
        .call("lead", "todo_add", json!({"subject": "write a.txt"}))
        .await
        .unwrap();
    assert_eq!(one, "Added item #1: write a.txt");
    let two = f
        .call(
            "lead",
            "TaskCreate",
            json!({"subject": "write b.txt", "description": "after a", "blocked_by": ["1"]}),
        )
        .await
        .unwrap();
    assert_eq!(two, "Added item #2: write b.txt (blocked by #1)");

    // bob tries to claim 2: refused, naming blocker 1; nothing changed on disk.
    let err = f
        .call(
            "bob",
            "todo_update",
            json!({"id": "2", "status": "in_progress"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "failed");
    assert!(err.to_string().contains("blocked by #1"), "{err}");
    let two_on_disk = f.team.get_todo(TodoId::parse("id", "2").unwrap()).unwrap();
    assert_eq!(
        (two_on_disk.status, two_on_disk.owner),
        (TodoStatus::Pending, None)
    );

    // alice claims 1 (Claude Code's spelling), bob cannot take it from her.
    let claimed = f
        .call(
            "alice",
            "TaskUpdate",
            json!({"taskId": 1, "status": "in_progress"}),
        )
        .await
        .unwrap();
    assert_eq!(claimed, "Item #1 is in_progress, owner alice.");
    let err = f
        .call(
            "bob",
            "todo_update",
            json!({"id": 1, "status": "in_progress"}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("owned by alice"), "{err}");
    let listed = f.call("bob", "TaskList", json!({})).await.unwrap();
    assert_eq!(
        listed,
        "#1 [in_progress] write a.txt — owner alice\n#2 [pending] write b.txt — blocked by #1"
    );

    // alice completes 1: the answer says 2 is free now; bob claims it.
    let done = f
        .call(
            "alice",
            "todo_update",
            json!({"id": "1", "status": "completed"}),
        )
        .await
        .unwrap();
    assert_eq!(
        done,
        "Item #1 is completed, owner alice. Now unblocked: #2."
    );
    f.call(
        "bob",
        "todo_update",
        json!({"id": "#2", "status": "in_progress"}),
    )
    .await
    .unwrap();
    let got = f.call("lead", "todo_get", json!({"id": 2})).await.unwrap();
    assert_eq!(
        got,
        "#2 write b.txt\nstatus: in_progress\nowner: bob\ncreated by: lead\nblocked by: #1 (all finished)\n\nafter a"
    );
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(f.team.dir().join("todos/2.json")).unwrap()).unwrap();
    assert_eq!(
        (&on_disk["status"], &on_disk["owner"]),
        (&json!("in_progress"), &json!("bob"))
    );
}

#[tokio::test]
async fn bad_arguments_and_agents_outside_a_team_get_clear_errors() {
    let f = Fixture::new();
    let cases = [
        ("todo_get", json!({"id": "7"}), "there is no item with id 7"),
        ("todo_get", json!({}), "missing required argument `id`"),
        ("todo_update", json!({"id": "1"}), "nothing to change"),
        (
            "todo_add",
            json!({"subject": "x", "blocked_by": ["9"]}),
            "blocked_by: there is no item with id 9",
        ),
        (
            "todo_add",
            json!({"subject": "   "}),
            "subject must not be empty",
        ),
        (
            "todo_update",
            json!({"id": "1", "owner": "../x"}),
            "argument `owner`",
        ),
    ];
    f.call("lead", "todo_add", json!({"subject": "one"}))
        .await
        .unwrap();
    for (tool, input, want) in cases {
        let err = f.call("lead", tool, input.clone()).await.unwrap_err();
        assert_eq!(err.code(), "invalid_arguments", "{tool} {input}: {err}");
        assert!(err.to_string().contains(want), "{tool} {input}: {err}");
    }
    // Assigning to somebody who is not on the team is refused by the store.
    let err = f
        .call("lead", "todo_update", json!({"id": "1", "owner": "carol"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no member named carol"), "{err}");

    // A plain subagent has no team: the tools say so and touch nothing.
    let lonely = ToolContext::new("/", "explore/t1");
    let tool = f.registry.get("todo_add").unwrap();
    let err = tool
        .run(json!({"subject": "sneaky"}), lonely)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not part of a team"), "{err}");
    assert_eq!(f.team.list_todos().unwrap().len(), 1);
}

#[test]
fn aliases_resolve_and_background_task_tools_keep_their_names() {
    let r = registry();
    for (alias, tool) in [
        ("TaskCreate", "todo_add"),
        ("TaskUpdate", "todo_update"),
        ("TaskGet", "todo_get"),
        ("TaskList", "todo_list"),
        ("task_list", "task_list"),
        ("task_output", "task_output"),
    ] {
        assert_eq!(r.canonical(alias), Some(tool), "{alias}");
    }
    // Plan mode shows the read-only ones only; every agent (System tools) sees them.
    let plan: Vec<String> = visible_definitions(AgentMode::Plan, &r, Some(&Default::default()))
        .into_iter()
        .map(|d| d.name)
        .filter(|n| n.starts_with("todo_"))
        .collect();
    assert_eq!(plan, ["todo_get", "todo_list"]);
}

#[test]
fn permission_reads_are_reads_and_changes_are_task_control() {
    let f = support::permission::Fixture::new();
    let calls = [
        ("todo_list", "{}", Category::Read),
        ("TaskGet", r#"{"id":"1"}"#, Category::Read),
        ("todo_add", r#"{"subject":"x"}"#, Category::Control),
        (
            "TaskUpdate",
            r#"{"taskId":"1","status":"completed"}"#,
            Category::Control,
        ),
    ];
    for (tool, args, category) in calls {
        let d = f.check(tool, args, PermissionMode::Default);
        assert_eq!(
            (d.verdict, d.category),
            (Verdict::Allow, Some(category)),
            "{tool}"
        );
        let d = f.check(tool, args, PermissionMode::Strict);
        assert_eq!(d.verdict, Verdict::Ask, "{tool} strict");
    }
}

/// The lead of a real `crew -p` run, on a scripted model, works the list: it adds item 1 and
/// item 2 blocked by 1, is refused claiming 2 (blocker named in the tool result the model
/// sees), completes 1, then claims 2. The team's files and the events (`--output-format events`) agree.
#[test]
fn the_lead_works_the_list_in_a_real_headless_run() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, proj) = (base.join("home"), base.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    support::put(&proj, "README.md", "# p\n");
    let call = |name: &str, input: Value| json!({"tool_calls": [{"name": name, "input": input}]});
    let script = json!({"turns": [
            call("todo_add", json!({"subject": "write a.txt"})),
            call("TaskCreate", json!({"subject": "write b.txt", "blocked_by": ["1"]})),
            call("todo_update", json!({"id": "2", "status": "in_progress"})),
            call("todo_update", json!({"id": "1", "status": "in_progress"})),
            call("todo_update", json!({"id": "1", "status": "completed"})),
            call("todo_update", json!({"id": "2", "status": "in_progress"})),
            call("todo_list", json!({})),
            {"text": "all done"}
    ]});
    let (out, requests) = support::crew_scripted_output(
        &proj,
        &home,
        &script,
        &["-p", "plan the work", "--output-format", "events"],
    );
    // The lead said "all done" with item 2 still in progress: the run is not done.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("left undone: #2 write b.txt (in_progress)"),
        "{stderr}"
    );
    let results = last_tool_results(requests.last().expect("a recorded request"));
    assert_eq!(results.len(), 7, "{results:#?}");
    assert!(results[2].0, "the claim of 2 must fail: {results:#?}");
    assert!(
        results[2].1.contains("item 2 is blocked by #1"),
        "{}",
        results[2].1
    );
    assert_eq!(
        results[4].1,
        "Item #1 is completed, owner lead. Now unblocked: #2."
    );
    assert!(!results[5].0, "{}", results[5].1);
    assert_eq!(
        results[6].1,
        "#1 [completed] write a.txt — owner lead\n#2 [in_progress] write b.txt — owner lead"
    );

    // The team directory is named after the session and holds the list.
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let session = lines.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let item = |id: &str| -> Value {
        let path = home.join(format!(".crew/teams/{session}/todos/{id}.json"));
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    };
    assert_eq!(
        (item("1")["status"].as_str(), item("1")["owner"].as_str()),
        (Some("completed"), Some("lead"))
    );
    assert_eq!(
        (item("2")["status"].as_str(), item("2")["owner"].as_str()),
        (Some("in_progress"), Some("lead"))
    );

    // The events carry every change of the list, in order.
    let changes: Vec<(String, String)> = lines
        .iter()
        .filter(|v| v["type"] == "todo_changed")
        .map(|v| {
            (
                v["id"].as_str().unwrap().into(),
                v["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("1", "pending"),
        ("2", "pending"),
        ("1", "in_progress"),
        ("1", "completed"),
        ("2", "in_progress"),
    ];
    assert_eq!(changes, want.map(|(a, b)| (a.to_string(), b.to_string())));
}

/// `(is_error, text)` of every tool result in the recorded request `last`.
fn last_tool_results(last: &Value) -> Vec<(bool, String)> {
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["is_error"].as_bool().unwrap_or(false),
                b["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}
