//! `HookClient`: how the call path and the agent loop fire an event. It asks the `Hooks`
//! actor which hooks run (a short RPC), runs them in parallel in the caller's own task
//! (`process.rs`), combines their answers (`report.rs`) and publishes what the user
//! should see. A session without hooks has a client that does nothing, and an event no
//! hook is configured for (`actor::Configured`) is answered without asking the actor: a
//! session with only a `Stop` hook sends no message per tool call.
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

use super::actor::{Configured, HooksMsg};
use super::config::Hook;
use super::event::HookEvent;
use super::process::{HookEnv, run_hook};
use super::protocol::{HookInput, answer};
use super::report::{Report, combine};
use crate::events::{EventBus, EventKind};
use crate::sandbox::CommandSandbox;

/// How long the hooks actor may take to say which hooks run.
const SELECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Fires hook events for a session (cheap to clone).
#[derive(Clone, Default)]
pub struct HookClient {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    actor: ActorRef<HooksMsg>,
    /// Which events have a hook at all (the actor's table is fixed for the session).
    configured: Configured,
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

    /// Whether `event` of `agent` may run a hook (false: it surely runs none, and firing
    /// it answers an empty report without a message to the actor).
    pub fn may_fire(&self, event: HookEvent, agent: &str) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|i| i.configured.may_run(event, agent))
    }

    /// A client of the session's hooks actor, whose table has `configured` hooks.
    pub fn new(
        actor: ActorRef<HooksMsg>,
        configured: Configured,
        project_dir: PathBuf,
        session_id: String,
        transcript_path: String,
        events: EventBus,
    ) -> Self {
        Self {
            inner: Some(Arc::new(Inner {
                actor,
                configured,
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
        if !inner.configured.may_run(f.event, f.agent) {
            return Report::default();
        }
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
            let sandbox = hook_sandbox(h, f.cwd, &inner.project_dir);
            let env = HookEnv {
                project_dir: &inner.project_dir,
                plugin_root: h.plugin_root.as_deref(),
            };
            let run = run_hook(&h.command, f.cwd, env, h.timeout, &bytes, &sandbox, cancel).await;
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

/// How a hook runs: one that came with the project runs confined like an agent's command
/// in the write profile (writes only below the project and the agent's directory, what
/// crew loads as code or policy read-only); the user's own hooks run as the user.
fn hook_sandbox(h: &Hook, cwd: &Path, project_dir: &Path) -> CommandSandbox {
    if !h.origin.from_project {
        return CommandSandbox::None;
    }
    let mut writable_roots = vec![project_dir.to_path_buf()];
    if !cwd.starts_with(project_dir) {
        writable_roots.push(cwd.to_path_buf());
    }
    CommandSandbox::Landlock {
        writable_roots,
        profile: crate::sandbox::SandboxProfile::Write,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use ractor::{Actor, ActorProcessingErr};

    use super::*;
    use crate::hooks::actor::{HookTable, select};
    use crate::hooks::config::{DEFAULT_TIMEOUT, Origin};
    use crate::hooks::matcher::Matcher;
    use crate::permission::PermissionMode;
    use crate::protocol::{ToolCall, ToolResult};

    /// The hooks actor's answers, counting the questions it is asked.
    struct Counting;

    impl Actor for Counting {
        type Msg = HooksMsg;
        type State = (HookTable, Arc<AtomicUsize>);
        type Arguments = (HookTable, Arc<AtomicUsize>);

        async fn pre_start(
            &self,
            _: ActorRef<HooksMsg>,
            args: Self::Arguments,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(args)
        }

        async fn handle(
            &self,
            _: ActorRef<HooksMsg>,
            msg: HooksMsg,
            (table, asked): &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            let HooksMsg::Select {
                event,
                agent,
                subject,
                reply,
            } = msg;
            asked.fetch_add(1, Ordering::SeqCst);
            let _ = reply.send(select(table.for_agent(&agent), event, &subject));
            Ok(())
        }
    }

    fn hook(event: HookEvent, command: &str) -> Hook {
        Hook {
            event,
            matcher: Matcher::parse("").unwrap(),
            command: command.into(),
            timeout: DEFAULT_TIMEOUT,
            origin: Origin {
                file: "settings.json".into(),
                scope: "user".into(),
                from_project: false,
            },
            place: "p".into(),
            plugin_root: None,
        }
    }

    /// A session with a `Stop` hook for everyone and a `PreToolUse` hook for `explore`
    /// subagents only.
    async fn client() -> (HookClient, ActorRef<HooksMsg>, Arc<AtomicUsize>) {
        let table = HookTable {
            session: vec![hook(HookEvent::Stop, "true")],
            by_agent_type: [(
                "explore".to_string(),
                vec![hook(HookEvent::PreToolUse, "true")],
            )]
            .into(),
        };
        let asked = Arc::new(AtomicUsize::new(0));
        let configured = table.configured();
        let (actor, _) = Actor::spawn(None, Counting, (table, asked.clone()))
            .await
            .unwrap();
        let client = HookClient::new(
            actor.clone(),
            configured,
            std::env::temp_dir(),
            "s".into(),
            "t".into(),
            EventBus::new(),
        );
        (client, actor, asked)
    }

    fn read() -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        }
    }

    #[tokio::test]
    async fn a_call_with_no_hook_for_its_events_sends_the_actor_nothing() {
        let (client, actor, asked) = client().await;
        let (cwd, cancel) = (std::env::temp_dir(), CancellationToken::new());
        let mode = PermissionMode::Default;
        let pre = client
            .pre_tool_use("lead", &cwd, mode, read(), &cancel)
            .await;
        assert!(pre.block.is_none());
        let mut result = ToolResult::ok("c1", "text");
        let post = client
            .post_tool_use("lead", &cwd, mode, &read(), &mut result, &cancel)
            .await;
        assert!(post.is_none());
        assert_eq!(result.content, "text");
        let todo = ToolCall {
            id: "c2".into(),
            name: "todo_update".into(),
            arguments: r#"{"id":"1","status":"completed"}"#.into(),
        };
        let completed = client.task_completed("lead", &cwd, &todo, &cancel).await;
        assert!(completed.is_none());
        assert_eq!(asked.load(Ordering::SeqCst), 0, "no message per call");
        // Configured events still ask: the session's Stop hook, the subagent type's guard.
        let f = Firing {
            event: HookEvent::Stop,
            agent: "lead",
            cwd: &cwd,
            subject: Vec::new(),
        };
        let input = client.input(&f);
        client.fire(f, input, &cancel).await;
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        client
            .pre_tool_use("explore/a1", &cwd, mode, read(), &cancel)
            .await;
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        actor.stop(None);
    }

    #[tokio::test]
    async fn a_configured_pre_tool_use_still_fails_closed_when_the_actor_is_gone() {
        let (client, actor, _) = client().await;
        actor.stop(None);
        actor.wait(None).await.expect("the hooks actor stops");
        let (cwd, cancel) = (std::env::temp_dir(), CancellationToken::new());
        let mode = PermissionMode::Default;
        let guarded = client
            .pre_tool_use("explore/a1", &cwd, mode, read(), &cancel)
            .await;
        assert!(
            guarded.block.is_some_and(|b| b.contains("did not answer")),
            "a guard hook may be among those that did not run"
        );
        let lead = client
            .pre_tool_use("lead", &cwd, mode, read(), &cancel)
            .await;
        assert!(lead.block.is_none(), "no hook could guard the lead's call");
    }
}
