//! Teammates beyond messaging (issue 10), through the real actors, inboxes and worktrees
//! with per-agent scripted models: a run that ends on a provider error is a failure the
//! lead is told of (items back to pending), a teammate delegates to a plain worktree
//! subagent and gets its answer (but cannot start teammates) or is woken when a background
//! one ends, and a teammate's Ask reaches
//! the lead's approver saying which teammate is asking.

use crate::support;

use std::time::Duration;

use crewmaster::approver::ApprovalAnswer;
use crewmaster::approver::actor::ApproverPolicy;
use crewmaster::permission::PermissionMode;
use crewmaster::team::{MemberName, MemberStatus, TodoId, TodoStatus};
use support::team::{WRITER, chat, requests_of, shown, team_of, team_setup, worktree};
use support::{git, start};

/// A provider error (not a panic) ends carol's run: she is `failed`, the item she
/// claimed is pending again with no owner, and the lead is told, naming the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_whose_model_fails_is_reported_failed_and_its_items_return() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "todo_add", "input": {"subject": "the failing part"}},
          {"name": "agent", "input": {"description": "c", "prompt": "Work on item 1.", "subagent_type": "w", "name": "carol"}}]},
        {"text": "started"}
      ],
      "agents": {
        "carol": {"turns": [
          {"tool_calls": [{"name": "todo_update", "input": {"id": "1", "status": "in_progress"}}]},
          {"error": "UPSTREAM-EXPLODED"}
        ]}
      }
    }"#;
    let writer = WRITER.replace("send_message", "send_message, todo_update");
    let t = start(team_setup(script, vec![(".crew/agents/w.md", writer)])).await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    assert_eq!(outcome.status.as_str(), "completed");
    let team = team_of(t.home.path());
    let carol = MemberName::parse("carol").unwrap();
    let all = t.provider.requests();
    // carol really claimed the item before her model failed.
    let claimed = shown(requests_of(&all, "w/carol")[1]);
    assert!(!claimed.contains("is_error\":true"), "{claimed}");
    let item = team.get_todo(TodoId::parse("id", "1").unwrap()).unwrap();
    assert_eq!((item.status, item.owner), (TodoStatus::Pending, None));
    let member = team.roster().unwrap().member(&carol).cloned().unwrap();
    assert_eq!(member.status, MemberStatus::Failed);
    let told = requests_of(&all, "lead")
        .into_iter()
        .map(shown)
        .find(|s| s.contains("Teammate carol failed"))
        .expect("the lead is told of the failure");
    assert!(
        told.contains("UPSTREAM-EXPLODED") && told.contains("returned to pending"),
        "{told}"
    );
    t.session.shutdown().await;
}

/// alice (a teammate) starts a plain subagent in its own worktree and gets its answer as
/// the tool result; her call to start a *teammate* is refused. The subagent runs with the
/// subagents' depth limit (at depth 2 it has no `agent` tool), writes only in its own
/// worktree, and alice's and the main checkout stay clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_delegates_to_a_worktree_subagent_and_gets_its_answer() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "a", "prompt": "Get h.txt written.", "subagent_type": "w", "name": "alice"}}]},
        {"text": "started"}
      ],
      "agents": {
        "alice": {"turns": [
          {"tool_calls": [
            {"name": "agent", "input": {"description": "mate", "prompt": "x", "subagent_type": "helper", "name": "zed"}},
            {"name": "agent", "input": {"description": "helper work", "prompt": "Write h.txt.", "subagent_type": "helper"}}]},
          {"tool_calls": [{"name": "send_message", "input": {"to": "lead", "message": "helper done"}}]},
          {"text": "alice done"}
        ]},
        "helper": {"turns": [
          {"tool_calls": [{"name": "write_file", "input": {"path": "h.txt", "content": "from the helper"}}]},
          {"text": "HELPER-ANSWER h.txt written"}
        ]}
      }
    }"#;
    let writer = WRITER.replace("send_message", "send_message, agent");
    let helper = "---\nname: helper\ndescription: helps\nisolation: worktree\ntools: write_file, agent\n---\nHelp.\n";
    let t = start(team_setup(
        script,
        vec![
            (".crew/agents/w.md", writer),
            (".crew/agents/helper.md", helper.to_string()),
        ],
    ))
    .await;
    let main = t.cwd();
    tokio::time::timeout(
        Duration::from_secs(60),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let all = t.provider.requests();
    let alice = requests_of(&all, "w/alice");
    assert!(alice.len() >= 2, "{alice:?}");
    let answered = shown(alice[1]);
    assert!(
        answered.contains("only the lead can start teammates"),
        "alice's named agent was refused: {answered}"
    );
    assert!(
        answered.contains("HELPER-ANSWER h.txt written"),
        "the subagent's answer came back to alice: {answered}"
    );
    let helper_req = all
        .iter()
        .find(|r| r.agent.starts_with("helper/"))
        .expect("the subagent ran");
    let tools: Vec<_> = helper_req.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        tools.contains(&"write_file") && !tools.contains(&"agent"),
        "depth limit: a teammate's subagent cannot delegate further: {tools:?}"
    );
    // h.txt is in the subagent's kept worktree only.
    let kept = answered
        .split("kept at ")
        .nth(1)
        .and_then(|s| s.split(" on branch").next())
        .unwrap_or_else(|| panic!("the answer names the kept worktree: {answered}"));
    let kept = std::path::Path::new(kept);
    assert_eq!(
        std::fs::read_to_string(kept.join("h.txt")).unwrap(),
        "from the helper"
    );
    let team = team_of(t.home.path());
    assert!(!worktree(&team, "alice").join("h.txt").exists());
    assert!(!main.join("h.txt").exists());
    assert_eq!(git(&main, &["status", "--porcelain"]), "");
    assert!(
        team.roster()
            .unwrap()
            .member(&MemberName::parse("zed").unwrap())
            .is_none()
    );
    t.session.shutdown().await;
}

