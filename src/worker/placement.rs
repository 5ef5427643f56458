//! The worker side of placement: the session's [`Pool`] as the agents' [`Workers`] host,
//! starting a subagent (`remote_task`) or a teammate (`teammate_launch`) on a worker. The
//! choice of where an agent runs is the agents' (`crate::agent::host::choose`, from the
//! definition's [`Placement`], re-exported here for its old path).

use std::sync::Arc;

use async_trait::async_trait;

use super::pool_actor::Pool;
use crate::agent::definition::AgentDefinition;
use crate::agent::delegate::SpawnRequest;
use crate::agent::host::Workers;
use crate::agent::subagent_actor::SubagentEnv;
use crate::agent::team_link::TeamLink;
use crate::permission::PermissionMode;
use crate::team::MemberName;
use crate::tools::delegate::DelegateError;

#[async_trait]
impl Workers for Pool {
    async fn launch_subagent(
        self: Arc<Self>,
        env: &SubagentEnv,
        depth: u32,
        request: SpawnRequest,
        def: &AgentDefinition,
    ) -> Result<String, DelegateError> {
        super::remote_task::launch(env, self, depth, request, def, Default::default()).await
    }

    async fn launch_teammate(
        self: Arc<Self>,
        env: &SubagentEnv,
        team: &TeamLink,
        req: SpawnRequest,
        def: &AgentDefinition,
        mode: PermissionMode,
        name: MemberName,
    ) -> Result<String, DelegateError> {
        super::teammate_launch::launch(env, team, req, def, self, mode, name).await
    }
}
