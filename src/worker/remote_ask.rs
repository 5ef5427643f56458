//! A remote teammate's Asks. On the worker, its session's approver forwards each question
//! here: [`AskRelay`] gives it an id, sends it to the lead and holds the asking call
//! until the answer naming that id arrives. The answer applies to that one call only: any
//! allow becomes "allow once" on the worker, so the worker never widens its rules; an
//! answer with an unknown or already used id is refused; and when the lead cannot be
//! reached, or goes away, every waiting Ask is denied (fail closed).
//!
//! On the lead, [`answer_on_lead`] puts the question to the lead's own approver (the
//! TUI's human or the headless policy), saying which teammate asks. A "for the session"
//! or "always" answer is recorded by the lead's permission engine (its grants and
//! settings); the worker is sent only a one-call allow.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ractor::RpcReplyPort;
use tokio::sync::mpsc;

use super::node_actor::lock;
use super::protocol::{AskWire, ToLead};
use crate::agent::pipeline::{APPROVAL_TIMEOUT, PERMISSION_TIMEOUT, Pipeline};
use crate::approver::actor::{ApproverMsg, PendingApproval};
use crate::approver::{ApprovalAnswer, ApprovalRequest, Outcome};
use crate::engine::{GrantScope, PermissionMsg};
use crate::permission::CheckRequest;

/// Sends a message to the lead; `false` when the lead cannot be reached.
pub(crate) type Report = Arc<dyn Fn(ToLead) -> bool + Send + Sync>;

/// The worker's side: the Asks of one remote teammate waiting for the lead.
pub(crate) struct AskRelay {
    task_id: String,
    report: Report,
    waiting: Mutex<HashMap<String, RpcReplyPort<ApprovalAnswer>>>,
}

/// Why an answer from the network was not applied.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AnswerRefused {
    /// No Ask with that id is waiting: forged, for another task, or already answered.
    #[error("no Ask `{0}` is waiting (unknown, or already answered); the answer is refused")]
    Unknown(String),
}

impl AskRelay {
    /// A relay for task `task_id` that reaches its lead through `report`.
    pub(crate) fn new(task_id: &str, report: Report) -> Arc<Self> {
        Arc::new(Self {
            task_id: task_id.to_string(),
            report,
            waiting: Mutex::default(),
        })
    }

    /// Sends `request` to the lead and holds `reply` until its answer; denies at once if
    /// the lead cannot be reached.
    pub(crate) fn ask(&self, request: ApprovalRequest, reply: RpcReplyPort<ApprovalAnswer>) {
        let ask_id = uuid::Uuid::new_v4().simple().to_string();
        // Registered first: an answer may arrive before `report` returns.
        lock(&self.waiting).insert(ask_id.clone(), reply);
        let sent = (self.report)(ToLead::AskRequest(AskWire {
            task_id: self.task_id.clone(),
            ask_id: ask_id.clone(),
            request,
        }));
        if !sent && let Some(reply) = lock(&self.waiting).remove(&ask_id) {
            let _ = reply.send(deny("the lead cannot be reached to approve this call"));
        }
    }

    /// Applies the lead's answer to the one call it names: an allow of any scope becomes
    /// "allow once" here.
    pub(crate) fn answer(&self, ask_id: &str, answer: ApprovalAnswer) -> Result<(), AnswerRefused> {
        let reply = lock(&self.waiting)
            .remove(ask_id)
            .ok_or_else(|| AnswerRefused::Unknown(ask_id.to_string()))?;
        let _ = reply.send(one_call(answer));
        Ok(())
    }

    /// Denies every waiting Ask (the lead went away, or the run ended).
    pub(crate) fn deny_all(&self, why: &str) {
        let waiting: Vec<_> = lock(&self.waiting).drain().collect();
        for (_, reply) in waiting {
            let _ = reply.send(deny(why));
        }
    }

    /// How many Asks wait for the lead.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.waiting).len()
    }

    /// Feeds the session approver's questions (`ApproverPolicy::Forward`) to the lead.
    pub(crate) fn serve(self: &Arc<Self>, mut questions: mpsc::UnboundedReceiver<PendingApproval>) {
        let relay = self.clone();
        tokio::spawn(async move {
            while let Some(q) = questions.recv().await {
                relay.ask(q.request, q.reply);
            }
        });
    }
}

fn deny(why: &str) -> ApprovalAnswer {
    ApprovalAnswer::Deny {
        message: Some(why.to_string()),
    }
}

/// The answer as the worker applies it: for this call only.
pub(crate) fn one_call(answer: ApprovalAnswer) -> ApprovalAnswer {
    match answer {
        ApprovalAnswer::Deny { message } => ApprovalAnswer::Deny { message },
        ApprovalAnswer::AllowOnce | ApprovalAnswer::AllowSession | ApprovalAnswer::AllowForever => {
            ApprovalAnswer::AllowOnce
        }
        // A remote teammate's command runs on the worker, confined as the worker is.
        ApprovalAnswer::AllowOutsideSandbox => ApprovalAnswer::AllowOnce,
    }
}

