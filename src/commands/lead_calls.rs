//! Starting a custom slash command on the lead: its limit and model are prepared for the
//! next run, then its `` !`cmd` `` and `@file` calls run as the lead's own calls (each
//! through the permission engine, the gate and the executor, shown like any other call),
//! and the expanded text comes back to be sent as the run's task.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use ractor::ActorRef;
use ractor::rpc::CallResult;
use serde_json::Value;

use super::expand::{self, CallRunner, Expanded};
use super::{CommandCatalog, SlashCommand};
use crate::agent::lead_actor::{LeadMsg, TurnOverrides};
use crate::agent::mode::AgentMode;
use crate::protocol::{ToolCall, ToolResult};

/// How long one `!` command or `@file` read may take, approval included.
const CALL_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Runs calls as the lead (`LeadMsg::Dispatch`).
pub(crate) struct LeadCalls {
    lead: ActorRef<LeadMsg>,
    mode: AgentMode,
    next_id: AtomicU64,
}

impl LeadCalls {
    /// Calls of the lead under the gate policy of a run in `mode`.
    pub(crate) fn new(lead: ActorRef<LeadMsg>, mode: AgentMode) -> Self {
        Self {
            lead,
            mode,
            next_id: AtomicU64::new(1),
        }
    }
}

#[async_trait]
impl CallRunner for LeadCalls {
    async fn run(&self, tool: &str, input: Value) -> ToolResult {
        let id = format!("slash_{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let call = ToolCall {
            id: id.clone(),
            name: tool.to_string(),
            arguments: input.to_string(),
        };
        let mode = self.mode;
        match self
            .lead
            .call(
                |reply| LeadMsg::Dispatch { mode, call, reply },
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(CallResult::Success(result)) => result,
            _ => ToolResult::error(
                id,
                "timeout",
                "the lead did not run the call; it was not run",
            ),
        }
    }
}

/// What went wrong with `/name`: the error lists the commands there are.
pub(crate) fn unknown(name: &str, catalog: &CommandCatalog) -> String {
    let names = catalog.names();
    format!(
        "unknown command /{name}; available: {} (custom commands live in .claude/commands/ or .crew/commands/)",
        if names.is_empty() {
            "none".to_string()
        } else {
            names
                .iter()
                .map(|n| format!("/{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    )
}

/// Prepares `cmd` (its limit and model) for the lead's next run and expands it with
/// `args`; the returned text is that run's task.
pub(crate) async fn start(
    lead: &ActorRef<LeadMsg>,
    cmd: &SlashCommand,
    args: &str,
    mode: AgentMode,
    cwd: &Path,
    home: Option<&Path>,
) -> Expanded {
    let _ = lead.cast(LeadMsg::Prepare(TurnOverrides {
        limit: expand::limit(cmd),
        model: cmd.model.clone(),
    }));
    let calls = LeadCalls::new(lead.clone(), mode);
    expand::expand(cmd, args, cwd, home, &calls).await
}
