//! The TUI's side of speculative execution (`crate::speculation`): after a run ends and
//! the app is idle, ask for a suggestion and start running it ahead; show it greyed in
//! the input box; when a run is submitted, hand over the speculation if the prompt is
//! exactly the suggestion, otherwise discard it (its overlay is deleted). Everything
//! slow is spawned and reports back through the runtime's channel.

use std::path::PathBuf;

use ractor::ActorRef;

use tokio::sync::mpsc;

use super::app::App;
use super::jobs::{self, Done};
use super::plan::PlanStage;
use super::startup;
use super::transcript::Entry;
use crate::agent::lead_actor::LeadMsg;
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest};
use crate::speculation::{Limits, Resolution, Speculation, ahead};

/// What a spawned speculation step reports.
pub(super) enum Report {
    /// A suggestion is running ahead (generation, speculation).
    Ready(u64, Box<Speculation>),
    /// The submitted run's speculation was resolved.
    Resolved(RunRequest, Resolution),
}

/// The runtime's speculation state.
pub(super) struct Ahead {
    enabled: bool,
    overlay_parent: PathBuf,
    /// Bumped at each start and each submitted run: a late `Ready` of an older
    /// generation is discarded.
    generation: u64,
    current: Option<Speculation>,
    /// The speculation the submitted run is waiting for (Esc cancels it).
    resolving: Option<tokio_util::sync::CancellationToken>,
}

impl Ahead {
    /// Speculation on or off for this session (see `speculation::enabled`), with its
    /// overlays below `overlay_parent` (the session's directory in the user's crew home,
    /// not a shared temporary directory another user could have prepared).
    pub(super) fn new(enabled: bool, overlay_parent: Option<PathBuf>) -> Self {
        Self {
            // Nowhere private to put overlays: no speculation.
            enabled: enabled && overlay_parent.is_some(),
            overlay_parent: overlay_parent.unwrap_or_default(),
            generation: 0,
            current: None,
            resolving: None,
        }
    }

    /// The lead's run ended: when the app is idle (no run, no plan flow, nothing typed),
    /// ask for a suggestion and run it ahead.
    pub(super) fn after_run(
        &mut self,
        app: &App,
        lead: &ActorRef<LeadMsg>,
        send: impl Fn(Report) + Send + 'static,
    ) {
        let busy = app.running.is_some() || !app.input.is_empty();
        if !self.enabled || busy || app.plan != PlanStage::Off {
            return;
        }
        self.discard_current();
        self.generation += 1;
        let generation = self.generation;
        let (lead, parent) = (lead.clone(), self.overlay_parent.clone());
        tokio::spawn(async move {
            let Some(snapshot) = ahead::snapshot(&lead).await else {
                return;
            };
            let Some(prompt) = ahead::suggest(&snapshot).await else {
                return;
            };
            let agent = format!("speculation/{generation}");
            let limits = Limits::default();
            if let Ok(spec) =
                Speculation::start(lead, snapshot, prompt, &agent, &parent, limits).await
            {
                send(Report::Ready(generation, Box::new(spec)));
            }
        });
    }

    /// A speculation is running: show its prompt, unless the user moved on meanwhile.
    pub(super) fn ready(&mut self, app: &mut App, generation: u64, spec: Box<Speculation>) {
        if generation != self.generation || app.running.is_some() {
            discard(*spec);
            return;
        }
        app.input.set_suggestion(Some(spec.prompt().to_string()));
        self.current = Some(*spec);
    }

    /// A run is being submitted: the speculation if `req` is exactly its prompt (the
    /// caller resolves it), else `None` after discarding it.
    pub(super) fn take_for(&mut self, req: &RunRequest) -> Option<Speculation> {
        self.generation += 1;
        let spec = self.current.take()?;
        if req.mode == AgentMode::Chat && req.task == spec.prompt() {
            self.resolving = Some(spec.canceller());
            return Some(spec);
        }
        discard(spec);
        None
    }

    /// Esc while the submitted run waits for its speculation: stop waiting.
    pub(super) fn cancel_resolving(&mut self) {
        if let Some(token) = &self.resolving {
            token.cancel();
        }
    }

