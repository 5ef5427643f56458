//! `HookClient`: how the call path and the agent loop fire an event. It asks the `Hooks`
//! actor which hooks run (a short RPC), runs them in parallel in the caller's own task
//! (`process.rs`), combines their answers (`report.rs`) and publishes what the user
//! should see. A session without hooks has a client that does nothing.
//!
//! Failing closed: when the actor does not answer, a PreToolUse event blocks the call (a
//! guard hook may be among those that did not run); other events go on with a notice.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio_util::sync::CancellationToken;

use super::actor::HooksMsg;
use super::config::Hook;
use super::event::HookEvent;
use super::process::run_hook;
use super::protocol::{HookInput, answer};
use super::report::{Report, combine};
use crate::events::{EventBus, EventKind};

/// How long the hooks actor may take to say which hooks run.
const SELECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Fires hook events for a session (cheap to clone).
#[derive(Clone, Default)]
pub struct HookClient {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    actor: ActorRef<HooksMsg>,
    project_dir: PathBuf,
    session_id: String,
    transcript_path: String,
    events: EventBus,
    /// The session's team, once it has one (`team_name` of every event).
    team_name: std::sync::OnceLock<String>,
}

/// Where and for whom an event fires.
#[derive(Debug, Clone)]
pub struct Firing<'a> {
    /// The event.
    pub event: HookEvent,
    /// The agent it happens to.
    pub agent: &'a str,
    /// The agent's working directory (the hook runs there).
    pub cwd: &'a Path,
    /// The names the event's matchers are matched against (empty: no subject).
    pub subject: Vec<String>,
}

impl HookClient {
    /// A client that fires nothing (no hooks configured, or in tests).
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether this client fires nothing (`none`): callers skip building hook input.
    pub fn fires_nothing(&self) -> bool {
        self.inner.is_none()
    }

    /// A client of the session's hooks actor.
    pub fn new(
        actor: ActorRef<HooksMsg>,
        project_dir: PathBuf,
        session_id: String,
        transcript_path: String,
        events: EventBus,
    ) -> Self {
        Self {
            inner: Some(Arc::new(Inner {
                actor,
                project_dir,
                session_id,
                transcript_path,
                events,
                team_name: std::sync::OnceLock::new(),
            })),
        }
    }

    /// Records the session's team: from now on every event's input carries its
    /// `team_name`. The first name set stays (a session has one team).
    pub fn set_team_name(&self, name: &str) {
        if let Some(i) = &self.inner {
            let _ = i.team_name.set(name.to_string());
        }
    }

    /// The project root hooks are told about (`None`: no hooks).
    pub fn project_dir(&self) -> Option<PathBuf> {
        self.inner.as_ref().map(|i| i.project_dir.clone())
    }

    /// The input every event carries; the caller fills in the event's own fields.
    pub fn input(&self, f: &Firing<'_>) -> HookInput {
        let (session_id, transcript_path, team_name) = match &self.inner {
            Some(i) => (
                i.session_id.clone(),
                i.transcript_path.clone(),
                i.team_name.get().cloned(),
            ),
            None => (String::new(), String::new(), None),
        };
        HookInput {
            session_id,
            transcript_path,
            cwd: f.cwd.display().to_string(),
            hook_event_name: f.event.as_str().to_string(),
            agent_id: Some(f.agent.to_string()),
            team_name,
            ..Default::default()
        }
    }

    /// Runs the hooks `f` selects with `input` on their stdin; cancelling kills them.
    pub async fn fire(
        &self,
        f: Firing<'_>,
        input: HookInput,
        cancel: &CancellationToken,
    ) -> Report {
        let Some(inner) = &self.inner else {
            return Report::default();
        };
        let selected = inner
            .actor
            .call(
                |reply| HooksMsg::Select {
                    event: f.event,
                    agent: f.agent.to_string(),
                    subject: f.subject.clone(),
                    reply,
                },
                Some(SELECT_TIMEOUT),
            )
            .await;
        let hooks = match selected {
            Ok(CallResult::Success(h)) => h,
            _ => {
                let message = format!(
                    "the hooks actor did not answer; {} hooks did not run",
                    f.event
                );
                let report = Report {
                    block: (f.event == HookEvent::PreToolUse)
                        .then(|| format!("{message}, so the call was not run")),
                    notices: vec![message],
                    ..Default::default()
                };
                self.publish(f.agent, f.event, &report);
                return report;
            }
        };
        if hooks.is_empty() {
            return Report::default();
        }
        let bytes = match serde_json::to_vec(&input) {
            Ok(b) => b,
            // Plain data always serialises; should it not, running the hooks without their
            // input would mislead them.
            Err(e) => {
                return Report {
                    notices: vec![format!("{} hook input could not be written: {e}", f.event)],
                    ..Default::default()
                };
            }
        };
        let runs = hooks.iter().map(|h: &Hook| async {
            let run = run_hook(
                &h.command,
                f.cwd,
                &inner.project_dir,
                h.timeout,
                &bytes,
                cancel,
            )
            .await;
            (h.command.clone(), answer(run))
        });
        let answers = join_all(runs).await;
        let report = combine(f.event, answers);
        self.publish(f.agent, f.event, &report);
        report
    }

    /// Shows the user something about a hook of `event` (as a `Hook` event).
    pub fn notice(&self, agent: &str, event: HookEvent, message: String) {
        if let Some(inner) = &self.inner {
            inner.events.publish(
                agent,
                EventKind::Hook {
                    event: event.as_str().to_string(),
                    message,
                },
            );
        }
    }

    fn publish(&self, agent: &str, event: HookEvent, report: &Report) {
        let Some(inner) = &self.inner else { return };
        let stop = report
            .stop
            .as_ref()
            .map(|s| format!("{event} hook stopped the agent: {s}"));
        for message in report.notices.iter().cloned().chain(stop) {
            inner.events.publish(
                agent,
                EventKind::Hook {
                    event: event.as_str().to_string(),
                    message,
                },
            );
        }
    }
}
