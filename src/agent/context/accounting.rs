//! Token accounting per agent: how full its context is before the next request. The
//! provider's usage after each turn is exact for everything up to that turn's answer;
//! what was added since (tool results, mail, notices, the next reminder) is estimated.
//! Providers that report no input usage (the scripted model unless told) are estimated
//! in full.
//!
//! The estimate is the JSON size of what is sent divided by four: English prose runs at
//! about four bytes a token, and the JSON framing makes it an overestimate for text.
//! Each message is serialized for it once: its estimate is kept with the number of
//! blocks it had then. A message never changes once the agent has answered it, and the
//! one it has not answered yet only grows by blocks (mail and notices are appended to
//! it), which changes that number. A compaction replaces the conversation and hands over
//! the estimates of what it kept. Compaction counts with the kept estimates too.

use crate::protocol::{Message, Usage};
use crate::tools::ToolSpec;

/// Estimated tokens of `bytes` bytes of request text.
pub(crate) fn tokens_of_bytes(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// Estimated tokens of one message as sent.
pub(crate) fn message_tokens(message: &Message) -> u64 {
    tokens_of_bytes(json_len(message))
}

/// The length of `value`'s JSON, counted as it is written rather than kept (a message
/// with its tool results is tens of kilobytes).
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Estimated tokens of messages as sent.
pub(crate) fn messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// Estimated tokens of a whole request: system prompt, tool definitions and messages.
pub(crate) fn request_tokens(system: &str, tools: &[ToolSpec], messages: &[Message]) -> u64 {
    let tools_bytes = json_len(&tools);
    tokens_of_bytes(system.len()) + tokens_of_bytes(tools_bytes) + messages_tokens(messages)
}

/// The context size of everything a turn's usage covers: its input (cached or not) and
/// its output. `None` when the provider reported no input.
pub(crate) fn reported_context(usage: &Usage) -> Option<u64> {
    let input =
        usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
    (input > 0).then_some(input + usage.output_tokens)
}

/// A message's size, measured where it was serialized anyway.
pub(crate) struct Measured {
    /// Its place in the conversation.
    pub index: usize,
    /// Its number of blocks then.
    pub blocks: usize,
    /// The length of its JSON ([`json_len`]).
    pub bytes: usize,
}

/// One agent's running count of its context.
#[derive(Debug, Clone, Default)]
pub(crate) struct Accounting {
    /// The reported context after the last turn, and the conversation's length then
    /// (its answer included).
    last: Option<(u64, usize)>,
    /// The estimate of each message of the conversation counted so far, with its number
    /// of blocks when it was counted.
    sizes: Vec<(u64, usize)>,
    /// The sum of `sizes`' estimates.
    total: u64,
    /// The estimate of the tool definitions last sent, with their fingerprint: they are
    /// the same request after request, and serializing their schemas is not free.
    tools: Option<(u64, u64)>,
}

impl Accounting {
    /// Records a turn's usage; `len` is the conversation's length with its answer.
    pub(crate) fn after_turn(&mut self, usage: &Usage, len: usize) {
        self.last = reported_context(usage).map(|tokens| (tokens, len));
    }

    /// Forgets the last report and the kept estimates (the conversation was replaced).
    pub(crate) fn reset(&mut self) {
        self.last = None;
        self.sizes.clear();
        self.total = 0;
    }

    /// Forgets the last report; `conversation` replaced the one counted, and `sizes` are
    /// the estimates of its messages (a compaction's, counted as it made it).
    pub(crate) fn replaced(&mut self, conversation: &[Message], sizes: &[u64]) {
        self.reset();
        if sizes.len() == conversation.len() {
            self.sizes = conversation
                .iter()
                .zip(sizes)
                .map(|(m, &tokens)| (tokens, m.content.len()))
                .collect();
            self.total = sizes.iter().sum();
        }
    }

    /// The context of the next request: the last report plus an estimate of the
    /// messages added since and of `extra` (a reminder), or a full estimate.
    pub(crate) fn current(
        &mut self,
        system: &str,
        tools: &[ToolSpec],
        conversation: &[Message],
        extra: Option<&str>,
    ) -> u64 {
        let extra = extra.map_or(0, |t| tokens_of_bytes(t.len()));
        self.count(conversation);
        match self.last {
            Some((tokens, len)) if len <= conversation.len() => {
                tokens + self.sizes[len..].iter().map(|s| s.0).sum::<u64>() + extra
            }
            _ => tokens_of_bytes(system.len()) + self.tools_estimate(tools) + self.total + extra,
        }
    }

    /// Takes the JSON lengths of messages measured elsewhere (as they were published):
    /// the next count keeps them while the messages keep their number of blocks.
    pub(crate) fn measured(&mut self, measured: Vec<Measured>) {
        for Measured {
            index,
            blocks,
            bytes,
        } in measured
        {
            let tokens = tokens_of_bytes(bytes);
            let counted = self.sizes.len();
            match self.sizes.get_mut(index) {
                Some(kept) => {
                    self.total = self.total - kept.0 + tokens;
                    *kept = (tokens, blocks);
                }
                None if index == counted => {
                    self.total += tokens;
                    self.sizes.push((tokens, blocks));
                }
                // Past what was counted: the next count measures the messages between.
                None => {}
            }
        }
    }

    /// The estimate of each message of `conversation`, as [`message_tokens`] gives it.
    pub(crate) fn sizes(&mut self, conversation: &[Message]) -> Vec<u64> {
        self.count(conversation);
        self.sizes.iter().map(|s| s.0).collect()
    }

    /// Counts the messages of `conversation` not counted yet, and again those that grew.
    fn count(&mut self, conversation: &[Message]) {
        // Shorter than before without a reset: count it all again.
        if self.sizes.len() > conversation.len() {
            self.sizes.clear();
            self.total = 0;
        }
        for (i, message) in conversation.iter().enumerate() {
            let blocks = message.content.len();
            match self.sizes.get_mut(i) {
                Some(kept) if kept.1 == blocks => {}
                Some(kept) => {
                    let tokens = message_tokens(message);
                    self.total = self.total - kept.0 + tokens;
                    *kept = (tokens, blocks);
                }
                None => {
                    let tokens = message_tokens(message);
                    self.total += tokens;
                    self.sizes.push((tokens, blocks));
                }
            }
        }
    }

    /// The estimate of `tools`, counted again only when the list changes (by name or
    /// description: a tool's schema does not change under its name within a run).
    pub(crate) fn tools_estimate(&mut self, tools: &[ToolSpec]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for tool in tools {
            (&tool.name, &tool.description).hash(&mut hasher);
        }
        let fingerprint = hasher.finish();
        match self.tools {
            Some((seen, tokens)) if seen == fingerprint => tokens,
            _ => {
                let tokens = request_tokens("", tools, &[]);
                self.tools = Some((fingerprint, tokens));
                tokens
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_length_is_the_length_of_the_json() {
        let m = Message::user_text("quotes \" and \\ and \n and é and \u{1} escaped");
        assert_eq!(json_len(&m), serde_json::to_vec(&m).unwrap().len());
    }

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

    /// The kept estimate of settled messages gives what a full count gives, turn after
    /// turn, while mail is appended to the last user message and after a compaction.
    #[test]
    fn the_settled_estimate_matches_a_full_count_as_the_conversation_grows() {
        let mut acc = Accounting::default();
        let mut conv = vec![Message::user_text("task")];
        let full = |conv: &[Message]| request_tokens("sys", &[], conv);
        for turn in 0..30 {
            assert_eq!(
                acc.current("sys", &[], &conv, None),
                full(&conv),
                "turn {turn}"
            );
            conv.push(Message::assistant_text(format!("answer {turn}")));
            conv.push(Message::user_text("r".repeat(turn * 7)));
            // Mail lands in the last user message between turns.
            if let Some(last) = conv.last_mut() {
                last.content.push(crate::protocol::ContentBlock::Text {
                    text: "mail ".repeat(turn),
                });
            }
            acc.after_turn(&Usage::default(), conv.len() - 1);
        }
        assert_eq!(acc.current("sys", &[], &conv, None), full(&conv));
        // A compaction replaces it with something shorter.
        conv.truncate(3);
        acc.reset();
        assert_eq!(acc.current("sys", &[], &conv, None), full(&conv));
        // Shorter again, even without a reset, is counted afresh.
        conv.truncate(1);
        assert_eq!(acc.current("sys", &[], &conv, None), full(&conv));
    }

    /// The kept estimates are each message's own, a grown message is counted again, and
    /// a compaction's handed-over estimates give what a full count gives.
    #[test]
    fn kept_sizes_follow_growth_and_a_replacement() {
        let mut acc = Accounting::default();
        let mut conv = vec![
            Message::user_text("task"),
            Message::assistant_text("answer"),
            Message::user_text("result"),
        ];
        let own = |conv: &[Message]| conv.iter().map(message_tokens).collect::<Vec<_>>();
        assert_eq!(acc.sizes(&conv), own(&conv));
        if let Some(last) = conv.last_mut() {
            last.content.push(crate::protocol::ContentBlock::Text {
                text: "mail ".repeat(200),
            });
        }
        assert_eq!(acc.sizes(&conv), own(&conv));
        assert_eq!(
            acc.current("sys", &[], &conv, None),
            request_tokens("sys", &[], &conv)
        );
        let compacted = vec![Message::user_text("summary"), conv[2].clone()];
        acc.replaced(&compacted, &own(&compacted));
        assert_eq!(
            acc.current("sys", &[], &compacted, None),
            request_tokens("sys", &[], &compacted)
        );
        // Estimates that do not match the conversation are not taken.
        acc.replaced(&conv, &[1]);
        assert_eq!(
            acc.current("sys", &[], &conv, None),
            request_tokens("sys", &[], &conv)
        );
    }

    /// The kept estimate of the tool definitions follows a change of the list.
    #[test]
    fn the_tools_estimate_follows_the_tool_list() {
        let spec = |name: &str, words: usize| ToolSpec {
            name: name.into(),
            description: "d ".repeat(words),
            input_schema: serde_json::json!({"type": "object"}),
        };
        let conv = vec![Message::user_text("task")];
        let mut acc = Accounting::default();
        let one = vec![spec("read_file", 50)];
        let two = vec![spec("read_file", 50), spec("mcp__x__y", 400)];
        for tools in [&one, &two, &one, &two] {
            assert_eq!(
                acc.current("sys", tools, &conv, None),
                request_tokens("sys", tools, &conv)
            );
        }
    }

    #[test]
    fn a_measured_size_is_kept_until_its_message_grows() {
        let mut conv = vec![Message::user_text("a".repeat(400))];
        let mut acc = Accounting::default();
        let counted = acc.sizes(&conv)[0];
        // Measured (here: on purpose too large) as it was published: kept, not counted.
        acc.measured(vec![Measured {
            index: 0,
            blocks: 1,
            bytes: 40_000,
        }]);
        assert_eq!(acc.sizes(&conv), [10_000]);
        // A second message measured as it comes; a gap is left to the count.
        conv.push(Message::assistant_text("b"));
        acc.measured(vec![Measured {
            index: 1,
            blocks: 1,
            bytes: 4,
        }]);
        acc.measured(vec![Measured {
            index: 5,
            blocks: 1,
            bytes: 4,
        }]);
        assert_eq!(acc.sizes(&conv), [10_000, 1]);
        // The first grew by a block: counted again, as serialized.
        conv[0]
            .content
            .push(crew_protocol::ContentBlock::Text { text: "c".into() });
        assert!(acc.sizes(&conv)[0] > counted && acc.sizes(&conv)[0] < 10_000);
    }
}
