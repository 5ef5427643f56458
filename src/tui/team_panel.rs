//! The team panel: the lead's teammates with status, current item, last activity and unread
//! mail (↑/↓ select one), the shared work list (Ctrl+T switches to it), and a teammate's live
//! transcript (Enter) with a line to type a message to it (Enter sends, Esc goes back).
//! `x` stops the selected teammate. Pure state and drawing: the runtime loads the team's
//! state (`crate::team::view::view`) and carries out the returned [`TeamAction`]s.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState};

use super::tasks_panel::format_elapsed;
use crate::sanitize::clean_line;
use crate::team::view::{MemberView, TeamView};
use crate::team::{MemberStatus, TodoStatus};

/// What a key in the panel asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TeamAction {
    /// Nothing beyond redrawing.
    None,
    /// Load (and keep following) this teammate's transcript.
    OpenTranscript(String),
    /// Send this message from the user to a teammate's inbox.
    Send {
        /// The teammate.
        to: String,
        /// The text typed.
        message: String,
    },
    /// Stop this teammate.
    Stop(String),
    /// Close the panel.
    Close,
}

/// Which view the panel shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TeamTab {
    /// The teammates.
    #[default]
    Members,
    /// The work list.
    Items,
}

/// The panel's state.
#[derive(Debug, Default)]
pub(crate) struct TeamPanel {
    /// The latest state of the team, if it has one.
    pub view: Option<TeamView>,
    /// Whether the panel is shown (and has the keyboard).
    pub open: bool,
    /// Members or work list.
    pub tab: TeamTab,
    selected: usize,
    /// The open transcript: teammate name and its text.
    pub transcript: Option<(String, String)>,
    /// What the user is typing to the open teammate.
    pub draft: String,
}

fn status_color(status: MemberStatus) -> Color {
    match status {
        MemberStatus::Idle => Color::DarkGray,
        MemberStatus::Working => Color::Yellow,
        MemberStatus::Failed => Color::Red,
        MemberStatus::Stopped => Color::Magenta,
        MemberStatus::Finished => Color::Green,
    }
}

fn item_color(status: TodoStatus) -> Color {
    match status {
        TodoStatus::Pending => Color::DarkGray,
        TodoStatus::InProgress => Color::Yellow,
        TodoStatus::Completed => Color::Green,
        TodoStatus::Deleted => Color::Magenta,
    }
}

impl TeamPanel {
    /// The teammates (the lead is not selectable).
    pub(crate) fn teammates(&self) -> Vec<&MemberView> {
        self.view
            .iter()
            .flat_map(|v| v.members.iter())
            .filter(|m| m.name != crate::team::LEAD)
            .collect()
    }

    /// The selected teammate's name.
    pub(crate) fn selected_name(&self) -> Option<String> {
        self.teammates().get(self.selected).map(|m| m.name.clone())
    }

    /// Replaces the team state, keeping the selection in range.
    pub(crate) fn set_view(&mut self, view: TeamView) {
        self.view = Some(view);
        self.selected = self.selected.min(self.teammates().len().saturating_sub(1));
    }

