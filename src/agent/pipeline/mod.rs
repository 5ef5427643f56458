//! The one path a tool call takes from an agent: PreToolUse hooks → permission engine →
//! (approver) → gate → executor → PostToolUse hooks, typed at every hop: a hook's block
//! refuses the call before the engine, its allow/ask reaches the engine as a
//! `HookOpinion` (only the engine issues permits), and its `updatedInput` is the call the
//! engine judges; the engine answers with a `Permit` (allowed), a
//! `Pending` (ask a human) or a refusal; a `Pending` becomes a `Permit` only with the
//! approver's `Approval` — or, in auto mode, for a fallback Ask, with the classifier's
//! `ClassifierAllow` (`auto_mode::classifier`); the gate accepts only a `Permit` and hands the executor a
//! `ClearedCall`. Every RPC has a timeout, and a timeout or a dropped reply is a refusal
//! (fail closed). A refusal at any stage becomes an error `ToolResult` that goes back
//! into the conversation; it never aborts the agent. The actors are reached through the
//! session's `Slot`s: a crashed one is restarted and the next call reaches its
//! replacement, while the call it had in flight gets an error result.

use std::sync::Arc;
use std::time::Duration;

use ractor::RpcReplyPort;

use crate::approver::actor::ApproverMsg;
use crate::auto_mode::AutoMode;
use crate::auto_mode::classifier::Intent;
use crate::engine::PermissionMsg;
use crate::engine::onward::{Authorized, Onward};
use crate::events::{EventBus, EventKind};
use crate::gate::actor::GateMsg;
use crate::permission::{
    CheckRequest, Checked, Decision, HookOpinion, PermissionMode, Permit, SharedMode, Source,
    Verdict,
};
use crate::protocol::{ToolCall, ToolResult};
use crate::supervise::{CallError, Slot};
use crate::tools::{Registry, ToolContext};

mod ask;

use ask::Classified;

/// How long the permission engine (or the gate, for a query) may take to answer.
pub const PERMISSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a human may take to answer.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// Extra time the gate and executor get beyond the tool's own timeout.
const EXECUTION_MARGIN: Duration = Duration::from_secs(30);

/// The actors a call passes, shared by an agent's concurrent calls.
#[derive(Clone)]
pub struct Pipeline {
    /// The tool registry (for safety labels and timeouts).
    pub registry: Arc<Registry>,
    /// The permission engine.
    pub permission: Slot<PermissionMsg>,
    /// The approver.
    pub approver: Slot<ApproverMsg>,
    /// The gate (agents register their policy with it).
    pub gate: Slot<GateMsg>,
    /// Where events go.
    pub events: EventBus,
    /// Fires the session's hooks (PreToolUse, PostToolUse, Notification).
    pub hooks: crate::hooks::HookClient,
    /// Auto mode's classifier (`None`: an Ask in auto mode goes to the approver).
    pub auto: Option<Arc<AutoMode>>,
    /// The session's spending limit, charged by every agent after each turn.
    pub budget: super::budget::Budget,
    /// Context windows and when agents compact.
    pub context: Arc<crate::agent::context::ContextSettings>,
}

/// The calling agent's situation during a run. Its gate policy is not here: the agent's
/// actor registered it with the gate.
#[derive(Clone)]
pub struct CallerContext {
    /// The agent's id.
    pub agent: String,
    /// Its permission mode, read at each call (a switch applies to the next call).
    pub mode: SharedMode,
    /// The template for each call's tool context (cwd, sandbox, cancellation).
    pub tool_ctx: ToolContext,
    /// Set when a hook answered `continue: false`: the loop stops after this step.
    pub hook_stop: Arc<std::sync::Mutex<Option<String>>>,
    /// What the run is for, as auto mode's classifier is told (set by the run).
    pub intent: Arc<Intent>,
}

async fn rpc<M, T>(
    actor: &Slot<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
    timeout: Duration,
) -> Result<T, CallError>
where
    M: ractor::Message,
    T: Send + 'static,
{
    actor.call(build, timeout).await
}

/// Why `who` gave no answer, for an error result.
fn unanswered(who: &str, e: CallError) -> String {
    match e {
        CallError::Timeout => format!("the {who} did not answer in time"),
        CallError::Gone => format!(
            "the {who} stopped before answering (it is restarted; the next call reaches the new one)"
        ),
    }
}

impl Pipeline {
    /// Takes one call through the whole path and returns what the model will see.
    pub async fn dispatch(&self, caller: &CallerContext, mut call: ToolCall) -> ToolResult {
        self.announce(caller, std::slice::from_mut(&mut call)).await;
        let result = self.decide_and_run(caller, call.clone()).await;
        self.finished(caller, [(&call, &result)]);
        result
    }