/// The lead's side: asks the lead's approver about a remote teammate's call, as teammate
/// `teammate` (agent `agent`, whatever the worker claimed), records a session or
/// permanent grant in the lead's engine, and returns what the worker may do: allow once,
/// or deny.
pub(crate) async fn answer_on_lead(
    pipeline: &Pipeline,
    ask: AskWire,
    agent: &str,
    teammate: &str,
    cwd: &Path,
) -> ApprovalAnswer {
    let mut request = ask.request;
    request.agent = agent.to_string();
    request.teammate = Some(teammate.to_string());
    let (call, mode) = (request.call.clone(), request.mode);
    let asked = pipeline
        .approver
        .call(|reply| ApproverMsg::Ask(request, reply), APPROVAL_TIMEOUT)
        .await;
    let approval = match asked {
        Ok(Outcome::Approved(a)) => a,
        Ok(Outcome::Refused { message }) => return ApprovalAnswer::Deny { message },
        Ok(Outcome::Unanswered { message }) => {
            return ApprovalAnswer::Deny {
                message: Some(message),
            };
        }
        Err(e) => return deny(&format!("the lead's approver did not answer: {e}")),
    };
    let scope = match approval.answer() {
        ApprovalAnswer::AllowSession => Some(GrantScope::Session),
        ApprovalAnswer::AllowForever => Some(GrantScope::Forever),
        _ => None,
    };
    if let Some(scope) = scope {
        let check = CheckRequest {
            spec: pipeline
                .registry
                .definition(&call.name)
                .and_then(|d| d.permission.clone()),
            call,
            cwd: cwd.to_path_buf(),
            mode,
        };
        let granted = pipeline
            .permission
            .call(
                |reply| PermissionMsg::Grant(check, scope, reply),
                PERMISSION_TIMEOUT,
            )
            .await;
        if !matches!(granted, Ok(Ok(()))) {
            tracing::warn!("{teammate}'s approval could not be recorded on the lead");
        }
    }
    ApprovalAnswer::AllowOnce
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Decision, PermissionMode, Source, Verdict};
    use crate::protocol::ToolCall;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            agent: "w/alice".into(),
            call: ToolCall {
                id: "c1".into(),
                name: "write_file".into(),
                arguments: "{}".into(),
            },
            decision: Decision::new(Verdict::Ask, Source::Mode, "asks"),
            mode: PermissionMode::Default,
            teammate: None,
        }
    }

    /// A relay whose lead is reachable (`up`) and records what was sent.
    fn relay(up: bool) -> (Arc<AskRelay>, Arc<Mutex<Vec<ToLead>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let log = sent.clone();
        let report: Report = Arc::new(move |m| {
            lock(&log).push(m);
            up
        });
        (AskRelay::new("alice-1", report), sent)
    }

    fn asked_id(sent: &Mutex<Vec<ToLead>>) -> String {
        match lock(sent).last() {
            Some(ToLead::AskRequest(a)) => a.ask_id.clone(),
            _ => panic!("no AskRequest was sent"),
        }
    }

    #[tokio::test]
    async fn a_forged_or_repeated_answer_is_refused_and_the_real_one_allows_once() {
        let (relay, sent) = relay(true);
        let (tx, rx) = tokio::sync::oneshot::channel();
        relay.ask(request(), tx.into());
        let id = asked_id(&sent);
        assert_eq!(
            relay.answer("forged", ApprovalAnswer::AllowForever),
            Err(AnswerRefused::Unknown("forged".into()))
        );
        assert_eq!(relay.waiting(), 1, "a forged answer does not touch the Ask");
        relay.answer(&id, ApprovalAnswer::AllowSession).unwrap();
        assert_eq!(
            rx.await.unwrap(),
            ApprovalAnswer::AllowOnce,
            "the worker applies any allow to this call only"
        );
        assert_eq!(
            relay.answer(&id, ApprovalAnswer::AllowOnce),
            Err(AnswerRefused::Unknown(id.clone())),
            "an answer is used once"
        );
    }

    #[tokio::test]
    async fn an_unreachable_or_departed_lead_denies() {
        let (down, _) = relay(false);
        let (tx, rx) = tokio::sync::oneshot::channel();
        down.ask(request(), tx.into());
        assert!(matches!(rx.await.unwrap(), ApprovalAnswer::Deny { .. }));
        assert_eq!(down.waiting(), 0);
        let (up, _) = relay(true);
        let (tx, rx) = tokio::sync::oneshot::channel();
        up.ask(request(), tx.into());
        up.deny_all("the lead went away");
        assert!(matches!(rx.await.unwrap(), ApprovalAnswer::Deny { .. }));
        assert_eq!(up.waiting(), 0);
    }

    #[test]
    fn a_deny_stays_a_deny() {
        let d = ApprovalAnswer::Deny {
            message: Some("no".into()),
        };
        assert_eq!(one_call(d.clone()), d);
    }
}
