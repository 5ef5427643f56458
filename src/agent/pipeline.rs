//! The one path a tool call takes from an agent: PreToolUse hooks → permission engine →
//! (approver) → gate → executor → PostToolUse hooks, typed at every hop: a hook's block
//! refuses the call before the engine, its allow/ask reaches the engine as a
//! `HookOpinion` (only the engine issues permits), and its `updatedInput` is the call the
//! engine judges; the engine answers with a `Permit` (allowed), a
//! `Pending` (ask a human) or a refusal; a `Pending` becomes a `Permit` only with the
//! approver's `Approval` — or, in auto mode, for a fallback Ask, with the classifier's
//! `ClassifierAllow` (`permission::auto`); the gate accepts only a `Permit` and hands the executor a
//! `ClearedCall`. Every RPC has a timeout, and a timeout or a dropped reply is a refusal
//! (fail closed). A refusal at any stage becomes an error `ToolResult` that goes back
//! into the conversation; it never aborts the agent. The actors are reached through the
//! session's `Slot`s: a crashed one is restarted and the next call reaches its
//! replacement, while the call it had in flight gets an error result.

use std::sync::Arc;
use std::time::Duration;

use ractor::RpcReplyPort;

use crate::approver::actor::ApproverMsg;
use crate::approver::{ApprovalAnswer, ApprovalRequest, Outcome};
use crate::events::{EventBus, EventKind};
use crate::gate::actor::GateMsg;
use crate::permission::actor::{GrantScope, PermissionMsg};
use crate::permission::auto::classifier::Intent;
use crate::permission::auto::{AutoMode, Judged};
use crate::permission::{
    CheckRequest, Checked, Decision, HookOpinion, Pending, PermissionMode, Permit, SharedMode,
    Source, Verdict,
};
use crate::protocol::{ToolCall, ToolResult};
use crate::supervise::{CallError, Slot};
use crate::tools::{Registry, ToolContext};

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
        // Aliases (Claude Code's `Task` for `agent`) are decided under their real name.
        if let Some(canonical) = self.registry.canonical(&call.name) {
            call.name = canonical.to_string();
        }
        let agent = caller.agent.as_str();
        self.events
            .publish(agent, EventKind::ToolCallStarted { call: call.clone() });
        let result = self.decide_and_run(caller, call.clone()).await;
        self.events.publish(
            agent,
            EventKind::ToolCallFinished {
                call_id: call.id.clone(),
                name: call.name.clone(),
                is_error: result.is_error,
                error_code: result.error_code.clone(),
                summary: summary(&result),
            },
        );
        result
    }

    async fn decide_and_run(&self, caller: &CallerContext, call: ToolCall) -> ToolResult {
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
        let checked = rpc(
            &self.permission,
            |reply| PermissionMsg::Authorize {
                agent: caller.agent.clone(),
                request: request.clone(),
                hook,
                reply,
            },
            PERMISSION_TIMEOUT,
        )
        .await
        .unwrap_or_else(|e| {
            Checked::Denied(Decision::new(
                Verdict::Deny,
                Source::Unknown,
                unanswered("permission engine", e),
            ))
        });
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

    /// Asks the approver; a human's allow and the engine's `Pending` make the permit.
    async fn ask(
        &self,
        caller: &CallerContext,
        pending: Pending,
        request: CheckRequest,
    ) -> Result<Permit, ToolResult> {
        let call = pending.call().clone();
        let question = ApprovalRequest {
            agent: caller.agent.clone(),
            call: call.clone(),
            decision: pending.decision().clone(),
            mode: request.mode,
            // A teammate's loop carries its own mailbox; the lead's (it reads its team's
            // mail too) does not make it a teammate.
            teammate: caller
                .tool_ctx
                .mailbox
                .as_ref()
                .filter(|m| !m.me.is_lead())
                .map(|m| m.me.to_string()),
        };
        // Notification hooks run beside the question (the question is not delayed); the
        // call goes on once both are done, so no hook is left running unowned.
        let message = format!("crew needs your permission to use {}", call.name);
        let notified = self.hooks.notification(
            &caller.agent,
            &caller.tool_ctx.cwd,
            "permission_prompt",
            &message,
        );
        let asked = rpc(
            &self.approver,
            |reply| ApproverMsg::Ask(question, reply),
            APPROVAL_TIMEOUT,
        );
        let (_, outcome) = tokio::join!(notified, asked);
        let outcome = outcome.unwrap_or_else(|e| Outcome::Refused {
            message: Some(match e {
                CallError::Timeout => "the approval was not answered".into(),
                CallError::Gone => unanswered("approver", e),
            }),
        });
        let approval = match outcome {
            Outcome::Approved(approval) => approval,
            Outcome::Refused { message } => {
                let reason = message.unwrap_or_else(|| "the user denied this tool call".into());
                self.events.publish(
                    &caller.agent,
                    EventKind::ApprovalRefused {
                        call_id: call.id.clone(),
                        reason: reason.clone(),
                    },
                );
                let mut d = Decision::new(Verdict::Deny, Source::User, reason);
                d.category = pending.decision().category;
                self.publish_decision(&caller.agent, &call.id, &d);
                return Err(denied(&call, &d));
            }
        };
        let scope = match approval.answer() {
            ApprovalAnswer::AllowSession => Some(GrantScope::Session),
            ApprovalAnswer::AllowForever => Some(GrantScope::Forever),
            ApprovalAnswer::AllowOnce | ApprovalAnswer::Deny { .. } => None,
        };
        let permit = Permit::approved(pending, &approval)
            .map_err(|e| ToolResult::error(&call.id, "permission_denied", e.to_string()))?;
        self.publish_decision(
            &caller.agent,
            &call.id,
            &Decision::new(Verdict::Allow, Source::User, "approved"),
        );
        if let Some(scope) = scope {
            let granted = rpc(
                &self.permission,
                |reply| PermissionMsg::Grant(request, scope, reply),
                PERMISSION_TIMEOUT,
            )
            .await;
            let problem = match granted {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(e) => Some(unanswered("permission engine", e)),
            };
            if let Some(e) = problem {
                // The call itself was approved; only remembering the grant failed.
                self.events.publish(
                    &caller.agent,
                    EventKind::Error {
                        message: format!("could not save the approval: {e}"),
                    },
                );
            }
        }
        Ok(permit)
    }

    /// Auto mode: the classifier's allow makes the permit; its denial goes back to the
    /// model as a tool error with its reason; without a usable classifier (breaker
    /// tripped, none configured) the call is asked like any other.
    async fn classify(&self, caller: &CallerContext, pending: Pending) -> Classified {
        let Some(auto) = &self.auto else {
            return Classified::Ask(pending);
        };
        let call = pending.call().clone();
        let judged = auto
            .judge(
                &caller.agent,
                &caller.mode,
                &call,
                pending.decision(),
                &caller.intent,
                &caller.tool_ctx.cancel,
            )
            .await;
        match judged {
            Judged::Allowed(allow, reason) => {
                let mut d = Decision::new(Verdict::Allow, Source::Classifier, reason);
                d.category = pending.decision().category;
                self.publish_decision(&caller.agent, &call.id, &d);
                match Permit::classified(pending, &allow) {
                    Ok(permit) => Classified::Permit(permit),
                    Err(e) => Classified::Refused(ToolResult::error(
                        &call.id,
                        "permission_denied",
                        e.to_string(),
                    )),
                }
            }
            Judged::Denied { reason, tripped } => {
                let mut d = Decision::new(
                    Verdict::Deny,
                    Source::Classifier,
                    format!("auto mode's classifier denied this call: {reason}"),
                );
                d.category = pending.decision().category;
                self.publish_decision(&caller.agent, &call.id, &d);
                if let Some(why) = tripped {
                    self.events
                        .publish(&caller.agent, EventKind::AutoModeOff { reason: why });
                }
                Classified::Refused(denied(&call, &d))
            }
            Judged::Unavailable(_) => Classified::Ask(pending),
        }
    }

    async fn run_through_gate(&self, caller: &CallerContext, permit: Permit) -> ToolResult {
        let mut ctx = caller.tool_ctx.clone();
        ctx.cancel = caller.tool_ctx.cancel.child_token();
        let call = permit.call();
        let tool_timeout = self
            .registry
            .get(&call.name)
            .and_then(|t| t.definition().timeout)
            .unwrap_or(crate::executor::DEFAULT_TIMEOUT);
        let id = call.id.clone();
        rpc(
            &self.gate,
            |reply| GateMsg::Submit { permit, ctx, reply },
            tool_timeout + EXECUTION_MARGIN,
        )
        .await
        .unwrap_or_else(|e| match e {
            CallError::Timeout => {
                ToolResult::error(id, "timeout", "the tool did not report back in time")
            }
            CallError::Gone => ToolResult::error(
                id,
                "actor_restarted",
                "the gate or executor stopped with this call in flight (it is restarted); \
the call may or may not have run, so check before repeating it",
            ),
        })
    }

    fn publish_decision(&self, agent: &str, call_id: &str, d: &Decision) {
        self.events.publish(
            agent,
            EventKind::PermissionDecided {
                call_id: call_id.to_string(),
                verdict: d.verdict,
                source: d.source,
                reason: d.reason.clone(),
            },
        );
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

/// What auto mode made of an Ask.
enum Classified {
    /// The classifier allowed it.
    Permit(Permit),
    /// It was refused; the result goes back to the model.
    Refused(ToolResult),
    /// Ask as usual.
    Ask(Pending),
}

fn denied(call: &ToolCall, d: &Decision) -> ToolResult {
    ToolResult::error(
        &call.id,
        "permission_denied",
        format!("{} (source: {})", d.reason, d.source),
    )
}

/// The first line of a result, without the `error [code]: ` prefix, for compact display.
fn summary(result: &ToolResult) -> String {
    let text = match &result.error_code {
        Some(code) => result
            .content
            .strip_prefix(&format!("error [{code}]: "))
            .unwrap_or(&result.content),
        None => &result.content,
    };
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(160).collect();
    if line.chars().count() > 160 || text.lines().count() > 1 {
        out.push_str(" …");
    }
    out
}
