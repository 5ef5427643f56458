//! Starting a session's screen: the first-run trust prompt (before the settings load),
//! the facts the app shows about the session, the greeting (with a resumed session's
//! conversation), and the session's web dashboard.

use super::app::{App, SessionInfo};
use super::screen::Screen;
use super::transcript::Entry;
use super::trust_prompt::{self, Answer, TrustPrompt};
use crate::agent::catalog::Catalog;
use crate::protocol::{ContentBlock, Message, Role};
use crate::session::build::{Options, Prepared};

/// Starts the session's dashboard and says where it is (or why it is not).
pub(super) async fn serve_dashboard(
    app: &mut App,
    prepared: &Prepared,
    listen: crate::dashboard::Listen,
) -> Option<crate::dashboard::Dashboard> {
    use crate::dashboard::{Dashboard, Scope};
    let Some(live) = prepared.live() else {
        app.transcript.push(Entry::Error(
            "no dashboard: the session could not register under ~/.crew/run".into(),
        ));
        return None;
    };
    match Dashboard::start(listen, Scope::Own(live.entry().clone())).await {
        Ok(d) => {
            if let Some(w) = d.warning() {
                app.transcript.push(Entry::Error(format!("warning: {w}")));
            }
            app.transcript
                .push(Entry::Notice(format!("Dashboard: {}", d.url())));
            Some(d)
        }
        Err(e) => {
            app.transcript
                .push(Entry::Error(format!("no dashboard: {e}")));
            None
        }
    }
}

/// The first-run trust prompt, before the session (and its settings) are loaded.
pub(super) async fn ask_trust(opts: &Options, screen: &mut Screen) -> anyhow::Result<()> {
    let cwd = crate::session::build::working_dir(opts)?;
    let root = crate::store::project_root(&cwd);
    let Some(prompt) = TrustPrompt::needed(&root, crate::store::home_dir().as_deref()) else {
        return Ok(());
    };
    let answer = trust_prompt::ask(&mut screen.terminal, &mut screen.keys, &prompt).await;
    if answer? == Answer::Trust {
        prompt.grant()?;
    }
    Ok(())
}

pub(super) fn session_info(p: &Prepared) -> SessionInfo {
    let root = crate::store::project_root(&p.cwd);
    let home = crate::store::home_dir();
    let catalog = Catalog::load(&root, home.as_deref());
    SessionInfo {
        session_id: p.session_id.clone(),
        cwd: p.cwd.clone(),
        project_root: root,
        home,
        model: p.model.clone(),
        agents: catalog
            .agents
            .values()
            .map(|a| (a.name.clone(), a.description.clone()))
            .collect(),
        commands: p
            .commands
            .names()
            .into_iter()
            .filter_map(|name| {
                let c = p.commands.get(&name)?;
                let hint = c
                    .argument_hint
                    .as_deref()
                    .map_or(String::new(), |h| format!("{h} "));
                Some((name, format!("{hint}{} ({})", c.description, c.origin())))
            })
            .collect(),
        auto: Some(p.auto.clone()),
        bypass_disabled: p.bypass_disabled,
        suspended_in_auto: p.suspended_in_auto.clone(),
    }
}

pub(super) fn greet(app: &mut App, p: &Prepared) {
    if p.is_demo {
        app.transcript.push(Entry::Notice(
            "No model configured and no ANTHROPIC_API_KEY/OPENAI_API_KEY set: the built-in demo plays the model.".into(),
        ));
    }
    if !p.resumed.is_empty() {
        show_conversation(app, &p.resumed);
        app.memory_injected = crate::memory::render::injected_paths(&p.resumed);
        app.transcript.push(Entry::Notice(format!(
            "Resumed session {} ({} messages).",
            p.session_id,
            p.resumed.len()
        )));
    }
    app.transcript.push(Entry::Notice(
        "crew — type a task; /help for commands, Shift+Tab for permission modes.".into(),
    ));
}

pub(super) fn show_conversation(app: &mut App, conversation: &[Message]) {
    for m in conversation {
        for block in &m.content {
            match (m.role, block) {
                (Role::User, ContentBlock::Text { text }) => {
                    app.transcript.push(Entry::User(text.clone()))
                }
                (_, ContentBlock::Text { text }) => {
                    app.transcript.push(Entry::Assistant(text.clone()))
                }
                (_, ContentBlock::ToolUse(call)) => app.transcript.tool_started("lead", call),
                (_, ContentBlock::ToolResult(r)) => {
                    let first = r.content.lines().next().unwrap_or("").to_string();
                    app.transcript
                        .tool_finished("lead", &r.tool_use_id, r.is_error, &first);
                    app.transcript
                        .tool_output("lead", &r.tool_use_id, &r.content)
                }
                _ => {}
            }
        }
    }
}