/// alice starts a subagent in the background and ends her turn: she is not idle while it
/// runs (the run does not end under it), and its end wakes her with its answer, which she
/// reports to the lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammates_background_subagent_wakes_her_when_it_ends() {
    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "a", "prompt": "Get it done.", "subagent_type": "w", "name": "alice"}}]},
        {"text": "started"}
      ],
      "agents": {
        "alice": {"turns": [
          {"tool_calls": [
            {"name": "agent", "input": {"description": "bg", "prompt": "Do it.", "subagent_type": "helper", "run_in_background": true}}]},
          {"text": "waiting for my helper"},
          {"tool_calls": [{"name": "send_message", "input": {"to": "lead", "message": "ALICE-SAW-THE-HELPER"}}]},
          {"text": "alice done"}
        ]},
        "helper": {"turns": [{"delay_ms": 800, "text": "BG-ANSWER"}]}
      }
    }"#;
    let writer = WRITER.replace("send_message", "send_message, agent");
    let helper = "---\nname: helper\ndescription: helps\nisolation: worktree\ntools: read_file\n---\nHelp.\n";
    let t = start(team_setup(
        script,
        vec![
            (".crew/agents/w.md", writer),
            (".crew/agents/helper.md", helper.to_string()),
        ],
    ))
    .await;
    tokio::time::timeout(
        Duration::from_secs(60),
        t.session.run_until_quiet(chat("go"), 10),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let all = t.provider.requests();
    let alice = requests_of(&all, "w/alice");
    let woken = alice
        .iter()
        .map(|r| shown(r))
        .find(|s| s.contains("BG-ANSWER"))
        .unwrap_or_else(|| panic!("the helper's end reached alice: {alice:?}"));
    assert!(
        woken.contains("A subagent you started has ended"),
        "{woken}"
    );
    assert!(
        requests_of(&all, "lead")
            .iter()
            .any(|r| shown(r).contains("ALICE-SAW-THE-HELPER")),
        "alice reported to the lead before the run ended"
    );
    t.session.shutdown().await;
}

/// In default mode alice's write asks; the Ask reaches the lead's approver (the TUI's
/// channel) naming her as a teammate, the approval dialog shows "teammate alice", and the
/// answer lets the write run in her worktree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammates_ask_reaches_the_approver_naming_the_teammate() {
    use crewmaster::tui::approval::ApprovalQueue;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    let script = r#"{
      "turns": [
        {"tool_calls": [
          {"name": "agent", "input": {"description": "a", "prompt": "Write a.txt.", "subagent_type": "w", "name": "alice"}}]},
        {"text": "started"}
      ],
      "agents": {
        "alice": {"turns": [
          {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "asked"}}]},
          {"text": "alice done"}
        ]}
      }
    }"#;
    let (tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
    // In its worktree a teammate works unattended; its definition narrows that to default
    // mode here, so its write asks, and the ask must say who is asking.
    let writer = WRITER.replace(
        "isolation: worktree\n",
        "isolation: worktree\npermissionMode: default\n",
    );
    let mut setup = team_setup(script, vec![(".crew/agents/w.md", writer)]);
    setup.mode = PermissionMode::Default;
    setup.approver = ApproverPolicy::Forward(tx);
    let t = start(setup).await;
    let approve = async {
        // The lead's own `agent` call may ask first; allow until alice's write asks.
        let alice_ask = loop {
            let pending = asks.recv().await.expect("the approver channel is open");
            if pending.request.call.name == "write_file" {
                break pending;
            }
            let _ = pending.reply.send(ApprovalAnswer::AllowOnce);
        };
        assert_eq!(alice_ask.request.agent, "w/alice");
        assert_eq!(alice_ask.request.teammate.as_deref(), Some("alice"));
        let mut queue = ApprovalQueue::default();
        queue.push(alice_ask);
        let mut term = Terminal::new(TestBackend::new(80, 14)).unwrap();
        term.draw(|f| queue.render(f, f.area())).unwrap();
        let screen = format!("{}", term.backend());
        let key = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('1'),
            crossterm::event::KeyModifiers::NONE,
        );
        let (_, answer) = queue.on_key(key).expect("1 answers at once");
        assert_eq!(answer, ApprovalAnswer::AllowOnce);
        screen
    };
    let (outcome, screen) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(t.session.run_until_quiet(chat("go"), 10), approve)
    })
    .await
    .expect("the Ask arrives and the team goes quiet");
    outcome.unwrap();
    assert!(
        screen.contains("teammate alice (w/alice) wants to run write_file"),
        "{screen}"
    );
    let team = team_of(t.home.path());
    assert_eq!(
        std::fs::read_to_string(worktree(&team, "alice").join("a.txt")).unwrap(),
        "asked"
    );
    t.session.shutdown().await;
}
