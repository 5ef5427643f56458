//! `SessionHandle`: the public face of a running session — start it, run requests on its
//! lead, wait for its team and tasks, read its conversation, shut it down.

use std::time::Duration;

use ractor::{Actor, ActorRef, rpc::CallResult};

use crate::agent::follow_up::{TASK_NEWS, TEAM_NEWS};
use crate::agent::lead_actor::LeadMsg;
use crate::agent::runner::{RunOutcome, RunRequest, RunStatus};
use crate::events::EventBus;
use crate::protocol::Message;
use crate::tasks::actor::TaskMsg;
use crate::team::actor::{LeadWake, TeamMsg};

use super::{EndReason, Session, SessionConfig, SessionError, SessionMsg};

/// A running session.
pub struct SessionHandle {
    session: ActorRef<SessionMsg>,
    lead: ActorRef<LeadMsg>,
    tasks: Option<ActorRef<TaskMsg>>,
    team: Option<ActorRef<TeamMsg>>,
    join: tokio::task::JoinHandle<()>,
    ended: EndReason,
    /// The session's events.
    pub events: EventBus,
}

impl SessionHandle {
    /// Starts a session.
    pub async fn start(cfg: SessionConfig) -> Result<Self, SessionError> {
        let events = cfg.events.clone();
        let ended = EndReason::default();
        let (session, join) = Actor::spawn(None, Session, (cfg, ended.clone()))
            .await
            .map_err(|e| SessionError::Spawn(e.to_string()))?;
        let (lead, tasks, team) = match session
            .call(SessionMsg::Refs, Some(Duration::from_secs(10)))
            .await
        {
            Ok(CallResult::Success(refs)) => refs,
            _ => return Err(SessionError::NoAnswer("supervisor")),
        };
        Ok(Self {
            session,
            lead,
            tasks,
            team,
            join,
            ended,
            events,
        })
    }

    /// Why the session ended by itself (a restart storm), if it did.
    pub fn ended(&self) -> Option<&str> {
        self.ended.get().map(String::as_str)
    }

    /// The lead's unanswered call as an error: the session's end reason when it ended.
    fn lead_gone(&self) -> SessionError {
        match self.ended() {
            Some(why) => SessionError::Ended(why.to_string()),
            None => SessionError::NoAnswer("lead agent"),
        }
    }

    /// The lead agent.
    pub fn lead(&self) -> &ActorRef<LeadMsg> {
        &self.lead
    }

    /// The task manager, when the session runs background tasks.
    pub fn tasks(&self) -> Option<&ActorRef<TaskMsg>> {
        self.tasks.as_ref()
    }

    /// The team actor, when the session has a team.
    pub fn team(&self) -> Option<&ActorRef<TeamMsg>> {
        self.team.as_ref()
    }

    /// Waits until the lead has team mail or notices to read (`Mail`) or the team is quiet
    /// (`Quiet`: every teammate idle, no unread message, no item in progress). `Quiet` at
    /// once when the session has no team.
    pub async fn wait_team(&self) -> LeadWake {
        let Some(team) = &self.team else {
            return LeadWake::Quiet;
        };
        match team
            .call(TeamMsg::WaitLead, Some(Duration::from_secs(24 * 3600)))
            .await
        {
            Ok(CallResult::Success(w)) => w,
            _ => LeadWake::Quiet,
        }
    }

