//! Delegation: what the `agent` tool asks of the agent that called it. The lead and each
//! subagent implement `Delegator` by messaging their own actor, which spawns the new
//! subagent linked under itself (so its supervisor sees it fail). Also what the
//! permission engine is told about each agent type ([`delegation`]), and the delegator's
//! own check of the requested isolation ([`placement`]).

use futures::future::BoxFuture;
use ractor::{ActorRef, RpcReplyPort, rpc::CallResult};
use std::time::Duration;

use super::catalog::Catalog;
use super::definition::AgentDefinition;
pub use crate::permission::delegation::Worktrees;
use crate::permission::delegation::{AgentProfile, Delegation, DelegationError, Placement};
pub use crate::tools::delegate::{DelegateError, Delegator, ResumeRequest, SpawnRequest};
use crate::tools::{Registry, Safety};

/// Builds an actor's resume message.
pub type ResumeBuild<M> = fn(ResumeRequest, RpcReplyPort<Result<String, DelegateError>>) -> M;

/// How long an actor may take to start a subagent (spawning, not running it).
const SPAWN_TIMEOUT: Duration = Duration::from_secs(30);

/// A `Delegator` that sends a spawn message to an actor.
pub struct ActorDelegate<M: ractor::Message> {
    actor: ActorRef<M>,
    build: fn(SpawnRequest, RpcReplyPort<Result<String, DelegateError>>) -> M,
    resume: Option<ResumeBuild<M>>,
}

impl<M: ractor::Message> ActorDelegate<M> {
    /// Delegates through `actor`, building its spawn message with `build`.
    pub fn new(
        actor: ActorRef<M>,
        build: fn(SpawnRequest, RpcReplyPort<Result<String, DelegateError>>) -> M,
    ) -> Self {
        Self {
            actor,
            build,
            resume: None,
        }
    }

    /// Also resumes finished subagents through `actor`, with messages built by `build`.
    pub fn with_resume(mut self, build: ResumeBuild<M>) -> Self {
        self.resume = Some(build);
        self
    }
}

impl<M: ractor::Message> Delegator for ActorDelegate<M> {
    fn spawn(&self, req: SpawnRequest) -> BoxFuture<'static, Result<String, DelegateError>> {
        let actor = self.actor.clone();
        let build = self.build;
        Box::pin(async move {
            match actor
                .call(|reply| build(req, reply), Some(SPAWN_TIMEOUT))
                .await
            {
                Ok(CallResult::Success(r)) => r,
                _ => Err(DelegateError::NoAnswer("the agent starting the subagent")),
            }
        })
    }

    fn resume(&self, req: ResumeRequest) -> BoxFuture<'static, Result<String, DelegateError>> {
        let actor = self.actor.clone();
        let Some(build) = self.resume else {
            return Box::pin(async {
                Err(DelegateError::Unsupported(
                    "this agent cannot resume subagents".into(),
                ))
            });
        };
        Box::pin(async move {
            match actor
                .call(|reply| build(req, reply), Some(SPAWN_TIMEOUT))
                .await
            {
                Ok(CallResult::Success(r)) => r,
                _ => Err(DelegateError::NoAnswer("the agent resuming the subagent")),
            }
        })
    }
}

/// What the engine must know of `def`: its own isolation, and whether every tool it may
/// use (of those in `registry`) is read-only.
pub fn profile(def: &AgentDefinition, registry: &Registry) -> AgentProfile {
    let all = || registry.definitions().map(|d| d.name.clone());
    let allowed = def.allowed_tools(all());
    let read_only = registry
        .definitions()
        .filter(|d| allowed.as_ref().is_none_or(|a| a.contains(&d.name)))
        .all(|d| d.safety == Safety::ReadOnly);
    AgentProfile {
        isolation: Some(def.isolation()),
        read_only,
    }
}

/// Whether subagents of a session in `cwd` can get worktrees: available when `cwd` is in
/// a git repository whose main checkout can be opened.
pub fn worktrees_at(cwd: &std::path::Path) -> Worktrees {
    if crate::worktree::git::open_main(cwd).is_ok() {
        Worktrees::Available
    } else {
        Worktrees::Unavailable
    }
}

/// The engine's view of a session's agent types, given whether subagents get worktrees.
pub fn delegation(catalog: &Catalog, registry: &Registry, worktrees: Worktrees) -> Delegation {
    Delegation {
        agents: catalog
            .agents
            .iter()
            .map(|(name, def)| (name.clone(), profile(def, registry)))
            .collect(),
        worktrees,
    }
}

/// The delegator's own check, independent of the engine's (fail closed): where a
/// subagent of `def` asked for with `req` works, or why it may not start.
pub fn placement(
    req: &SpawnRequest,
    def: &AgentDefinition,
    registry: &Registry,
    worktrees: Worktrees,
) -> Result<Placement, DelegationError> {
    crate::permission::delegation::placement(
        &def.name,
        req.isolation,
        &profile(def, registry),
        worktrees,
    )
}
