//! The approval dialog: one Ask at a time from a queue (several agents may ask at once),
//! showing the tool, its target (path or full command), the reason and the asking agent
//! (for a teammate, "teammate NAME" with its agent id).
//! `1`–`4` answer at once; arrows and Enter work too; after `4` (deny) the user may type a
//! message for the model and press Enter (or Esc to deny without one). For a command,
//! `o` runs it once outside the OS sandbox: an explicit decision, for a command the
//! sandbox stopped.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use serde_json::Value;

use super::transcript::call_target;
use crate::approver::actor::PendingApproval;
use crate::approver::{ApprovalAnswer, ApprovalRequest};

/// The choices, in the order shown.
const CHOICES: [&str; 4] = [
    "Allow once",
    "Allow for this session",
    "Always allow (saved to .crew/settings.local.json)",
    "Deny (then optionally tell the model why)",
];

/// The extra choice shown for commands, answered with `o`.
const OUTSIDE_CHOICE: &str =
    "o. Run once outside the sandbox (no OS confinement: for a command the sandbox stopped)";

/// Whether the request is a command, which may be run outside the sandbox.
fn is_command(req: &ApprovalRequest) -> bool {
    req.call.name == "run_command"
}

/// Asks waiting for an answer, and the dialog's state for the first of them.
#[derive(Default)]
pub struct ApprovalQueue {
    queue: VecDeque<PendingApproval>,
    selected: usize,
    /// The message being typed after choosing deny.
    deny_message: Option<String>,
}

/// The target shown for a request: the full command for commands, else the resolved
/// target, else the path argument.
pub fn request_target(req: &ApprovalRequest) -> String {
    let args: Value = serde_json::from_str(&req.call.arguments).unwrap_or(Value::Null);
    if let Some(cmd) = args.get("command").and_then(Value::as_str) {
        return cmd.to_string();
    }
    req.decision
        .target
        .clone()
        .or_else(|| args.get("path").and_then(Value::as_str).map(str::to_string))
        .or_else(|| Some(call_target(&req.call)).filter(|t| !t.is_empty()))
        .unwrap_or_else(|| req.call.arguments.clone())
}

/// Who is asking: `teammate NAME (agent id)` for a teammate, else the agent id.
pub fn asker(req: &ApprovalRequest) -> String {
    match &req.teammate {
        Some(name) => format!("teammate {name} ({})", req.agent),
        None => req.agent.clone(),
    }
}

impl ApprovalQueue {
    /// Queues an Ask.
    pub fn push(&mut self, pending: PendingApproval) {
        self.queue.push_back(pending);
    }

    /// Whether an Ask is waiting.
    pub fn is_open(&self) -> bool {
        !self.queue.is_empty()
    }

    /// How many Asks wait.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether none wait.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The request on show.
    pub fn current(&self) -> Option<&ApprovalRequest> {
        self.queue.front().map(|p| &p.request)
    }

    /// Answers the Ask on show; returns what was asked and the answer given.
    fn answer(&mut self, answer: ApprovalAnswer) -> Option<(ApprovalRequest, ApprovalAnswer)> {
        let pending = self.queue.pop_front()?;
        self.selected = 0;
        self.deny_message = None;
        // The agent may have been cancelled meanwhile; then nobody waits for the answer.
        let _ = pending.reply.send(answer.clone());
        Some((pending.request, answer))
    }

    /// Denies every waiting Ask (the turn is being cancelled or the TUI quits).
    pub fn deny_all(&mut self, message: &str) {
        while self
            .answer(ApprovalAnswer::Deny {
                message: Some(message.to_string()),
            })
            .is_some()
        {}
    }

    fn choose(&mut self, index: usize) -> Option<(ApprovalRequest, ApprovalAnswer)> {
        match index {
            0 => self.answer(ApprovalAnswer::AllowOnce),
            1 => self.answer(ApprovalAnswer::AllowSession),
            2 => self.answer(ApprovalAnswer::AllowForever),
            _ => {
                self.selected = 3;
                self.deny_message = Some(String::new());
                None
            }
        }
    }

