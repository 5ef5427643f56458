//! Token accounting per agent: how full its context is before the next request. The
//! provider's usage after each turn is exact for everything up to that turn's answer;
//! what was added since (tool results, mail, notices, the next reminder) is estimated.
//! Providers that report no input usage (the scripted model unless told) are estimated
//! in full.
//!
//! The estimate is the JSON size of what is sent divided by four: English prose runs at
//! about four bytes a token, and the JSON framing makes it an overestimate for text.

use crate::protocol::{Message, Usage};
use crate::tools::ToolSpec;

/// Estimated tokens of `bytes` bytes of request text.
pub(crate) fn tokens_of_bytes(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// Estimated tokens of one message as sent.
pub(crate) fn message_tokens(message: &Message) -> u64 {
    tokens_of_bytes(serde_json::to_vec(message).map(|v| v.len()).unwrap_or(0))
}

/// Estimated tokens of messages as sent.
pub(crate) fn messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// Estimated tokens of a whole request: system prompt, tool definitions and messages.
pub(crate) fn request_tokens(system: &str, tools: &[ToolSpec], messages: &[Message]) -> u64 {
    let tools_bytes = serde_json::to_vec(tools).map(|v| v.len()).unwrap_or(0);
    tokens_of_bytes(system.len()) + tokens_of_bytes(tools_bytes) + messages_tokens(messages)
}

/// The context size of everything a turn's usage covers: its input (cached or not) and
/// its output. `None` when the provider reported no input.
pub(crate) fn reported_context(usage: &Usage) -> Option<u64> {
    let input =
        usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
    (input > 0).then_some(input + usage.output_tokens)
}

/// One agent's running count of its context.
#[derive(Debug, Clone, Default)]
pub(crate) struct Accounting {
    /// The reported context after the last turn, and the conversation's length then
    /// (its answer included).
    last: Option<(u64, usize)>,
}

impl Accounting {
    /// Records a turn's usage; `len` is the conversation's length with its answer.
    pub(crate) fn after_turn(&mut self, usage: &Usage, len: usize) {
        self.last = reported_context(usage).map(|tokens| (tokens, len));
    }

    /// Forgets the last report (the conversation was replaced).
    pub(crate) fn reset(&mut self) {
        self.last = None;
    }

    /// The context of the next request: the last report plus an estimate of the
    /// messages added since and of `extra` (a reminder), or a full estimate.
    pub(crate) fn current(
        &self,
        system: &str,
        tools: &[ToolSpec],
        conversation: &[Message],
        extra: Option<&str>,
    ) -> u64 {
        let extra = extra.map_or(0, |t| tokens_of_bytes(t.len()));
        match self.last {
            Some((tokens, len)) if len <= conversation.len() => {
                tokens + messages_tokens(&conversation[len..]) + extra
            }
            _ => request_tokens(system, tools, conversation) + extra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_usage_plus_an_estimate_of_what_came_since() {
        let conv = vec![
            Message::user_text("a".repeat(400)),
            Message::assistant_text("b".repeat(40)),
        ];
        let mut acc = Accounting::default();
        let full = acc.current("sys", &[], &conv, None);
        assert!(full >= 110, "{full}");
        // No reported input: still a full estimate.
        acc.after_turn(&Usage::default(), 2);
        assert_eq!(acc.current("sys", &[], &conv, None), full);
        let usage = Usage {
            input_tokens: 10,
            cache_read_input_tokens: 1_000,
            output_tokens: 5,
            ..Usage::default()
        };
        acc.after_turn(&usage, 2);
        assert_eq!(acc.current("sys", &[], &conv, None), 1_015);
        let mut more = conv.clone();
        more.push(Message::user_text("c".repeat(800)));
        let grown = acc.current("sys", &[], &more, Some(&"r".repeat(40)));
        assert_eq!(grown, 1_015 + message_tokens(&more[2]) + 10);
        acc.reset();
        assert_eq!(acc.current("sys", &[], &conv, None), full);
    }
}