    /// The submitted run's speculation was resolved: whether the user cancelled it.
    pub(super) fn finish_resolving(&mut self) -> bool {
        self.resolving.take().is_some_and(|t| t.is_cancelled())
    }

    /// Discards the current speculation, if any (its overlay is deleted).
    pub(super) fn discard_current(&mut self) {
        self.generation += 1;
        if let Some(spec) = self.current.take() {
            discard(spec);
        }
    }
}

/// Cancels a speculation and deletes its overlay, in the background.
fn discard(spec: Speculation) {
    tokio::spawn(spec.discard());
}

/// Resolves `spec` against the submitted run in the background.
pub(super) fn resolve(spec: Speculation, req: RunRequest, send: impl Fn(Report) + Send + 'static) {
    tokio::spawn(async move {
        let resolution = spec.resolve(&req.task).await;
        send(Report::Resolved(req, resolution));
    });
}

/// The submitted prompt was the suggestion: show the adopted speculation as the run's
/// result ("pre-ran N steps"), or run the prompt as usual when it could not be adopted
/// (unless the user pressed Esc while waiting for it).
pub(super) fn adopted_or_run(
    app: &mut App,
    lead: &ActorRef<LeadMsg>,
    req: RunRequest,
    resolution: crate::speculation::Resolution,
    cancelled: bool,
    done: &mpsc::UnboundedSender<Done>,
) {
    use crate::speculation::Resolution;
    match resolution {
        Resolution::Adopted {
            steps,
            outcome,
            messages,
        } => {
            // The prompt itself is already on screen.
            startup::show_conversation(app, messages.get(1..).unwrap_or_default());
            app.transcript
                .push(Entry::Notice(format!("pre-ran {steps} steps")));
            // Its turns went to a private event bus: count their tokens here.
            app.usage.add(&outcome.usage);
            let _ = done.send(Done::Run(Ok(outcome)));
        }
        Resolution::NotAdopted { .. } if cancelled => {
            let _ = done.send(Done::Run(Ok(RunOutcome {
                result: String::new(),
                status: crate::agent::runner::RunStatus::Cancelled,
                usage: Default::default(),
                turns: 0,
                tool_calls: 0,
            })));
        }
        Resolution::NotAdopted { reason } => {
            app.transcript.push(Entry::Notice(format!(
                "The speculation was not used ({reason}); running the prompt."
            )));
            jobs::spawn_run(lead.clone(), req, done.clone());
        }
        Resolution::Discarded => jobs::spawn_run(lead.clone(), req, done.clone()),
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::super::app::{App, Effect, SessionInfo};
    use crate::permission::PermissionMode;

    fn key(app: &mut App, code: KeyCode) {
        app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
    }

    fn app() -> App {
        let info = SessionInfo {
            project_root: "/nonexistent/crew-tui-test".into(),
            commands: vec![("review".into(), "Review a file".into())],
            ..SessionInfo::default()
        };
        App::new(info, PermissionMode::Default)
    }

    #[test]
    fn tab_takes_the_suggestion_and_enter_submits_it_as_typed() {
        let mut a = app();
        a.input.set_suggestion(Some("run the tests".into()));
        assert_eq!(a.input.suggestion(), Some("run the tests"));
        key(&mut a, KeyCode::Tab);
        assert_eq!(a.input.text(), "run the tests");
        key(&mut a, KeyCode::Enter);
        let runs: Vec<String> = a
            .take_effects()
            .into_iter()
            .filter_map(|e| match e {
                Effect::Run(req) => Some(req.task),
                _ => None,
            })
            .collect();
        assert_eq!(runs, ["run the tests"]);
        assert_eq!(a.input.suggestion(), None, "a submitted run clears it");
    }

    #[test]
    fn typing_hides_the_suggestion_and_tab_still_completes_commands() {
        let mut a = app();
        a.input.set_suggestion(Some("run the tests".into()));
        for ch in "/rev".chars() {
            key(&mut a, KeyCode::Char(ch));
        }
        assert_eq!(a.input.suggestion(), None);
        key(&mut a, KeyCode::Tab);
        assert_eq!(a.input.text(), "/review ");
    }
}