    /// Handles a key while the dialog is open; returns the answer when one was given.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<(ApprovalRequest, ApprovalAnswer)> {
        if let Some(msg) = &mut self.deny_message {
            match key.code {
                KeyCode::Enter => {
                    let text = msg.trim().to_string();
                    let message = (!text.is_empty()).then_some(text);
                    return self.answer(ApprovalAnswer::Deny { message });
                }
                KeyCode::Esc => return self.answer(ApprovalAnswer::Deny { message: None }),
                KeyCode::Backspace => {
                    msg.pop();
                }
                KeyCode::Char(ch) => msg.push(ch),
                _ => {}
            }
            return None;
        }
        match key.code {
            KeyCode::Char(d @ '1'..='4') => self.choose(usize::from(d as u8 - b'1')),
            KeyCode::Char('o') if self.current().is_some_and(is_command) => {
                self.answer(ApprovalAnswer::AllowOutsideSandbox)
            }
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                None
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(CHOICES.len() - 1);
                None
            }
            KeyCode::Enter => self.choose(self.selected),
            KeyCode::Esc => self.choose(3),
            _ => None,
        }
    }

    /// Rows the dialog needs at this width (0 when closed).
    pub fn height(&self, width: u16) -> u16 {
        let Some(req) = self.current() else { return 0 };
        let inner = usize::from(width.saturating_sub(2).max(1));
        let rows = |len: usize| len.div_ceil(inner).max(1);
        let asks = asker(req).chars().count() + " wants to run ".len() + req.call.name.len();
        let mut n = 2 + rows(asks) + rows(8 + request_target(req).chars().count());
        n += rows(8 + req.decision.reason.chars().count()) + 1 + CHOICES.len();
        if self.deny_message.is_some() {
            n += 2;
        }
        if is_command(req) {
            n += rows(OUTSIDE_CHOICE.len());
        }
        u16::try_from(n).unwrap_or(u16::MAX)
    }

    /// Draws the dialog at the bottom of `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect) {
        let Some(req) = self.current() else { return };
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = vec![
            Line::from(vec![
                Span::styled(asker(req), Style::default().fg(Color::Cyan)),
                Span::raw(" wants to run "),
                Span::styled(req.call.name.clone(), bold),
            ]),
            Line::from(vec![
                Span::styled("target: ", dim),
                Span::raw(request_target(req)),
            ]),
            Line::from(vec![
                Span::styled("reason: ", dim),
                Span::raw(req.decision.reason.clone()),
            ]),
            Line::raw(""),
        ];
        for (i, choice) in CHOICES.iter().enumerate() {
            let marker = if i == self.selected { "❯" } else { " " };
            let style = if i == self.selected {
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            lines.push(Line::styled(format!("{marker} {}. {choice}", i + 1), style));
        }
        if is_command(req) {
            lines.push(Line::styled(format!("  {OUTSIDE_CHOICE}"), dim));
        }
        if let Some(msg) = &self.deny_message {
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::styled("message for the model (Enter sends, Esc skips): ", dim),
                Span::raw(msg.clone()),
                Span::raw("▏"),
            ]));
        }
        let more = self.queue.len() - 1;
        let title = if more > 0 {
            format!(" Permission needed ({more} more waiting) ")
        } else {
            " Permission needed ".to_string()
        };
        let height = self.height(area.width).min(area.height);
        let rect = Rect {
            x: area.x,
            y: area.bottom().saturating_sub(height),
            width: area.width,
            height,
        };
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(Style::default().fg(Color::Yellow))
                    .title(title),
            ),
            rect,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Category, Decision, PermissionMode, Source, Verdict};
    use crate::protocol::ToolCall;
    use crossterm::event::KeyModifiers;
    use ractor::concurrency::{OneshotReceiver, oneshot};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn pending(
        agent: &str,
        name: &str,
        args: &str,
    ) -> (PendingApproval, OneshotReceiver<ApprovalAnswer>) {
        let (tx, rx) = oneshot();
        let mut decision = Decision::new(
            Verdict::Ask,
            Source::Mode,
            "default mode asks before write tools",
        );
        decision.category = Some(Category::Write);
        let request = ApprovalRequest {
            agent: agent.into(),
            call: ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: args.into(),
            },
            decision,
            mode: PermissionMode::Default,
            teammate: None,
        };
        (
            PendingApproval {
                request,
                reply: tx.into(),
            },
            rx,
        )
    }

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
}
