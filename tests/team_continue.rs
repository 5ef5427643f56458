//! `crew --continue` brings a team back (issue 10): a real `crew -p` team run is SIGKILLed
//! mid-run, after alice has messaged bob twice (bob has read the first message, not the
//! second); `crew --continue -p` then restores the roster (same worktrees), the inboxes and
//! the work list, restarts bob idle with his conversation, and his unread mail wakes him.
//! Counting the `<team-message … index="N">` markers in the requests recorded by both runs
//! shows no message lost and none delivered twice.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::git;
use crewmaster::protocol::Message;
use crewmaster::team::restore::delivered_markers;
use crewmaster::team::{MemberName, Team, TodoId, TodoStatus};

const WRITER: &str = "---\nname: w\ndescription: test teammate\ntools: read_file, send_message, todo_update, todo_list\n---\nDo your part.\n";

/// The first run: the lead starts alice and bob and adds items 1 and 2 (2 blocked by 1);
/// alice claims and completes 1, messages bob (read by him at his next turn), then
/// messages him again while he is in a long model call; everyone ends up in a long call.
/// The delays order it: bob exists before alice's first message, reads it at his first
/// turn boundary, and is in his long call before her second.
const FIRST: &str = r#"{"turns": [
    {"tool_calls": [
      {"name": "todo_add", "input": {"subject": "first"}},
      {"name": "todo_add", "input": {"subject": "second", "blocked_by": ["1"]}},
      {"name": "agent", "input": {"description": "a", "prompt": "Do item 1, tell bob.", "subagent_type": "w", "name": "alice"}},
      {"name": "agent", "input": {"description": "b", "prompt": "Wait for alice.", "subagent_type": "w", "name": "bob"}}]},
    {"text": "team started"},
    {"delay_ms": 60000, "text": "never"},
    {"delay_ms": 60000, "text": "never"}],
  "agents": {
    "alice": {"turns": [
      {"delay_ms": 800, "tool_calls": [
        {"name": "todo_update", "input": {"id": "1", "status": "in_progress"}},
        {"name": "todo_update", "input": {"id": "1", "status": "completed"}},
        {"name": "send_message", "input": {"to": "bob", "message": "MSG-A1"}}]},
      {"delay_ms": 3000, "tool_calls": [{"name": "send_message", "input": {"to": "bob", "message": "MSG-A2"}}]},
      {"delay_ms": 60000, "text": "never"}]},
    "bob": {"turns": [
      {"delay_ms": 2000, "tool_calls": [{"name": "todo_list", "input": {}}]},
      {"delay_ms": 60000, "text": "never"}]}}}"#;

/// The continued run: bob, woken by his unread mail, reports to the lead and is done.
const SECOND: &str = r#"{"turns": [
    {"text": "resumed"},
    {"text": "all done"},
    {"text": "all done"},
    {"text": "all done"}],
  "agents": {
    "alice": {"turns": [{"text": "alice idle"}, {"text": "alice idle"}]},
    "bob": {"turns": [
      {"tool_calls": [{"name": "send_message", "input": {"to": "lead", "message": "BOB-DONE"}}]},
      {"text": "bob done"}]}}}"#;

/// Every recorded request of `file`, as (agent, messages).
fn requests(file: &Path) -> Vec<(String, Vec<Message>)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            let agent = v["agent"].as_str().unwrap_or("").to_string();
            let messages = serde_json::from_value(v["messages"].clone()).unwrap();
            (agent, messages)
        })
        .collect()
}

/// How often each (sender, index) marker occurs in `conversation`.
fn markers(conversation: &[Message]) -> Vec<(String, u64)> {
    let mut all: Vec<_> = delivered_markers(conversation).collect();
    all.sort();
    all
}

/// `crew` in `cwd` with `home` as HOME and no provider keys (as `common::crew`), not yet run.
fn crew_command(cwd: &Path, home: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.current_dir(cwd)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY");
    cmd
}

fn the_team(home: &Path) -> Team {
    let teams = home.join(".crew/teams");
    let dir = std::fs::read_dir(&teams).unwrap().next().unwrap().unwrap();
    Team::open(&teams, dir.file_name().to_str().unwrap()).unwrap()
}

