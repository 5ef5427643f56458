//! The input box: multi-line editing (Alt+Enter inserts a newline, Enter submits, Ctrl+U
//! clears it) and a history of submitted inputs on Up/Down.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style};
use ratatui::widgets::{Block, Borders, Paragraph};

/// What a key did to the input box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InputOutcome {
    /// The key was handled (text or cursor changed).
    Handled,
    /// The user submitted this text.
    Submit(String),
    /// The key is not the input box's.
    Ignored,
}

/// The input box's state.
#[derive(Debug, Default)]
pub(crate) struct InputBox {
    lines: Vec<String>,
    row: usize,
    /// Cursor column, in characters.
    col: usize,
    history: Vec<String>,
    /// Position in `history` while browsing it.
    browsing: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
    /// The suggested next prompt, shown greyed while nothing is typed (Tab takes it).
    suggestion: Option<String>,
}

fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

/// Where the keys go while the input box is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Focus {
    /// Into the box: it is highlighted and holds the cursor.
    Typing,
    /// To a dialog or panel over the transcript.
    Elsewhere,
}

impl InputBox {
    /// The current text.
    pub(crate) fn text(&self) -> String {
        if self.lines.is_empty() {
            String::new()
        } else {
            self.lines.join("\n")
        }
    }

    /// Replaces the text (cursor at the end).
    pub(crate) fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_string).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    /// Shows (or, with `None`, removes) a suggested next prompt.
    pub(crate) fn set_suggestion(&mut self, suggestion: Option<String>) {
        self.suggestion = suggestion;
    }

    /// The suggestion on show: there is one and nothing is typed.
    pub(crate) fn suggestion(&self) -> Option<&str> {
        self.suggestion.as_deref().filter(|_| self.is_empty())
    }

    /// Whether nothing is typed.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.iter().all(String::is_empty)
    }

    fn ensure_line(&mut self) {
        if self.lines.is_empty() {
            self.lines.push(String::new());
            self.row = 0;
            self.col = 0;
        }
    }

    fn insert(&mut self, ch: char) {
        self.ensure_line();
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.insert(at, ch);
        self.col += 1;
    }

    fn newline(&mut self) {
        self.ensure_line();
        let line = &mut self.lines[self.row];
        let rest = line.split_off(byte_at(line, self.col));
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    fn backspace(&mut self) {
        self.ensure_line();
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    fn clamp_col(&mut self) {
        self.col = self.col.min(self.lines[self.row].chars().count());
    }

    fn history_prev(&mut self) {
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        let text = self.history[next].clone();
        self.set_text(&text);
    }

    fn history_next(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let text = self.history[i + 1].clone();
            self.set_text(&text);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// Inserts pasted text at the cursor (newlines start new lines).
    pub(crate) fn paste(&mut self, text: &str) {
        for ch in text.chars() {
            match ch {
                '\n' => self.newline(),
                '\r' => {}
                ch => self.insert(ch),
            }
        }
    }

    /// Empties the box (Ctrl+U, as in Claude Code); the history stays.
    pub(crate) fn clear(&mut self) {
        self.lines.clear();
        self.row = 0;
        self.col = 0;
        self.browsing = None;
        self.draft.clear();
    }

    /// Takes the text out (for submitting), recording it in the history.
    pub(crate) fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.lines.clear();
        self.row = 0;
        self.col = 0;
        self.browsing = None;
        text
    }

    /// Handles a key.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> InputOutcome {
        self.ensure_line();
        match key.code {
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) =>
            {
                self.newline()
            }
            KeyCode::Enter => return InputOutcome::Submit(self.take()),
            KeyCode::Char('j') if key.modifiers.contains(KeyModifiers::CONTROL) => self.newline(),
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.clear();
                self.ensure_line();
            }
            KeyCode::Char(_) if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return InputOutcome::Ignored;
            }
            KeyCode::Char(ch) => self.insert(ch),
            KeyCode::Backspace => self.backspace(),
            KeyCode::Left if self.col > 0 => self.col -= 1,
            KeyCode::Right => {
                self.col = (self.col + 1).min(self.lines[self.row].chars().count());
            }
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.lines[self.row].chars().count(),
            KeyCode::Up if self.row > 0 && self.browsing.is_none() => {
                self.row -= 1;
                self.clamp_col();
            }
            KeyCode::Up => self.history_prev(),
            KeyCode::Down if self.row + 1 < self.lines.len() && self.browsing.is_none() => {
                self.row += 1;
                self.clamp_col();
            }
            KeyCode::Down => self.history_next(),
            KeyCode::Left => {}
            _ => return InputOutcome::Ignored,
        }
        InputOutcome::Handled
    }

    /// Rows the box needs for its text (plus borders), at most `max`.
    pub(crate) fn height(&self, max: u16) -> u16 {
        let rows = u16::try_from(self.lines.len().max(1)).unwrap_or(u16::MAX);
        rows.saturating_add(2).min(max)
    }

    /// Draws the box with `title`; with [`Focus::Typing`] it is highlighted and holds the
    /// terminal cursor.
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect, title: &str, focus: Focus) {
        let color = match focus {
            Focus::Typing => Color::Cyan,
            Focus::Elsewhere => Color::DarkGray,
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(color))
            .title(title.to_string());
        let inner = block.inner(area);
        let visible = usize::from(inner.height.max(1));
        let first = (self.row + 1).saturating_sub(visible);
        let text: Vec<ratatui::text::Line> = match self.suggestion() {
            Some(ghost) => vec![ratatui::text::Line::styled(
                format!("{ghost}  (Tab)"),
                Style::default().fg(Color::DarkGray),
            )],
            None => self
                .lines
                .iter()
                .skip(first)
                .map(|l| ratatui::text::Line::raw(l.clone()))
                .collect(),
        };
        frame.render_widget(Paragraph::new(text).block(block), area);
        if focus == Focus::Typing {
            let x = inner.x + u16::try_from(self.col).unwrap_or(u16::MAX);
            let y = inner.y + u16::try_from(self.row - first).unwrap_or(0);
            frame.set_cursor_position(Position::new(x.min(inner.right().saturating_sub(1)), y));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(input: &mut InputBox, s: &str) {
        for ch in s.chars() {
            input.on_key(key(KeyCode::Char(ch)));
        }
    }

    #[test]
    fn alt_enter_makes_a_new_line_and_enter_submits() {
        let mut input = InputBox::default();
        typed(&mut input, "first");
        input.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut input, "second");
        assert_eq!(input.height(10), 4);
        assert_eq!(
            input.on_key(key(KeyCode::Enter)),
            InputOutcome::Submit("first\nsecond".into())
        );
        assert!(input.is_empty());
    }

    #[test]
    fn up_and_down_browse_history_and_restore_the_draft() {
        let mut input = InputBox::default();
        typed(&mut input, "one");
        input.on_key(key(KeyCode::Enter));
        typed(&mut input, "two");
        input.on_key(key(KeyCode::Enter));
        typed(&mut input, "dra");
        input.on_key(key(KeyCode::Up));
        assert_eq!(input.text(), "two");
        input.on_key(key(KeyCode::Up));
        assert_eq!(input.text(), "one");
        input.on_key(key(KeyCode::Down));
        input.on_key(key(KeyCode::Down));
        assert_eq!(input.text(), "dra");
    }

    #[test]
    fn ctrl_u_clears_every_line_and_keeps_the_history() {
        let mut input = InputBox::default();
        typed(&mut input, "kept");
        input.on_key(key(KeyCode::Enter));
        typed(&mut input, "first");
        input.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut input, "second");
        let outcome = input.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(outcome, InputOutcome::Handled);
        assert!(input.is_empty(), "{:?}", input.text());
        assert_eq!(input.height(10), 3, "one empty line left");
        // Typing goes on from the start, and the history is still there.
        typed(&mut input, "new");
        assert_eq!(input.text(), "new");
        input.on_key(key(KeyCode::Up));
        assert_eq!(input.text(), "kept");
    }

    #[test]
    fn editing_in_the_middle_of_multibyte_text() {
        let mut input = InputBox::default();
        typed(&mut input, "héllo");
        input.on_key(key(KeyCode::Left));
        input.on_key(key(KeyCode::Left));
        input.on_key(key(KeyCode::Backspace));
        typed(&mut input, "L");
        assert_eq!(input.text(), "héLlo");
    }
}
