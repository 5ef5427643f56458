//! The approval dialog: one Ask at a time from a queue (several agents may ask at once),
//! showing the tool, its target (path or full command), the reason and the asking agent
//! (for a teammate, "teammate NAME" with its agent id).
//! `1`–`4` answer at once; arrows and Enter work too; after `4` (deny) the user may type a
//! message for the model and press Enter (or Esc to deny without one). For a command
//! the OS sandbox stopped before (its result carried the sandbox's failure note), `o`
//! runs it once outside the sandbox: an explicit decision, offered only then.
//!
//! The dialog always shows the complete target, sanitized and wrapped
//! ([`super::approval_view`]); its choices, and any warning that the text held
//! display-changing characters or long whitespace, get their rows first, and the target
//! scrolls (PgUp/PgDn, Home/End) in the rows left when it does not fit.

use std::cell::Cell;
use std::collections::{HashSet, VecDeque};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use serde_json::Value;

use super::approval_view::{show, wrap};
use super::transcript::{Transcript, call_target};
use crate::approver::actor::PendingApproval;
use crate::approver::{ApprovalAnswer, ApprovalRequest};
use crate::protocol::{ContentBlock, Message};
use crate::sandbox::profile::FAILURE_NOTE;
use crate::sanitize::clean_line;

/// The choices, in the order shown.
const CHOICES: [&str; 4] = [
    "Allow once",
    "Allow for this session",
    "Always allow (saved to .crew/settings.local.json)",
    "Deny (then optionally tell the model why)",
];

/// The extra choice shown for a command the sandbox stopped, answered with `o`.
const OUTSIDE_CHOICE: &str =
    "o. Run once outside the sandbox (no OS confinement: the sandbox stopped this command before)";

/// The label before the target.
const TARGET_LABEL: &str = "target: ";

