//! A teammate on a worker node: the lead's commit checked out from its bundle, a session
//! of this node's own engine, gate and executor ([`super::session`]: the lead's rules
//! only, commands under Landlock confined to its worktree) in the mode the teammate
//! shares with the lead, and
//! a loop that lives on between assignments. Mail relayed from the lead starts a run
//! (rendered as the teammate's own mailbox would, marked with each sender); its
//! `send_message` goes back to the lead's team; each Ask goes to the lead's approver
//! ([`super::remote_ask`]). When it has nothing left to do it commits what it left and
//! sends its branch so far with its idle notice; a shutdown request from the lead is
//! answered, and its final branch comes back with the run's result.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bundle::{BundleError, TaskCopy};
use super::protocol::{IdleWire, RemoteResult, RemoteStatus, SentWire, TeammateSpawn, ToLead};
use super::remote_ask::{AskRelay, Report};
use super::session::{self, Setup, WorkerSession};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::team::{Envelope, MessageKind, Recipient};
use crate::tools::send_message::SendMessage;
use crate::tools::{Definition, Tool, ToolContext, ToolError, field, required};

/// Why a teammate's life on this node ended in failure: the text of its `Failed` result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LiveError {
    /// Its session could not be set up on this node.
    #[error(transparent)]
    Setup(#[from] super::session::SessionError),
    /// Its session did not run an assignment (the lead refused it or is gone).
    #[error(transparent)]
    Run(#[from] crate::session::SessionError),
    /// A run ended on a provider error; the run's own account of it.
    #[error("{0}")]
    Failed(String),
    /// Its branch so far could not be bundled for its idle notice.
    #[error("the branch could not be bundled: {0}")]
    Bundle(BundleError),
}

/// What a running remote teammate receives from the node.
pub(crate) struct Inputs {
    /// Mail batches from the lead.
    pub mail: mpsc::UnboundedReceiver<Vec<Envelope>>,
}

/// Runs teammate `spawn` in `dir` until the lead shuts it down or stops it. Never
/// fails: a failure is a `Failed` result with the reason.
pub(crate) async fn run(
    spawn: TeammateSpawn,
    dir: PathBuf,
    node: String,
    cancel: CancellationToken,
    report: Report,
    asks: Arc<AskRelay>,
    inputs: Inputs,
) -> RemoteResult {
    let task_id = spawn.run.task_id.clone();
    let copy = match session::check_out(&spawn.run, dir, &node).await {
        Ok(copy) => copy,
        Err(failed) => return failed,
    };
    let mut result = RemoteResult::failed(&task_id, &node, String::new());
    report(ToLead::Started {
        task_id: task_id.clone(),
        node: node.clone(),
    });
    match live(&spawn, &copy, &node, cancel, &report, &asks, inputs).await {
        Ok((status, text)) => {
            result.status = status;
            result.result = text;
        }
        Err(e) => result.result = e.to_string(),
    }
    asks.deny_all("the teammate's run ended");
    session::hand_back(&mut result, checkpoint(&spawn, &copy, &node).await);
    result
}

/// Commits what the teammate left and bundles `base..branch`.
async fn checkpoint(
    spawn: &TeammateSpawn,
    copy: &TaskCopy,
    node: &str,
) -> Result<Option<(String, Vec<u8>)>, BundleError> {
    let message = format!("crew: work of teammate {} on {node}", spawn.name);
    session::checkpoint(&spawn.run, copy, &message).await
}

/// The teammate's session and its loop: run, go idle, wake on mail.
async fn live(
    spawn: &TeammateSpawn,
    copy: &TaskCopy,
    node: &str,
    cancel: CancellationToken,
    report: &Report,
    asks: &Arc<AskRelay>,
    mut inputs: Inputs,
) -> Result<(RemoteStatus, String), LiveError> {
    let session = start_session(spawn, copy, node, report, asks).await?;
    let task_id = spawn.run.task_id.clone();
    // The lead-side inbox index through which mail has reached the conversation.
    let mut through = 0u64;
    let mut task = Some(spawn.run.prompt.clone());
    let mut last = String::new();
    let ended = loop {
        if let Some(task) = task.take() {
            let req = RunRequest {
                mode: AgentMode::Chat,
                task,
                plan: None,
            };
            let outcome = tokio::select! {
                o = session.handle.run(req) => o,
                _ = cancel.cancelled() => break Ok((RemoteStatus::Cancelled, "stopped by the lead".to_string())),
            };
            match outcome {
                Ok(o) if o.status == RunStatus::Failed => break Err(LiveError::Failed(o.result)),
                Ok(o) if o.status == RunStatus::Cancelled => {
                    break Ok((RemoteStatus::Cancelled, o.result));
                }
                Ok(o) => last = o.result,
                Err(e) => break Err(LiveError::Run(e)),
            }
        }
        let batch = match inputs.mail.try_recv() {
            Ok(batch) => Some(batch),
            Err(_) => {
                // Nothing waiting: idle, with the branch so far.
                let idle = match checkpoint(spawn, copy, node).await {
                    Ok(Some((head, bundle))) => IdleWire {
                        task_id: task_id.clone(),
                        through,
                        head: Some(head),
                        bundle,
                    },
                    Ok(None) => IdleWire {
                        task_id: task_id.clone(),
                        through,
                        head: None,
                        bundle: Vec::new(),
                    },
                    Err(e) => break Err(LiveError::Bundle(e)),
                };
                report(ToLead::Idle(idle));
                tokio::select! {
                    b = inputs.mail.recv() => b,
                    _ = cancel.cancelled() => break Ok((RemoteStatus::Cancelled, "stopped by the lead".to_string())),
                }
            }
        };
        let Some(batch) = batch else {
            break Ok((
                RemoteStatus::Cancelled,
                "the node stopped relaying mail".to_string(),
            ));
        };
        // Mail the lead already relayed is never run twice.
        let fresh: Vec<Envelope> = batch.into_iter().filter(|e| e.index >= through).collect();
        let Some(newest) = fresh.last() else { continue };
        through = newest.index + 1;
        let shutdown = fresh
            .iter()
            .any(|e| e.from.is_lead() && e.kind == MessageKind::ShutdownRequest);
        if shutdown {
            report(ToLead::TeamSend(SentWire {
                task_id: task_id.clone(),
                to: crate::team::LEAD.into(),
                message: format!("{} is shutting down.", spawn.name),
                summary: None,
                kind: MessageKind::ShutdownResponse { approve: true },
            }));
            break Ok((RemoteStatus::Completed, last.clone()));
        }
        let texts: Vec<String> = fresh.iter().map(crate::team::actor::render).collect();
        task = Some(format!(
            "New messages arrived for you (below). Act on them.\n\n{}",
            texts.join("\n\n")
        ));
    };
    // A call still waiting for the lead is refused, so the session can stop.
    asks.deny_all("the teammate is stopping");
    session.close().await;
    ended
}

/// Starts the teammate's session on this node: in the mode it shares with the lead, its
/// Asks forwarded to the lead's approver, its `send_message` relayed to the lead's team.
async fn start_session(
    spawn: &TeammateSpawn,
    copy: &TaskCopy,
    node: &str,
    report: &Report,
    asks: &Arc<AskRelay>,
) -> Result<WorkerSession, super::session::SessionError> {
    let (questions_tx, questions) = mpsc::unbounded_channel();
    asks.serve(questions);
    // Its `send_message` relays to the lead's team instead of a team on this node.
    let relay = RelaySend {
        def: SendMessage::new().definition().clone(),
        task_id: spawn.run.task_id.clone(),
        report: report.clone(),
    };
    session::start(Setup {
        run: &spawn.run,
        copy,
        node,
        report: report.clone(),
        mode: spawn.mode,
        // Every Ask goes to the lead's approver; its answer applies to that call only.
        approver: ApproverPolicy::Forward(questions_tx),
        replace: vec![Arc::new(relay)],
    })
    .await
}

/// `send_message` on a worker: the message goes to the lead, which sends it from this
/// teammate's mailbox on its team (so the sender is always this teammate).
struct RelaySend {
    def: Definition,
    task_id: String,
    report: Report,
}

#[async_trait]
impl Tool for RelaySend {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        let to: String = required(&input, "to")?;
        Recipient::parse(&to).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        let sent = SentWire {
            task_id: self.task_id.clone(),
            to: to.clone(),
            message: required(&input, "message")?,
            summary: field(&input, "summary")?,
            kind: crate::tools::send_message::kind(&input)?,
        };
        if (self.report)(ToLead::TeamSend(sent)) {
            Ok(format!("Message sent to {to} (through the lead)."))
        } else {
            Err(ToolError::Failed(
                "the lead cannot be reached; the message was not sent".into(),
            ))
        }
    }
}
