//! The worktrees panel (`/worktrees`): the worktrees subagents and teammates left, with
//! what each holds, and the review loop on them — Enter shows the diff, `m` merges, `s`
//! squash-merges, `k` keeps it for later, `x` discards (asking first when it holds work).
//! The panel only says what the user chose; the runtime does it through the worktree
//! manager, as `crew worktrees` does, and reloads the list.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState};

use crate::sanitize::clean_line;
use crate::worktree::Listing;

pub(crate) use crate::worktree::review::Review;

/// What a key in the panel asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorktreeAction {
    /// Nothing beyond redrawing.
    None,
    /// Do this to the worktree of that task.
    Act(Review, String),
    /// Leave it for later review (said, not done: it stays as it is).
    Keep(String),
}

/// The panel's state.
#[derive(Debug, Default)]
pub(crate) struct WorktreesPanel {
    /// The latest listing.
    pub listings: Vec<Listing>,
    /// Whether the panel is shown (and has the keyboard).
    pub open: bool,
    selected: usize,
    /// The open diff: task id, its text and the first line shown.
    pub diff: Option<(String, String, usize)>,
    /// A discard of a worktree holding work, waiting for `y`.
    pub confirm: Option<String>,
    /// What the last review did (or why it was refused), shown under the list.
    pub message: Option<String>,
}

impl WorktreesPanel {
    /// Replaces the listing, keeping the selection in range.
    pub(crate) fn set_listings(&mut self, listings: Vec<Listing>) {
        self.listings = listings;
        self.selected = self.selected.min(self.listings.len().saturating_sub(1));
    }

    fn selected(&self) -> Option<&Listing> {
        self.listings.get(self.selected)
    }

