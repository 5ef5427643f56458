//! One speculation from start to end: fork the idle lead, run the suggested prompt ahead
//! in a spawned task, then resolve it against what the user actually submitted. Exactly
//! the suggestion: wait for the run, copy the overlay's files into the workspace through
//! the lead's normal write path (`LeadMsg::Dispatch`: hooks, permission engine, approver,
//! gate), and append the speculated messages to the lead's conversation. Anything else:
//! cancel the run and delete the overlay; the workspace never saw a thing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::overlay::Overlay;
use super::runner::{Ending, Fork, Limits, Speculated};
use crate::agent::lead_actor::{LeadMsg, LeadSnapshot};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunStatus};
use crate::hooks::agent_events::Role as HookRole;
use crate::protocol::{Message, ToolCall};

/// How long one adopted write may take (it may wait for a human's approval).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// How long the lead may take to answer a snapshot or an adoption.
const LEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A speculation running (or finished) ahead of the user.
pub struct Speculation {
    prompt: String,
    lead: ActorRef<LeadMsg>,
    snapshot: LeadSnapshot,
    overlay_dir: PathBuf,
    cancel: CancellationToken,
    /// Taken when resolved; dropping an unresolved speculation cancels it.
    task: Option<JoinHandle<(Speculated, Overlay)>>,
}

impl Drop for Speculation {
    fn drop(&mut self) {
        // Unresolved (the session ended): stop the run; its overlay is deleted on drop.
        if self.task.is_some() {
            self.cancel.cancel();
        }
    }
}

/// What became of a speculation once the user submitted.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// The input was the suggestion and the speculation was adopted.
    Adopted {
        /// Model turns it pre-ran.
        steps: u32,
        /// The run's outcome, as if the lead had run it.
        outcome: RunOutcome,
        /// The messages appended to the lead's conversation (the prompt first).
        messages: Vec<Message>,
    },
    /// The input was the suggestion but the speculation cannot stand in for the run
    /// (it stopped early, or a hook or the write path refused): run it as usual.
    NotAdopted {
        /// Why.
        reason: String,
    },
    /// The input was something else: the speculation was cancelled and its overlay
    /// deleted.
    Discarded,
}

/// The lead as it stands, when idle.
pub async fn snapshot(lead: &ActorRef<LeadMsg>) -> Option<LeadSnapshot> {
    match lead.call(LeadMsg::Snapshot, Some(LEAD_TIMEOUT)).await {
        Ok(CallResult::Success(s)) => s,
        _ => None,
    }
}

/// Asks the idle lead's model for the user's likely next prompt.
pub async fn suggest(snapshot: &LeadSnapshot) -> Option<String> {
    let runner = &snapshot.runner;
    super::suggest::suggest(
        runner.provider.as_ref(),
        &runner.spec.model,
        &runner.spec.system_prompt,
        &snapshot.conversation,
    )
    .await
}

