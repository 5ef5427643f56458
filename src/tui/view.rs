//! Lays the components out on the screen: transcript above, input box and status line
//! below, and the dialogs (approval, plan review, tasks, quit) over the transcript.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::App;
use super::input::Focus;
use super::plan::PlanStage;
use super::status::Status;
use crate::sanitize::clean_line;

/// The most command completions shown at once.
const MAX_HINTS: usize = 8;

/// The status line's contents for the app.
pub(crate) fn status(app: &App) -> Status {
    Status {
        agent_mode: app.agent_mode().as_str(),
        permission: app.permission,
        model: app.info.model.clone(),
        usage: app.usage,
        last_request: app.last_request,
        running_tasks: app.tasks.running(),
        busy: app.running.is_some(),
        auto_off: app.auto_off.clone(),
    }
}

fn input_title(app: &App) -> &'static str {
    match app.plan {
        PlanStage::Ready => " plan: describe the task ",
        PlanStage::Editing { .. } => " editing the plan (Enter: review it again) ",
        _ if app.running.is_some() => " working… (type ahead; Esc interrupts) ",
        _ => " > ",
    }
}

/// Draws the whole app; `now_ms` is the clock for task elapsed times.
pub(crate) fn draw(app: &App, frame: &mut Frame, now_ms: u64) {
    let area = frame.area();
    let input_height = app.input.height(area.height / 3 + 2);
    // Dialogs take rows below the transcript rather than covering its newest lines.
    // While a `/` command is being typed, the matching commands show above the input.
    let hints = app.completions();
    let hint_height =
        (hints.len().min(MAX_HINTS) as u16).saturating_add(u16::from(!hints.is_empty()) * 2);
    let dialog_height = app
        .approvals
        .height(area.width)
        .max(app.plan.height())
        .max(hint_height)
        .min(area.height / 2);
    let [main, dialog, input, status_row] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(dialog_height),
        Constraint::Length(input_height),
        Constraint::Length(1),
    ])
    .areas(area);
    app.transcript.render(frame, main);
    let dialog_open = app.approvals.is_open()
        || app.confirm_quit
        || app.tasks.open
        || app.team.open
        || app.worktrees.open;
    let focus = if dialog_open {
        Focus::Elsewhere
    } else {
        Focus::Typing
    };
    app.input.render(frame, input, input_title(app), focus);
    status(app).render(frame, status_row);
    if app.tasks.open {
        app.tasks.render(frame, main, now_ms);
    } else if app.team.open {
        app.team.render(frame, main, now_ms);
    } else if app.worktrees.open {
        app.worktrees.render(frame, main);
    }
    if app.approvals.is_open() {
        app.approvals.render(frame, dialog);
    } else if app.plan.height() > 0 || hints.is_empty() {
        app.plan.render(frame, dialog);
    } else {
        let text: Vec<String> = hints
            .iter()
            .take(MAX_HINTS)
            .map(|(name, description)| clean_line(&format!("/{name:<16} {description}")))
            .collect();
        frame.render_widget(
            Paragraph::new(text.join("\n")).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" commands (Tab completes) "),
            ),
            dialog,
        );
    }
    if app.confirm_quit {
        let rect = Rect {
            y: main.bottom().saturating_sub(3),
            height: 3.min(main.height),
            ..main
        };
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(format!(
                "{} background task(s) still running. Stop them and quit? (y/n)",
                app.tasks.running()
            ))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(Style::default().fg(Color::Red)),
            ),
            rect,
        );
    }
    guard(frame.buffer_mut());
}

/// The last line of defence behind the sanitizer at each draw site: a cell whose symbol
/// still holds a character that changes how the terminal displays (a draw site that
/// forgot [`crate::sanitize`]) shows `�` instead, so no such character is ever written.
fn guard(buf: &mut Buffer) {
    for cell in buf.content.iter_mut() {
        if cell.symbol().chars().any(crate::sanitize::is_unsafe) {
            cell.set_symbol("\u{fffd}");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::runner::{RunOutcome, RunStatus};
    use crate::approver::ApprovalRequest;
    use crate::approver::actor::PendingApproval;
    use crate::permission::{Decision, PermissionMode, Source, Verdict};
    use crate::protocol::{ToolCall, Usage};
    use crate::tui::app::{App, SessionInfo};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn app() -> App {
        App::new(
            SessionInfo {
                model: "gpt-4o".into(),
                ..SessionInfo::default()
            },
            PermissionMode::Default,
        )
    }

    fn draw(app: &App) -> String {
        let mut t = Terminal::new(TestBackend::new(80, 20)).unwrap();
        t.draw(|f| super::draw(app, f, 0)).unwrap();
        format!("{}", t.backend())
    }

    #[test]
    fn whole_screen_with_an_approval_keeps_the_newest_transcript_lines_visible() {
        let mut a = app();
        a.submit("create the file".into());
        a.transcript.push_text("Creating it now.");
        let call = ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: r#"{"path":"out.txt","content":"x"}"#.into(),
        };
        a.transcript.tool_started("lead", &call);
        let (tx, _rx) = ractor::concurrency::oneshot();
        a.approvals.push(PendingApproval {
            request: ApprovalRequest {
                agent: "lead".into(),
                call,
                decision: Decision::new(Verdict::Ask, Source::Mode, "default mode asks"),
                mode: PermissionMode::Default,
                teammate: None,
            },
            reply: tx.into(),
        });
        let screen = draw(&a);
        insta::assert_snapshot!(screen);
        assert!(screen.contains("write_file(out.txt)") && screen.contains("Creating it now."));
    }

    #[test]
    fn typing_a_slash_shows_the_matching_commands_above_the_input() {
        let mut a = app();
        a.info.commands = vec![("review".into(), "[file] Review a file (project)".into())];
        a.input.set_text("/re");
        let screen = draw(&a);
        assert!(screen.contains("commands (Tab completes)"), "{screen}");
        assert!(screen.contains("/review") && screen.contains("Review a file (project)"));
        assert!(
            !screen.contains("/plan"),
            "only matching commands: {screen}"
        );
        a.input.set_text("/review src/main.rs");
        assert!(!draw(&a).contains("Tab completes"));
    }

    #[test]
    fn plan_review_dialog_shows_the_plan_mode_and_choices() {
        let mut a = app();
        a.submit("/plan".into());
        a.submit("add a flag".into());
        a.take_effects();
        a.on_run_finished(Ok(RunOutcome {
            result: "1. edit cli.rs\n2. add a test".into(),
            status: RunStatus::Completed,
            usage: Usage::default(),
            turns: 1,
            tool_calls: 0,
        }));
        let screen = draw(&a);
        insta::assert_snapshot!(screen);
        assert!(screen.contains("Plan ready for review") && screen.contains("2. add a test"));
        assert!(screen.contains("permission mode default"));
    }
}
