//! The Safety/Names gate: the last check before a tool runs, and the only code that can
//! produce a `ClearedCall` — the one thing the executor accepts. It accepts only a
//! `Permit` (which only the permission engine, or a human through the approver, can
//! produce), and judges it against the policy the calling agent registered (Agent Mode
//! and tool list), never against a copy sent with the call: a user's approval or
//! bypassPermissions cannot widen them.
//!
//! `clear` is private to this module (the `Gate` actor in `actor.rs` calls it); outside
//! code can neither call it nor build a `ClearedCall`:
//!
//! ```compile_fail,E0451
//! use crewmaster::gate::ClearedCall;
//! use crewmaster::protocol::ToolCall;
//! use crewmaster::tools::ToolContext;
//! let forged = ClearedCall {
//!     call: ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{}".into() },
//!     canonical_name: "write_file".into(),
//!     ctx: ToolContext::new("/", "lead"),
//! };
//! ```
//!
//! ```compile_fail,E0603
//! use crewmaster::agent::mode::AgentMode;
//! use crewmaster::gate::{GatePolicy, clear};
//! fn forge(r: &crewmaster::tools::Registry, p: crewmaster::permission::Permit) {
//!     let policy = GatePolicy::new(AgentMode::Chat, None);
//!     let ctx = crewmaster::tools::ToolContext::new("/", "lead");
//!     let _ = clear(r, &policy, p, ctx);
//! }
//! ```

pub mod actor;
pub(crate) mod port;

use std::collections::HashSet;

use crate::permission::Permit;
use crate::protocol::mode::AgentMode;
use crate::protocol::{ToolCall, ToolResult};
use crate::tools::{Definition, Registry, Safety, ToolContext};

/// What one agent may run: a safety set (Plan Mode: read-only), a name set (the agent
/// definition's tools) and, for the rest of a turn, the name sets of the active skill and
/// of the slash command that started the turn. Registered with the gate by the agent's
/// actor; the limits are set and cleared by its loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatePolicy {
    /// Allowed safety classes; `None` allows all.
    allowed_safety: Option<HashSet<Safety>>,
    /// Allowed tool names; `None` allows all. System tools pass this filter.
    allowed_names: Option<HashSet<String>>,
    /// The active skill's `allowed-tools` (replaced when another skill is loaded).
    skill: Option<NameLimit>,
    /// The `allowed-tools` of the slash command that started the turn.
    command: Option<NameLimit>,
}

pub use crate::protocol::name_limit::{LimitOwner, NameLimit};

impl GatePolicy {
    /// The policy of an agent in `mode` (Plan Mode: read-only tools) limited to
    /// `allowed_names` (`None`: every tool).
    pub fn new(mode: AgentMode, allowed_names: Option<HashSet<String>>) -> Self {
        let allowed_safety = match mode {
            AgentMode::Plan => Some(HashSet::from([Safety::ReadOnly])),
            AgentMode::Chat | AgentMode::Do => None,
        };
        Self {
            allowed_safety,
            allowed_names,
            skill: None,
            command: None,
        }
    }

    /// Puts `limit` in force: a skill's replaces the active skill's, a command's the
    /// command's.
    pub fn narrow(&mut self, limit: NameLimit) {
        match limit.owner {
            LimitOwner::Skill(_) => self.skill = Some(limit),
            LimitOwner::Command(_) => self.command = Some(limit),
        }
    }

    /// Ends the turn's limits (the active skill's and the command's).
    pub fn end_limits(&mut self) {
        self.skill = None;
        self.command = None;
    }

    /// The limit in force that refuses the tool `def` describes, if any (System tools
    /// pass).
    fn refusing_limit(&self, def: &Definition) -> Option<&NameLimit> {
        if def.system {
            return None;
        }
        [&self.command, &self.skill]
            .into_iter()
            .flatten()
            .find(|l| l.names.as_ref().is_some_and(|n| !n.contains(&def.name)))
    }

    /// Whether a tool of this safety may run.
    pub fn allows_safety(&self, safety: Safety) -> bool {
        self.allowed_safety
            .as_ref()
            .is_none_or(|s| s.contains(&safety))
    }

    /// Whether the tool `def` describes may run by its name (System tools always may).
    pub fn allows_name(&self, def: &Definition) -> bool {
        def.system
            || (self
                .allowed_names
                .as_ref()
                .is_none_or(|n| n.contains(&def.name))
                && self.refusing_limit(def).is_none())
    }
}

/// A call that passed the gate. Its fields are private and it has no public constructor:
/// only `clear` (private to this module) builds one, so no code path can reach the
/// executor without passing the gate. Deliberately neither `Clone` nor `Deserialize`.
#[derive(Debug)]
pub struct ClearedCall {
    call: ToolCall,
    canonical_name: String,
    ctx: ToolContext,
}

