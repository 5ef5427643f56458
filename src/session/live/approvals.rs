//! The session's open approval questions, answerable from more than one place: the TUI's
//! dialog and the web dashboard (through the control socket). The approver forwards each
//! Ask here (`ApproverPolicy::Forward`); the question is numbered, noted in the journal
//! for watchers and, in the TUI, mirrored into its dialog. The first answer wins and goes
//! back to the approver, which alone turns it into a permit: an answer that arrives here
//! is only an [`ApprovalAnswer`], never a permission. When the dashboard answers first,
//! the TUI's copy is withdrawn (its reply port closes, and the dialog drops it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ractor::RpcReplyPort;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};

use super::journal::Journal;
use crate::approver::ApprovalAnswer;
use crate::approver::actor::PendingApproval;

/// How often questions whose asker went away are looked for.
const SWEEP: std::time::Duration = std::time::Duration::from_millis(500);

/// Why an answer was not taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum AnswerError {
    /// Answered already (elsewhere), or the asking agent went away.
    #[error("approval {0} is not waiting for an answer (answered already, or its agent stopped)")]
    NotWaiting(u64),
}

/// A question and where its answer goes.
struct Waiting {
    reply: RpcReplyPort<ApprovalAnswer>,
    /// The task waiting for the TUI's answer to its copy.
    mirror: Option<AbortHandle>,
}

/// The open questions.
pub(crate) struct Approvals {
    waiting: Mutex<BTreeMap<u64, Waiting>>,
    next: AtomicU64,
    journal: Arc<Journal>,
}

impl Approvals {
    /// No questions yet; their comings and goings are noted in `journal`.
    pub(crate) fn new(journal: Arc<Journal>) -> Arc<Approvals> {
        Arc::new(Approvals {
            waiting: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            journal,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Waiting>> {
        // Poisoned only if an insert panicked; the map is intact.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the approver's questions from `questions` until it closes; with `mirror`,
    /// each is also offered there (the TUI's dialog), and answering it there answers it.
    pub(crate) fn serve(
        self: &Arc<Self>,
        mut questions: mpsc::UnboundedReceiver<PendingApproval>,
        mirror: Option<mpsc::UnboundedSender<PendingApproval>>,
    ) -> JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut sweep = tokio::time::interval(SWEEP);
            loop {
                tokio::select! {
                    q = questions.recv() => match q {
                        Some(q) => me.open(q, mirror.as_ref()),
                        None => break,
                    },
                    _ = sweep.tick() => me.sweep(),
                }
            }
        })
    }

    /// Withdraws the questions whose asker went away (its run was cancelled): they leave
    /// the watchers' pages and the TUI's dialog.
    fn sweep(&self) {
        let mut gone = Vec::new();
        self.lock().retain(|id, w| {
            let closed = w.reply.is_closed();
            if closed {
                gone.push((*id, w.mirror.take()));
            }
            !closed
        });
        for (id, mirror) in gone {
            if let Some(m) = mirror {
                m.abort();
            }
            self.journal
                .note(&json!({"agent": "", "type": "approval_withdrawn", "id": id}));
        }
    }

    fn open(
        self: &Arc<Self>,
        q: PendingApproval,
        mirror: Option<&mpsc::UnboundedSender<PendingApproval>>,
    ) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mirror = mirror.and_then(|tx| {
            let (copy_tx, copy_rx) = tokio::sync::oneshot::channel();
            let copy = PendingApproval {
                request: q.request.clone(),
                reply: copy_tx.into(),
            };
            tx.send(copy).ok()?;
            let me = self.clone();
            Some(
                tokio::spawn(async move {
                    if let Ok(answer) = copy_rx.await {
                        let _ = me.answer(id, answer);
                    }
                })
                .abort_handle(),
            )
        });
        self.journal.note(&json!({
            "agent": q.request.agent,
            "type": "approval_asked",
            "id": id,
            "request": q.request,
        }));
        self.lock().insert(
            id,
            Waiting {
                reply: q.reply,
                mirror,
            },
        );
    }

