//! The choice for one agent of where it runs, from its definition's placement
//! ([`crate::agent::placement::Placement`], re-exported here): on a worker always with
//! `placement: remote`, and with it unset when the local slots are full and the session
//! has workers.

use std::sync::Arc;

use super::pool::Pool;
use crate::agent::definition::AgentDefinition;
pub use crate::agent::placement::Placement;
use crate::agent::subagent::SubagentEnv;

/// Whether an agent of definition `def` runs on a worker: always with `placement: remote`
/// (an error when the session has no workers), and when the local slots are full for an
/// agent that gets its own worktree (`worktree`: the request asks for no other isolation).
pub fn choose(
    env: &SubagentEnv,
    def: &AgentDefinition,
    worktree: bool,
) -> Result<Option<Arc<Pool>>, String> {
    match (def.placement, env.workers.clone()) {
        (Placement::Remote, Some(pool)) => Ok(Some(pool)),
        (Placement::Remote, None) => Err(format!(
            "agent type `{}` has `placement: remote`, but this session has no workers (pass --workers HOST:PORT,… and --cookie-file)",
            def.name
        )),
        (Placement::Auto, Some(pool))
            if worktree
                && def.isolation.as_deref() != Some("none")
                && env.workspaces.is_some()
                && env.slots.available_permits() == 0 =>
        {
            Ok(Some(pool))
        }
        _ => Ok(None),
    }
}