impl ClearedCall {
    /// The call as the model sent it.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The registry name of the tool to run (aliases resolved).
    pub fn tool_name(&self) -> &str {
        &self.canonical_name
    }

    /// The context the tool runs in.
    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Splits into parts for the executor.
    pub fn into_parts(self) -> (ToolCall, String, ToolContext) {
        (self.call, self.canonical_name, self.ctx)
    }
}

/// Why the gate would refuse `call` under `policy`, or `None` if it would clear it. A
/// query only (it produces no `ClearedCall`): the gate answers it for agents that must
/// not ask a human about a call it will refuse anyway (design.md §2.2), and calls it
/// again in `clear`, so it stays the authority.
pub fn refusal(registry: &Registry, policy: &GatePolicy, call: &ToolCall) -> Option<ToolResult> {
    let Some(tool) = registry.get(&call.name) else {
        return Some(ToolResult::error(
            &call.id,
            "unknown_tool",
            format!("no tool named `{}` exists", call.name),
        ));
    };
    let def = tool.definition();
    // Safety first: System tools bypass only the name filter, never this one (seed 000).
    if !policy.allows_safety(def.safety) {
        return Some(ToolResult::error(
            &call.id,
            "tool_not_allowed",
            format!(
                "tool is not available in the current mode (`{}` is {})",
                def.name,
                def.safety.as_str()
            ),
        ));
    }
    if let Some(limit) = policy.refusing_limit(def) {
        let mut allowed: Vec<&str> = limit.names.iter().flatten().map(String::as_str).collect();
        allowed.sort_unstable();
        return Some(ToolResult::error(
            &call.id,
            "tool_not_allowed",
            format!(
                "`{}` is not allowed while {} is active (its allowed-tools: {}); the call was not run",
                def.name,
                limit.owner,
                if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                }
            ),
        ));
    }
    if !policy.allows_name(def) {
        return Some(ToolResult::error(
            &call.id,
            "tool_not_allowed",
            format!(
                "`{}` is not in this agent's tool list; the call was not run",
                def.name
            ),
        ));
    }
    None
}

