//! The two tool-call events as the call path uses them. PreToolUse runs before the
//! permission engine: a block (exit 2, `deny`, `decision: block`) refuses the call with
//! the reason; `allow`/`ask` become the engine's `HookOpinion`; `updatedInput` replaces
//! the arguments, which the engine then judges. PostToolUse sees `tool_response`; its
//! `additionalContext` and its block reason are appended to the result the model reads.
//! `TaskCompleted` fires for a `todo_update` that completes an item; a block keeps the
//! item open and tells the model why.

use std::path::Path;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::client::{Firing, HookClient};
use super::event::HookEvent;
use super::names::{claude_name, from_hook_input, hook_input, tool_names};
use super::protocol::{HookInput, PermissionDecision};
use crate::permission::{HookOpinion, PermissionMode};
use crate::protocol::{ToolCall, ToolResult};

/// What PreToolUse decided for one call.
#[derive(Debug, Clone)]
pub struct PreToolUse {
    /// The call to decide: the model's, or with the hooks' `updatedInput`.
    pub call: ToolCall,
    /// Refused by a hook, with the reason for the model.
    pub block: Option<String>,
    /// The hooks' allow/ask for the engine.
    pub opinion: HookOpinion,
    /// Context for the model, appended to the call's result.
    pub context: Vec<String>,
    /// `continue: false`: the agent stops after this step.
    pub stop: Option<String>,
}

/// The arguments as a JSON value (raw text that is not JSON is passed as a string).
fn arguments(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::String(call.arguments.clone()))
}

fn tool_input(
    client: &HookClient,
    f: &Firing<'_>,
    mode: PermissionMode,
    call: &ToolCall,
) -> HookInput {
    let mut input = client.input(f);
    input.permission_mode = Some(mode.as_str().to_string());
    input.tool_name = Some(claude_name(&call.name));
    input.crew_tool_name = Some(call.name.clone());
    input.tool_input = Some(hook_input(&call.name, &arguments(call), f.cwd));
    input.tool_use_id = Some(call.id.clone());
    input
}

impl HookClient {
    /// Fires PreToolUse for `call` of `agent`.
    pub async fn pre_tool_use(
        &self,
        agent: &str,
        cwd: &Path,
        mode: PermissionMode,
        call: ToolCall,
        cancel: &CancellationToken,
    ) -> PreToolUse {
        if !self.may_fire(HookEvent::PreToolUse, agent) {
            // What an empty report gives, without building the hooks' input or asking the
            // actor.
            return PreToolUse {
                call,
                block: None,
                opinion: HookOpinion::Silent,
                context: Vec::new(),
                stop: None,
            };
        }
        let f = Firing {
            event: HookEvent::PreToolUse,
            agent,
            cwd,
            subject: tool_names(&call.name),
        };
        let input = tool_input(self, &f, mode, &call);
        let report = self.fire(f, input, cancel).await;
        let mut block = report.block;
        let opinion = match report.permission {
            Some((PermissionDecision::Allow, why)) => HookOpinion::Allow(why),
            Some((PermissionDecision::Ask, why)) => HookOpinion::Ask(why),
            // `combine` makes a deny a block already; should one arrive, it is final too.
            Some((PermissionDecision::Deny, why)) => {
                block.get_or_insert(why);
                HookOpinion::Silent
            }
            None => HookOpinion::Silent,
        };
        let mut out = PreToolUse {
            call,
            block,
            opinion,
            context: report.context,
            stop: report.stop,
        };
        // `continue: false` stops the agent; the call it was about does not run either.
        if out.block.is_none()
            && let Some(reason) = &out.stop
        {
            out.block = Some(format!("a hook stopped the agent: {reason}"));
        }
        if out.block.is_none()
            && let Some(updated) = report.updated_input
        {
            if updated.is_object() {
                let original = arguments(&out.call);
                let args = from_hook_input(&out.call.name, &original, updated, cwd);
                out.call.arguments = args.to_string();
                // The user saw the model's arguments; say what is judged and run instead.
                self.notice(
                    agent,
                    HookEvent::PreToolUse,
                    format!(
                        "PreToolUse hook rewrote the arguments of {}: {}",
                        out.call.name, out.call.arguments
                    ),
                );
            } else {
                out.block = Some(
                    "a PreToolUse hook returned an updatedInput that is not an object; the call was not run"
                        .into(),
                );
            }
        }
        out
    }

    /// Fires PostToolUse for `call`, which ran and gave `result`; appends the hooks'
    /// context and feedback to the result. Returns a `continue: false` reason.
    pub async fn post_tool_use(
        &self,
        agent: &str,
        cwd: &Path,
        mode: PermissionMode,
        call: &ToolCall,
        result: &mut ToolResult,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.may_fire(HookEvent::PostToolUse, agent) {
            return None;
        }
        let f = Firing {
            event: HookEvent::PostToolUse,
            agent,
            cwd,
            subject: tool_names(&call.name),
        };
        let mut input = tool_input(self, &f, mode, call);
        input.tool_response = Some(json!({
            "content": result.content,
            "is_error": result.is_error,
            "error_code": result.error_code,
        }));
        let report = self.fire(f, input, cancel).await;
        append_context(result, HookEvent::PostToolUse, &report.context);
        if let Some(reason) = report.block {
            result.content.push_str(&format!(
                "\n\n<hook event=\"PostToolUse\" decision=\"block\">\n{}\n</hook>",
                crate::envelope::body(&reason)
            ));
        }
        report.stop
    }
}

impl HookClient {
    /// Fires `TaskCompleted` when `call` marks a work-list item completed (`todo_update`
    /// with `status: completed`); returns the reason a hook refused the completion.
    pub async fn task_completed(
        &self,
        agent: &str,
        cwd: &Path,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if call.name != "todo_update" || !self.may_fire(HookEvent::TaskCompleted, agent) {
            return None;
        }
        let args = arguments(call);
        if args.get("status").and_then(Value::as_str) != Some("completed") {
            return None;
        }
        let id = args
            .get("id")
            .or_else(|| args.get("taskId"))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        let f = Firing {
            event: HookEvent::TaskCompleted,
            agent,
            cwd,
            subject: Vec::new(),
        };
        let mut input = self.input(&f);
        input.task_id = id;
        input.teammate_name = Some(super::agent_events::member_name(agent).to_string());
        self.fire(f, input, cancel).await.block
    }
}

/// Appends hook context for the model to a tool result.
pub(crate) fn append_context(result: &mut ToolResult, event: HookEvent, context: &[String]) {
    for c in context {
        result.content.push_str(&format!(
            "\n\n<hook event=\"{event}\" context>\n{}\n</hook>",
            crate::envelope::body(c)
        ));
    }
}