    /// Handles a key while the panel is open.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> WorktreeAction {
        if let Some((_, text, top)) = &mut self.diff {
            let last = text.lines().count().saturating_sub(1);
            match key.code {
                KeyCode::Esc | KeyCode::Char('q') => self.diff = None,
                KeyCode::Up => *top = top.saturating_sub(1),
                KeyCode::Down => *top = (*top + 1).min(last),
                KeyCode::PageUp => *top = top.saturating_sub(20),
                KeyCode::PageDown | KeyCode::Char(' ') => *top = (*top + 20).min(last),
                _ => {}
            }
            return WorktreeAction::None;
        }
        if let Some(id) = self.confirm.take() {
            return match key.code {
                KeyCode::Char('y') => WorktreeAction::Act(Review::Discard, id),
                _ => WorktreeAction::None,
            };
        }
        let Some(l) = self.selected() else {
            if matches!(key.code, KeyCode::Esc | KeyCode::Char('q')) {
                self.open = false;
            }
            return WorktreeAction::None;
        };
        let id = l.id.clone();
        let holds_work = crate::worktree::review::needs_confirmation(l);
        self.message = None;
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.listings.len().saturating_sub(1))
            }
            KeyCode::Enter | KeyCode::Char('d') => return WorktreeAction::Act(Review::Diff, id),
            KeyCode::Char('m') => return WorktreeAction::Act(Review::Merge, id),
            KeyCode::Char('s') => return WorktreeAction::Act(Review::Squash, id),
            KeyCode::Char('k') => return WorktreeAction::Keep(id),
            KeyCode::Char('x') if holds_work => self.confirm = Some(id),
            KeyCode::Char('x') => return WorktreeAction::Act(Review::Discard, id),
            KeyCode::Esc | KeyCode::Char('q') => self.open = false,
            _ => {}
        }
        WorktreeAction::None
    }

    /// Draws the panel (or the open diff) over `area`.
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect) {
        frame.render_widget(Clear, area);
        if let Some((id, text, top)) = &self.diff {
            let lines: Vec<Line> = text
                .lines()
                .skip(*top)
                .take(usize::from(area.height.saturating_sub(2)))
                .map(|l| {
                    let color = match l.as_bytes().first() {
                        Some(b'+') => Color::Green,
                        Some(b'-') => Color::Red,
                        Some(b'@') => Color::Cyan,
                        _ => Color::Reset,
                    };
                    Line::styled(clean_line(l), Style::default().fg(color))
                })
                .collect();
            let title = format!(
                " diff of {} (↑↓ PgUp PgDn scroll, Esc back) ",
                clean_line(id)
            );
            let block = Block::default().borders(Borders::ALL).title(title);
            frame.render_widget(Paragraph::new(lines).block(block), area);
            return;
        }
        let title = match &self.confirm {
            Some(id) => format!(
                " Discard {} with the work it holds? y: discard, any other key: keep ",
                clean_line(id)
            ),
            None => {
                " Worktrees (↑↓, Enter diff, m merge, s squash, k keep, x discard, Esc) ".into()
            }
        };
        let header = Row::new(["id", "state", "branch", "task"])
            .style(Style::default().add_modifier(Modifier::BOLD));
        let rows: Vec<Row> = self
            .listings
            .iter()
            .map(|l| {
                Row::new(vec![
                    clean_line(&l.id),
                    l.state_label(),
                    clean_line(&l.branch),
                    clean_line(&l.description),
                ])
            })
            .collect();
        let widths = [
            Constraint::Length(9),
            Constraint::Length(16),
            Constraint::Length(28),
            Constraint::Min(10),
        ];
        let table = Table::new(rows, widths)
            .header(header)
            .row_highlight_style(Style::default().bg(Color::DarkGray))
            .highlight_symbol("❯ ")
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(title)
                    .title_bottom(clean_line(self.message.as_deref().unwrap_or_default())),
            );
        let mut state = TableState::default();
        if !self.listings.is_empty() {
            state.select(Some(self.selected));
        }
        frame.render_stateful_widget(table, area, &mut state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worktree::{DiffSummary, Status};

    fn listing(id: &str, uncommitted: bool, ahead: u32) -> Listing {
        serde_json::from_value(serde_json::json!({
            "id": id, "branch": format!("crew/{id}/x"), "path": format!("/w/{id}"),
            "status": serde_json::to_value(Status::Kept).unwrap(), "description": format!("job {id}"),
            "base_commit": "abc", "summary": serde_json::to_value(DiffSummary {
                uncommitted, commits_ahead: ahead, ..DiffSummary::default()
            }).unwrap()
        }))
        .unwrap()
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, crossterm::event::KeyModifiers::NONE)
    }

    fn draw(p: &WorktreesPanel) -> String {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(110, 8)).unwrap();
        t.draw(|f| p.render(f, f.area())).unwrap();
        format!("{}", t.backend())
    }

    #[test]
    fn keys_choose_diff_merge_squash_keep_and_a_discard_of_work_asks_first() {
        let mut p = WorktreesPanel {
            open: true,
            ..WorktreesPanel::default()
        };
        p.set_listings(vec![listing("t1", true, 0), listing("t2", false, 0)]);
        let screen = draw(&p);
        assert!(
            screen.contains("t1") && screen.contains("dirty") && screen.contains("clean"),
            "{screen}"
        );
        assert_eq!(
            p.on_key(key(KeyCode::Enter)),
            WorktreeAction::Act(Review::Diff, "t1".into())
        );
        assert_eq!(
            p.on_key(key(KeyCode::Char('m'))),
            WorktreeAction::Act(Review::Merge, "t1".into())
        );
        assert_eq!(
            p.on_key(key(KeyCode::Char('s'))),
            WorktreeAction::Act(Review::Squash, "t1".into())
        );
        assert_eq!(
            p.on_key(key(KeyCode::Char('k'))),
            WorktreeAction::Keep("t1".into())
        );
        // t1 holds uncommitted work: x asks, and only y discards it.
        assert_eq!(p.on_key(key(KeyCode::Char('x'))), WorktreeAction::None);
        assert!(draw(&p).contains("Discard t1 with the work it holds?"));
        assert_eq!(p.on_key(key(KeyCode::Char('n'))), WorktreeAction::None);
        assert!(p.confirm.is_none());
        p.on_key(key(KeyCode::Char('x')));
        assert_eq!(
            p.on_key(key(KeyCode::Char('y'))),
            WorktreeAction::Act(Review::Discard, "t1".into())
        );
        // t2 is clean: nothing to lose, no question.
        p.on_key(key(KeyCode::Down));
        assert_eq!(
            p.on_key(key(KeyCode::Char('x'))),
            WorktreeAction::Act(Review::Discard, "t2".into())
        );
        p.on_key(key(KeyCode::Esc));
        assert!(!p.open);
    }

    #[test]
    fn the_diff_view_scrolls_and_esc_goes_back() {
        let mut p = WorktreesPanel {
            open: true,
            ..WorktreesPanel::default()
        };
        p.set_listings(vec![listing("t1", false, 1)]);
        let text: String = (0..30).map(|i| format!("+line {i}\n")).collect();
        p.diff = Some(("t1".into(), text, 0));
        assert!(draw(&p).contains("+line 0"));
        p.on_key(key(KeyCode::PageDown));
        let screen = draw(&p);
        assert!(
            screen.contains("+line 20") && !screen.contains("+line 0 "),
            "{screen}"
        );
        p.on_key(key(KeyCode::Esc));
        assert!(p.diff.is_none() && p.open);
    }
}