/// Clears a permitted call or refuses it (`tool_not_allowed`, `unknown_tool`). The call,
/// the agent, the working directory and the sandbox profile come from the permit; a
/// context for another agent or directory than the permit's is refused.
fn clear(
    registry: &Registry,
    policy: &GatePolicy,
    permit: Permit,
    mut ctx: ToolContext,
) -> Result<ClearedCall, ToolResult> {
    let (call, agent, cwd, profile) = permit.into_parts();
    if ctx.agent_id != agent || ctx.cwd != cwd {
        return Err(ToolResult::error(
            &call.id,
            "tool_not_allowed",
            format!(
                "the permit was issued to `{agent}` in {}, not to `{}` in {}; the call was not run",
                cwd.display(),
                ctx.agent_id,
                ctx.cwd.display()
            ),
        ));
    }
    if let Some(refused) = refusal(registry, policy, &call) {
        return Err(refused);
    }
    let canonical_name = registry
        .canonical(&call.name)
        .unwrap_or(&call.name)
        .to_string();
    ctx.agent_id = agent;
    // The permit's profile, never the caller's: the context cannot widen what was granted.
    ctx.sandbox = std::mem::take(&mut ctx.sandbox).for_call(profile);
    Ok(ClearedCall {
        call,
        canonical_name,
        ctx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Tool, ToolError};
    use async_trait::async_trait;
    use serde_json::{Value, json};
    use std::sync::Arc;

    struct Fake(Definition);

    #[async_trait]
    impl Tool for Fake {
        fn definition(&self) -> &Definition {
            &self.0
        }
        async fn run(&self, _: Value, _: ToolContext) -> Result<String, ToolError> {
            Ok(String::new())
        }
    }

    fn tool(name: &str, safety: Safety, system: bool) -> Arc<dyn Tool> {
        Arc::new(Fake(Definition {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            safety,
            system,
            timeout: None,
            aliases: Vec::new(),
            permission: None,
        }))
    }

    fn registry() -> Registry {
        Registry::with_tools([
            tool("read_file", Safety::ReadOnly, false),
            tool("write_file", Safety::SideEffect, false),
            tool("task_list", Safety::ReadOnly, true),
            tool("task_stop", Safety::SideEffect, true),
        ])
        .unwrap()
    }

    fn permit(name: &str) -> Permit {
        let call = ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        Permit::for_test(call, "lead", "/")
    }

    fn ctx() -> ToolContext {
        ToolContext::new("/", "lead")
    }

    fn code(r: Result<ClearedCall, ToolResult>) -> Option<String> {
        r.err().and_then(|e| e.error_code)
    }

    #[test]
    fn read_only_policy_refuses_side_effects() {
        let p = GatePolicy::new(AgentMode::Plan, None);
        let r = clear(&registry(), &p, permit("write_file"), ctx());
        let err = r.unwrap_err();
        assert_eq!(err.error_code.as_deref(), Some("tool_not_allowed"));
        assert!(err.content.contains("not available in the current mode"));
        assert!(clear(&registry(), &p, permit("read_file"), ctx()).is_ok());
    }

    #[test]
    fn names_filter_spares_system_tools_but_not_their_safety() {
        let names = Some(HashSet::from(["read_file".to_string()]));
        let p = GatePolicy::new(AgentMode::Chat, names.clone());
        let err = clear(&registry(), &p, permit("write_file"), ctx()).unwrap_err();
        assert!(err.content.contains("not in this agent's tool list"));
        assert!(clear(&registry(), &p, permit("task_list"), ctx()).is_ok());
        assert!(clear(&registry(), &p, permit("task_stop"), ctx()).is_ok());
        let plan = GatePolicy::new(AgentMode::Plan, names);
        assert_eq!(
            code(clear(&registry(), &plan, permit("task_stop"), ctx())),
            Some("tool_not_allowed".into())
        );
    }

    #[test]
    fn a_skill_narrows_until_replaced_or_ended_and_never_widens() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
        let skill = |n: &str, v: &[&str]| NameLimit {
            owner: LimitOwner::Skill(n.into()),
            names: Some(names(v)),
        };
        let mut p = GatePolicy::new(AgentMode::Chat, Some(names(&["read_file"])));
        p.narrow(skill("review", &["read_file", "write_file"]));
        // The agent's own list still refuses what the skill would allow.
        assert!(clear(&registry(), &p, permit("write_file"), ctx()).is_err());
        let mut p = GatePolicy::new(AgentMode::Chat, None);
        p.narrow(skill("review", &["read_file"]));
        let err = clear(&registry(), &p, permit("write_file"), ctx()).unwrap_err();
        assert_eq!(err.error_code.as_deref(), Some("tool_not_allowed"));
        assert!(err.content.contains("skill `review`"), "{}", err.content);
        assert!(err.content.contains("read_file"), "{}", err.content);
        assert!(clear(&registry(), &p, permit("task_stop"), ctx()).is_ok());
        p.narrow(NameLimit {
            owner: LimitOwner::Command("ship".into()),
            names: Some(names(&["read_file", "write_file"])),
        });
        // Both limits must allow: the command's list does not undo the skill's.
        assert!(clear(&registry(), &p, permit("write_file"), ctx()).is_err());
        p.narrow(skill("edit", &["write_file"]));
        assert!(clear(&registry(), &p, permit("write_file"), ctx()).is_ok());
        let err = clear(&registry(), &p, permit("read_file"), ctx()).unwrap_err();
        assert!(err.content.contains("skill `edit`"), "{}", err.content);
        // A skill without a list ends the last one's.
        p.narrow(NameLimit {
            owner: LimitOwner::Skill("free".into()),
            names: None,
        });
        p.command = None;
        assert!(clear(&registry(), &p, permit("read_file"), ctx()).is_ok());
        p.narrow(skill("edit", &["write_file"]));
        p.end_limits();
        assert!(clear(&registry(), &p, permit("read_file"), ctx()).is_ok());
        let mut plan = GatePolicy::new(AgentMode::Plan, None);
        plan.narrow(skill("w", &["write_file"]));
        let err = clear(&registry(), &plan, permit("write_file"), ctx()).unwrap_err();
        assert!(err.content.contains("current mode"), "{}", err.content);
    }

    #[test]
    fn unknown_tools_are_refused() {
        let open = GatePolicy::new(AgentMode::Chat, None);
        assert_eq!(
            code(clear(&registry(), &open, permit("nope"), ctx())),
            Some("unknown_tool".into())
        );
    }

    #[test]
    fn a_permit_runs_only_as_its_agent_in_its_directory() {
        let open = GatePolicy::new(AgentMode::Chat, None);
        let other_agent = ToolContext::new("/", "explore/t1");
        let err = clear(&registry(), &open, permit("read_file"), other_agent).unwrap_err();
        assert!(err.content.contains("issued to `lead`"), "{}", err.content);
        let other_dir = ToolContext::new("/tmp", "lead");
        assert!(clear(&registry(), &open, permit("read_file"), other_dir).is_err());
        let cleared = clear(&registry(), &open, permit("read_file"), ctx()).unwrap();
        assert_eq!(cleared.context().agent_id, "lead");
    }
}
