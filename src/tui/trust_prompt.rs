//! The first-run trust prompt: before a session starts in a folder whose shared
//! `.crew/settings.json` or `.claude/settings.json` is not trusted yet, the TUI asks "Trust this folder?" and shows
//! what the file would switch on (allow rules, defaultMode, worktree.setup, …). `y`
//! trusts the project root (`crate::trust`); `n`, Esc or Ctrl-C start the session
//! without those settings (its deny and ask rules apply either way).

use std::path::{Path, PathBuf};

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use serde_json::Value;

use crate::sanitize::clean_line;
use crate::trust::{TrustState, TrustStore};

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Trust the folder.
    Trust,
    /// Start without the folder's shared settings.
    Decline,
}

/// A pending question for one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrustPrompt {
    /// The project root to trust.
    pub dir: PathBuf,
    /// What its shared settings would switch on, one line each.
    pub unlocks: Vec<String>,
    /// What changed since the folder was trusted (trust pins content), one line each;
    /// empty when it was never trusted.
    pub changed: Vec<String>,
    store: TrustStore,
}

impl TrustPrompt {
    /// The question to ask for `project_root`, if any: only when it has a shared
    /// `.crew/settings.json` or `.claude/settings.json` and is not trusted. An unreadable
    /// trust list asks too.
    pub(crate) fn needed(project_root: &Path, home: Option<&Path>) -> Option<TrustPrompt> {
        let mut unlocked = Vec::new();
        for (rel, prefix) in [
            (".crew/settings.json", ""),
            (".claude/settings.json", ".claude/settings.json: "),
        ] {
            if let Ok(text) = std::fs::read_to_string(project_root.join(rel)) {
                unlocked.extend(unlocks(&text).into_iter().map(|u| format!("{prefix}{u}")));
            }
        }
        let store = TrustStore::for_home(home?);
        // A trusted folder whose executable configuration changed asks again, naming the
        // changes (an unreadable list asks too).
        let changed = match store.state(project_root) {
            Ok(TrustState::Trusted(_)) => return None,
            Ok(TrustState::Changed { changes, .. }) => {
                changes.iter().map(ToString::to_string).collect()
            }
            Ok(TrustState::Unpinned(_)) => {
                vec!["trusted before crew pinned the content it trusts".to_string()]
            }
            Ok(TrustState::NotTrusted) | Err(_) => Vec::new(),
        };
        if unlocked.is_empty() && changed.is_empty() {
            return None;
        }
        Some(TrustPrompt {
            dir: std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.into()),
            unlocks: unlocked,
            changed,
            store,
        })
    }

    /// Records the user's trust.
    pub(crate) fn grant(&self) -> Result<(), crate::trust::TrustError> {
        self.store.trust(&self.dir).map(|_| ())
    }

    /// The answer a key gives, if any.
    pub(crate) fn on_key(&self, key: KeyEvent) -> Option<Answer> {
        match key.code {
            KeyCode::Char('y' | 'Y') => Some(Answer::Trust),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                Some(Answer::Decline)
            }
            KeyCode::Char('n' | 'N') | KeyCode::Esc => Some(Answer::Decline),
            _ => None,
        }
    }

    /// Draws the question centred in `area`.
    pub(crate) fn render(&self, frame: &mut Frame, area: Rect) {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let mut lines = vec![
            Line::from(Span::styled("Trust this folder?", bold)),
            Line::from(""),
            Line::from(clean_line(&self.dir.display().to_string())),
            Line::from(""),
            Line::from(
                "It has shared project settings (.crew/settings.json). A repository you cloned can use them to allow commands and run code on this machine:",
            ),
        ];
        lines.extend(
            self.unlocks
                .iter()
                .map(|u| Line::from(format!("  • {}", clean_line(u)))),
        );
        if !self.changed.is_empty() {
            lines.push(Line::from(""));
            lines.push(Line::from(
                "You trusted it before, but its hooks, MCP servers, agent definitions or the files they run changed since (`crew trust --diff` lists them); y trusts the content as it is now:",
            ));
            lines.extend(
                self.changed
                    .iter()
                    .map(|c| Line::from(format!("  • {}", clean_line(c)))),
            );
        }
        lines.extend([
            Line::from(""),
            Line::from(
                "Trust it only if you trust its authors. Its deny and ask rules apply either way; undo with `crew trust --revoke DIR`.",
            ),
            Line::from(""),
            Line::from(vec![
                Span::styled("[y]", bold.fg(Color::Green)),
                Span::raw(" trust this folder   "),
                Span::styled("[n]", bold.fg(Color::Red)),
                Span::raw(" continue without its shared settings"),
            ]),
        ]);
        let width = area.width.saturating_sub(4).min(90);
        let height = (lines.len() as u16 + 6).min(area.height);
        let rect = Rect {
            x: area.x + (area.width.saturating_sub(width)) / 2,
            y: area.y + (area.height.saturating_sub(height)) / 2,
            width,
            height,
        };
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title(" crew ")),
            rect,
        );
    }
}

