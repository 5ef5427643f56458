//! The transcript view: the conversation as it streams — the user's messages, the lead's
//! text, one compact line per tool call (tool, target, decision and who decided, result
//! summary; expanded with Ctrl+O to show its arguments and its output, the first lines of
//! it), subagents' tool calls and notices.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use serde_json::Value;

use crate::protocol::ToolCall;

/// One tool call as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The calling agent.
    pub agent: String,
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// Its target (path, command, pattern), from the arguments.
    pub target: String,
    /// The raw arguments.
    pub arguments: String,
    /// `allow`/`ask`/`deny` and who decided, once known.
    pub decision: Option<(String, String)>,
    /// Whether it failed, and the first line of its result, once finished.
    pub result: Option<(bool, String)>,
    /// What the tool returned to the model, bounded, once its result message arrived
    /// (boxed: most entries in a long transcript are never expanded).
    pub output: Option<Box<Output>>,
}

/// The start of a call's output, as the expanded view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The first [`OUTPUT_LINES`] lines, each cut at [`OUTPUT_LINE_CHARS`] characters.
    pub lines: Vec<String>,
    /// How many lines were left out.
    pub more: usize,
}

/// The most lines of a call's output kept for the expanded view.
pub(crate) const OUTPUT_LINES: usize = 20;
/// The most characters of one output line kept (a minified file is one long line).
pub(crate) const OUTPUT_LINE_CHARS: usize = 400;

impl Output {
    /// The bounded start of `text`.
    pub fn of(text: &str) -> Output {
        let all = text.trim_end_matches('\n').split('\n');
        let mut lines = Vec::new();
        let mut more = 0;
        for line in all {
            if lines.len() == OUTPUT_LINES {
                more += 1;
                continue;
            }
            let line = line.strip_suffix('\r').unwrap_or(line);
            let mut kept: String = line.chars().take(OUTPUT_LINE_CHARS).collect();
            if kept.len() < line.len() {
                kept.push('…');
            }
            lines.push(kept);
        }
        Output { lines, more }
    }
}

/// One thing in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the user typed.
    User(String),
    /// Model text of the lead.
    Assistant(String),
    /// A tool call.
    Tool(ToolEntry),
    /// Something the TUI says (command output, run endings).
    Notice(String),
    /// An error.
    Error(String),
}

/// The transcript's contents and view state.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// Whether tool calls show their arguments.
    pub expanded: bool,
    /// Lines scrolled up from the bottom.
    pub scroll_up: usize,
}

