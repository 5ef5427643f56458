//! The worker node's links to its running teammates: starting one (its run in a spawned
//! task that reports to the lead and tells the node when it ends), handing it the mail
//! the lead relays, and applying the lead's answers to its Asks. An answer or mail for a
//! task this node does not run is refused and logged.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use ractor::ActorRef;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::node_actor::{reporter, run_then_end};
use super::protocol::{AskAnswerWire, MailWire, TeammateSpawn, WorkerMsg};
use super::remote_ask::AskRelay;
use super::teammate_run::{self, Inputs};
use crate::team::Envelope;

/// A running teammate, as its node reaches it.
pub(crate) struct Link {
    mail: mpsc::UnboundedSender<Vec<Envelope>>,
    asks: Arc<AskRelay>,
}

/// Starts teammate `spawn` in `dir`; the node's actor hears `Ended` when it stops.
pub(crate) fn start(
    node_actor: ActorRef<WorkerMsg>,
    spawn: TeammateSpawn,
    dir: PathBuf,
    node: String,
    cancel: CancellationToken,
) -> Link {
    let (task_id, lead) = (spawn.run.task_id.clone(), spawn.run.lead.clone());
    let report = reporter(&lead);
    let asks = AskRelay::new(&task_id, report.clone());
    let (mail, rx) = mpsc::unbounded_channel();
    let run = teammate_run::run(
        spawn,
        dir,
        node.clone(),
        cancel,
        report,
        asks.clone(),
        Inputs { mail: rx },
    );
    run_then_end(node_actor, task_id, lead, node, "the teammate's run", run);
    Link { mail, asks }
}

/// Hands relayed mail to its teammate.
pub(crate) fn mail(teammates: &HashMap<String, Link>, mail: MailWire) {
    match teammates.get(&mail.task_id) {
        Some(link) => {
            let _ = link.mail.send(mail.mail);
        }
        None => tracing::warn!(
            "mail for task {}, which is not a running teammate here; dropped",
            mail.task_id
        ),
    }
}

/// Applies the lead's answer to the one Ask it names; refuses any other.
pub(crate) fn answer(teammates: &HashMap<String, Link>, answer: AskAnswerWire) {
    let applied = match teammates.get(&answer.task_id) {
        Some(link) => link
            .asks
            .answer(&answer.ask_id, answer.answer)
            .map_err(|e| e.to_string()),
        None => Err(format!(
            "task {} is not a running teammate here",
            answer.task_id
        )),
    };
    if let Err(e) = applied {
        tracing::warn!("refused an AskAnswer for task {}: {e}", answer.task_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approver::{ApprovalAnswer, ApprovalRequest};
    use crate::permission::{Decision, PermissionMode, Source, Verdict};
    use crate::protocol::ToolCall;
    use crate::worker::protocol::ToLead;
    use crate::worker::remote_ask::Report;

    /// An answer naming another task, or a forged question id, is refused and leaves the
    /// waiting Ask alone; the genuine answer releases it (as a one-call allow).
    #[tokio::test]
    async fn a_forged_answer_through_the_node_is_refused() {
        let asked = Arc::new(std::sync::Mutex::new(None));
        let log = asked.clone();
        let report: Report = Arc::new(move |m| {
            if let ToLead::AskRequest(a) = m {
                *log.lock().unwrap() = Some(a.ask_id);
            }
            true
        });
        let (mail_tx, _mail_rx) = mpsc::unbounded_channel();
        let link = Link {
            mail: mail_tx,
            asks: AskRelay::new("alice-1", report),
        };
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        link.asks.ask(
            ApprovalRequest {
                agent: "w/alice".into(),
                call: ToolCall {
                    id: "c".into(),
                    name: "write_file".into(),
                    arguments: "{}".into(),
                },
                decision: Decision::new(Verdict::Ask, Source::Mode, "asks"),
                mode: PermissionMode::Default,
                teammate: None,
            },
            tx.into(),
        );
        let id = asked
            .lock()
            .unwrap()
            .clone()
            .expect("the Ask went to the lead");
        let teammates = HashMap::from([("alice-1".to_string(), link)]);
        let forged = |task_id: &str, ask_id: &str| AskAnswerWire {
            task_id: task_id.into(),
            ask_id: ask_id.into(),
            answer: ApprovalAnswer::AllowForever,
        };
        answer(&teammates, forged("bob-2", &id));
        answer(&teammates, forged("alice-1", "not-the-id"));
        assert!(rx.try_recv().is_err(), "no forged answer reached the call");
        answer(&teammates, forged("alice-1", &id));
        assert_eq!(rx.await.unwrap(), ApprovalAnswer::AllowOnce);
    }
}
