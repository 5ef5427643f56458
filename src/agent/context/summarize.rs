//! One compaction: fire `PreCompact`, ask the model for the summary, and build the
//! compacted conversation. Nothing here changes the agent's conversation: the caller
//! swaps it in (and records the event) only once the whole new conversation exists, so a
//! failure or a kill part-way leaves the old one whole.
//!
//! The summary request is the agent's own next request (same system prompt, tools and
//! messages) with the instructions appended, so it reads the cached prefix instead of
//! writing a new one; the compacted conversation starts a new prefix once.

use std::path::Path;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::accounting::{message_tokens, request_tokens, tokens_of_bytes};
use super::compact::{self, Trigger};
use super::facts::Facts;
use crate::agent::runner::Runner;
use crate::events::EventKind;
use crate::hooks::agent_events::context_text;
use crate::hooks::event::HookEvent;
use crate::protocol::{Message, Usage};
use crate::provider::{Messages, ModelRequest, ProviderError, StreamEvent};
use crate::tools::ToolSpec;

/// The share of the window the kept exchanges may take.
const KEEP_SHARE: u64 = 4;

/// Why a compaction failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactError {
    /// The run was cancelled while the summary was written.
    #[error("cancelled")]
    Cancelled,
    /// The summary request failed.
    #[error("the summary request failed: {0}")]
    Provider(#[from] ProviderError),
    /// The model answered without any text.
    #[error("the model wrote no summary")]
    EmptySummary,
    /// Even shortened, the conversation does not fit the summary request.
    #[error(
        "the conversation (about {tokens} tokens) does not fit a summary request within the {window}-token window"
    )]
    TooLarge {
        /// The estimated size.
        tokens: u64,
        /// The window.
        window: u64,
    },
    /// The compacted conversation would answer a tool call it does not hold (a bug;
    /// refused rather than sent).
    #[error("the compacted conversation would hold tool results without their calls: {0:?}")]
    Orphans(Vec<String>),
}

/// What one compaction is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Ask<'a> {
    /// What started it.
    pub trigger: Trigger,
    /// The task, the plan and the user's last instructions.
    pub facts: Facts,
    /// What the user asked of the summary (`/compact …`).
    pub custom: Option<&'a str>,
    /// The agent's working directory (where hooks run).
    pub cwd: &'a Path,
    /// The estimate of each message of the conversation ([`message_tokens`]), as the
    /// agent's accounting kept them; counted here when they do not match it.
    pub sizes: Vec<u64>,
}

/// A finished compaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Compaction {
    /// The new conversation: the summary, then the kept exchanges.
    pub messages: Vec<Message>,
    /// The summary turn's usage.
    pub usage: Usage,
    /// The estimated context before.
    pub tokens_before: u64,
    /// The estimated context after.
    pub tokens_after: u64,
    /// The estimate of each message of the new conversation.
    pub sizes: Vec<u64>,
}

/// Compacts `conversation` as `runner`'s agent would send it with `system` and `tools`;
/// the summary request shares it rather than copying it.
pub(crate) async fn compact(
    runner: &Runner,
    system: &str,
    tools: std::sync::Arc<[ToolSpec]>,
    conversation: std::sync::Arc<Vec<Message>>,
    ask: Ask<'_>,
    cancel: &CancellationToken,
) -> Result<Compaction, CompactError> {
    let agent = runner.spec.id.as_str();
    let settings = &runner.pipeline.context;
    let window = settings.window_for(&runner.spec.model);
    let sizes = if ask.sizes.len() == conversation.len() {
        ask.sizes
    } else {
        conversation.iter().map(message_tokens).collect()
    };
    let fixed = tokens_of_bytes(system.len()) + request_tokens("", &tools, &[]);
    let tokens_before = fixed + sizes.iter().sum::<u64>();
    let trigger = ask.trigger.as_str();
    let hooks = &runner.pipeline.hooks;
    let report = hooks
        .pre_compact(agent, ask.cwd, trigger, ask.custom, cancel)
        .await;
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    let hook_context: Vec<String> = report
        .context
        .iter()
        .map(|c| context_text(HookEvent::PreCompact, c))
        .collect();
    let instructions = compact::request_text(&ask.facts, ask.custom, &hook_context);
    let max_tokens = (window / 8).max(512).min(u64::from(runner.spec.max_tokens));
    let budget = window.saturating_sub(max_tokens + fixed);
    // Sent, the instructions join the last user message, and messages of one role in a
    // row are one message: fewer bytes than these parts apart. Within the budget so, the
    // request is not counted (nor copied again) to be fitted.
    let at_most =
        tokens_before - fixed + message_tokens(&Message::user_text(instructions.as_str()));
    let sent = Messages::new(conversation.clone()).with_reminder(Some(instructions));
    let messages = if at_most <= budget {
        sent
    } else {
        let fitted = compact::fit(sent.to_vec(), budget).ok_or(CompactError::TooLarge {
            tokens: tokens_before,
            window,
        })?;
        Messages::from(fitted)
    };
    let request = ModelRequest {
        model: runner.spec.model.clone(),
        system: system.to_string(),
        messages,
        tools: tools.clone(),
        max_tokens: max_tokens as u32,
        // The scripted model routes summary turns by this (`compact` in a script).
        agent: format!("{agent}/compact"),
    };
    let (summary, usage) = summary_turn(runner, request, cancel).await?;
    if summary.trim().is_empty() {
        return Err(CompactError::EmptySummary);
    }
    let summary = compact::summary_message(&summary, &ask.facts, ask.trigger);
    let summary_tokens = message_tokens(&summary);
    let keep_budget = (window / KEEP_SHARE).saturating_sub(summary_tokens);
    let cut = compact::split_point(&conversation, &sizes, settings.keep_exchanges, keep_budget);
    let mut messages = vec![summary];
    messages.extend_from_slice(&conversation[cut..]);
    let orphans = compact::orphaned_results(&messages);
    if !orphans.is_empty() {
        return Err(CompactError::Orphans(orphans));
    }
    let mut kept = vec![summary_tokens];
    kept.extend_from_slice(&sizes[cut..]);
    let tokens_after = fixed + kept.iter().sum::<u64>();
    Ok(Compaction {
        messages,
        usage,
        tokens_before,
        tokens_after,
        sizes: kept,
    })
}

/// Streams the summary turn: its text and usage. Tool calls are ignored (the request says
/// not to make any); no text deltas are published, the summary is not an answer.
async fn summary_turn(
    runner: &Runner,
    request: ModelRequest,
    cancel: &CancellationToken,
) -> Result<(String, Usage), CompactError> {
    let mut stream = runner.provider.stream(request);
    let mut text = String::new();
    let mut usage = Usage::default();
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(CompactError::Cancelled),
            next = stream.next() => next,
        };
        match next {
            None => break,
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(StreamEvent::TextDelta { text: t })) => text.push_str(&t),
            Some(Ok(StreamEvent::Usage { usage: u })) => usage = u,
            Some(Ok(StreamEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            })) => runner.pipeline.events.publish(
                &runner.spec.id,
                EventKind::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                },
            ),
            Some(Ok(_)) => {}
        }
    }
    Ok((text, usage))
}