    /// Handles a key while the panel is open.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> TeamAction {
        if let Some((name, _)) = &self.transcript {
            let name = name.clone();
            match key.code {
                KeyCode::Esc => {
                    self.transcript = None;
                    self.draft.clear();
                }
                KeyCode::Enter if !self.draft.trim().is_empty() => {
                    let message = std::mem::take(&mut self.draft);
                    return TeamAction::Send { to: name, message };
                }
                KeyCode::Backspace => {
                    self.draft.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.draft.push(c);
                }
                _ => {}
            }
            return TeamAction::None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('t') {
            self.tab = match self.tab {
                TeamTab::Members => TeamTab::Items,
                TeamTab::Items => TeamTab::Members,
            };
            return TeamAction::None;
        }
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.teammates().len().saturating_sub(1));
            }
            KeyCode::Enter if self.tab == TeamTab::Members => {
                if let Some(name) = self.selected_name() {
                    self.transcript = Some((name.clone(), String::new()));
                    return TeamAction::OpenTranscript(name);
                }
            }
            KeyCode::Char('x') if self.tab == TeamTab::Members => {
                if let Some(name) = self.selected_name() {
                    return TeamAction::Stop(name);
                }
            }
            KeyCode::Esc | KeyCode::Char('q') => {
                self.open = false;
                return TeamAction::Close;
            }
            _ => {}
        }
        TeamAction::None
    }

    /// Draws the panel over `area`; `now_ms` is the clock for "active … ago".
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect, now_ms: u64) {
        frame.render_widget(Clear, area);
        if let Some((name, text)) = &self.transcript {
            return self.render_transcript(frame, area, name, text);
        }
        let Some(view) = &self.view else {
            frame.render_widget(
                Paragraph::new(
                    "This session has no team yet: the lead starts one by naming an agent.",
                )
                .block(Block::default().borders(Borders::ALL).title(" Team ")),
                area,
            );
            return;
        };
        match self.tab {
            TeamTab::Members => self.render_members(frame, area, view, now_ms),
            TeamTab::Items => render_items(frame, area, view),
        }
    }

    fn render_members(&self, frame: &mut Frame, area: Rect, view: &TeamView, now_ms: u64) {
        let header = Row::new(["name", "type", "status", "item", "active", "unread"])
            .style(Style::default().add_modifier(Modifier::BOLD));
        let rows: Vec<Row> = self
            .teammates()
            .into_iter()
            .map(|m| {
                let status = m.status.unwrap_or(MemberStatus::Idle);
                Row::new(vec![
                    clean_line(&m.name).into(),
                    clean_line(&m.agent_type).into(),
                    Line::styled(
                        status.to_string(),
                        Style::default().fg(status_color(status)),
                    ),
                    m.current_item
                        .as_ref()
                        .map_or("-".to_string(), |i| clean_line(&format!("#{i}")))
                        .into(),
                    m.last_activity_ms
                        .map_or("-".to_string(), |t| {
                            format!("{} ago", format_elapsed(now_ms.saturating_sub(t)))
                        })
                        .into(),
                    m.unread.to_string().into(),
                ])
            })
            .collect();
        let lead_unread = view
            .members
            .iter()
            .find(|m| m.name == crate::team::LEAD)
            .map_or(0, |m| m.unread);
        let widths = [
            Constraint::Length(14),
            Constraint::Length(16),
            Constraint::Length(9),
            Constraint::Length(6),
            Constraint::Length(10),
            Constraint::Min(6),
        ];
        let table = Table::new(rows, widths)
            .header(header)
            .row_highlight_style(Style::default().bg(Color::DarkGray))
            .highlight_symbol("❯ ")
            .block(Block::default().borders(Borders::ALL).title(format!(
                " Team {} · lead unread {lead_unread} (↑↓ select, Enter open, x stop, Ctrl+T list, Esc close) ",
                clean_line(short(&view.team))
            )));
        let mut state = TableState::default();
        if !self.teammates().is_empty() {
            state.select(Some(self.selected));
        }
        frame.render_stateful_widget(table, area, &mut state);
    }

    fn render_transcript(&self, frame: &mut Frame, area: Rect, name: &str, text: &str) {
        let [body, input] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(area);
        let height = usize::from(body.height.saturating_sub(2));
        let lines: Vec<&str> = text.lines().collect();
        let tail: Vec<Line> = lines[lines.len().saturating_sub(height)..]
            .iter()
            .map(|l| Line::raw(clean_line(l)))
            .collect();
        let name = clean_line(name);
        frame.render_widget(
            Paragraph::new(tail).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" {name} (live; Esc to go back) ")),
            ),
            body,
        );
        frame.render_widget(
            Paragraph::new(format!("{}▏", clean_line(&self.draft))).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" message to {name} (Enter sends) ")),
            ),
            input,
        );
    }
}

