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

use futures::future::join_all;
use ractor::RpcReplyPort;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::approver::actor::ApproverMsg;
use crate::auto_mode::AutoMode;
use crate::auto_mode::classifier::Intent;
use crate::engine::PermissionMsg;
use crate::engine::onward::{Authorized, Onward, Submission};
use crate::events::{EventBus, EventKind};
use crate::gate::actor::GateMsg;
use crate::permission::{
    CheckRequest, Checked, Decision, HookOpinion, PermissionMode, Permit, SharedMode, Source,
    Verdict,
};
use crate::protocol::{ToolCall, ToolResult};
use crate::supervise::{CallError, Slot, answer};
use crate::tools::{Registry, ToolContext};

mod ask;
mod summary;

use ask::Classified;
use summary::summary;

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

/// A call after its PreToolUse and TaskCompleted hooks.
enum Hooked {
    /// A hook settled it: its result.
    Settled(ToolResult),
    /// For the engine: the call as the hooks left it, their say and their context.
    Ready {
        call: ToolCall,
        hook: HookOpinion,
        context: Vec<String>,
    },
}

/// Where a call stands once the engine was sent the calls the hooks let through.
enum Way<F> {
    /// Settled before the engine.
    Done(ToolResult),
    /// Sent to the engine: what was asked, the hooks' context, and the wait for its answer.
    Sent {
        request: CheckRequest,
        context: Vec<String>,
        answer: F,
    },
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
        match self.decide_all(caller, vec![call]).await.pop() {
            Some(way) => way.await,
            // `decide_all` returns one way for each call it is given.
            None => unreachable!("one call, one way"),
        }
    }

    /// Takes announced calls through hooks, engine, gate and executor: each call's
    /// PreToolUse hooks first, then one message to the engine for the calls they let
    /// through (the allowing decisions are recorded in one write), then each call on its
    /// own way. Returns, in call order, the rest of each call's way, to await in any order.
    pub async fn decide_all<'a>(
        &'a self,
        caller: &'a CallerContext,
        calls: Vec<ToolCall>,
    ) -> Vec<impl Future<Output = ToolResult> + 'a> {
        let hooked = join_all(calls.into_iter().map(|call| self.hooked(caller, call))).await;
        let mut submissions = Vec::new();
        let mut first_due: Option<Instant> = None;
        let mut ways = Vec::with_capacity(hooked.len());
        for hooked in hooked {
            let (call, hook, context) = match hooked {
                Hooked::Settled(result) => {
                    ways.push(Way::Done(result));
                    continue;
                }
                Hooked::Ready {
                    call,
                    hook,
                    context,
                } => (call, hook, context),
            };
            let request = CheckRequest {
                call: call.clone(),
                // The spec comes from the tool's definition in the registry, never the model.
                spec: self.registry.permission_spec(&call.name),
                cwd: caller.tool_ctx.cwd.clone(),
                mode: caller.mode.get(),
            };
            // Allowed outright, the engine sends the permit on to the gate itself; the
            // answer is then the result. Refused or asked, it comes back here.
            let (tx, rx) = oneshot::channel();
            submissions.push(Submission {
                request: request.clone(),
                hook,
                onward: Onward {
                    gate: self.gate.clone(),
                    ctx: call_context(caller),
                    events: self.events.clone(),
                },
                reply: tx.into(),
            });
            let due = Instant::now() + PERMISSION_TIMEOUT + self.run_time(&call.name);
            first_due = Some(first_due.map_or(due, |d| d.min(due)));
            ways.push(Way::Sent {
                request,
                context,
                answer: answer(rx, due),
            });
        }
        if let Some(due) = first_due {
            let msg = PermissionMsg::AuthorizeAndSubmit {
                agent: caller.agent.clone(),
                calls: submissions,
            };
            // A message no engine took drops its ports: each of its calls hears `Gone`.
            drop(self.permission.send(msg, due).await);
        }
        ways.into_iter()
            .map(|way| self.go_on(caller, way))
            .collect()
    }

    /// A call through its PreToolUse and TaskCompleted hooks.
    async fn hooked(&self, caller: &CallerContext, call: ToolCall) -> Hooked {
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
            return Hooked::Settled(ToolResult::error(
                &call.id,
                "permission_denied",
                format!("a PreToolUse hook blocked this call: {}", d.reason),
            ));
        }
        if let Some(reason) = self.hooks.task_completed(agent, cwd, &call, cancel).await {
            return Hooked::Settled(ToolResult::error(
                &call.id,
                "hook_blocked",
                format!("a TaskCompleted hook kept the item open: {reason}"),
            ));
        }
        Hooked::Ready {
            call,
            hook: pre.opinion,
            context: pre.context,
        }
    }

    /// The rest of a call's way once the engine has it: its answer, then PostToolUse.
    async fn go_on<F>(&self, caller: &CallerContext, way: Way<F>) -> ToolResult
    where
        F: Future<Output = Result<Authorized, CallError>>,
    {
        let (request, context, answer) = match way {
            Way::Done(result) => return result,
            Way::Sent {
                request,
                context,
                answer,
            } => (request, context, answer),
        };
        let (call, mode) = (request.call.clone(), request.mode);
        let mut result = self.authorized(caller, request, answer.await).await;
        // PostToolUse is for calls that ran; a refusal never reached the tool.
        let refused = matches!(
            result.error_code.as_deref(),
            Some("permission_denied" | "tool_not_allowed")
        );
        if !refused {
            let (agent, cwd, cancel) =
                (&caller.agent, &caller.tool_ctx.cwd, &caller.tool_ctx.cancel);
            let stop = self
                .hooks
                .post_tool_use(agent, cwd, mode, &call, &mut result, cancel)
                .await;
            caller.stop_for_hook(stop);
        }
        crate::hooks::tool_events::append_context(
            &mut result,
            crate::hooks::HookEvent::PreToolUse,
            &context,
        );
        result
    }

    /// A call after the engine's answer: its result, or its refusal, or its way through a
    /// human (or auto mode's classifier) and the gate.
    async fn authorized(
        &self,
        caller: &CallerContext,
        request: CheckRequest,
        answer: Result<Authorized, CallError>,
    ) -> ToolResult {
        let checked = match answer {
            Ok(Authorized::Ran(result)) => return result,
            Ok(Authorized::Checked(checked)) => checked,
            Err(e) => return lost(request.call.id.clone(), e),
        };
        self.publish_decision(&caller.agent, &request.call.id, checked.decision());
        // The rest is for calls that were not allowed outright: boxed, so that the state
        // of every call's future stays small on the common path.
        Box::pin(self.not_allowed_outright(caller, request, checked)).await
    }

    /// A call the engine refused or asked about: its refusal, or its way through a human
    /// (or auto mode's classifier) and the gate.
    async fn not_allowed_outright(
        &self,
        caller: &CallerContext,
        request: CheckRequest,
        checked: Checked,
    ) -> ToolResult {
        let (call, mode) = (request.call.clone(), request.mode);
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
