//! What an agent and a run are configured with, and what a run gives back.

use std::sync::Arc;

use ractor::ActorRef;
use serde::{Deserialize, Serialize};

use crate::agent::delegate::Delegator;
use crate::agent::mode::AgentMode;
use crate::permission::SharedMode;
use crate::protocol::Usage;
use crate::tasks::actor::TaskMsg;
use crate::tools::CommandSandbox;

/// The fixed configuration of one agent (protocol data: a fork's snapshot carries it).
pub use crate::protocol::agent_spec::AgentSpec;

/// What one run is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Chat, plan or do.
    pub mode: AgentMode,
    /// The user's task.
    pub task: String,
    /// The approved plan (Do mode).
    pub plan: Option<String>,
}

/// Where and under which permission mode a run works.
#[derive(Clone)]
pub struct RunPlace {
    /// The working directory (and first sandbox root).
    pub cwd: std::path::PathBuf,
    /// The permission mode, shared with whoever may switch it; each call reads it.
    pub permission_mode: SharedMode,
    /// OS confinement for commands.
    pub sandbox: CommandSandbox,
    /// Starts subagents for this agent (`None`: the `agent` tool refuses).
    pub delegate: Option<Arc<dyn Delegator>>,
    /// The session's task manager (`None`: no background tasks).
    pub tasks: Option<ActorRef<TaskMsg>>,
    /// What directory walkers may show (built once per session from its policy).
    pub walk: Arc<crate::permission::walk::WalkFilter>,
    /// The agent's team and member name (`None`: not in a team).
    pub team: Option<crate::team::TeamHandle>,
    /// The agent's mailbox in its team: unread mail is injected at each turn boundary.
    pub mail: Option<Arc<crate::team::actor::Mailbox>>,
}

impl std::fmt::Debug for RunPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunPlace")
            .field("cwd", &self.cwd)
            .field("permission_mode", &self.permission_mode)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model finished.
    Completed,
    /// The turn limit was reached while the model still wanted tools.
    MaxTurns,
    /// The run was cancelled.
    Cancelled,
    /// The provider failed.
    Failed,
    /// The session's spending passed its budget (`--max-budget-usd`); the run stopped
    /// between turns.
    BudgetExhausted,
}

impl RunStatus {
    /// The status name used in events and output.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::MaxTurns => "max_turns",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Failed => "failed",
            RunStatus::BudgetExhausted => "budget_exhausted",
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The last assistant text (or the error, when failed).
    pub result: String,
    /// How the run ended.
    pub status: RunStatus,
    /// Summed token usage.
    pub usage: Usage,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: u32,
}
