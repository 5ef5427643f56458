//! The Safety/Names gate: the last check before a tool runs, and the only code that can
//! produce a `ClearedCall` — the one thing the executor accepts. Agent Mode and the
//! active agent's tool list are enforced here, after (and independently of) the
//! permission engine: a user's approval or bypassPermissions cannot widen them.

pub mod actor;

use std::collections::HashSet;

use crate::protocol::{ToolCall, ToolResult};
use crate::tools::{Registry, Safety, ToolContext};

/// What the active agent may run: a safety set (Plan Mode: read-only) and a name set
/// (the agent definition's tools).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatePolicy {
    /// Allowed safety classes; `None` allows all.
    pub allowed_safety: Option<HashSet<Safety>>,
    /// Allowed tool names; `None` allows all. System tools pass this filter.
    pub allowed_names: Option<HashSet<String>>,
}

impl GatePolicy {
    /// A policy that allows everything.
    pub fn open() -> Self {
        Self::default()
    }

    /// Restricts to read-only tools (Plan Mode).
    pub fn read_only(mut self) -> Self {
        self.allowed_safety = Some(HashSet::from([Safety::ReadOnly]));
        self
    }

    /// Restricts to the given names.
    pub fn with_names(mut self, names: Option<HashSet<String>>) -> Self {
        self.allowed_names = names;
        self
    }

    /// Whether a tool of this safety may run.
    pub fn allows_safety(&self, safety: Safety) -> bool {
        self.allowed_safety
            .as_ref()
            .is_none_or(|s| s.contains(&safety))
    }

    /// Whether a tool of this name (and system flag) may run.
    pub fn allows_name(&self, name: &str, system: bool) -> bool {
        system || self.allowed_names.as_ref().is_none_or(|n| n.contains(name))
    }
}

/// A call that passed the gate. Its fields are private and it has no public constructor:
/// only `clear` (in this module) builds one, so no code path can reach the executor
/// without passing the gate. Deliberately neither `Clone` nor `Deserialize`.
///
/// Code outside the gate cannot build one:
///
/// ```compile_fail
/// use crewmaster::gate::ClearedCall;
/// use crewmaster::protocol::ToolCall;
/// use crewmaster::tools::ToolContext;
/// let forged = ClearedCall {
///     call: ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{}".into() },
///     canonical_name: "write_file".into(),
///     ctx: ToolContext::new("/", "lead"),
/// };
/// ```
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

/// Why the gate would refuse `call`, or `None` if it would clear it. Agents use this to
/// avoid asking a human about a call the gate will refuse anyway (design.md §2.2); the
/// gate itself calls it again in `clear`, so it stays the authority.
pub fn refusal(registry: &Registry, policy: &GatePolicy, call: &ToolCall) -> Option<ToolResult> {
    let Some(def) = registry.definition(&call.name) else {
        return Some(ToolResult::error(
            &call.id,
            "unknown_tool",
            format!("no tool named `{}` exists", call.name),
        ));
    };
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
    if !policy.allows_name(&def.name, def.system) {
        return Some(ToolResult::error(
            &call.id,
            "tool_not_allowed",
            format!(
                "tool is not available for the active skill (`{}`)",
                def.name
            ),
        ));
    }
    None
}

/// Clears a call or refuses it (`tool_not_allowed`, or `unknown_tool`).
pub fn clear(
    registry: &Registry,
    policy: &GatePolicy,
    call: ToolCall,
    ctx: ToolContext,
) -> Result<ClearedCall, ToolResult> {
    if let Some(refused) = refusal(registry, policy, &call) {
        return Err(refused);
    }
    let canonical_name = registry
        .canonical(&call.name)
        .unwrap_or(&call.name)
        .to_string();
    Ok(ClearedCall {
        call,
        canonical_name,
        ctx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Definition, Tool, ToolError};
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

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    fn code(r: Result<ClearedCall, ToolResult>) -> Option<String> {
        r.err().and_then(|e| e.error_code)
    }

    #[test]
    fn read_only_policy_refuses_side_effects() {
        let p = GatePolicy::open().read_only();
        let ctx = ToolContext::new("/", "lead");
        let r = clear(&registry(), &p, call("write_file"), ctx.clone());
        let err = r.unwrap_err();
        assert_eq!(err.error_code.as_deref(), Some("tool_not_allowed"));
        assert!(err.content.contains("not available in the current mode"));
        assert!(clear(&registry(), &p, call("read_file"), ctx).is_ok());
    }

    #[test]
    fn names_filter_spares_system_tools_but_not_their_safety() {
        let names = Some(HashSet::from(["read_file".to_string()]));
        let ctx = ToolContext::new("/", "lead");
        let p = GatePolicy::open().with_names(names.clone());
        let err = clear(&registry(), &p, call("write_file"), ctx.clone()).unwrap_err();
        assert!(err.content.contains("for the active skill"));
        assert!(clear(&registry(), &p, call("task_list"), ctx.clone()).is_ok());
        assert!(clear(&registry(), &p, call("task_stop"), ctx.clone()).is_ok());
        let plan = GatePolicy::open().with_names(names).read_only();
        assert_eq!(
            code(clear(&registry(), &plan, call("task_stop"), ctx)),
            Some("tool_not_allowed".into())
        );
    }

    #[test]
    fn unknown_tools_are_refused() {
        let ctx = ToolContext::new("/", "lead");
        assert_eq!(
            code(clear(&registry(), &GatePolicy::open(), call("nope"), ctx)),
            Some("unknown_tool".into())
        );
    }
}
