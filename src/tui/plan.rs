//! The Plan → approve → Do flow. `/plan` arms Plan Mode; the next input runs a read-only
//! Plan request; when the plan arrives the user approves it (a Do request with the
//! original task and the approved plan, in the permission mode they pick), edits it in
//! the input box, or rejects it. Pure state: the app turns its results into runs.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::status::mode_color;
use crate::agent::mode::AgentMode;
use crate::agent::runner::RunRequest;
use crate::agent::transition::{ModeContext, cycle_permission};
use crate::permission::PermissionMode;

/// Where the flow is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum PlanStage {
    /// Not planning: inputs are chat requests.
    #[default]
    Off,
    /// Plan Mode is on: the next input is planned.
    Ready,
    /// A Plan run is working on this task.
    Planning {
        /// The user's task.
        task: String,
    },
    /// A plan waits for approval.
    Review {
        /// The user's task.
        task: String,
        /// The plan.
        plan: String,
        /// The permission mode the Do run will use (Shift+Tab changes it).
        mode: PermissionMode,
    },
    /// The plan is open in the input box.
    Editing {
        /// The user's task.
        task: String,
        /// The permission mode picked so far.
        mode: PermissionMode,
    },
}

impl PlanStage {
    /// The agent mode this stage shows in the status line.
    pub(crate) fn agent_mode(&self) -> AgentMode {
        match self {
            PlanStage::Off => AgentMode::Chat,
            _ => AgentMode::Plan,
        }
    }

    /// The request for an input typed while Plan Mode is ready.
    pub(crate) fn start(&mut self, task: String) -> RunRequest {
        *self = PlanStage::Planning { task: task.clone() };
        RunRequest {
            mode: AgentMode::Plan,
            task,
            plan: None,
        }
    }

    /// A Plan run ended: with a plan, it goes to review; without one, back to ready.
    pub(crate) fn planned(&mut self, plan: Option<String>, mode: PermissionMode) {
        let PlanStage::Planning { task } = std::mem::take(self) else {
            return;
        };
        *self = match plan.filter(|p| !p.trim().is_empty()) {
            Some(plan) => PlanStage::Review { task, plan, mode },
            None => PlanStage::Ready,
        };
    }

    /// Approves the plan under review: the Do request and the permission mode it runs in.
    pub(crate) fn approve(&mut self) -> Option<(RunRequest, PermissionMode)> {
        let PlanStage::Review { task, plan, mode } = std::mem::take(self) else {
            return None;
        };
        Some((
            RunRequest {
                mode: AgentMode::Do,
                task,
                plan: Some(plan),
            },
            mode,
        ))
    }

    /// Opens the plan for editing; returns its text for the input box.
    pub(crate) fn edit(&mut self) -> Option<String> {
        let PlanStage::Review { task, plan, mode } = std::mem::take(self) else {
            return None;
        };
        *self = PlanStage::Editing { task, mode };
        Some(plan)
    }

    /// The edited plan was submitted: back to review with it.
    pub(crate) fn edited(&mut self, plan: String) {
        if let PlanStage::Editing { task, mode } = std::mem::take(self) {
            *self = PlanStage::Review { task, plan, mode };
        }
    }

    /// Rejects the plan: Plan Mode ends (the app restores the mode from before it).
    #[cfg(test)]
    pub(crate) fn reject(&mut self) {
        *self = PlanStage::Off;
    }

    /// Cycles the permission mode the Do run will use (in review), skipping the modes
    /// `ctx` forbids.
    pub(crate) fn cycle_mode(&mut self, ctx: &ModeContext) -> bool {
        match self {
            PlanStage::Review { mode, .. } => {
                *mode = cycle_permission(*mode, ctx);
                true
            }
            _ => false,
        }
    }

    /// Rows the review dialog wants (0 outside review).
    pub(crate) fn height(&self) -> u16 {
        match self {
            PlanStage::Review { plan, .. } => {
                u16::try_from(plan.lines().count() + 5).unwrap_or(u16::MAX)
            }
            _ => 0,
        }
    }

    /// Draws the review dialog at the bottom of `area` (only in review).
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect) {
        let PlanStage::Review { plan, mode, .. } = self else {
            return;
        };
        let mut lines: Vec<Line> = plan
            .lines()
            .map(|l| Line::raw(crate::sanitize::clean_line(l)))
            .collect();
        lines.push(Line::raw(""));
        lines.push(Line::from(vec![
            Span::raw("Carry it out in permission mode "),
            Span::styled(
                mode.as_str(),
                Style::default()
                    .fg(mode_color(*mode))
                    .add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                " (shift+tab to change)",
                Style::default().fg(Color::DarkGray),
            ),
        ]));
        lines.push(Line::raw(
            "1. Approve and do it   2. Edit the plan   3. Reject",
        ));
        let height = u16::try_from(lines.len() + 2)
            .unwrap_or(u16::MAX)
            .min(area.height);
        let rect = Rect {
            x: area.x,
            y: area.bottom().saturating_sub(height),
            width: area.width,
            height,
        };
        // Show the end of a long plan: the choices must stay visible.
        let skip = (lines.len() + 2).saturating_sub(usize::from(height));
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines.split_off(skip.min(lines.len())))
                .wrap(Wrap { trim: false })
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .border_style(Style::default().fg(Color::Cyan))
                        .title(" Plan ready for review "),
                ),
            rect,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_builds_a_do_request_with_task_plan_and_chosen_mode() {
        let mut stage = PlanStage::Ready;
        let req = stage.start("add a --verbose flag".into());
        assert_eq!(req.mode, AgentMode::Plan);
        stage.planned(Some("1. edit cli.rs".into()), PermissionMode::Default);
        assert!(stage.cycle_mode(&ModeContext::default()));
        let (req, mode) = stage.approve().unwrap();
        assert_eq!(req.mode, AgentMode::Do);
        assert_eq!(req.task, "add a --verbose flag");
        assert_eq!(req.plan.as_deref(), Some("1. edit cli.rs"));
        assert_eq!(mode, PermissionMode::AcceptEdits);
        assert_eq!(stage, PlanStage::Off);
    }

    #[test]
    fn edit_then_approve_uses_the_edited_plan_and_reject_keeps_planning() {
        let mut stage = PlanStage::Ready;
        stage.start("task".into());
        stage.planned(Some("draft".into()), PermissionMode::Strict);
        assert_eq!(stage.edit().as_deref(), Some("draft"));
        stage.edited("better plan".into());
        let (req, mode) = stage.approve().unwrap();
        assert_eq!(req.plan.as_deref(), Some("better plan"));
        assert_eq!(mode, PermissionMode::Strict);

        let mut stage = PlanStage::Ready;
        stage.start("task".into());
        stage.planned(Some("p".into()), PermissionMode::Default);
        stage.reject();
        assert_eq!(stage, PlanStage::Off);
        // A Plan run without a plan (failed, cancelled) goes back to ready.
        let mut stage = PlanStage::Ready;
        stage.start("again".into());
        stage.planned(None, PermissionMode::Default);
        assert_eq!(stage, PlanStage::Ready);
        assert!(stage.approve().is_none());
    }
}