    /// Answers question `id`: the answer goes to the approver that asked.
    pub(crate) fn answer(&self, id: u64, answer: ApprovalAnswer) -> Result<(), AnswerError> {
        let waiting = self.lock().remove(&id).ok_or(AnswerError::NotWaiting(id))?;
        if let Some(mirror) = waiting.mirror {
            // Withdraws the TUI's copy (unless the TUI is the one answering).
            mirror.abort();
        }
        let sent = waiting.reply.send(answer.clone()).is_ok();
        self.journal.note(&json!({
            "agent": "",
            "type": "approval_answered",
            "id": id,
            "answer": answer,
        }));
        if sent {
            Ok(())
        } else {
            Err(AnswerError::NotWaiting(id))
        }
    }

    /// The ids of the questions still waiting.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> Vec<u64> {
        self.sweep();
        self.lock().keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hub mirroring to a TUI, one question asked: the hub, its journal, the question's
    /// answer receiver, the TUI's copy, and the approver's end (the hub serves while it
    /// is kept).
    async fn asked() -> (
        Arc<Approvals>,
        Arc<Journal>,
        ractor::concurrency::OneshotReceiver<ApprovalAnswer>,
        PendingApproval,
        mpsc::UnboundedSender<PendingApproval>,
    ) {
        let journal = Journal::new(Secrets::default());
        let hub = Approvals::new(journal.clone());
        let (q_tx, q_rx) = mpsc::unbounded_channel();
        let (tui_tx, mut tui_rx) = mpsc::unbounded_channel();
        hub.serve(q_rx, Some(tui_tx));
        let (q, answer_rx) =
            crate::approver::testing::pending("lead", "run_command", r#"{"command":"ls"}"#);
        q_tx.send(q).unwrap();
        let copy = tui_rx.recv().await.expect("the TUI gets a copy");
        (hub, journal, answer_rx, copy, q_tx)
    }

    /// Waits (up to 5 s) until nobody waits on the TUI's copy any more.
    async fn withdrawn(copy: &PendingApproval) -> bool {
        for _ in 0..500 {
            if copy.reply.is_closed() {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        false
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_withdraws_the_tui_copy() {
        let (hub, journal, answer_rx, copy, _approver) = asked().await;
        assert_eq!(hub.waiting(), [1]);
        hub.answer(1, ApprovalAnswer::AllowOnce).unwrap();
        assert_eq!(answer_rx.await.unwrap(), ApprovalAnswer::AllowOnce);
        assert!(withdrawn(&copy).await, "the TUI's copy is withdrawn");
        assert_eq!(
            hub.answer(1, ApprovalAnswer::AllowSession),
            Err(AnswerError::NotWaiting(1)),
            "a second answer is refused"
        );
        let (kept, _) = journal.watch();
        let types: Vec<String> = kept
            .iter()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
            .collect();
        assert_eq!(types, ["\"approval_asked\"", "\"approval_answered\""]);
    }

    #[tokio::test]
    async fn an_answer_from_the_tui_reaches_the_approver() {
        let (hub, _, answer_rx, copy, _approver) = asked().await;
        copy.reply
            .send(ApprovalAnswer::Deny { message: None })
            .unwrap();
        assert_eq!(
            answer_rx.await.unwrap(),
            ApprovalAnswer::Deny { message: None }
        );
        assert!(hub.waiting().is_empty());
    }

    #[tokio::test]
    async fn a_question_whose_asker_went_away_is_withdrawn() {
        let (hub, journal, answer_rx, copy, _approver) = asked().await;
        // The approver stopped waiting: its asker went away.
        drop(answer_rx);
        assert!(withdrawn(&copy).await, "the TUI's copy is withdrawn");
        assert!(hub.waiting().is_empty());
        let (kept, _) = journal.watch();
        assert!(
            kept.last().unwrap().contains("approval_withdrawn"),
            "{kept:?}"
        );
    }

    use super::super::redact::Secrets;
}
