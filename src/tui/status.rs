//! The status line: agent mode, permission mode (in colour; bypass in red), model,
//! tokens and cost so far, running background tasks, and whether a turn is running.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::permission::PermissionMode;
use crate::pricing::{cost_usd, total_tokens};
use crate::protocol::Usage;

/// What the status line shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Status {
    /// `chat`, `plan` or `do`.
    pub agent_mode: &'static str,
    /// The lead's permission mode.
    pub permission: PermissionMode,
    /// The model's name.
    pub model: String,
    /// Usage of the session so far (lead and subagents).
    pub usage: Usage,
    /// The lead's latest request, for its prompt-cache figures.
    pub last_request: Usage,
    /// Background tasks and subagents still pending or running.
    pub running_tasks: usize,
    /// Whether the lead is in a run.
    pub busy: bool,
    /// Why the breaker switched auto mode off (shown until `/auto reset`).
    pub auto_off: Option<String>,
}

/// The colour a permission mode is shown in: the more it allows, the warmer.
pub(crate) fn mode_color(mode: PermissionMode) -> Color {
    match mode {
        PermissionMode::Strict => Color::Blue,
        PermissionMode::Default => Color::Green,
        PermissionMode::AcceptEdits => Color::LightMagenta,
        PermissionMode::BypassPermissions => Color::Red,
        PermissionMode::DontAsk => Color::Magenta,
        // A model, not a human, answers: warn (bypass stays red).
        PermissionMode::Auto => Color::Yellow,
    }
}

/// Compact token count: `950`, `12.3k`, `4.1M`.
pub(crate) fn format_tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The last request's cache figures: ` · cache 93% (12.3k read, 410 new, 0 uncached)`,
/// or nothing before the first request.
fn cache_text(u: &Usage) -> String {
    let input = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
    if input == 0 {
        return String::new();
    }
    format!(
        " · cache {:.0}% ({} read, {} new, {} uncached)",
        crate::agent::budget::cache_share(u) * 100.0,
        format_tokens(u.cache_read_input_tokens),
        format_tokens(u.cache_creation_input_tokens),
        format_tokens(u.input_tokens)
    )
}

impl Status {
    /// The status as one line of spans.
    pub(crate) fn line(&self) -> Line<'static> {
        let sep = || Span::styled(" │ ", Style::default().fg(Color::DarkGray));
        let agent_color = match self.agent_mode {
            "plan" => Color::Cyan,
            "do" => Color::LightGreen,
            _ => Color::White,
        };
        let mut tokens = format!("{} tok", format_tokens(total_tokens(&self.usage)));
        if let Some(cost) = cost_usd(&self.model, &self.usage) {
            tokens.push_str(&format!(" ${cost:.4}"));
        }
        tokens.push_str(&cache_text(&self.last_request));
        let mut spans = vec![
            Span::styled(
                format!(" {} ", self.agent_mode),
                Style::default()
                    .fg(agent_color)
                    .add_modifier(Modifier::BOLD),
            ),
            sep(),
            Span::styled(
                format!("⏵ {}", self.permission),
                Style::default()
                    .fg(mode_color(self.permission))
                    .add_modifier(Modifier::BOLD),
            ),
            Span::styled(" (shift+tab)", Style::default().fg(Color::DarkGray)),
            sep(),
        ];
        if let Some(why) = &self.auto_off {
            spans.push(Span::styled(
                format!(
                    "auto off: {} (/auto reset)",
                    crate::sanitize::clean_line(why)
                ),
                Style::default().fg(Color::Yellow),
            ));
            spans.push(sep());
        }
        spans.extend([
            Span::raw(crate::sanitize::clean_line(&self.model)),
            sep(),
            Span::raw(tokens),
            sep(),
            Span::raw(format!("{} running tasks", self.running_tasks)),
        ]);
        if self.busy {
            spans.push(sep());
            spans.push(Span::styled(
                "working… (esc to interrupt)",
                Style::default().fg(Color::Yellow),
            ));
        }
        Line::from(spans)
    }

    /// Draws the status line into `area` (one row).
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect) {
        frame.render_widget(Paragraph::new(self.line()), area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn status(mode: PermissionMode) -> Status {
        Status {
            agent_mode: "chat",
            permission: mode,
            model: "claude-sonnet-4-20250514".into(),
            usage: Usage {
                input_tokens: 12_000,
                output_tokens: 800,
                ..Usage::default()
            },
            last_request: Usage::default(),
            running_tasks: 2,
            busy: false,
            auto_off: None,
        }
    }

    fn draw(s: &Status) -> Terminal<TestBackend> {
        let mut t = Terminal::new(TestBackend::new(110, 1)).unwrap();
        t.draw(|f| s.render(f, f.area())).unwrap();
        t
    }

    /// The foreground colour of the first cell showing `needle`.
    fn color_of(t: &Terminal<TestBackend>, needle: &str) -> Color {
        let buf = t.backend().buffer();
        let row: String = (0..buf.area.width)
            .map(|x| buf[(x, 0)].symbol().to_string())
            .collect();
        let byte = row.find(needle).unwrap();
        let col = row[..byte].chars().count() as u16;
        buf[(col, 0)].fg
    }

    #[test]
    fn status_line_in_each_permission_mode() {
        for mode in [
            PermissionMode::Default,
            PermissionMode::AcceptEdits,
            PermissionMode::BypassPermissions,
            PermissionMode::Strict,
            PermissionMode::Auto,
        ] {
            let t = draw(&status(mode));
            insta::assert_snapshot!(format!("status_{mode}"), t.backend());
            assert_eq!(color_of(&t, mode.as_str()), mode_color(mode));
        }
        assert_eq!(mode_color(PermissionMode::BypassPermissions), Color::Red);
        assert_eq!(mode_color(PermissionMode::Auto), Color::Yellow);
    }

    #[test]
    fn a_tripped_breaker_says_why_auto_is_off() {
        let mut s = status(PermissionMode::Default);
        s.auto_off = Some("the classifier denied 3 calls in a row".into());
        let text = format!("{}", draw(&s).backend());
        assert!(
            text.contains("auto off: the classifier denied 3 calls in a row"),
            "{text}"
        );
    }

    #[test]
    fn busy_plan_status_with_unknown_model_shows_tokens_only() {
        let mut s = status(PermissionMode::Default);
        s.agent_mode = "plan";
        s.model = "script".into();
        s.busy = true;
        let t = draw(&s);
        insta::assert_snapshot!(t.backend());
        let text = format!("{}", t.backend());
        assert!(text.contains("12.8k tok") && !text.contains('$'), "{text}");
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    #[test]
    fn the_last_requests_cache_figures_are_shown_once_there_is_one() {
        assert_eq!(cache_text(&Usage::default()), "");
        let u = Usage {
            input_tokens: 20,
            cache_creation_input_tokens: 410,
            cache_read_input_tokens: 12_300,
            output_tokens: 50,
        };
        assert_eq!(
            cache_text(&u),
            " · cache 97% (12.3k read, 410 new, 20 uncached)"
        );
    }
}
