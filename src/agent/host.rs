//! The session's worker machines as agents see them: a [`Workers`] host that can take a
//! subagent or a teammate, and [`choose`], which says whether an agent of a definition runs
//! there (`placement: remote` always, an unset placement when the local slots are full).
//! The worker layer implements the trait (its `placement` module) and the session
//! hands it in through `SubagentEnv::workers`, so agents never import the worker layer.

use std::sync::Arc;

use async_trait::async_trait;

use super::definition::AgentDefinition;
use super::delegate::SpawnRequest;
use super::placement::Placement;
use super::subagent_actor::SubagentEnv;
use super::team_link::TeamLink;
use crate::permission::PermissionMode;
use crate::permission::delegation::Isolation;
use crate::team::MemberName;
use crate::tools::delegate::DelegateError;

/// Where agents can run besides this process.
#[async_trait]
pub trait Workers: Send + Sync {
    /// Starts subagent `request` (of definition `def`, at nesting `depth`) on a worker;
    /// returns its agent id, as a local start does.
    async fn launch_subagent(
        self: Arc<Self>,
        env: &SubagentEnv,
        depth: u32,
        request: SpawnRequest,
        def: &AgentDefinition,
    ) -> Result<String, DelegateError>;

    /// Starts teammate `name` of definition `def` on a worker, in permission mode `mode`;
    /// returns its agent id.
    async fn launch_teammate(
        self: Arc<Self>,
        env: &SubagentEnv,
        team: &TeamLink,
        req: SpawnRequest,
        def: &AgentDefinition,
        mode: PermissionMode,
        name: MemberName,
    ) -> Result<String, DelegateError>;
}

/// The workers an agent of definition `def` runs on, if any: always with `placement:
/// remote` (an error when the session has no workers), and when the local slots are full
/// for an agent that gets its own worktree (`isolation`: what the request asks for, else
/// the definition's).
pub fn choose(
    env: &SubagentEnv,
    def: &AgentDefinition,
    isolation: Isolation,
) -> Result<Option<Arc<dyn Workers>>, DelegateError> {
    match (def.placement, env.workers.clone()) {
        (Placement::Remote, Some(workers)) => Ok(Some(workers)),
        (Placement::Remote, None) => Err(DelegateError::Unsupported(format!(
            "agent type `{}` has `placement: remote`, but this session has no workers (pass --workers HOST:PORT,… and --cookie-file)",
            def.name
        ))),
        (Placement::Auto, Some(workers))
            if isolation == Isolation::Worktree
                && env.workspaces.is_some()
                && env.slots.available_permits() == 0 =>
        {
            Ok(Some(workers))
        }
        _ => Ok(None),
    }
}