/// The most telling argument of a call: its path, command, pattern or description; a
/// message's recipient; a work-list item's subject or id.
pub(crate) fn call_target(call: &ToolCall) -> String {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    [
        "path",
        "command",
        "pattern",
        "description",
        "task_id",
        "prompt",
        "to",
        "subject",
        "id",
        "taskId",
    ]
    .iter()
    .find_map(|k| match args.get(*k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
    .unwrap_or_default()
}

impl Transcript {
    /// The entries, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Adds an entry.
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// Appends streamed lead text to the current assistant entry (or starts one).
    pub fn push_text(&mut self, text: &str) {
        if let Some(Entry::Assistant(t)) = self.entries.last_mut() {
            t.push_str(text);
        } else {
            self.entries.push(Entry::Assistant(text.to_string()));
        }
    }

    /// A tool call started.
    pub fn tool_started(&mut self, agent: &str, call: &ToolCall) {
        self.entries.push(Entry::Tool(ToolEntry {
            agent: agent.to_string(),
            id: call.id.clone(),
            name: call.name.clone(),
            target: call_target(call),
            arguments: call.arguments.clone(),
            decision: None,
            result: None,
            output: None,
        }));
    }

    /// The tool call `id` of `agent`, if shown.
    pub fn tool(&self, agent: &str, id: &str) -> Option<&ToolEntry> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::Tool(t) if t.id == id && t.agent == agent => Some(t),
            _ => None,
        })
    }

    fn tool_mut(&mut self, agent: &str, id: &str) -> Option<&mut ToolEntry> {
        self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::Tool(t) if t.id == id && t.agent == agent => Some(t),
            _ => None,
        })
    }

    /// The permission decision of a call.
    pub fn tool_decided(&mut self, agent: &str, id: &str, verdict: &str, source: &str) {
        if let Some(t) = self.tool_mut(agent, id) {
            t.decision = Some((verdict.to_string(), source.to_string()));
        }
    }

    /// A call finished.
    pub fn tool_finished(&mut self, agent: &str, id: &str, is_error: bool, summary: &str) {
        if let Some(t) = self.tool_mut(agent, id) {
            t.result = Some((is_error, summary.to_string()));
        }
    }

    /// What call `id` of `agent` returned to the model (its result message arrived).
    pub fn tool_output(&mut self, agent: &str, id: &str, content: &str) {
        if let Some(t) = self.tool_mut(agent, id) {
            t.output = Some(Box::new(Output::of(content)));
        }
    }

    /// The outputs of the calls whose results `message` carries (a user message holding
    /// `tool_result` blocks).
    pub fn tool_outputs(&mut self, agent: &str, message: &crate::protocol::Message) {
        for block in &message.content {
            if let crate::protocol::ContentBlock::ToolResult(r) = block {
                self.tool_output(agent, &r.tool_use_id, &r.content);
            }
        }
    }

    fn tool_lines(&self, t: &ToolEntry, out: &mut Vec<Line<'static>>) {
        let dim = Style::default().fg(Color::DarkGray);
        let mut spans = vec![Span::styled("⏺ ", Style::default().fg(Color::Cyan))];
        if t.agent != "lead" {
            spans.push(Span::styled(format!("[{}] ", t.agent), dim));
        }
        spans.push(Span::styled(
            t.name.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::raw(format!("({})", t.target)));
        if let Some((verdict, source)) = &t.decision {
            let color = match verdict.as_str() {
                "allow" => Color::Green,
                "deny" | "refused" => Color::Red,
                _ => Color::Yellow,
            };
            spans.push(Span::styled(
                format!(" {verdict} by {source}"),
                Style::default().fg(color),
            ));
        }
        out.push(Line::from(spans));
        if self.expanded {
            out.push(Line::styled(format!("  ⎿ args: {}", t.arguments), dim));
            if let Some(output) = &t.output {
                let style = match &t.result {
                    Some((true, _)) => Style::default().fg(Color::Red),
                    _ => Style::default(),
                };
                for (i, line) in output.lines.iter().enumerate() {
                    let lead = if i == 0 { "  ⎿ " } else { "    " };
                    out.push(Line::styled(format!("{lead}{line}"), style));
                }
                if output.more > 0 {
                    out.push(Line::styled(
                        format!("    … {} more line(s)", output.more),
                        dim,
                    ));
                }
                return;
            }
        }
        match &t.result {
            Some((is_error, summary)) => {
                let style = if *is_error {
                    Style::default().fg(Color::Red)
                } else {
                    dim
                };
                out.push(Line::styled(format!("  ⎿ {summary}"), style));
            }
            None => out.push(Line::styled("  ⎿ running…", dim)),
        }
    }

    fn entry_lines(&self, e: &Entry, out: &mut Vec<Line<'static>>) {
        match e {
            Entry::User(text) => {
                for (i, l) in text.lines().enumerate() {
                    let prefix = if i == 0 { "> " } else { "  " };
                    out.push(Line::styled(
                        format!("{prefix}{l}"),
                        Style::default()
                            .fg(Color::White)
                            .add_modifier(Modifier::BOLD),
                    ));
                }
            }
            Entry::Assistant(text) => {
                out.extend(text.lines().map(|l| Line::raw(l.to_string())));
            }
            Entry::Tool(t) => self.tool_lines(t, out),
            Entry::Notice(text) => out.extend(
                text.lines()
                    .map(|l| Line::styled(l.to_string(), Style::default().fg(Color::DarkGray))),
            ),
            Entry::Error(text) => out.extend(
                text.lines()
                    .map(|l| Line::styled(l.to_string(), Style::default().fg(Color::Red))),
            ),
        }
        out.push(Line::raw(""));
    }

    /// Every line of the transcript, unwrapped.
    pub fn lines(&self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for e in &self.entries {
            self.entry_lines(e, &mut out);
        }
        out
    }

    /// Draws the transcript's last lines (minus the scroll) into `area`, wrapping them.
    /// Only the newest entries that can show are wrapped, so a long session stays cheap
    /// to redraw while text streams.
    pub fn render(&self, frame: &mut Frame, area: Rect) {
        let width = usize::from(area.width.max(1));
        let height = usize::from(area.height);
        let wanted = height + self.scroll_up;
        let mut rows: Vec<Line<'static>> = Vec::new();
        let mut scratch = Vec::new();
        for e in self.entries.iter().rev() {
            if rows.len() >= wanted {
                break;
            }
            scratch.clear();
            self.entry_lines(e, &mut scratch);
            let mut wrapped: Vec<Line<'static>> =
                scratch.drain(..).flat_map(|l| wrap(l, width)).collect();
            wrapped.append(&mut rows);
            rows = wrapped;
        }
        let end = rows.len().saturating_sub(self.scroll_up.min(rows.len()));
        let start = end.saturating_sub(height);
        frame.render_widget(Paragraph::new(rows[start..end].to_vec()), area);
    }
}

