//! Unit tests of the approval dialog: what it shows (target, warnings, choices, scroll)
//! and how keys answer it.

use super::*;
use crate::approver::testing::pending;
use crate::protocol::ToolCall;
use crossterm::event::KeyModifiers;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn draw(q: &ApprovalQueue) -> String {
    let mut t = Terminal::new(TestBackend::new(72, 14)).unwrap();
    t.draw(|f| q.render(f, f.area())).unwrap();
    format!("{}", t.backend())
}

#[test]
fn approval_dialog_shows_tool_target_reason_agent_and_queue() {
    let mut q = ApprovalQueue::default();
    let (p1, _r1) = pending(
        "lead",
        "write_file",
        r#"{"path":"src/main.rs","content":"x"}"#,
    );
    let (p2, _r2) = pending(
        "general-purpose/t2",
        "run_command",
        r#"{"command":"rm -rf build && make"}"#,
    );
    q.push(p1);
    q.push(p2);
    let screen = draw(&q);
    insta::assert_snapshot!(screen);
    assert!(screen.contains("lead wants to run write_file"));
    assert!(screen.contains("target: src/main.rs"));
    assert!(screen.contains("1 more waiting"));
    // Answering the first shows the second, with its full command.
    q.on_key(key(KeyCode::Char('1')));
    let screen = draw(&q);
    assert!(screen.contains("general-purpose/t2 wants to run run_command"));
    assert!(screen.contains("target: rm -rf build && make"), "{screen}");
}

