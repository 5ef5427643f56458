//! The tasks panel: background commands and subagents with status, elapsed time, last
//! activity and tokens. Enter opens a task's live log, `x` stops it, Esc closes.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState};

use super::status::format_tokens;
use crate::pricing::total_tokens;
use crate::sanitize::clean_line;
use crate::tasks::{TaskKind, TaskRecord, TaskStatus};

/// What a key in the panel asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PanelAction {
    /// Nothing beyond redrawing.
    None,
    /// Load the log of this task.
    OpenLog(String),
    /// Stop this task.
    Stop(String),
    /// Close the panel.
    Close,
}

/// The panel's state.
#[derive(Debug, Default)]
pub(crate) struct TasksPanel {
    /// The latest records, oldest first.
    pub records: Vec<TaskRecord>,
    /// Whether the panel is shown (and has the keyboard).
    pub open: bool,
    selected: usize,
    /// The open log: task id and its text.
    pub log: Option<(String, String)>,
}

/// `1m05s`-style duration.
pub(crate) fn format_elapsed(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn status_color(status: TaskStatus) -> Color {
    match status {
        TaskStatus::Pending => Color::DarkGray,
        TaskStatus::Running => Color::Yellow,
        TaskStatus::Completed => Color::Green,
        TaskStatus::Failed => Color::Red,
        TaskStatus::Cancelled | TaskStatus::MaxTurns => Color::Magenta,
    }
}

impl TasksPanel {
    /// Tasks still pending or running.
    pub(crate) fn running(&self) -> usize {
        self.records
            .iter()
            .filter(|r| !r.status.is_terminal())
            .count()
    }

    /// The selected task's id.
    pub(crate) fn selected_id(&self) -> Option<&str> {
        self.records.get(self.selected).map(|r| r.id.as_str())
    }

    /// Replaces the records, keeping the selection in range.
    pub(crate) fn set_records(&mut self, records: Vec<TaskRecord>) {
        self.records = records;
        self.selected = self.selected.min(self.records.len().saturating_sub(1));
    }

    /// Handles a key while the panel is open.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> PanelAction {
        if self.log.is_some() {
            if matches!(key.code, KeyCode::Esc | KeyCode::Char('q')) {
                self.log = None;
            }
            return PanelAction::None;
        }
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.records.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                if let Some(id) = self.selected_id() {
                    return PanelAction::OpenLog(id.to_string());
                }
            }
            KeyCode::Char('x') => {
                if let Some(id) = self.selected_id() {
                    return PanelAction::Stop(id.to_string());
                }
            }
            KeyCode::Esc | KeyCode::Char('q') => {
                self.open = false;
                return PanelAction::Close;
            }
            _ => {}
        }
        PanelAction::None
    }

    fn row(rec: &TaskRecord, now_ms: u64) -> Row<'static> {
        let start = rec.started_ms.unwrap_or(rec.created_ms);
        let end = rec.ended_ms.unwrap_or(now_ms);
        let what = match rec.kind {
            TaskKind::Agent => rec.agent_type.clone().unwrap_or_else(|| "agent".into()),
            TaskKind::Command => "command".into(),
        };
        // A task on a worker machine says where.
        let what = match &rec.node {
            Some(node) => format!("{what}@{node}"),
            None => what,
        };
        let activity = if rec.last_activity.is_empty() {
            rec.command.clone().unwrap_or_default()
        } else {
            rec.last_activity.clone()
        };
        Row::new(vec![
            clean_line(&rec.id).into(),
            clean_line(&what).into(),
            Line::styled(
                rec.status.as_str().to_string(),
                Style::default().fg(status_color(rec.status)),
            ),
            format_elapsed(end.saturating_sub(start)).into(),
            format_tokens(total_tokens(&rec.usage)).into(),
            clean_line(&format!("{} — {activity}", rec.description)).into(),
        ])
    }

    /// Draws the panel (or the open log) over `area`; `now_ms` is the clock for elapsed
    /// times of running tasks.
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect, now_ms: u64) {
        frame.render_widget(Clear, area);
        if let Some((id, text)) = &self.log {
            let height = usize::from(area.height.saturating_sub(2));
            let lines: Vec<&str> = text.lines().collect();
            let tail: Vec<Line> = lines[lines.len().saturating_sub(height)..]
                .iter()
                .map(|l| Line::raw(clean_line(l)))
                .collect();
            frame.render_widget(
                Paragraph::new(tail).block(Block::default().borders(Borders::ALL).title(format!(
                    " log of {} (live; Esc to go back) ",
                    clean_line(id)
                ))),
                area,
            );
            return;
        }
        let header = Row::new(["id", "type", "status", "elapsed", "tokens", "activity"])
            .style(Style::default().add_modifier(Modifier::BOLD));
        let rows: Vec<Row> = self.records.iter().map(|r| Self::row(r, now_ms)).collect();
        let widths = [
            Constraint::Length(9),
            Constraint::Length(16),
            Constraint::Length(10),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Min(10),
        ];
        let table = Table::new(rows, widths)
            .header(header)
            .row_highlight_style(Style::default().bg(Color::DarkGray))
            .highlight_symbol("❯ ")
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Tasks (↑↓ select, Enter log, x stop, Esc close) "),
            );
        let mut state = TableState::default();
        if !self.records.is_empty() {
            state.select(Some(self.selected));
        }
        frame.render_stateful_widget(table, area, &mut state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn record(id: &str, kind: TaskKind, status: TaskStatus, ended: Option<u64>) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            kind,
            description: format!("job {id}"),
            status,
            owner: "lead".into(),
            agent_type: (kind == TaskKind::Agent).then(|| "general-purpose".into()),
            command: (kind == TaskKind::Command).then(|| "cargo build".into()),
            created_ms: 1_000,
            started_ms: Some(2_000),
            ended_ms: ended,
            tool_calls: 3,
            usage: Usage {
                input_tokens: 1500,
                output_tokens: 200,
                ..Usage::default()
            },
            last_activity: if kind == TaskKind::Agent {
                "read_file src/lib.rs".into()
            } else {
                String::new()
            },
            output_file: "/tmp/none.log".into(),
            result: None,
            worktree: None,
            pgid: None,
            host_pid: 1,
            node: None,
        }
    }

    fn panel() -> TasksPanel {
        let mut p = TasksPanel {
            open: true,
            ..TasksPanel::default()
        };
        p.set_records(vec![
            record("t1aaaaa", TaskKind::Agent, TaskStatus::Running, None),
            record(
                "t2bbbbb",
                TaskKind::Command,
                TaskStatus::Completed,
                Some(7_000),
            ),
            record("t3ccccc", TaskKind::Agent, TaskStatus::Failed, Some(70_000)),
        ]);
        p
    }

    fn draw(p: &TasksPanel) -> String {
        let mut t = Terminal::new(TestBackend::new(100, 8)).unwrap();
        t.draw(|f| p.render(f, f.area(), 95_000)).unwrap();
        format!("{}", t.backend())
    }

    #[test]
    fn tasks_panel_lists_status_elapsed_tokens_and_activity() {
        let p = panel();
        let screen = draw(&p);
        insta::assert_snapshot!(screen);
        assert_eq!(p.running(), 1);
        assert!(
            screen.contains("1m33s"),
            "running task's elapsed time: {screen}"
        );
        assert!(
            screen.contains("1m08s"),
            "ended task's elapsed time: {screen}"
        );
        assert!(screen.contains("1.7k"));
    }

    #[test]
    fn enter_opens_the_log_and_x_stops_the_selected_task() {
        let mut p = panel();
        let k = |c| KeyEvent::new(c, crossterm::event::KeyModifiers::NONE);
        p.on_key(k(KeyCode::Down));
        assert_eq!(
            p.on_key(k(KeyCode::Enter)),
            PanelAction::OpenLog("t2bbbbb".into())
        );
        assert_eq!(
            p.on_key(k(KeyCode::Char('x'))),
            PanelAction::Stop("t2bbbbb".into())
        );
        p.log = Some(("t2bbbbb".into(), "line one\nline two".into()));
        let screen = draw(&p);
        assert!(screen.contains("log of t2bbbbb") && screen.contains("line two"));
        p.on_key(k(KeyCode::Esc));
        assert!(p.log.is_none() && p.open);
        assert_eq!(p.on_key(k(KeyCode::Esc)), PanelAction::Close);
        assert!(!p.open);
    }
}
