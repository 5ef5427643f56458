//! `send_message` (alias `SendMessage`): message a teammate, the lead, or everyone (`*`)
//! in the caller's team. The message is on disk in each recipient's inbox when the tool
//! returns, and reaches the recipient's conversation at its next turn boundary, marked
//! with the sender. Structured messages (`type`) carry shutdown and plan approval requests
//! and answers.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, TargetSpec};
use crate::team::{MessageKind, Outgoing, Recipient};

/// The `send_message` tool.
pub(crate) struct SendMessage {
    def: Definition,
}

impl Default for SendMessage {
    fn default() -> Self {
        Self::new()
    }
}

impl SendMessage {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self {
            def: Definition {
                name: "send_message".into(),
                aliases: vec!["SendMessage".into()],
                description: "Send a message to a teammate (by name), to the team lead (`lead`), or to everyone (`*`). \
It is delivered at the recipient's next turn boundary, marked with your name. Teammates do not see your \
conversation: say everything they need. `type` sends a structured message: shutdown_request (lead to a \
teammate), shutdown_response {approve}, plan_approval_request (the message is your plan), \
plan_approval_response {approve, feedback}."
                    .into(),
                input_schema: schema::object(
                    &[
                        (
                            "to",
                            json!({"type": "string", "description": "A teammate's name, `lead`, or `*` for everyone."}),
                        ),
                        (
                            "message",
                            json!({"type": "string", "description": "The message (the plan, for a plan_approval_request)."}),
                        ),
                        (
                            "summary",
                            json!({"type": "string", "description": "A short preview (5-10 words)."}),
                        ),
                        (
                            "type",
                            json!({"type": "string", "enum": ["message", "shutdown_request", "shutdown_response", "plan_approval_request", "plan_approval_response"], "description": "message (default) or a structured message."}),
                        ),
                        (
                            "approve",
                            json!({"type": "boolean", "description": "For shutdown_response and plan_approval_response."}),
                        ),
                        (
                            "feedback",
                            json!({"type": "string", "description": "For plan_approval_response: what to change."}),
                        ),
                    ],
                    &["to", "message"],
                ),
                safety: Safety::SideEffect,
                system: true,
                timeout: None,
                // It acts only on the session's own team, like the task tools.
                permission: Some(PermissionSpec::new(Category::Control, [], TargetSpec::None)),
            },
        }
    }
}

/// The structured kind named by `type` (with `approve`/`feedback`).
pub(crate) fn kind(input: &Value) -> Result<MessageKind, ToolError> {
    let kind: Option<String> = field(input, "type")?;
    let approve = || -> Result<bool, ToolError> {
        field::<bool>(input, "approve")?.ok_or_else(|| {
            ToolError::InvalidInput("`approve` (true or false) is required for this type".into())
        })
    };
    Ok(match kind.as_deref().unwrap_or("message") {
        "message" => MessageKind::Text,
        "shutdown_request" => MessageKind::ShutdownRequest,
        "shutdown_response" => MessageKind::ShutdownResponse {
            approve: approve()?,
        },
        "plan_approval_request" => MessageKind::PlanApprovalRequest,
        "plan_approval_response" => MessageKind::PlanApprovalResponse {
            approve: approve()?,
            feedback: field(input, "feedback")?,
        },
        other => {
            return Err(ToolError::InvalidInput(format!(
                "`type` {other:?} is not one of message, shutdown_request, shutdown_response, \
plan_approval_request, plan_approval_response"
            )));
        }
    })
}

#[async_trait]
impl Tool for SendMessage {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let to: String = required(&input, "to")?;
        let message: String = required(&input, "message")?;
        let out = Outgoing {
            message,
            summary: field(&input, "summary")?,
            kind: kind(&input)?,
        };
        // Not a teammate's name (or `lead`, `*`): a finished subagent, by task id, agent id
        // or type, which the message resumes in the background with its history.
        let on_team = match (&ctx.mailbox, Recipient::parse(&to)) {
            (Some(m), Ok(Recipient::Member(name))) => {
                name.is_lead() || m.team.roster().is_ok_and(|r| r.member(&name).is_some())
            }
            (Some(_), Ok(Recipient::Broadcast)) => true,
            _ => false,
        };
        if !on_team && let Some(delegate) = &ctx.delegate {
            let request = super::delegate::ResumeRequest {
                target: to.clone(),
                message: out.message.clone(),
            };
            if let Ok(task) = delegate.resume(request).await {
                return Ok(format!(
                    "`{to}` had finished; it was resumed in the background with its history as task {task}. You are told when it ends."
                ));
            }
        }
        let recipient =
            Recipient::parse(&to).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        let Some(mailbox) = &ctx.mailbox else {
            return Err(ToolError::Failed(
                "you are not on a team and no finished subagent has that name: name an agent when you start it (agent {name}) to make it a teammate"
                    .into(),
            ));
        };
        let stored = mailbox
            .send(recipient, out)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let names: Vec<String> = stored.iter().map(|e| e.to.to_string()).collect();
        Ok(format!("Message delivered to {}.", names.join(", ")))
    }
}