/// The command of a `run_command` request.
fn command_of(req: &ApprovalRequest) -> Option<String> {
    if req.call.name != "run_command" {
        return None;
    }
    let args: Value = serde_json::from_str(&req.call.arguments).ok()?;
    args.get("command")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Asks waiting for an answer, and the dialog's state for the first of them.
#[derive(Default)]
pub struct ApprovalQueue {
    queue: VecDeque<PendingApproval>,
    selected: usize,
    /// The message being typed after choosing deny.
    deny_message: Option<String>,
    /// Rows the target is scrolled down.
    scroll: usize,
    /// The target rows that fitted, and the furthest scroll, at the last draw.
    page: Cell<(usize, usize)>,
    /// (agent, command) pairs the OS sandbox stopped: only these may be run outside it.
    sandbox_stopped: HashSet<(String, String)>,
}

/// The dialog's rows at one width: the scrolling part (who asks, target, reason) and the
/// part that always shows (warnings, choices).
struct Rows {
    body: Vec<Line<'static>>,
    fixed: Vec<Line<'static>>,
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

    /// Records that `agent`'s `command` failed because of the OS sandbox (its result
    /// carried the sandbox's failure note): a later Ask for it offers `o`.
    pub fn note_sandbox_failure(&mut self, agent: &str, command: &str) {
        self.sandbox_stopped
            .insert((agent.to_string(), command.to_string()));
    }

    /// Notes every command whose result in `message` (from `agent`) carries the OS
    /// sandbox's failure note; `calls` has the calls the results answer.
    pub fn note_results(&mut self, agent: &str, message: &Message, calls: &Transcript) {
        for block in &message.content {
            let ContentBlock::ToolResult(result) = block else {
                continue;
            };
            if !result.content.contains(FAILURE_NOTE) {
                continue;
            }
            let Some(call) = calls.tool(agent, &result.tool_use_id) else {
                continue;
            };
            let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            if call.name == "run_command"
                && let Some(command) = args.get("command").and_then(Value::as_str)
            {
                self.note_sandbox_failure(agent, command);
            }
        }
    }

    /// Whether the dialog offers to run `req` outside the sandbox: only for a command
    /// the sandbox stopped before.
    fn offers_outside(&self, req: &ApprovalRequest) -> bool {
        command_of(req).is_some_and(|c| self.sandbox_stopped.contains(&(req.agent.clone(), c)))
    }

    /// Drops the Asks answered elsewhere (the web dashboard) or whose agent stopped:
    /// nobody waits for their answer any more.
    pub fn drop_withdrawn(&mut self) {
        let shown = self.queue.front().map(|p| p.reply.is_closed());
        self.queue.retain(|p| !p.reply.is_closed());
        if shown == Some(true) {
            self.selected = 0;
            self.deny_message = None;
            self.scroll = 0;
        }
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
        self.scroll = 0;
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
            KeyCode::Char('o') if self.current().is_some_and(|r| self.offers_outside(r)) => {
                self.answer(ApprovalAnswer::AllowOutsideSandbox)
            }
            KeyCode::PageDown | KeyCode::End => {
                let (page, max) = self.page.get();
                self.scroll = if key.code == KeyCode::End {
                    max
                } else {
                    (self.scroll + page.saturating_sub(1).max(1)).min(max)
                };
                None
            }
            KeyCode::PageUp => {
                let (page, _) = self.page.get();
                self.scroll = self.scroll.saturating_sub(page.saturating_sub(1).max(1));
                None
            }
            KeyCode::Home => {
                self.scroll = 0;
                None
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

    /// The dialog's rows for `req` inside a border `width` columns wide.
    fn rows(&self, req: &ApprovalRequest, width: u16) -> Rows {
        let inner = usize::from(width.saturating_sub(2).max(1));
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().fg(Color::DarkGray);
        let warn = Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD);
        let mut body = Vec::new();
        let who = format!("{} wants to run {}", asker(req), req.call.name);
        for row in wrap(&clean_line(&who), inner) {
            body.push(Line::styled(row, bold));
        }
        let target = show(&request_target(req));
        let pad = TARGET_LABEL.len();
        for (i, row) in wrap(&target.text, inner.saturating_sub(pad).max(1))
            .into_iter()
            .enumerate()
        {
            let label = if i == 0 { TARGET_LABEL } else { "        " };
            body.push(Line::from(vec![Span::styled(label, dim), Span::raw(row)]));
        }
        let reason = show(&req.decision.reason);
        for (i, row) in wrap(&reason.text, inner.saturating_sub(pad).max(1))
            .into_iter()
            .enumerate()
        {
            let label = if i == 0 { "reason: " } else { "        " };
            body.push(Line::from(vec![Span::styled(label, dim), Span::raw(row)]));
        }
        let mut fixed = Vec::new();
        for warning in &target.warnings {
            let warning = format!("the {}: {warning}", what_is_asked(req));
            fixed.extend(
                wrap(&warning, inner)
                    .into_iter()
                    .map(|r| Line::styled(r, warn)),
            );
        }
        fixed.push(Line::raw(""));
        for (i, choice) in CHOICES.iter().enumerate() {
            let marker = if i == self.selected { "❯" } else { " " };
            let style = if i == self.selected {
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let text = format!("{marker} {}. {choice}", i + 1);
            fixed.extend(
                wrap(&text, inner)
                    .into_iter()
                    .map(|r| Line::styled(r, style)),
            );
        }
        if self.offers_outside(req) {
            let text = format!("  {OUTSIDE_CHOICE}");
            fixed.extend(wrap(&text, inner).into_iter().map(|r| Line::styled(r, dim)));
        }
        if let Some(msg) = &self.deny_message {
            fixed.push(Line::raw(""));
            let text = format!(
                "message for the model (Enter sends, Esc skips): {}▏",
                clean_line(msg)
            );
            fixed.extend(wrap(&text, inner).into_iter().map(Line::raw));
        }
        Rows { body, fixed }
    }

    /// Rows the dialog needs at this width (0 when closed).
    pub fn height(&self, width: u16) -> u16 {
        let Some(req) = self.current() else { return 0 };
        let rows = self.rows(req, width);
        u16::try_from(2 + rows.body.len() + rows.fixed.len()).unwrap_or(u16::MAX)
    }

    /// Draws the dialog at the bottom of `area`. The fixed rows (warnings, choices) are
    /// placed first; the target scrolls in what is left, with a line saying where.
    pub fn render(&self, frame: &mut Frame, area: Rect) {
        let Some(req) = self.current() else { return };
        let Rows { body, mut fixed } = self.rows(req, area.width);
        let height = self.height(area.width).min(area.height);
        let inner = usize::from(height.saturating_sub(2));
        let mut room = inner.saturating_sub(fixed.len());
        let mut lines: Vec<Line<'static>> = Vec::with_capacity(inner);
        if body.len() > room {
            // One row says which part shows and how to see the rest.
            room = room.saturating_sub(1);
            let max = body.len().saturating_sub(room);
            let start = self.scroll.min(max);
            self.page.set((room, max));
            lines.extend(body.iter().skip(start).take(room).cloned());
            let note = format!(
                "⇅ more: rows {}–{} of {} (PgUp/PgDn/Home/End)",
                start + 1,
                (start + room).min(body.len()),
                body.len()
            );
            let style = Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD);
            fixed.insert(0, Line::styled(note, style));
        } else {
            self.page.set((room, 0));
            lines.extend(body);
        }
        lines.append(&mut fixed);
        // When even the fixed rows do not fit, the choices (last) stay on screen.
        let skip = lines.len().saturating_sub(inner);
        let lines = lines.split_off(skip);
        let more = self.queue.len() - 1;
        let title = if more > 0 {
            format!(" Permission needed ({more} more waiting) ")
        } else {
            " Permission needed ".to_string()
        };
        let rect = Rect {
            x: area.x,
            y: area.bottom().saturating_sub(height),
            width: area.width,
            height,
        };
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(Style::default().fg(Color::Yellow))
                    .title(title),
            ),
            rect,
        );
    }
}

/// What the dialog's warning calls the target.
fn what_is_asked(req: &ApprovalRequest) -> &'static str {
    if command_of(req).is_some() {
        "command"
    } else {
        "target"
    }
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
