//! What the runtime does for the session commands: switching the lead's model (`/model`:
//! a provider is chosen as `--model` would choose it and handed to the lead for its next
//! runs), listing the project's sessions off the loop (`/resume`), and turning `/clear` or
//! `/resume ID` into the options of the session to start next. The runtime ends the
//! current session (its transcript stays resumable) and starts that one in the same
//! terminal (`runtime::run`).

use ractor::ActorRef;
use tokio::sync::mpsc;

use super::app::App;
use super::jobs::Done;
use super::session_commands::{Switch, sessions_text};
use crate::agent::lead_actor::LeadMsg;
use crate::session::build::{Options, Prepared, Start};

/// The session to continue in, and how it starts.
pub(super) struct Next {
    /// Its options: the first session's, with the session chosen anew and the permission
    /// mode (and any `/model` switch) carried over.
    pub opts: Options,
    /// `SessionStart`'s source for it.
    pub start: Start,
    /// `SessionEnd`'s reason for the session it replaces.
    pub end_reason: &'static str,
}

/// How the event loop ended.
pub(super) enum Exit {
    /// The user quit.
    Quit,
    /// The user switched sessions.
    Switch(Box<Next>),
}

/// Why `/resume ID` starts no other session (the user reads it in the transcript).
#[derive(Debug, thiserror::Error)]
pub(super) enum SwitchError {
    /// No single other session of the project has that id.
    #[error("/resume: {0}")]
    Resume(#[from] crate::session::recent::FindError),
}

/// Why `/model` did not switch the lead's model (the user reads it in the transcript).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ModelSwitchError {
    /// No provider can serve the model: the provider's message, naming `/model`.
    #[error("{0}")]
    Unusable(String),
    /// The lead's actor is gone.
    #[error("/model: the lead agent is gone; the model was not changed")]
    LeadGone,
}

/// The options of the session `switch` asks for, or why there is none (for the user).
pub(super) fn next(
    app: &App,
    prepared: &Prepared,
    opts: &Options,
    switch: Switch,
) -> Result<Next, SwitchError> {
    let mut next = opts.clone();
    next.continue_session = false;
    next.session_id = None;
    next.permission_mode = Some(app.permission.as_str().to_string());
    let end_reason = switch.end_reason();
    let start = match switch {
        Switch::Clear => {
            next.resume = None;
            Start::Clear
        }
        Switch::Resume(wanted) => {
            let sessions = crate::session::recent::recent(&prepared.project_root);
            let id = crate::session::recent::find(&sessions, &wanted, &prepared.session_id)?;
            next.resume = Some(id);
            Start::AsAsked
        }
    };
    Ok(Next {
        opts: next,
        start,
        end_reason,
    })
}

/// `/model SPEC`: chooses the provider as `--model SPEC` would and hands it to the lead
/// for its next runs; `opts` keeps the choice for sessions started later (`/clear`).
pub(super) fn set_model(app: &mut App, lead: &ActorRef<LeadMsg>, opts: &mut Options, spec: &str) {
    let chosen = match crate::session::model::choose(Some(spec), opts.record_requests.clone()) {
        Ok(c) => c,
        // The provider's messages name the flag; here the user typed the command.
        Err(e) => {
            let why = format!("{e:#}").replace("--model", "/model");
            return app.model_switched(Err(ModelSwitchError::Unusable(why)));
        }
    };
    let sent = lead.cast(LeadMsg::SetModel {
        provider: chosen.provider,
        model: chosen.model.clone(),
    });
    if sent.is_err() {
        return app.model_switched(Err(ModelSwitchError::LeadGone));
    }
    opts.model = Some(spec.to_string());
    app.model_switched(Ok(chosen.model));
}

/// `/resume`: the project's recent sessions, read off the loop (each transcript's first
/// task is read from disk) and shown as a notice.
pub(super) fn list_sessions(prepared: &Prepared, done: mpsc::UnboundedSender<Done>) {
    let (root, current) = (prepared.project_root.clone(), prepared.session_id.clone());
    tokio::task::spawn_blocking(move || {
        let sessions = crate::session::recent::recent(&root);
        let _ = done.send(Done::Notice(sessions_text(&sessions, &current)));
    });
}