/// Why a speculation did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Its overlay directory could not be made.
    #[error(transparent)]
    Overlay(#[from] super::overlay::OverlayError),
    /// The lead could not be forked.
    #[error(transparent)]
    Fork(#[from] super::runner::ForkError),
}

/// Why a finished speculation cannot stand in for the run (the
/// [`Resolution::NotAdopted`] reason).
#[derive(Debug, thiserror::Error)]
enum NotAdopted {
    #[error("the speculation stopped: {0}")]
    Halted(super::calls::Halt),
    #[error("the speculation reached {0}")]
    Limit(String),
    #[error("the speculation was cancelled")]
    Cancelled,
    #[error("the speculation failed: {0}")]
    Failed(String),
    #[error("a UserPromptSubmit hook adds context to this prompt")]
    HookContext,
    #[error("a UserPromptSubmit hook blocked it: {0}")]
    HookBlocked(String),
    #[error(transparent)]
    Overlay(#[from] super::overlay::OverlayError),
    #[error("writing {} was refused: {reason}", .path.display())]
    Refused { path: PathBuf, reason: String },
    #[error("writing {} got no answer", .0.display())]
    NoAnswer(PathBuf),
    #[error(transparent)]
    Lead(#[from] crate::agent::lead_actor::LeadError),
    #[error("the lead did not take the speculated messages")]
    NotTaken,
}

impl Speculation {
    /// Starts running `prompt` ahead of the user, as agent `agent` (`speculation/<n>`),
    /// with its overlay in a new directory below `overlay_parent`.
    pub async fn start(
        lead: ActorRef<LeadMsg>,
        snapshot: LeadSnapshot,
        prompt: String,
        agent: &str,
        overlay_parent: &Path,
        limits: Limits,
    ) -> Result<Self, StartError> {
        let mut overlay = Overlay::create(overlay_parent, &snapshot.place.cwd)?;
        let overlay_dir = overlay.root().to_path_buf();
        let cancel = CancellationToken::new();
        let fork = Fork::new(snapshot.clone(), agent, &cancel).await?;
        let (task_prompt, task_cancel) = (prompt.clone(), cancel.clone());
        let task = tokio::spawn(async move {
            let out = fork
                .run(&task_prompt, &mut overlay, limits, &task_cancel)
                .await;
            (out, overlay)
        });
        Ok(Self {
            prompt,
            lead,
            snapshot,
            overlay_dir,
            cancel,
            task: Some(task),
        })
    }

    /// The prompt being run ahead (the suggestion).
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// Cancels the run ahead (an Esc while the user waits for it): it then resolves as
    /// not adopted.
    pub fn canceller(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// The overlay directory (deleted once the speculation is resolved).
    pub fn overlay_dir(&self) -> &Path {
        &self.overlay_dir
    }

    /// Cancels the speculation and deletes its overlay (the workspace never saw it).
    pub async fn discard(mut self) {
        if let Some(task) = self.task.take() {
            self.cancel.cancel();
            if let Ok((_, overlay)) = task.await {
                let _ = overlay.discard();
            }
            // A panicked task dropped its overlay, which deleted the directory.
        }
    }

    /// Resolves the speculation against the user's submitted `input`.
    pub async fn resolve(mut self, input: &str) -> Resolution {
        if input != self.prompt {
            self.discard().await;
            return Resolution::Discarded;
        }
        let Some(task) = self.task.take() else {
            return Resolution::Discarded;
        };
        let (speculated, overlay) = match task.await {
            Ok(done) => done,
            Err(_) => {
                return Resolution::NotAdopted {
                    reason: "the speculation crashed".into(),
                };
            }
        };
        let result = adopt(
            &self.lead,
            &self.snapshot,
            &self.prompt,
            &speculated,
            &overlay,
        )
        .await;
        let _ = overlay.discard();
        match result {
            Ok(()) => Resolution::Adopted {
                steps: speculated.turns,
                outcome: RunOutcome {
                    result: speculated.result,
                    status: RunStatus::Completed,
                    usage: speculated.usage,
                    turns: speculated.turns,
                    tool_calls: speculated.tool_calls,
                },
                messages: speculated.messages,
            },
            Err(e) => Resolution::NotAdopted {
                reason: e.to_string(),
            },
        }
    }
}

/// Adopts a finished speculation: the prompt hook, the overlay's writes, the messages.
async fn adopt(
    lead: &ActorRef<LeadMsg>,
    snapshot: &LeadSnapshot,
    prompt: &str,
    speculated: &Speculated,
    overlay: &Overlay,
) -> Result<(), NotAdopted> {
    match &speculated.ending {
        Ending::Completed => {}
        Ending::Halted(halt) => return Err(NotAdopted::Halted(halt.clone())),
        Ending::Limit(limit) => return Err(NotAdopted::Limit(limit.clone())),
        Ending::Cancelled => return Err(NotAdopted::Cancelled),
        Ending::Failed(e) => return Err(NotAdopted::Failed(e.clone())),
    }
    // The user's prompt hooks judge the prompt now that the user submitted it; a hook
    // that blocks it or adds context means the speculation ran without its say.
    let place = &snapshot.place;
    let started = snapshot
        .runner
        .pipeline
        .hooks
        .run_start(
            HookRole::Lead,
            &snapshot.runner.spec.id,
            &place.cwd,
            place.permission_mode.get(),
            Some(prompt),
            &CancellationToken::new(),
        )
        .await;
    match started {
        Ok(context) if context.is_empty() => {}
        Ok(_) => return Err(NotAdopted::HookContext),
        Err(reason) => return Err(NotAdopted::HookBlocked(reason.to_string())),
    }
    let files = overlay.files()?;
    for (n, (path, content)) in files.into_iter().enumerate() {
        let call = ToolCall {
            id: format!("speculation-write-{n}"),
            name: "write_file".into(),
            arguments: serde_json::json!({"path": path, "content": content}).to_string(),
        };
        let answer = lead
            .call(
                |reply| LeadMsg::Dispatch {
                    mode: AgentMode::Chat,
                    call,
                    reply,
                },
                Some(WRITE_TIMEOUT),
            )
            .await;
        match answer {
            Ok(CallResult::Success(r)) if !r.is_error => {}
            Ok(CallResult::Success(r)) => {
                return Err(NotAdopted::Refused {
                    path,
                    reason: r.content,
                });
            }
            _ => return Err(NotAdopted::NoAnswer(path)),
        }
    }
    let after = snapshot.conversation.len();
    let messages = speculated.messages.clone();
    match lead
        .call(
            |reply| LeadMsg::Adopt {
                after,
                messages,
                reply,
            },
            Some(LEAD_TIMEOUT),
        )
        .await
    {
        Ok(CallResult::Success(r)) => Ok(r?),
        _ => Err(NotAdopted::NotTaken),
    }
}
