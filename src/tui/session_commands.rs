//! The slash commands about the session itself, as Claude Code has them: `/clear` (a new
//! conversation in a new session; the old one stays resumable), `/resume [ID]` (list the
//! project's sessions, or continue one), `/model [NAME]` (show or switch the lead's
//! model), `/cost` (tokens and cost so far) and `/hooks` (the effective hooks). What
//! needs the session or the disk is queued as an effect for the runtime
//! (`session_switch.rs`).

use super::app::{App, Effect};
use super::session_switch::ModelSwitchError;
use crate::agent::ledger::Ledger;
use crate::pricing::total_tokens;
use crate::tui::status::format_tokens;

/// Another session to continue in: the runtime ends this one (its transcript stays
/// resumable) and starts that one in the same terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Switch {
    /// A new session with an empty conversation (`/clear`).
    Clear,
    /// A recorded session of the project, by its id (`/resume ID`, a prefix is enough).
    Resume(String),
}

impl Switch {
    /// Claude Code's `SessionEnd` reason for the session this one replaces.
    pub(crate) fn end_reason(&self) -> &'static str {
        match self {
            Switch::Clear => "clear",
            Switch::Resume(_) => "other",
        }
    }
}

impl App {
    /// `/clear` and `/resume ID`: refused while a turn runs; with background work running
    /// it must be typed twice (ending the session stops that work).
    pub(super) fn switch_command(&mut self, switch: Switch, typed: &str) {
        if self.running.is_some() {
            return self.notice(format!(
                "A turn is running: wait for it to end (Esc interrupts it), then {typed}."
            ));
        }
        let running = self.tasks.running();
        if running > 0 && self.armed_switch.as_ref() != Some(&switch) {
            self.armed_switch = Some(switch);
            return self.notice(format!(
                "{running} background task(s) still running; {typed} ends this session and stops \
                 them. Type {typed} again to go ahead."
            ));
        }
        self.armed_switch = None;
        self.effect(Effect::Switch(switch));
    }

    /// `/model`: the lead's model; with a name, the switch for its next turns.
    pub(super) fn model_command(&mut self, name: &str) {
        if name.is_empty() {
            return self.notice(format!(
                "Model: {}. /model NAME switches the lead for its next turns, keeping the \
                 conversation: an alias (sonnet, opus, haiku), a model name (claude-…, gpt-…, \
                 o3…), anthropic:NAME or openai:NAME; another provider needs its API key set.",
                self.info.model
            ));
        }
        self.effect(Effect::SetModel(name.to_string()));
    }

    /// The runtime switched the lead's model (or could not: `Err` says why, naming the
    /// command).
    pub(crate) fn model_switched(&mut self, result: Result<String, ModelSwitchError>) {
        match result {
            Ok(model) => {
                let when = if self.running.is_some() {
                    "from its next run (the current one keeps its model)"
                } else {
                    "from its next turn"
                };
                self.notice(format!(
                    "The lead uses {model} {when}; the conversation is kept."
                ));
                self.info.model = model;
            }
            Err(why) => self
                .transcript
                .push(super::transcript::Entry::Error(why.to_string())),
        }
    }

    /// `/cost`: what the session has spent, by agent, at list prices.
    pub(super) fn cost_text(&self) -> String {
        cost_text(&self.spent)
    }

    /// `/hooks`: the hooks that run here and where each comes from (read afresh: the
    /// session runs those it loaded at its start).
    pub(super) fn hooks_text(&self) -> String {
        let (root, home) = (&self.info.project_root, self.info.home.as_deref());
        // The installed plugins the settings enable (a `--plugin-dir` is the session's).
        let plugins = crate::plugins::Plugins::load(root, home, &[]).unwrap_or_default();
        let mut catalog = crate::agent::catalog::Catalog::load(root, home);
        catalog.add_plugins(&plugins);
        let effective =
            crate::hooks::listing::effective(root, home, &plugins, catalog.hook_sources());
        let listed = match effective {
            Ok(e) => crate::hooks::listing::text(root, &e),
            Err(e) => format!("The hooks could not be read: {e}"),
        };
        format!(
            "Hooks (as `crew hooks list` shows them; settings changed since the session \
             started apply from the next session):\n{}",
            listed.trim_end()
        )
    }
}

/// The `/cost` text of a session's spending.
pub(crate) fn cost_text(spent: &Ledger) -> String {
    if spent.agents.is_empty() {
        return "Cost: nothing spent yet in this session.".into();
    }
    let mut usage = crate::protocol::Usage::default();
    let (mut cost, mut unpriced, mut requests) = (0.0, 0, 0);
    for a in spent.agents.values() {
        usage.add(&a.usage);
        cost += a.cost_usd;
        unpriced += a.unpriced_requests;
        requests += a.requests;
    }
    let mut text = format!(
        "Total cost: ${cost:.4} at list prices, {requests} model request(s)\n\
         Tokens: {} input · {} output · {} cache read · {} cache write ({} in all)\n\
         By agent:",
        format_tokens(usage.input_tokens),
        format_tokens(usage.output_tokens),
        format_tokens(usage.cache_read_input_tokens),
        format_tokens(usage.cache_creation_input_tokens),
        format_tokens(total_tokens(&usage)),
    );
    for (agent, a) in &spent.agents {
        text.push_str(&format!(
            "\n  {agent} ({}): {} request(s) · {} tokens · {}",
            a.model,
            a.requests,
            format_tokens(total_tokens(&a.usage)),
            Ledger::cost_text(Some(a))
        ));
    }
    if unpriced > 0 {
        text.push_str(&format!(
            "\n{unpriced} request(s) to models without a known price are not in the cost."
        ));
    }
    text
}

/// The `/resume` text: the project's recent sessions, this one marked.
pub(crate) fn sessions_text(sessions: &[crate::session::recent::Recent], current: &str) -> String {
    /// The most sessions listed.
    const SHOWN: usize = 15;
    let others = sessions.iter().filter(|s| s.id != current).count();
    if others == 0 {
        return "No other sessions of this project yet.".into();
    }
    let mut text = String::from("Recent sessions (/resume ID continues one; a prefix is enough):");
    for s in sessions.iter().take(SHOWN) {
        let note = match (s.id == current, s.live_pid) {
            (true, _) => "  [this session]".to_string(),
            (false, Some(pid)) => format!("  [live, pid {pid}]"),
            (false, None) => String::new(),
        };
        text.push_str(&format!("\n  {}  {:>8}  {}{note}", s.id, s.age, s.title));
    }
    if sessions.len() > SHOWN {
        text.push_str(&format!(
            "\n  … {} older (crew sessions list)",
            sessions.len() - SHOWN
        ));
    }
    text
}
