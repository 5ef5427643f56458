//! What the `agent` and `send_message` tools ask of the agent that called them: start a
//! subagent ([`SpawnRequest`]) or resume a finished one ([`ResumeRequest`]), through the
//! caller's [`Delegator`]. The agents implement it (`agent::delegate`); the tools only
//! call it.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::permission::delegation::Isolation;
use crate::protocol::agent_spec::ForkBase;

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
    /// The model may ask for `none` only for a read-only agent type.
    pub isolation: Option<Isolation>,
    /// Model override.
    pub model: Option<String>,
    /// A name makes the agent a long-lived teammate (messages reach it by this name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A teammate that works in Plan mode until the lead approves its plan.
    #[serde(default)]
    pub plan_first: bool,
    /// Set for `agent {fork: true}`: the caller as it was at the call; the child
    /// inherits its conversation and configuration (`subagent_type` is then ignored).
    #[serde(skip)]
    pub fork: Option<std::sync::Arc<ForkBase>>,
}

/// Why a subagent was not started or resumed. Its text is what the model reads in the
/// tool's error; the kind says who can do something about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelegateError {
    /// Not as asked: a name where only the lead may name, a depth past the limit,
    /// `isolation: none` for a writer or a fork, an unknown agent type or subagent. The
    /// model can change the request.
    #[error("{0}")]
    Refused(String),
    /// Not by this agent at all: it has no team, no subagents, or cannot resume.
    #[error("{0}")]
    Unsupported(String),
    /// A service on the way did not answer in time.
    #[error("{0} did not answer")]
    NoAnswer(&'static str),
    /// Starting failed: the actor could not be spawned, a worker refused or failed.
    #[error("{0}")]
    Failed(String),
}

/// Starts subagents on behalf of one agent.
pub trait Delegator: Send + Sync {
    /// Starts a subagent; returns its task id.
    fn spawn(&self, req: SpawnRequest) -> BoxFuture<'static, Result<String, DelegateError>>;

    /// Resumes a finished subagent in the background with `req.message` on top of its
    /// whole conversation (see `agent::resume`); returns the new task id. For the
    /// `send_message` tool, when `to` names no teammate.
    fn resume(&self, req: ResumeRequest) -> BoxFuture<'static, Result<String, DelegateError>> {
        let _ = req;
        Box::pin(async {
            Err(DelegateError::Unsupported(
                "this agent cannot resume subagents".into(),
            ))
        })
    }
}

/// A message to a finished subagent.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeRequest {
    /// Its task id (of any of its runs), its agent id (`type/task`), or its agent type
    /// when exactly one finished subagent has that type.
    pub target: String,
    /// The message; it becomes the subagent's next user turn.
    pub message: String,
}
