//! The agent loop's side of compaction: before each turn, count the context (usage
//! reported after the last turn plus an estimate of what came since) and, at the
//! `autoCompact` threshold, compact first. The swap is recorded as one `compacted` event
//! holding the whole new conversation, so a transcript replays to either the state before
//! or the state after, never a mix. Also the manual `/compact` of an idle agent.

use tokio_util::sync::CancellationToken;

use super::accounting::{Accounting, Measured};
use super::compact::Trigger;
use super::facts::Facts;
use super::summarize::{Ask, CompactError, Compaction, compact};
use crate::agent::mode::AgentMode;
use crate::agent::runner::shared::Shared;
use crate::agent::runner::{RunPlace, RunRequest, RunStatus, Runner};
use crate::events::EventKind;
use crate::protocol::{Message, Usage};
use crate::tools::ToolSpec;

/// Why the loop must stop instead of taking its next turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// `Failed` or `Cancelled`.
    pub status: RunStatus,
    /// What to tell the user.
    pub message: String,
}

/// One run's context accounting and automatic compaction.
#[derive(Debug, Clone)]
pub struct Guard {
    accounting: Accounting,
    threshold: Option<u64>,
    window: u64,
    /// The conversation's length right after the last compaction: it is not compacted
    /// again until something has been added.
    compacted_at: Option<usize>,
}

impl Guard {
    /// The guard of a run of `runner`'s agent.
    pub fn new(runner: &Runner) -> Self {
        let settings = &runner.pipeline.context;
        Self {
            accounting: Accounting::default(),
            threshold: settings.threshold_for(&runner.spec.model),
            window: settings.window_for(&runner.spec.model),
            compacted_at: None,
        }
    }

    /// Takes the sizes of messages measured as they were published.
    pub(crate) fn measured(&mut self, measured: Vec<Measured>) {
        self.accounting.measured(measured);
    }

    /// Records a finished turn; `len`: the conversation's length with its answer.
    pub fn after_turn(&mut self, usage: &Usage, len: usize) {
        self.accounting.after_turn(usage, len);
    }

    /// Compacts `conversation` when the next request (with `system`, `tools` and
    /// `reminder`) would reach the threshold. Returns the summary turn's usage when it
    /// compacted; a `Stop` when the run cannot go on (the conversation is then as it was).
    #[allow(clippy::too_many_arguments)]
    pub async fn before_turn(
        &mut self,
        runner: &Runner,
        conversation: &mut Vec<Message>,
        system: &str,
        tools: &std::sync::Arc<[ToolSpec]>,
        reminder: Option<&str>,
        req: &RunRequest,
        place: &RunPlace,
        cancel: &CancellationToken,
    ) -> Result<Option<Usage>, Stop> {
        let Some(threshold) = self.threshold else {
            return Ok(None);
        };
        let tokens = self
            .accounting
            .current(system, tools, conversation, reminder);
        if tokens < threshold || self.compacted_at == Some(conversation.len()) {
            return Ok(None);
        }
        let user_task = !crate::agent::follow_up::is_follow_up(&req.task);
        let mut facts = Facts::gather(conversation, &req.task, req.plan.as_deref(), user_task);
        facts.open_work = super::open_work::lines(place, &runner.spec.id).await;
        let ask = Ask {
            trigger: Trigger::Auto,
            facts,
            custom: None,
            cwd: &place.cwd,
            sizes: self.accounting.sizes(conversation),
        };
        let lent = Shared::take(conversation);
        let done = compact(runner, system, tools.clone(), lent.share(), ask, cancel).await;
        drop(lent);
        let mut compaction = match done {
            Ok(c) => c,
            Err(CompactError::Cancelled) => {
                return Err(Stop {
                    status: RunStatus::Cancelled,
                    message: String::new(),
                });
            }
            Err(e) => return Err(self.failed(runner, conversation, tokens, &e.to_string())),
        };
        let usage = compaction.usage;
        let after = compaction.tokens_after;
        let sizes = std::mem::take(&mut compaction.sizes);
        apply(runner, conversation, compaction, Trigger::Auto);
        self.accounting.replaced(conversation, &sizes);
        self.compacted_at = Some(conversation.len());
        if after >= self.window {
            let message = format!(
                "the context is still about {after} tokens after compaction, over the {}-token window; raise `contextWindows` for `{}` in settings",
                self.window, runner.spec.model
            );
            return Err(self.failed(runner, conversation, after, &message));
        }
        Ok(Some(usage))
    }