/// Splits a line into rows of at most `width` characters, keeping each span's style.
/// Every span passes the sanitizer first ([`crate::sanitize`]): escape sequences, other
/// control characters, bidi controls and zero-width characters show in their visible
/// form and never reach the terminal. Tabs become spaces up to the next stop of four
/// (tool output such as `read_file`'s numbered lines is full of tabs).
fn wrap(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let mut rows = vec![Line::default()];
    let mut used = 0;
    for span in line.spans {
        let mut chunk = String::new();
        let mut expanded: Vec<char> = Vec::with_capacity(span.content.len());
        let keep = crate::sanitize::Keep {
            newlines: false,
            tabs: true,
        };
        for ch in crate::sanitize::clean(&span.content, keep).text.chars() {
            match ch {
                '\t' => {
                    let col = (used + expanded.len()) % width.max(1);
                    expanded.extend(std::iter::repeat_n(' ', 4 - col % 4));
                }
                c => expanded.push(c),
            }
        }
        for ch in expanded {
            if used == width {
                if let Some(row) = rows.last_mut() {
                    row.spans
                        .push(Span::styled(std::mem::take(&mut chunk), span.style));
                }
                rows.push(Line::default());
                used = 0;
            }
            chunk.push(ch);
            used += 1;
        }
        if let Some(row) = rows.last_mut() {
            row.spans.push(Span::styled(chunk, span.style));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;

    #[test]
    fn tabs_and_control_characters_do_not_reach_the_terminal() {
        let rows = wrap(Line::raw("     1\tfn main()\r\u{1b}]2;t\u{7}\u{202e}"), 80);
        let text: String = rows[0].spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "     1  fn main()␍␛]2;t␇\\u{202e}");
    }
    use ratatui::backend::TestBackend;

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn sample() -> Transcript {
        let mut t = Transcript::default();
        t.push(Entry::User("write the greeting".into()));
        t.push_text("I will write ");
        t.push_text("the file.");
        t.tool_started(
            "lead",
            &call("c1", "write_file", r#"{"path":"hello.txt","content":"hi"}"#),
        );
        t.tool_decided("lead", "c1", "ask", "user");
        t.tool_finished("lead", "c1", false, "wrote 2 bytes to hello.txt");
        t.tool_started(
            "general-purpose/t1",
            &call("c1", "run_command", r#"{"command":"cargo test"}"#),
        );
        t.tool_decided("general-purpose/t1", "c1", "deny", "blacklist");
        t.tool_finished("general-purpose/t1", "c1", true, "denied: blacklisted");
        t
    }

    fn draw(t: &Transcript, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| t.render(f, f.area())).unwrap();
        format!("{}", term.backend())
    }

    #[test]
    fn team_and_work_list_calls_name_their_target() {
        let target = |name: &str, args: &str| call_target(&call("c", name, args));
        assert_eq!(
            target("send_message", r#"{"to":"alice","message":"hi"}"#),
            "alice"
        );
        assert_eq!(
            target("todo_update", r#"{"id":3,"status":"completed"}"#),
            "3"
        );
        assert_eq!(target("todo_update", r#"{"taskId":"4"}"#), "4");
        assert_eq!(
            target("todo_add", r#"{"subject":"write the docs"}"#),
            "write the docs"
        );
    }

    #[test]
    fn transcript_with_a_tool_call() {
        let t = sample();
        let screen = draw(&t, 70, 12);
        insta::assert_snapshot!(screen);
        assert!(screen.contains("write_file(hello.txt) ask by user"));
        // Same call id from another agent must not be mixed up with the lead's.
        assert!(screen.contains("[general-purpose/t1] run_command(cargo test) deny"));
    }

    #[test]
    fn expanded_tool_calls_show_arguments() {
        let mut t = sample();
        t.expanded = true;
        let screen = draw(&t, 70, 14);
        insta::assert_snapshot!(screen);
        assert!(screen.contains(r#"args: {"path":"hello.txt","content":"hi"}"#));
    }

    #[test]
    fn expanded_tool_calls_show_their_output_bounded_and_sanitized() {
        let mut t = sample();
        let mut text: String = (1..=30).map(|i| format!("out-line-{i}\n")).collect();
        text.insert_str(0, "\u{1b}]2;TITLE\u{7}\t\u{202e}x\n");
        t.tool_output("lead", "c1", &text);
        t.tool_output(
            "general-purpose/t1",
            "c1",
            "denied: blacklisted\nwhy: rm -rf /",
        );
        let collapsed = draw(&t, 90, 30);
        assert!(!collapsed.contains("out-line-1"), "{collapsed}");
        t.expanded = true;
        let screen = draw(&t, 90, 40);
        assert!(screen.contains("⎿ ␛]2;TITLE␇"), "{screen}");
        assert!(screen.contains("\\u{202e}x"), "{screen}");
        assert!(screen.contains("out-line-19"), "{screen}");
        assert!(!screen.contains("out-line-20"), "bounded:\n{screen}");
        assert!(screen.contains("… 11 more line(s)"), "{screen}");
        // The output, not only the summary, of the other agent's call with the same id.
        assert!(screen.contains("why: rm -rf /"), "{screen}");
        let long = Output::of(&"y".repeat(5000));
        assert_eq!(long.lines[0].chars().count(), OUTPUT_LINE_CHARS + 1);
        assert_eq!(Output::of("a\r\nb\n").lines, ["a", "b"]);
    }

    #[test]
    fn long_lines_wrap_and_the_view_follows_the_end() {
        let mut t = Transcript::default();
        for i in 0..30 {
            t.push(Entry::Notice(format!("line {i}")));
        }
        t.push_text(&"x".repeat(25));
        let screen = draw(&t, 10, 4);
        assert!(screen.contains("xxxxxxxxxx"), "{screen}");
        assert!(screen.contains("xxxxx"), "{screen}");
        assert!(!screen.contains("line 0"), "{screen}");
    }
}