    /// Runs `first` on the lead, then keeps the lead going while there is news for it: each
    /// background task that ends, and each batch of team mail or notices, starts another
    /// lead run that receives it. Ends when the lead has finished, its background tasks
    /// have ended and the team is quiet (every teammate idle, no unread message, no item in
    /// progress); or after `max_runs` lead runs; or when a run fails or is cancelled.
    pub async fn run_until_quiet(
        &self,
        first: RunRequest,
        max_runs: u32,
    ) -> Result<RunOutcome, SessionError> {
        let mut outcome = self.run(first).await?;
        let mut runs = 1;
        while matches!(outcome.status, RunStatus::Completed | RunStatus::MaxTurns)
            && runs < max_runs.max(1)
        {
            let news = tokio::select! {
                rec = self.next_completion() => match rec {
                    Some(_) => Some(TASK_NEWS),
                    None => (self.wait_team().await == LeadWake::Mail).then_some(TEAM_NEWS),
                },
                wake = self.wait_team() => match wake {
                    LeadWake::Mail => Some(TEAM_NEWS),
                    LeadWake::Quiet => self.next_completion().await.map(|_| TASK_NEWS),
                },
            };
            let Some(task) = news else { break };
            runs += 1;
            outcome = self
                .run(RunRequest {
                    mode: crate::agent::mode::AgentMode::Chat,
                    task: task.into(),
                    plan: None,
                })
                .await?;
        }
        Ok(outcome)
    }

    /// Waits until a background task of the lead ends and returns it; `None` when the
    /// lead has nothing running (or the session has no task manager).
    pub async fn next_completion(&self) -> Option<crate::tasks::TaskRecord> {
        let tasks = self.tasks.as_ref()?;
        match tasks
            .call(
                |r| TaskMsg::WaitNext("lead".into(), r),
                Some(Duration::from_secs(24 * 3600)),
            )
            .await
        {
            Ok(CallResult::Success(rec)) => rec,
            _ => None,
        }
    }

    /// Runs a request on the lead and waits for the outcome.
    pub async fn run(&self, req: RunRequest) -> Result<RunOutcome, SessionError> {
        // A run may take a long time; the lead replies when it ends. The generous bound
        // only guards against a lost reply.
        match self
            .lead
            .call(
                |reply| LeadMsg::Run(req, reply),
                Some(Duration::from_secs(24 * 3600)),
            )
            .await
        {
            Ok(CallResult::Success(Ok(outcome))) => Ok(outcome),
            Ok(CallResult::Success(Err(refused))) => Err(SessionError::Refused(refused)),
            _ => Err(self.lead_gone()),
        }
    }

    /// Cancels the lead's current run.
    pub fn cancel(&self) {
        let _ = self.lead.cast(LeadMsg::Cancel);
    }

    /// A copy of the lead's conversation.
    pub async fn conversation(&self) -> Result<Vec<Message>, SessionError> {
        match self
            .lead
            .call(LeadMsg::Conversation, Some(Duration::from_secs(10)))
            .await
        {
            Ok(CallResult::Success(c)) => Ok(c),
            _ => Err(SessionError::NoAnswer("lead agent")),
        }
    }

    /// Stops every actor of the session and waits for the supervisor to end. Background
    /// work still running is cancelled first (its processes killed, its worktrees kept
    /// when they hold work).
    pub async fn shutdown(self) {
        self.shutdown_for("other").await
    }

    /// [`SessionHandle::shutdown`], with `reason` for the `SessionEnd` hooks (Claude
    /// Code's values: `clear`, `logout`, `prompt_input_exit`, `other`).
    pub async fn shutdown_for(self, reason: &str) {
        if let Ok(CallResult::Success(hooks)) = self
            .session
            .call(SessionMsg::Hooks, Some(Duration::from_secs(10)))
            .await
        {
            if let Some(dir) = hooks.project_dir() {
                hooks
                    .session(crate::hooks::HookEvent::SessionEnd, &dir, reason)
                    .await;
            }
        }
        if let Some(tasks) = &self.tasks {
            let _ = tasks.cast(TaskMsg::StopAll);
            // Give cancelled subagents a moment to record their end and tidy worktrees.
            for _ in 0..50 {
                match tasks
                    .call(TaskMsg::HasActiveAny, Some(Duration::from_secs(2)))
                    .await
                {
                    Ok(CallResult::Success(true)) => {
                        tokio::time::sleep(Duration::from_millis(100)).await
                    }
                    _ => break,
                }
            }
        }
        self.session.stop(None);
        let _ = self.join.await;
    }
}