    /// Gives aliases (Claude Code's `Task` for `agent`) their real name, under which they
    /// are decided, and publishes the calls' start together (one transcript write for a
    /// batch); run each with [`Pipeline::decide_and_run`] and report its end with
    /// [`Pipeline::finished`].
    pub async fn announce(&self, caller: &CallerContext, calls: &mut [ToolCall]) {
        for call in calls.iter_mut() {
            if let Some(canonical) = self.registry.canonical(&call.name) {
                call.name = canonical.to_string();
            }
        }
        let started = calls
            .iter()
            .map(|call| EventKind::ToolCallStarted { call: call.clone() })
            .collect();
        self.events.publish_all(&caller.agent, started);
        crate::supervise::faults::calls_starting(calls.len()).await;
    }

    /// Publishes the end of calls that ended together.
    pub fn finished<'a>(
        &self,
        caller: &CallerContext,
        ended: impl IntoIterator<Item = (&'a ToolCall, &'a ToolResult)>,
    ) {
        let kinds = ended
            .into_iter()
            .map(|(call, result)| EventKind::ToolCallFinished {
                call_id: call.id.clone(),
                name: call.name.clone(),
                is_error: result.is_error,
                error_code: result.error_code.clone(),
                summary: summary(result),
            })
            .collect();
        self.events.publish_all(&caller.agent, kinds);
    }

    /// Takes one announced call through hooks, engine, gate and executor.
    pub async fn decide_and_run(&self, caller: &CallerContext, call: ToolCall) -> ToolResult {
        let mode = caller.mode.get();
        let (agent, cwd, cancel) = (&caller.agent, &caller.tool_ctx.cwd, &caller.tool_ctx.cancel);
        let pre = self
            .hooks
            .pre_tool_use(agent, cwd, mode, call, cancel)
            .await;
        caller.stop_for_hook(pre.stop.clone());
        let call = pre.call;
        if let Some(reason) = pre.block {
            let d = Decision::new(Verdict::Deny, Source::Hook, reason);
            self.publish_decision(agent, &call.id, &d);
            return ToolResult::error(
                &call.id,
                "permission_denied",
                format!("a PreToolUse hook blocked this call: {}", d.reason),
            );
        }
        if let Some(reason) = self.hooks.task_completed(agent, cwd, &call, cancel).await {
            return ToolResult::error(
                &call.id,
                "hook_blocked",
                format!("a TaskCompleted hook kept the item open: {reason}"),
            );
        }
        let mut result = self
            .authorize_and_run(caller, call.clone(), pre.opinion)
            .await;
        // PostToolUse is for calls that ran; a refusal never reached the tool.
        let refused = matches!(
            result.error_code.as_deref(),
            Some("permission_denied" | "tool_not_allowed")
        );
        if !refused {
            let stop = self
                .hooks
                .post_tool_use(agent, cwd, mode, &call, &mut result, cancel)
                .await;
            caller.stop_for_hook(stop);
        }
        crate::hooks::tool_events::append_context(
            &mut result,
            crate::hooks::HookEvent::PreToolUse,
            &pre.context,
        );
        result
    }

    async fn authorize_and_run(
        &self,
        caller: &CallerContext,
        call: ToolCall,
        hook: HookOpinion,
    ) -> ToolResult {
        let mode = caller.mode.get();
        let request = CheckRequest {
            call: call.clone(),
            // The spec comes from the tool's definition in the registry, never the model.
            spec: self.registry.permission_spec(&call.name),
            cwd: caller.tool_ctx.cwd.clone(),
            mode,
        };
        // Allowed outright, the engine sends the permit on to the gate itself; the
        // answer is then the result. Refused or asked, it comes back here.
        let onward = Onward {
            gate: self.gate.clone(),
            ctx: call_context(caller),
            events: self.events.clone(),
        };
        let answer = rpc(
            &self.permission,
            |reply| PermissionMsg::AuthorizeAndSubmit {
                agent: caller.agent.clone(),
                request: request.clone(),
                hook,
                onward,
                reply,
            },
            PERMISSION_TIMEOUT + self.run_time(&call.name),
        )
        .await;
        let checked = match answer {
            Ok(Authorized::Ran(result)) => return result,
            Ok(Authorized::Checked(checked)) => checked,
            Err(e) => return lost(call.id.clone(), e),
        };
        self.publish_decision(&caller.agent, &call.id, checked.decision());
        let permit = match checked {
            Checked::Denied(decision) => return denied(&call, &decision),
            Checked::Allowed { permit, .. } => permit,
            Checked::Asked(pending) => {
                // Never ask a human about a call the gate will refuse anyway.
                if let Some(refused) = self.gate_refusal(caller, &call).await {
                    return refused;
                }
                // Auto mode: the classifier answers what the mode fallback would ask; an
                // explicit ask (rule, dangerous command, protected file) is for a human.
                let pending = if mode == PermissionMode::Auto && !pending.decision().explicit_ask {
                    match self.classify(caller, pending).await {
                        Classified::Permit(permit) => {
                            return self.run_through_gate(caller, permit).await;
                        }
                        Classified::Refused(result) => return result,
                        Classified::Ask(pending) => pending,
                    }
                } else {
                    pending
                };
                match self.ask(caller, pending, request).await {
                    Ok(permit) => permit,
                    Err(refused) => return refused,
                }
            }
        };
        self.run_through_gate(caller, permit).await
    }

    /// What the gate would answer for this call of this agent; no answer is a refusal.
    async fn gate_refusal(&self, caller: &CallerContext, call: &ToolCall) -> Option<ToolResult> {
        rpc(
            &self.gate,
            |reply| GateMsg::Refusal {
                agent: caller.agent.clone(),
                call: call.clone(),
                reply,
            },
            PERMISSION_TIMEOUT,
        )
        .await
        .unwrap_or_else(|e| {
            Some(ToolResult::error(
                &call.id,
                "tool_not_allowed",
                format!("{}; the call was not run", unanswered("gate", e)),
            ))
        })
    }

    async fn run_through_gate(&self, caller: &CallerContext, permit: Permit) -> ToolResult {
        let ctx = call_context(caller);
        let (id, time) = (permit.call().id.clone(), self.run_time(&permit.call().name));
        rpc(
            &self.gate,
            |reply| GateMsg::Submit {
                permit,
                ctx,
                reply: reply.into(),
            },
            time,
        )
        .await
        .unwrap_or_else(|e| lost(id, e))
    }

    /// How long a call of `tool` may take from the gate on: its own timeout and a margin.
    fn run_time(&self, tool: &str) -> Duration {
        let timeout = self
            .registry
            .get(tool)
            .and_then(|t| t.definition().timeout)
            .unwrap_or(crate::executor::DEFAULT_TIMEOUT);
        timeout + EXECUTION_MARGIN
    }

    fn publish_decision(&self, agent: &str, call_id: &str, d: &Decision) {
        self.events.decided(agent, call_id, d);
    }
}