#[test]
fn a_teammates_ask_names_the_teammate() {
    let mut q = ApprovalQueue::default();
    let (mut p, _r) = pending("w/alice", "write_file", r#"{"path":"a.txt"}"#);
    p.request.teammate = Some("alice".into());
    q.push(p);
    let screen = draw(&q);
    assert!(
        screen.contains("teammate alice (w/alice) wants to run write_file"),
        "{screen}"
    );
    // A plain subagent's ask is not called a teammate's.
    let mut q = ApprovalQueue::default();
    let (p, _r) = pending("general-purpose/t2", "write_file", r#"{"path":"a"}"#);
    q.push(p);
    assert!(!draw(&q).contains("teammate"));
}

#[tokio::test]
async fn digits_answer_at_once_and_arrows_with_enter_work() {
    let mut q = ApprovalQueue::default();
    let (p, rx) = pending("lead", "write_file", r#"{"path":"a"}"#);
    q.push(p);
    let (_, answer) = q.on_key(key(KeyCode::Char('2'))).unwrap();
    assert_eq!(answer, ApprovalAnswer::AllowSession);
    assert_eq!(rx.await.unwrap(), ApprovalAnswer::AllowSession);

    let (p, rx) = pending("lead", "write_file", r#"{"path":"a"}"#);
    q.push(p);
    q.on_key(key(KeyCode::Down));
    q.on_key(key(KeyCode::Down));
    q.on_key(key(KeyCode::Enter));
    assert_eq!(rx.await.unwrap(), ApprovalAnswer::AllowForever);
    assert!(!q.is_open());
}

#[tokio::test]
async fn deny_then_a_message_for_the_model() {
    let mut q = ApprovalQueue::default();
    let (p, rx) = pending("lead", "write_file", r#"{"path":"a"}"#);
    q.push(p);
    assert!(q.on_key(key(KeyCode::Char('4'))).is_none());
    for ch in "not there".chars() {
        q.on_key(key(KeyCode::Char(ch)));
    }
    let screen = draw(&q);
    assert!(screen.contains("message for the model"), "{screen}");
    q.on_key(key(KeyCode::Enter));
    assert_eq!(
        rx.await.unwrap(),
        ApprovalAnswer::Deny {
            message: Some("not there".into())
        }
    );
}

fn draw_at(q: &ApprovalQueue, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| q.render(f, f.area())).unwrap();
    format!("{}", t.backend())
}

fn command(cmd: &str) -> String {
    serde_json::json!({ "command": cmd }).to_string()
}

#[test]
fn escape_sequences_in_a_command_show_visibly_with_a_warning() {
    let mut q = ApprovalQueue::default();
    let cmd = "echo hello\u{1b}[2K\u{1b}[1G\u{1b}]52;c;aGk=\u{7}; touch PWNED";
    let (p, _r) = pending("lead", "run_command", &command(cmd));
    q.push(p);
    let screen = draw_at(&q, 100, 16);
    assert!(
        screen.contains("echo hello␛[2K␛[1G␛]52;c;aGk=␇; touch PWNED"),
        "{screen}"
    );
    assert!(screen.contains("change how text displays"), "{screen}");
    assert!(screen.contains("4. Deny"), "{screen}");
    // A plain command carries no warning.
    let mut q = ApprovalQueue::default();
    let (p, _r) = pending("lead", "run_command", &command("cargo test"));
    q.push(p);
    assert!(!draw_at(&q, 100, 16).contains('⚠'));
}

#[test]
fn padding_cannot_push_the_middle_or_the_choices_off_screen() {
    let mut q = ApprovalQueue::default();
    let cmd = format!(
        "echo hi{}; touch PWNED;{}echo bye{}",
        " ".repeat(6000),
        "\n".repeat(500),
        " ".repeat(6000)
    );
    let (p, _r) = pending("lead", "run_command", &command(&cmd));
    q.push(p);
    let screen = draw_at(&q, 60, 20);
    assert!(screen.contains("touch PWNED"), "{screen}");
    assert!(screen.contains("⟨6000 spaces⟩"), "{screen}");
    assert!(screen.contains("⟨500 line breaks⟩"), "{screen}");
    assert!(screen.contains("long runs of whitespace"), "{screen}");
    for choice in ["1. Allow once", "4. Deny"] {
        assert!(screen.contains(choice), "{choice}: {screen}");
    }
}

#[test]
fn a_long_command_scrolls_and_the_choices_stay() {
    let mut q = ApprovalQueue::default();
    let words: Vec<String> = (0..200).map(|i| format!("w{i:03}")).collect();
    let cmd = format!("echo {} && touch PWNED", words.join(" "));
    let (p, _r) = pending("lead", "run_command", &command(&cmd));
    q.push(p);
    let screen = draw_at(&q, 60, 16);
    assert!(screen.contains("w000"), "{screen}");
    assert!(!screen.contains("touch PWNED"), "{screen}");
    assert!(screen.contains("PgUp/PgDn"), "{screen}");
    assert!(screen.contains("4. Deny"), "{screen}");
    q.on_key(key(KeyCode::End));
    let screen = draw_at(&q, 60, 16);
    assert!(screen.contains("touch PWNED"), "{screen}");
    assert!(screen.contains("1. Allow once"), "{screen}");
    q.on_key(key(KeyCode::Home));
    assert!(draw_at(&q, 60, 16).contains("w000"));
    // Paging down step by step reaches the end too.
    for _ in 0..40 {
        q.on_key(key(KeyCode::PageDown));
    }
    assert!(draw_at(&q, 60, 16).contains("touch PWNED"));
}

#[tokio::test]
async fn outside_the_sandbox_is_offered_only_after_the_sandbox_stopped_the_command() {
    let mut q = ApprovalQueue::default();
    let args = serde_json::json!({"command": "make install", "outside_sandbox": true}).to_string();
    let (p, rx) = pending("lead", "run_command", &args);
    q.push(p);
    let screen = draw_at(&q, 100, 16);
    assert!(!screen.contains("outside the sandbox"), "{screen}");
    // `o` does nothing without a sandbox failure.
    assert!(q.on_key(key(KeyCode::Char('o'))).is_none());
    assert!(q.is_open());
    q.on_key(key(KeyCode::Char('4')));
    q.on_key(key(KeyCode::Esc));
    assert_eq!(rx.await.unwrap(), ApprovalAnswer::Deny { message: None });

    // The sandbox stopped `make install` (its result carried the failure note).
    let mut transcript = Transcript::default();
    let call = ToolCall {
        id: "c0".into(),
        name: "run_command".into(),
        arguments: command("make install"),
    };
    transcript.tool_started("lead", &call);
    let hint = crate::sandbox::profile::failure_hint(
        crate::tools::SandboxProfile::Write,
        "install: /usr/local/bin/x: Read-only file system",
    )
    .unwrap();
    let result = Message {
        role: crate::protocol::Role::User,
        content: vec![ContentBlock::ToolResult(crate::protocol::ToolResult::ok(
            "c0",
            format!("exit code 1\n{hint}"),
        ))],
    };
    // Another agent's failure does not count for the lead.
    q.note_results("general-purpose/t1", &result, &transcript);
    let (p, _r) = pending("lead", "run_command", &args);
    q.push(p);
    assert!(!draw_at(&q, 100, 16).contains("outside the sandbox"));
    q.deny_all("next");
    q.note_results("lead", &result, &transcript);
    // Another command is not offered either.
    let (p, _r) = pending("lead", "run_command", &command("make clean"));
    q.push(p);
    assert!(!draw_at(&q, 100, 16).contains("outside the sandbox"));
    q.deny_all("next");
    let (p, rx) = pending("lead", "run_command", &args);
    q.push(p);
    let screen = draw_at(&q, 100, 16);
    assert!(
        screen.contains("o. Run once outside the sandbox"),
        "{screen}"
    );
    let (_, answer) = q.on_key(key(KeyCode::Char('o'))).unwrap();
    assert_eq!(answer, ApprovalAnswer::AllowOutsideSandbox);
    assert_eq!(rx.await.unwrap(), ApprovalAnswer::AllowOutsideSandbox);
}

#[test]
fn an_ask_answered_elsewhere_leaves_the_dialog() {
    let mut q = ApprovalQueue::default();
    let (p1, r1) = pending("lead", "run_command", r#"{"command":"make"}"#);
    let (p2, _r2) = pending("lead", "write_file", r#"{"path":"a.txt","content":"x"}"#);
    q.push(p1);
    q.push(p2);
    q.on_key(key(KeyCode::Down));
    // The dashboard answered the first: its copy's receiver is gone.
    drop(r1);
    q.drop_withdrawn();
    assert_eq!(q.len(), 1);
    assert_eq!(
        q.current().map(|r| r.call.name.as_str()),
        Some("write_file")
    );
    let answered = q.on_key(key(KeyCode::Enter)).map(|(_, a)| a);
    assert_eq!(
        answered,
        Some(ApprovalAnswer::AllowOnce),
        "the selection starts over"
    );
}
