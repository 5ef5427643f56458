//! Delegation: what the `agent` tool asks of the agent that called it. The lead and each
//! subagent implement `Delegator` by messaging their own actor, which spawns the new
//! subagent linked under itself (so its supervisor sees it fail).

use futures::future::BoxFuture;
use ractor::{ActorRef, RpcReplyPort, rpc::CallResult};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A request to start a subagent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnRequest {
    /// A few words on what it is for.
    pub description: String,
    /// The task for the subagent.
    pub prompt: String,
    /// The agent definition to use.
    pub subagent_type: String,
    /// Return at once with the task id instead of waiting for the answer.
    pub run_in_background: bool,
    /// `worktree` or `none` (default: the definition's, else worktree in a git repo).
    pub isolation: Option<String>,
    /// Model override.
    pub model: Option<String>,
}

/// Starts subagents on behalf of one agent.
pub trait Delegator: Send + Sync {
    /// Starts a subagent; returns its task id.
    fn spawn(&self, req: SpawnRequest) -> BoxFuture<'static, Result<String, String>>;
}

/// How long an actor may take to start a subagent (spawning, not running it).
const SPAWN_TIMEOUT: Duration = Duration::from_secs(30);

/// A `Delegator` that sends a spawn message to an actor.
pub struct ActorDelegate<M: ractor::Message> {
    actor: ActorRef<M>,
    build: fn(SpawnRequest, RpcReplyPort<Result<String, String>>) -> M,
}

impl<M: ractor::Message> ActorDelegate<M> {
    /// Delegates through `actor`, building its spawn message with `build`.
    pub fn new(
        actor: ActorRef<M>,
        build: fn(SpawnRequest, RpcReplyPort<Result<String, String>>) -> M,
    ) -> Self {
        Self { actor, build }
    }
}

impl<M: ractor::Message> Delegator for ActorDelegate<M> {
    fn spawn(&self, req: SpawnRequest) -> BoxFuture<'static, Result<String, String>> {
        let actor = self.actor.clone();
        let build = self.build;
        Box::pin(async move {
            match actor
                .call(|reply| build(req, reply), Some(SPAWN_TIMEOUT))
                .await
            {
                Ok(CallResult::Success(r)) => r,
                _ => Err("the agent could not start the subagent (no answer)".into()),
            }
        })
    }
}
