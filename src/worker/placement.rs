//! Where an agent definition's subagents run: `placement: local` (this machine only),
//! `placement: remote` (always on a worker), or unset (here, and on a worker when the
//! local slots are full and the session has workers), and the choice for one agent.

use std::str::FromStr;
use std::sync::Arc;

use super::pool::Pool;
use crate::agent::definition::AgentDefinition;
use crate::agent::subagent::SubagentEnv;

/// An agent definition's placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Here, or on a worker when local slots are full.
    #[default]
    Auto,
    /// Only here.
    Local,
    /// Always on a worker.
    Remote,
}

impl FromStr for Placement {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(Placement::Local),
            "remote" => Ok(Placement::Remote),
            other => Err(format!(
                "field `placement`: `{other}` is not `local` or `remote`"
            )),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_two_names_and_refuses_others() {
        assert_eq!("remote".parse::<Placement>(), Ok(Placement::Remote));
        assert_eq!("local".parse::<Placement>(), Ok(Placement::Local));
        assert!(
            "cloud"
                .parse::<Placement>()
                .unwrap_err()
                .contains("placement")
        );
    }
}
