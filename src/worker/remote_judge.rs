//! A remote agent's Asks under a lead in auto mode, answered on the lead. The worker
//! has no classifier (nor, necessarily, a key for the classifier's model), so its session
//! runs in auto with every Ask forwarded here ([`super::remote_ask::AskRelay`]): what the
//! mode fallback would ask goes to the lead's classifier — the same one, breaker and
//! tally that judge local subagents — and what is meant for a human (an `ask` rule, a
//! dangerous command, a protected file), or what the classifier cannot judge (breaker
//! tripped, a call longer than it is shown), goes to the lead's approver, which is a
//! denial headless. The worker applies any allow to that one call only; a lead that cannot
//! be reached denies. A remote teammate in auto goes through [`classify`] the same way
//! before its Ask reaches the lead's approver (`remote_ask::answer_on_lead`).

use tokio_util::sync::CancellationToken;

use super::protocol::AskWire;
use crate::agent::pipeline::{APPROVAL_TIMEOUT, Pipeline};
use crate::approver::actor::ApproverMsg;
use crate::approver::{ApprovalAnswer, ApprovalRequest, Outcome};
use crate::auto_mode::Judged;
use crate::auto_mode::classifier::Intent;
use crate::events::EventKind;
use crate::permission::{PermissionMode, SharedMode, Verdict};

/// What the worker may do with `ask` of the remote subagent `agent` (whatever the worker
/// claimed), whose task is `intent`: allow this one call, or deny it with the reason.
/// `mode` is the subagent's mode as the lead holds it (the breaker switches it off).
pub(crate) async fn answer(
    pipeline: &Pipeline,
    ask: AskWire,
    agent: &str,
    intent: &Intent,
    mode: &SharedMode,
    cancel: &CancellationToken,
) -> ApprovalAnswer {
    let mut request = ask.request;
    request.agent = agent.to_string();
    request.teammate = None;
    request.mode = PermissionMode::Auto;
    if let Some(answer) = classify(pipeline, &request, intent, mode, cancel).await {
        return answer;
    }
    let asked = pipeline
        .approver
        .call(|reply| ApproverMsg::Ask(request, reply), APPROVAL_TIMEOUT)
        .await;
    match asked {
        // For this call only: a remote subagent's approval is not remembered.
        Ok(Outcome::Approved(_)) => ApprovalAnswer::AllowOnce,
        Ok(Outcome::Refused { message }) => ApprovalAnswer::Deny { message },
        Ok(Outcome::Unanswered { message }) => ApprovalAnswer::Deny {
            message: Some(message),
        },
        Err(e) => ApprovalAnswer::Deny {
            message: Some(format!("the lead's approver did not answer: {e}")),
        },
    }
}

/// The lead's classifier on a remote agent's Ask (`request.agent`, as the lead names it):
/// `Some` answer when it judged the call, `None` when a human must be asked (an explicit
/// ask, no classifier, the breaker tripped, a call longer than it is shown).
pub(crate) async fn classify(
    pipeline: &Pipeline,
    request: &ApprovalRequest,
    intent: &Intent,
    mode: &SharedMode,
    cancel: &CancellationToken,
) -> Option<ApprovalAnswer> {
    if request.decision.verdict != Verdict::Ask || request.decision.explicit_ask {
        return None;
    }
    let auto = pipeline.auto.as_ref()?;
    let agent = request.agent.as_str();
    let judged = auto
        .judge(
            agent,
            mode,
            &request.call,
            &request.decision,
            intent,
            cancel,
        )
        .await;
    match judged {
        Judged::Allowed(..) => Some(ApprovalAnswer::AllowOnce),
        Judged::Denied { reason, tripped } => {
            if let Some(why) = tripped {
                pipeline
                    .events
                    .publish(agent, EventKind::AutoModeOff { reason: why });
            }
            Some(ApprovalAnswer::Deny {
                message: Some(format!("auto mode's classifier denied this call: {reason}")),
            })
        }
        Judged::Unavailable(_) => None,
    }
}
