//! The pipeline's two ways past an Ask: a human's answer through the approver (with the
//! grant it may carry), and in auto mode the classifier's judgement.

use crate::approver::actor::ApproverMsg;
use crate::approver::{ApprovalAnswer, ApprovalRequest, Outcome};
use crate::auto_mode::Judged;
use crate::engine::{GrantScope, PermissionMsg};
use crate::events::EventKind;
use crate::permission::{CheckRequest, Decision, Pending, Permit, Source, Verdict};
use crate::protocol::ToolResult;
use crate::supervise::CallError;

use super::{
    APPROVAL_TIMEOUT, CallerContext, PERMISSION_TIMEOUT, Pipeline, denied, rpc, unanswered,
};

impl Pipeline {
    /// Asks the approver; a human's allow and the engine's `Pending` make the permit.
    pub(super) async fn ask(
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
        let outcome = outcome.unwrap_or_else(|e| Outcome::Unanswered {
            message: match e {
                CallError::Timeout => "the approval was not answered".into(),
                CallError::Gone => unanswered("approver", e),
            },
        });
        let refused = match outcome {
            Outcome::Approved(approval) => Ok(approval),
            Outcome::Refused { message } => Err((
                message.unwrap_or_else(|| "the user denied this tool call".into()),
                Source::User,
            )),
            // Nobody decided: the refusal is the mode's ask going unanswered.
            Outcome::Unanswered { message } => Err((message, Source::Mode)),
        };
        let approval = match refused {
            Ok(approval) => approval,
            Err((reason, source)) => {
                self.events.publish(
                    &caller.agent,
                    EventKind::ApprovalRefused {
                        call_id: call.id.clone(),
                        reason: reason.clone(),
                    },
                );
                let mut d = Decision::new(Verdict::Deny, source, reason);
                d.category = pending.decision().category;
                self.publish_decision(&caller.agent, &call.id, &d);
                return Err(denied(&call, &d));
            }
        };
        let scope = match approval.answer() {
            ApprovalAnswer::AllowSession => Some(GrantScope::Session),
            ApprovalAnswer::AllowForever => Some(GrantScope::Forever),
            ApprovalAnswer::AllowOnce
            | ApprovalAnswer::AllowOutsideSandbox
            | ApprovalAnswer::Deny { .. } => None,
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
                Ok(Err(e)) => Some(e.to_string()),
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
    pub(super) async fn classify(&self, caller: &CallerContext, pending: Pending) -> Classified {
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
}

/// What auto mode made of an Ask.
pub(super) enum Classified {
    /// The classifier allowed it.
    Permit(Permit),
    /// It was refused; the result goes back to the model.
    Refused(ToolResult),
    /// Ask as usual.
    Ask(Pending),
}
