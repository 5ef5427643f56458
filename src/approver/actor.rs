//! The `Approver` actor: turns an Ask into an answer. Headless, it refuses with a reason
//! that says how to allow the call; interactive, it forwards the question to whoever
//! holds the receiving end (the TUI, or a test) together with the reply port, and never
//! waits for the human itself.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;

use super::{ApprovalAnswer, ApprovalRequest, headless_refusal};

/// A question waiting for a human, with the port the answer goes to.
pub struct PendingApproval {
    /// The question.
    pub request: ApprovalRequest,
    /// Where the answer goes.
    pub reply: RpcReplyPort<ApprovalAnswer>,
}

/// How the approver answers.
pub enum ApproverPolicy {
    /// Nobody can answer: refuse every Ask with a how-to-allow message.
    Headless,
    /// Forward every Ask to a human through this channel.
    Forward(mpsc::UnboundedSender<PendingApproval>),
}

/// Messages the approver accepts.
pub enum ApproverMsg {
    /// Ask about one call.
    Ask(ApprovalRequest, RpcReplyPort<ApprovalAnswer>),
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
        let ApproverMsg::Ask(request, reply) = msg;
        match state {
            ApproverPolicy::Headless => {
                let message = headless_refusal(&request);
                let _ = reply.send(ApprovalAnswer::Deny {
                    message: Some(message),
                });
            }
            ApproverPolicy::Forward(tx) => {
                if let Err(mpsc::error::SendError(p)) = tx.send(PendingApproval { request, reply })
                {
                    // Nobody is listening any more: fail closed.
                    let _ = p.reply.send(ApprovalAnswer::Deny {
                        message: Some("no one is available to approve this call".into()),
                    });
                }
            }
        }
        Ok(())
    }
}