/// What a shared settings file would switch on, for the prompt.
fn unlocks(text: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return vec!["(the file is not valid JSON; crew will report it)".into()];
    };
    let mut out = Vec::new();
    let list = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|r| r.as_str().unwrap_or("?").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let allow = list(v.pointer("/permissions/allow"));
    if !allow.is_empty() {
        out.push(format!("permissions.allow: {}", allow.join(", ")));
    }
    if let Some(mode) = v
        .pointer("/permissions/defaultMode")
        .and_then(Value::as_str)
    {
        out.push(format!("permissions.defaultMode: {mode}"));
    }
    if let Some(setup) = v.pointer("/worktree/setup").and_then(Value::as_str) {
        out.push(format!("worktree.setup: {setup}"));
    }
    for key in ["hooks", "mcpServers"] {
        if v.get(key).is_some() {
            out.push(key.to_string());
        }
    }
    if out.is_empty() {
        out.push("nothing beyond deny and ask rules today".into());
    }
    out
}

/// Shows `prompt` until the user answers. `keys` is the main screen's input too: keys
/// typed after the answer stay in it for the session.
pub(crate) async fn ask(
    terminal: &mut ratatui::DefaultTerminal,
    keys: &mut EventStream,
    prompt: &TrustPrompt,
) -> std::io::Result<Answer> {
    loop {
        terminal.draw(|f| prompt.render(f, f.area()))?;
        match keys.next().await {
            None => return Ok(Answer::Decline),
            Some(Err(e)) => return Err(e),
            Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                if let Some(a) = prompt.on_key(k) {
                    return Ok(a);
                }
            }
            Some(Ok(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    #[test]
    fn asks_only_for_untrusted_shared_settings_and_lists_what_they_unlock() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        let proj = home.join("proj");
        std::fs::create_dir_all(proj.join(".crew")).unwrap();
        assert_eq!(TrustPrompt::needed(&proj, Some(&home)), None, "no file");
        std::fs::write(
            proj.join(".crew/settings.json"),
            r#"{"permissions":{"allow":["Bash","Edit"]},"worktree":{"setup":"npm ci"}}"#,
        )
        .unwrap();
        assert_eq!(
            TrustPrompt::needed(&proj, None),
            None,
            "nowhere to store it"
        );
        let p = TrustPrompt::needed(&proj, Some(&home)).unwrap();
        assert_eq!(
            p.unlocks,
            ["permissions.allow: Bash, Edit", "worktree.setup: npm ci"]
        );
        let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
        assert_eq!(p.on_key(key(KeyCode::Char('x'))), None);
        assert_eq!(p.on_key(key(KeyCode::Esc)), Some(Answer::Decline));
        assert_eq!(p.on_key(key(KeyCode::Char('n'))), Some(Answer::Decline));
        assert_eq!(p.on_key(key(KeyCode::Char('y'))), Some(Answer::Trust));
        let mut t = Terminal::new(TestBackend::new(100, 24)).unwrap();
        t.draw(|f| p.render(f, f.area())).unwrap();
        let screen: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        for want in [
            "Trust this folder?",
            "permissions.allow: Bash, Edit",
            "[y]",
            "[n]",
        ] {
            assert!(screen.contains(want), "{want} in {screen}");
        }
        p.grant().unwrap();
        assert_eq!(TrustPrompt::needed(&proj, Some(&home)), None, "trusted now");
    }

    #[test]
    fn claude_code_project_settings_ask_too() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        let proj = home.join("proj");
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        std::fs::write(
            proj.join(".claude/settings.json"),
            r#"{"permissions":{"allow":["Bash(npm run test:*)"]}}"#,
        )
        .unwrap();
        let p = TrustPrompt::needed(&proj, Some(&home)).unwrap();
        assert_eq!(
            p.unlocks,
            [".claude/settings.json: permissions.allow: Bash(npm run test:*)"]
        );
    }
}