#[test]
fn sigkill_mid_run_then_continue_restores_the_team_and_delivers_each_message_once() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(&home).unwrap();
    common::put(&repo, "README.md", "# repo\n");
    common::put(&repo, ".crew/agents/w.md", WRITER);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "initial"]);
    let (first, second) = (base.join("first.json"), base.join("second.json"));
    std::fs::write(&first, FIRST).unwrap();
    std::fs::write(&second, SECOND).unwrap();
    let (rec1, rec2) = (base.join("rec1.jsonl"), base.join("rec2.jsonl"));

    let mut child = crew_command(&repo, &home)
        .args([
            "-p",
            "split the work",
            "--permission-mode",
            "acceptEdits",
            "--model",
            &format!("script:{}", first.display()),
            "--record-requests",
            rec1.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(base.join("first.err")).unwrap())
        .spawn()
        .unwrap();
    // Kill once bob has read MSG-A1 (his second request holds it) and MSG-A2 is in his
    // inbox while he waits on the model.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let bob_read_a1 = requests(&rec1)
            .iter()
            .any(|(a, m)| a == "w/bob" && serde_json::to_string(m).unwrap().contains("MSG-A1"));
        let a2_sent = std::fs::read_dir(home.join(".crew/teams"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|d| d.ok())
            .and_then(|d| std::fs::read_to_string(d.path().join("inboxes/bob.jsonl")).ok())
            .is_some_and(|s| s.contains("MSG-A2"));
        if bob_read_a1 && a2_sent {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the team run did not get going: {}\nrequests: {:?}",
            std::fs::read_to_string(base.join("first.err")).unwrap_or_default(),
            requests(&rec1)
                .iter()
                .map(|(a, m)| format!("{a}: {}", serde_json::to_string(m).unwrap()))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let team = the_team(&home);
    let before = team.roster().unwrap();
    let (alice, bob) = (
        MemberName::parse("alice").unwrap(),
        MemberName::parse("bob").unwrap(),
    );
    let worktree_of = |roster: &crewmaster::team::Roster, n: &MemberName| {
        roster.member(n).unwrap().worktree.clone().unwrap()
    };
    assert!(
        requests(&rec1)
            .iter()
            .filter(|(a, _)| a == "w/bob")
            .all(|(_, m)| !serde_json::to_string(m).unwrap().contains("MSG-A2")),
        "MSG-A2 was still unread at the kill"
    );

    // Bounded: without the restore, the continued run would wait on the team forever.
    let mut resumed = crew_command(&repo, &home)
        .args([
            "--continue",
            "-p",
            "carry on",
            "--permission-mode",
            "acceptEdits",
            "--model",
            &format!("script:{}", second.display()),
            "--record-requests",
            rec2.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while resumed.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            resumed.kill().unwrap();
            panic!("crew --continue did not end: the restored team never became quiet");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = resumed.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // The roster: the same two teammates in the same worktrees, idle now.
    let after = team.roster().unwrap();
    assert_eq!(after.members.len(), 2, "{after:?}");
    for n in [&alice, &bob] {
        assert_eq!(worktree_of(&after, n), worktree_of(&before, n));
        assert!(worktree_of(&after, n).is_dir());
    }
    // The list: item 1 completed by alice, item 2 still pending behind it.
    let todos = team.list_todos().unwrap();
    let id = |n: &str| TodoId::parse("id", n).unwrap();
    let (one, two) = (&todos[&id("1")], &todos[&id("2")]);
    assert_eq!(one.status, TodoStatus::Completed, "{one:?}");
    assert_eq!(one.owner.as_ref().map(|o| o.as_str()), Some("alice"));
    assert_eq!(two.status, TodoStatus::Pending, "{two:?}");
    // The inboxes: everything read.
    assert_eq!(team.unread_count(&bob).unwrap(), 0);
    assert_eq!(team.unread_count(&MemberName::lead()).unwrap(), 0);

    // Bob's first request after the restart holds his restored conversation (MSG-A1,
    // delivered before the kill, once) and MSG-A2 (unread at the kill), once.
    let second_run = requests(&rec2);
    let bob_after: Vec<_> = second_run.iter().filter(|(a, _)| a == "w/bob").collect();
    assert!(
        !bob_after.is_empty(),
        "bob was not woken by his unread mail"
    );
    let last = &bob_after.last().unwrap().1;
    assert_eq!(
        markers(last),
        [("alice".to_string(), 0), ("alice".to_string(), 1)],
        "each of alice's messages reaches bob exactly once"
    );
    let text = serde_json::to_string(last).unwrap();
    assert_eq!(text.matches("MSG-A1").count(), 1, "{text}");
    assert_eq!(text.matches("MSG-A2").count(), 1, "{text}");
    // The lead gets bob's report once.
    let lead_last = &second_run.iter().rfind(|(a, _)| a == "lead").unwrap().1;
    assert_eq!(markers(lead_last), [("bob".to_string(), 0)]);
    // Alice had no unread mail: she stayed idle and made no request.
    assert!(second_run.iter().all(|(a, _)| a != "w/alice"));
}