fn render_items(frame: &mut Frame, area: Rect, view: &TeamView) {
    let header = Row::new(["id", "status", "owner", "blocked by", "subject"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = view
        .items
        .iter()
        .filter(|i| i.status != TodoStatus::Deleted)
        .map(|i| {
            Row::new(vec![
                format!("#{}", i.id).into(),
                Line::styled(
                    i.status.to_string(),
                    Style::default().fg(item_color(i.status)),
                ),
                clean_line(i.owner.as_deref().unwrap_or("-")).into(),
                i.open_blockers
                    .iter()
                    .map(|b| format!("#{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
                    .into(),
                clean_line(&i.subject).into(),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(5),
        Constraint::Length(12),
        Constraint::Length(14),
        Constraint::Length(11),
        Constraint::Min(10),
    ];
    frame.render_widget(
        Table::new(rows, widths).header(header).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Work list (Ctrl+T members, Esc close) "),
        ),
        area,
    );
}

/// The first 8 characters of a session id.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::view::ItemView;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn member(
        name: &str,
        status: Option<MemberStatus>,
        item: Option<&str>,
        unread: usize,
    ) -> MemberView {
        MemberView {
            name: name.into(),
            agent_id: status.map(|_| format!("{name}-1")),
            agent_type: if status.is_some() {
                "general-purpose"
            } else {
                "lead"
            }
            .into(),
            status,
            current_item: item.map(String::from),
            last_activity_ms: status.map(|_| 30_000),
            unread,
            worktree: None,
        }
    }

    fn item(id: &str, status: TodoStatus, owner: Option<&str>, blockers: &[&str]) -> ItemView {
        ItemView {
            id: id.into(),
            subject: format!("write {id}.txt"),
            status,
            owner: owner.map(String::from),
            blocked_by: blockers.iter().map(|b| b.to_string()).collect(),
            open_blockers: blockers.iter().map(|b| b.to_string()).collect(),
        }
    }

    fn panel() -> TeamPanel {
        let mut p = TeamPanel {
            open: true,
            ..TeamPanel::default()
        };
        p.set_view(TeamView {
            team: "206638db-ae5f".into(),
            dir: "/tmp/team".into(),
            members: vec![
                member("lead", None, None, 2),
                member("alice", Some(MemberStatus::Working), Some("1"), 0),
                member("bob", Some(MemberStatus::Idle), None, 1),
            ],
            items: vec![
                item("1", TodoStatus::InProgress, Some("alice"), &[]),
                item("2", TodoStatus::Pending, None, &["1"]),
            ],
        });
        p
    }

    fn draw(p: &TeamPanel) -> String {
        let mut t = Terminal::new(TestBackend::new(100, 7)).unwrap();
        t.draw(|f| p.render(f, f.area(), 95_000)).unwrap();
        format!("{}", t.backend())
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn team_panel_lists_teammates_with_status_item_activity_and_unread() {
        let p = panel();
        let screen = draw(&p);
        insta::assert_snapshot!(screen);
        assert!(screen.contains("lead unread 2"), "{screen}");
        assert!(
            screen.contains("1m05s ago") && screen.contains("#1"),
            "{screen}"
        );
        assert!(
            !screen.contains("│❯ lead"),
            "the lead is not a selectable row"
        );
    }

    #[test]
    fn ctrl_t_shows_the_work_list_with_owners_and_blockers() {
        let mut p = panel();
        p.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
        let screen = draw(&p);
        insta::assert_snapshot!(screen);
        assert!(
            screen.contains("in_progress") && screen.contains("alice"),
            "{screen}"
        );
        // x and Enter do nothing on the list.
        assert_eq!(p.on_key(key(KeyCode::Char('x'))), TeamAction::None);
        p.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
        assert_eq!(p.tab, TeamTab::Members);
    }

    #[test]
    fn enter_opens_a_transcript_to_type_to_and_x_stops_the_selected_teammate() {
        let mut p = panel();
        p.on_key(key(KeyCode::Down));
        assert_eq!(
            p.on_key(key(KeyCode::Char('x'))),
            TeamAction::Stop("bob".into())
        );
        assert_eq!(
            p.on_key(key(KeyCode::Enter)),
            TeamAction::OpenTranscript("bob".into())
        );
        p.transcript = Some(("bob".into(), "bob: claimed #2\nbob: wrote b.txt".into()));
        for c in "hi x".chars() {
            p.on_key(key(KeyCode::Char(c)));
        }
        p.on_key(key(KeyCode::Backspace));
        let screen = draw(&p);
        assert!(
            screen.contains("wrote b.txt") && screen.contains("hi ▏"),
            "{screen}"
        );
        assert_eq!(
            p.on_key(key(KeyCode::Enter)),
            TeamAction::Send {
                to: "bob".into(),
                message: "hi ".into()
            }
        );
        assert!(p.draft.is_empty());
        // Nothing typed: Enter sends nothing. Esc goes back to the list, then closes.
        assert_eq!(p.on_key(key(KeyCode::Enter)), TeamAction::None);
        p.on_key(key(KeyCode::Esc));
        assert!(p.transcript.is_none() && p.open);
        assert_eq!(p.on_key(key(KeyCode::Esc)), TeamAction::Close);
        assert!(!p.open);
    }

    #[test]
    fn escape_sequences_from_teammates_show_visibly() {
        let mut p = panel();
        p.transcript = Some((
            "bob".into(),
            "bob: done \u{1b}]52;c;aGk=\u{7}\u{1b}]2;T\u{7} \u{202e}x".into(),
        ));
        let screen = draw(&p);
        assert!(
            screen.contains("done ␛]52;c;aGk=␇␛]2;T␇ \\u{202e}x"),
            "{screen}"
        );
        let unsafe_char = |c: char| c != '\n' && crate::sanitize::is_unsafe(c);
        assert!(!screen.contains(unsafe_char), "{screen:?}");
        p.transcript = None;
        if let Some(view) = &mut p.view {
            view.items[0].subject = "fix \u{1b}[2K\u{1b}[1Gok".into();
        }
        p.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
        let screen = draw(&p);
        assert!(screen.contains("fix ␛[2K␛[1Gok"), "{screen}");
    }
}
