//! The `Session` actor: the root supervisor. It starts the permission engine, approver,
//! executor, gate and lead agent as linked children and keeps going when one of them
//! fails (the default would stop the session). `SessionHandle` is the public face: start
//! a session, run requests on its lead, subscribe to its events, shut it down.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::{
    Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent, rpc::CallResult,
};

use crate::agent::lead::{LeadAgent, LeadArgs, LeadMsg};
use crate::agent::pipeline::Pipeline;
use crate::agent::runner::{AgentSpec, RunOutcome, RunPlace, RunRequest, Runner};
use crate::approver::actor::{Approver, ApproverPolicy};
use crate::events::{EventBus, EventKind};
use crate::executor::actor::{ExecutorArgs, ToolExecutor};
use crate::gate::actor::{Gate, GateArgs};
use crate::permission::actor::PermissionEngine;
use crate::permission::{PermissionMode, Policy};
use crate::protocol::Message;
use crate::provider::Provider;
use crate::tools::{CommandSandbox, Registry};

/// Everything a session is built from.
pub struct SessionConfig {
    /// The lead's working directory (and first sandbox root).
    pub cwd: PathBuf,
    /// The lead's permission mode.
    pub permission_mode: PermissionMode,
    /// Rules, additional roots and the rest of the permission policy.
    pub policy: Policy,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// The lead's configuration.
    pub lead: AgentSpec,
    /// How Asks are answered.
    pub approver: ApproverPolicy,
    /// The tools.
    pub registry: Arc<Registry>,
    /// OS confinement for the lead's commands.
    pub sandbox: CommandSandbox,
    /// The executor's timeout for tools that set none.
    pub default_tool_timeout: Duration,
    /// A conversation to resume.
    pub conversation: Vec<Message>,
    /// The event bus (created by the caller so it can subscribe before anything runs).
    pub events: EventBus,
}

/// Messages the session accepts.
pub enum SessionMsg {
    /// The lead agent's reference.
    Lead(RpcReplyPort<ActorRef<LeadMsg>>),
}

/// The session supervisor (configuration only).
pub struct Session;

/// The session's state: its children.
pub struct SessionState {
    lead: ActorRef<LeadMsg>,
    events: EventBus,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// An actor could not be started.
    #[error("could not start the session: {0}")]
    Spawn(String),
    /// An actor did not answer.
    #[error("the session's {0} did not answer")]
    NoAnswer(&'static str),
    /// The lead refused the request.
    #[error("{0}")]
    Refused(String),
}

impl Actor for Session {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = SessionConfig;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        cfg: SessionConfig,
    ) -> Result<Self::State, ActorProcessingErr> {
        let cell = myself.get_cell();
        let (permission, _) =
            Actor::spawn_linked(None, PermissionEngine, cfg.policy, cell.clone()).await?;
        let (approver, _) = Actor::spawn_linked(None, Approver, cfg.approver, cell.clone()).await?;
        let (executor, _) = Actor::spawn_linked(
            None,
            ToolExecutor,
            ExecutorArgs {
                registry: cfg.registry.clone(),
                default_timeout: cfg.default_tool_timeout,
            },
            cell.clone(),
        )
        .await?;
        // The executor's reference moves into the gate: nothing else keeps it.
        let (gate, _) = Actor::spawn_linked(
            None,
            Gate,
            GateArgs {
                registry: cfg.registry.clone(),
                executor,
            },
            cell.clone(),
        )
        .await?;
        let runner = Runner {
            pipeline: Pipeline {
                registry: cfg.registry,
                permission,
                approver,
                gate,
                events: cfg.events.clone(),
            },
            provider: cfg.provider,
            spec: cfg.lead,
        };
        let (lead, _) = Actor::spawn_linked(
            None,
            LeadAgent,
            LeadArgs {
                runner,
                place: RunPlace {
                    cwd: cfg.cwd,
                    permission_mode: cfg.permission_mode,
                    sandbox: cfg.sandbox,
                },
                conversation: cfg.conversation,
            },
            cell,
        )
        .await?;
        Ok(SessionState {
            lead,
            events: cfg.events,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SessionMsg::Lead(reply) => {
                let _ = reply.send(state.lead.clone());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Contain the failure: report it, keep the session alive.
        if let SupervisionEvent::ActorFailed(who, reason) = evt {
            tracing::error!("actor {who:?} failed: {reason}");
            state.events.publish(
                "session",
                EventKind::Error {
                    message: format!("an actor failed: {reason}"),
                },
            );
        }
        Ok(())
    }
}

/// A running session.
pub struct SessionHandle {
    session: ActorRef<SessionMsg>,
    lead: ActorRef<LeadMsg>,
    join: tokio::task::JoinHandle<()>,
    /// The session's events.
    pub events: EventBus,
}

impl SessionHandle {
    /// Starts a session.
    pub async fn start(cfg: SessionConfig) -> Result<Self, SessionError> {
        let events = cfg.events.clone();
        let (session, join) = Actor::spawn(None, Session, cfg)
            .await
            .map_err(|e| SessionError::Spawn(e.to_string()))?;
        let lead = match session
            .call(SessionMsg::Lead, Some(Duration::from_secs(10)))
            .await
        {
            Ok(CallResult::Success(lead)) => lead,
            _ => return Err(SessionError::NoAnswer("supervisor")),
        };
        Ok(Self {
            session,
            lead,
            join,
            events,
        })
    }

    /// The lead agent.
    pub fn lead(&self) -> &ActorRef<LeadMsg> {
        &self.lead
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
            _ => Err(SessionError::NoAnswer("lead agent")),
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

    /// Stops every actor of the session and waits for the supervisor to end.
    pub async fn shutdown(self) {
        self.session.stop(None);
        let _ = self.join.await;
    }
}