impl CallerContext {
    /// Records a hook's `continue: false` (the first reason wins).
    fn stop_for_hook(&self, reason: Option<String>) {
        if let Some(reason) = reason {
            let mut slot = match self.hook_stop.lock() {
                Ok(s) => s,
                Err(poisoned) => poisoned.into_inner(),
            };
            slot.get_or_insert(reason);
        }
    }

    /// The `continue: false` reason a hook gave during this run, if any.
    pub fn hook_stopped(&self) -> Option<String> {
        match self.hook_stop.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// The call's own context: the caller's, with a cancellation of its own.
fn call_context(caller: &CallerContext) -> ToolContext {
    let mut ctx = caller.tool_ctx.clone();
    ctx.cancel = caller.tool_ctx.cancel.child_token();
    ctx
}

/// The result of a call whose answer never came: the actor holding it died (it is
/// restarted) or the time ran out. Once a call may have reached the executor nobody can
/// say whether it ran, so the model is told to check.
fn lost(id: String, e: CallError) -> ToolResult {
    match e {
        CallError::Timeout => {
            ToolResult::error(id, "timeout", "the tool did not report back in time")
        }
        CallError::Gone => ToolResult::error(
            id,
            "actor_restarted",
            "the permission engine, gate or executor stopped with this call in flight (it is \
restarted); the call may or may not have run, so check before repeating it",
        ),
    }
}

fn denied(call: &ToolCall, d: &Decision) -> ToolResult {
    ToolResult::error(
        &call.id,
        "permission_denied",
        format!("{} (source: {})", d.reason, d.source),
    )
}

/// A result for display, without the `error [code]: ` prefix: an error whole (a refusal says
/// what to do, and must never be cut), other results their first line, cut at 160 characters.
fn summary(result: &ToolResult) -> String {
    let text = match &result.error_code {
        Some(code) => result
            .content
            .strip_prefix(&format!("error [{code}]: "))
            .unwrap_or(&result.content),
        None => &result.content,
    };
    // A refusal or an error is a message for the user, with what to do: never cut it.
    if result.is_error {
        return text.trim().to_string();
    }
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(160).collect();
    // Only whether there is more, not how much: a result can be thousands of lines.
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_the_first_line_cut_at_160_characters_and_marked_when_there_is_more() {
        let ok = |text: &str| summary(&ToolResult::ok("c", text));
        assert_eq!(ok("one line"), "one line");
        assert_eq!(ok("\n  \nfirst\nsecond"), "first …");
        let long = "é".repeat(200);
        assert_eq!(ok(&long), format!("{} …", "é".repeat(160)));
        assert_eq!(ok(&"é".repeat(160)), "é".repeat(160));
        let failed = ToolResult::error("c", "failed", "line one\nline two");
        assert_eq!(summary(&failed), "line one\nline two");
    }
}
