//! One model turn: the provider's stream read into a turn's text, reasoning and calls
//! (text shown as it arrives, retries reported), and the assistant message it becomes.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Runner;
use crate::events::EventKind;
use crate::protocol::{ContentBlock, Message, Role, StopReason, ToolCall, Usage};
use crate::provider::{ModelRequest, ProviderError, StreamEvent};

/// What one turn produced.
pub(super) struct TurnOutput {
    pub(super) text: String,
    pub(super) thinking: Vec<ContentBlock>,
    pub(super) calls: Vec<ToolCall>,
    pub(super) usage: Usage,
    pub(super) stop: StopReason,
}

/// Why a turn produced nothing.
pub(super) enum TurnError {
    Cancelled,
    Provider(ProviderError),
}

impl Runner {
    /// Streams one turn of `request`. The request (and so its share of the conversation)
    /// is released before this returns.
    pub(super) async fn stream_turn(
        &self,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<TurnOutput, TurnError> {
        let agent = self.spec.id.as_str();
        let events = &self.pipeline.events;
        let mut stream = self.provider.stream(request);
        let mut out = TurnOutput {
            text: String::new(),
            thinking: Vec::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            stop: StopReason::EndTurn,
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(TurnError::Cancelled),
                next = stream.next() => next,
            };
            // The request is out and the answer is coming: the first schema compile's
            // groundwork can be done now, before its calls (once per process).
            self.pipeline.registry.warm_up_schemas();
            match next {
                None => break,
                Some(Err(e)) => return Err(TurnError::Provider(e)),
                Some(Ok(event)) => match event {
                    StreamEvent::TextDelta { text } => {
                        out.text.push_str(&text);
                        events.publish(agent, EventKind::TextDelta { text });
                    }
                    StreamEvent::Thinking {
                        thinking,
                        signature,
                    } => {
                        out.thinking.push(ContentBlock::Thinking {
                            thinking,
                            signature,
                        });
                    }
                    StreamEvent::ToolCall { call } => out.calls.push(call),
                    StreamEvent::Usage { usage } => out.usage = usage,
                    StreamEvent::Stop { reason } => out.stop = reason,
                    StreamEvent::Retrying {
                        attempt,
                        delay_ms,
                        reason,
                    } => events.publish(
                        agent,
                        EventKind::Retrying {
                            attempt,
                            delay_ms,
                            reason,
                        },
                    ),
                },
            }
        }
        Ok(out)
    }
}

/// The turn as stored: reasoning first, then text, then calls.
pub(super) fn assistant_message(out: &TurnOutput) -> Message {
    let mut content = out.thinking.clone();
    if !out.text.is_empty() {
        content.push(ContentBlock::Text {
            text: out.text.clone(),
        });
    }
    content.extend(out.calls.iter().cloned().map(ContentBlock::ToolUse));
    Message {
        role: Role::Assistant,
        content,
    }
}
