//! What a session is built from: its configuration, its hooks and the orchestration it
//! offers (subagents, tasks, teams, worktrees, workers).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::catalog::Catalog;
use crate::agent::runner::AgentSpec;
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::permission::{PermissionMode, Policy};
use crate::protocol::Message;
use crate::provider::Provider;
use crate::team::restore::Transcripts;
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
    /// Background tasks and subagents (`None`: the lead works alone).
    pub orchestration: Option<Orchestration>,
    /// The configured hooks and what they are told about the session (`None`: no hooks).
    pub hooks: Option<SessionHooks>,
    /// Auto mode's classifier, breaker and tally (`None`: auto mode asks as default does).
    pub auto: Option<Arc<crate::auto_mode::AutoMode>>,
    /// Context windows and when agents compact (`contextWindows`, `autoCompact`).
    pub context: crate::agent::context::ContextSettings,
}

/// What the session's `Hooks` actor is built from.
pub struct SessionHooks {
    /// The hooks of every settings layer and agent definition (already filtered by
    /// folder trust).
    pub hooks: crate::hooks::HookTable,
    /// The project root (`CLAUDE_PROJECT_DIR`, `CREW_PROJECT_DIR`).
    pub project_dir: PathBuf,
    /// The session's id (`session_id`).
    pub session_id: String,
    /// The lead's transcript (`transcript_path`).
    pub transcript_path: PathBuf,
    /// `startup` or `resume`, for `SessionStart`.
    pub source: &'static str,
}

/// What a session needs to run background tasks and subagents.
pub struct Orchestration {
    /// Where task records and logs are kept (`~/.crew/projects/<slug>/<session>`).
    pub session_dir: PathBuf,
    /// The agent definitions.
    pub catalog: Arc<Catalog>,
    /// Give subagents git worktrees (when the working directory is in a repository).
    pub worktrees: bool,
    /// Where worktrees go (`None`: `~/.crew/worktrees`).
    pub worktree_base: Option<PathBuf>,
    /// How many subagents may run at once; the rest queue.
    pub max_concurrent_agents: usize,
    /// Turn limit for subagents whose definition sets none.
    pub subagent_max_turns: u32,
    /// Where teams live (`~/.crew/teams`); the session's team is named after its session
    /// directory. `None`: no team (named agents are refused).
    pub teams_dir: Option<PathBuf>,
    /// A resumed session's transcripts: its team (roster, inboxes, list and each
    /// teammate's conversation) is restored from them and its teammates restarted.
    pub restore_team: Option<Transcripts>,
    /// Worker nodes joined for this session (`--workers`): where agents can run besides
    /// this process (`crate::worker::pool_actor::Pool` implements it).
    pub workers: Option<Arc<dyn crate::agent::host::Workers>>,
}
