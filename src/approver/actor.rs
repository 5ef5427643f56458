//! The `Approver` actor: turns an Ask into an answer. Headless, it refuses with a reason
//! that says how to allow the call; interactive, it forwards the question to whoever
//! holds the receiving end (the TUI, or a test) together with a reply port, and never
//! waits for the human in its handler: a spawned task turns the human's answer into the
//! `Outcome` (minting the `Approval` for an allow) and replies to the asking agent.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;

use super::{ApprovalAnswer, ApprovalRequest, Outcome, headless_refusal};

/// A question waiting for a human, with the port the answer goes to.
pub struct PendingApproval {
    /// The question.
    pub request: ApprovalRequest,
    /// Where the answer goes.
    pub reply: RpcReplyPort<ApprovalAnswer>,
}

/// How the approver answers (cloned to restart a crashed approver).
#[derive(Clone)]
pub enum ApproverPolicy {
    /// Nobody can answer: refuse every Ask with a how-to-allow message.
    Headless,
    /// Forward every Ask to a human through this channel.
    Forward(mpsc::UnboundedSender<PendingApproval>),
}

/// Messages the approver accepts.
pub enum ApproverMsg {
    /// Ask about one call.
    Ask(ApprovalRequest, RpcReplyPort<Outcome>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for ApproverMsg {}

/// Resolves once nobody waits on `reply` any more.
async fn gone(reply: &RpcReplyPort<Outcome>) {
    while !reply.is_closed() {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The approver actor (configuration only).
pub struct Approver;

impl Actor for Approver {
    type Msg = ApproverMsg;
    type State = ApproverPolicy;
    type Arguments = ApproverPolicy;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        policy: ApproverPolicy,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(policy)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        crate::supervise::faults::point("approver");
        let ApproverMsg::Ask(request, reply) = msg;
        match state {
            ApproverPolicy::Headless => {
                let message = headless_refusal(&request);
                let _ = reply.send(Outcome::Unanswered { message });
            }
            ApproverPolicy::Forward(tx) => {
                let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
                let question = PendingApproval {
                    request: request.clone(),
                    reply: answer_tx.into(),
                };
                if tx.send(question).is_err() {
                    // Nobody is listening any more: fail closed.
                    let _ = reply.send(Outcome::Unanswered {
                        message: "no one is available to approve this call".into(),
                    });
                    return Ok(());
                }
                tokio::spawn(async move {
                    // A dropped question (the TUI closed) is a refusal. An asker that went
                    // away (its run was cancelled) needs no answer: the question is
                    // dropped, which withdraws it wherever it is shown.
                    let answer = tokio::select! {
                        answer = answer_rx => answer.unwrap_or(ApprovalAnswer::Deny {
                            message: Some("the approval was not answered".into()),
                        }),
                        () = gone(&reply) => return,
                    };
                    let _ = reply.send(Outcome::from_answer(request, answer));
                });
            }
        }
        Ok(())
    }
}