    fn failed(&self, runner: &Runner, conversation: &[Message], tokens: u64, why: &str) -> Stop {
        let message = format!(
            "context compaction failed: {why}. Nothing was lost: the conversation ({} messages, about {tokens} tokens of the {}-token window) is unchanged in the session transcript; resume with `crew --continue`, or change `contextWindows`/`autoCompact` in settings",
            conversation.len(),
            self.window
        );
        runner.pipeline.events.publish(
            &runner.spec.id,
            EventKind::Error {
                message: message.clone(),
            },
        );
        Stop {
            status: RunStatus::Failed,
            message,
        }
    }
}

/// Swaps the compacted conversation in and records it as one event.
fn apply(runner: &Runner, conversation: &mut Vec<Message>, c: Compaction, trigger: Trigger) {
    runner.pipeline.events.publish(
        &runner.spec.id,
        EventKind::Compacted {
            trigger: trigger.as_str().into(),
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            usage: c.usage,
            messages: c.messages.clone(),
        },
    );
    *conversation = c.messages;
}

/// What a manual compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The estimated context before.
    pub tokens_before: u64,
    /// The estimated context after.
    pub tokens_after: u64,
    /// The summary turn's usage.
    pub usage: Usage,
}

/// Why `/compact` left the conversation as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactNowError {
    /// Fewer than two messages: there is nothing to summarise.
    #[error("there is nothing to compact yet")]
    Nothing,
    /// The summary turn failed (its error).
    #[error("compaction failed: {0}; the conversation is unchanged")]
    Failed(String),
}

/// Compacts an idle agent's `conversation` now (`/compact [instructions]`), as a Chat
/// run of it would send it. On failure the conversation is unchanged.
pub async fn compact_now(
    runner: &Runner,
    conversation: &mut Vec<Message>,
    place: &RunPlace,
    custom: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Compacted, CompactNowError> {
    if conversation.len() < 2 {
        return Err(CompactNowError::Nothing);
    }
    let (system, tools) = request_prefix(runner, place, conversation);
    // Crew's own facts for an idle agent: an earlier summary's, else its first message.
    let first = conversation.first().map(Message::text).unwrap_or_default();
    let mut facts = Facts::gather(conversation, &first, None, false);
    facts.open_work = super::open_work::lines(place, &runner.spec.id).await;
    let ask = Ask {
        trigger: Trigger::Manual,
        facts,
        custom,
        cwd: &place.cwd,
        // Counted by the compaction.
        sizes: Vec::new(),
    };
    let lent = Shared::take(conversation);
    let done = compact(runner, &system, tools, lent.share(), ask, cancel).await;
    drop(lent);
    let c = done.map_err(|e| CompactNowError::Failed(e.to_string()))?;
    let done = Compacted {
        tokens_before: c.tokens_before,
        tokens_after: c.tokens_after,
        usage: c.usage,
    };
    apply(runner, conversation, c, Trigger::Manual);
    Ok(done)
}

/// The system prompt and tools a Chat run of `runner`'s agent would send now.
fn request_prefix(
    runner: &Runner,
    place: &RunPlace,
    conversation: &[Message],
) -> (String, std::sync::Arc<[ToolSpec]>) {
    let registry = &runner.pipeline.registry;
    let allowed = runner.spec.allowed_tools.as_ref();
    let visible = crate::agent::mode::visible_definitions(AgentMode::Chat, registry, allowed);
    let deferral = crate::tools::deferred::Deferral::plan(visible, registry);
    let memory = crate::memory::AgentMemory::start(&place.walk, &place.cwd, conversation);
    let system =
        crate::agent::prompt::with_memory(&runner.spec.system_prompt, &memory.prompt_section());
    (system, deferral.request_tools(conversation))
}
