//! Micro-compaction: in the *request* only, tool results older than the last
//! [`MicroPolicy::keep_recent`] exchanges and at least [`MicroPolicy::min_bytes`] long
//! are replaced by a stub naming the file where the whole result is saved (`offload`).
//! The conversation itself, and so the transcript, keeps every result.
//!
//! Replacing a result changes the request from that point on, which costs the prompt
//! cache everything after it. So results are stubbed in batches: the boundary below
//! which results are stubbed moves in steps of [`MicroPolicy::batch`] exchanges, and
//! only when the step saves at least [`MicroPolicy::min_saving`] bytes; the cached
//! prefix breaks at most once per batch, and never for a saving smaller than the
//! rewrite. The boundary is computed from the conversation alone (each step looks only
//! at results that no longer change), so it never moves back, and a resumed run stubs
//! exactly what the first did. Requests apply it as they are built
//! ([`crate::messages::Messages::micro_compacted`]), without copying the conversation.

use crew_protocol::{ContentBlock, Message, Role, ToolResult};

/// Results at least this long are saved to a file by the executor's offload step (and
/// shown whole when they are not offloaded), so micro-compaction can point at the file
/// later. It is defined here, below the offload step (`crewmaster::offload` re-exports
/// it), because the default policy stubs exactly the results that step saves.
pub const SAVE_ABOVE_BYTES: usize = 4_000;

/// When old tool results are stubbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MicroPolicy {
    /// Exchanges (model turns with their results) always sent whole.
    pub keep_recent: usize,
    /// The boundary moves in steps of this many exchanges.
    pub batch: usize,
    /// Results shorter than this are kept.
    pub min_bytes: usize,
    /// The boundary moves only when that stubs away at least this many bytes.
    pub min_saving: usize,
}

impl Default for MicroPolicy {
    fn default() -> Self {
        Self {
            keep_recent: 10,
            batch: 10,
            min_bytes: SAVE_ABOVE_BYTES,
            min_saving: 40_000,
        }
    }
}

impl MicroPolicy {
    /// How many of the oldest exchanges have their large results stubbed, given the bytes
    /// stubbing would save in each exchange (`savings[i]` for exchange `i`): a multiple
    /// of `batch`, leaving at least `keep_recent` whole, reached by steps that each save
    /// at least `min_saving`.
    pub fn boundary(&self, savings: &[usize]) -> usize {
        let batch = self.batch.max(1);
        let mut boundary = 0;
        let mut step = batch;
        while step + self.keep_recent <= savings.len() {
            if savings[boundary..step].iter().sum::<usize>() >= self.min_saving {
                boundary = step;
            }
            step += batch;
        }
        boundary
    }

    /// Whether a result of `len` bytes saved to a file is stubbed below the boundary.
    fn stubs(&self, len: usize, saved: bool) -> bool {
        saved && len >= self.min_bytes
    }
}

/// About how long a stub is.
const STUB_BYTES: usize = 250;

/// The stub sent instead of a result saved at `path`.
pub fn stub(bytes: usize, path: &std::path::Path) -> String {
    format!(
        "[old tool result left out of this request to save context: {bytes} bytes, saved in full to {}; read_file that path (offset and limit in lines) if you need it again]",
        path.display()
    )
}

/// How many of the oldest exchanges of `conversation` have their large saved results
/// stubbed (the boundary). Consecutive messages of one role count as one, as they are sent.
pub fn stubbed_exchanges(conversation: &[Message], policy: &MicroPolicy) -> usize {
    // What stubbing would save in each exchange (the results after its model turn).
    let mut savings: Vec<usize> = Vec::new();
    let mut previous = None;
    for m in conversation {
        match m.role {
            Role::Assistant if previous != Some(Role::Assistant) => savings.push(0),
            Role::Assistant => {}
            Role::User => {
                if let Some(last) = savings.last_mut() {
                    *last += m
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::ToolResult(r) => Some(r),
                            _ => None,
                        })
                        .filter(|r| policy.stubs(r.content.len(), r.saved_to.is_some()))
                        .map(|r| r.content.len().saturating_sub(STUB_BYTES))
                        .sum::<usize>();
                }
            }
        }
        previous = Some(m.role);
    }
    policy.boundary(&savings)
}

/// The stub sent instead of `result` when it lies in a stubbed exchange (`None`: it is
/// sent whole: small, or saved nowhere).
pub fn stub_of(result: &ToolResult, policy: &MicroPolicy) -> Option<String> {
    let path = result.saved_to.as_ref()?;
    policy
        .stubs(result.content.len(), true)
        .then(|| stub(result.content.len(), path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::Messages;
    use crew_protocol::ToolCall;

    /// The conversation as a request sends it.
    fn compact(conversation: Vec<Message>, policy: &MicroPolicy) -> Vec<Message> {
        Messages::from(conversation)
            .micro_compacted(policy)
            .to_vec()
    }

    fn conversation(exchanges: usize, size: usize) -> Vec<Message> {
        let mut conv = vec![Message::user_text("task")];
        for i in 0..exchanges {
            conv.push(Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse(ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                })],
            });
            let mut r = ToolResult::ok(format!("c{i}"), "x".repeat(size));
            r.saved_to = Some(format!("/r/c{i}.txt").into());
            conv.push(Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(r)],
            });
        }
        conv
    }

    fn stubbed(messages: &[Message]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut i = 0;
        for m in messages {
            for b in &m.content {
                if let ContentBlock::ToolResult(r) = b {
                    if r.content.starts_with("[old tool result") {
                        assert!(r.content.contains(&format!("/r/c{i}.txt")));
                        out.push(i);
                    }
                    i += 1;
                }
            }
        }
        out
    }

    #[test]
    fn old_large_saved_results_are_stubbed_in_batches() {
        let p = MicroPolicy::default();
        // 19 exchanges: 9 beyond the 10 kept, not yet a batch.
        assert!(stubbed(&compact(conversation(19, 5000), &p)).is_empty());
        // 20 to 29 exchanges: the oldest 10 are stubbed, and stay the same stubs.
        let at_20 = compact(conversation(20, 5000), &p);
        assert_eq!(stubbed(&at_20), (0..10).collect::<Vec<_>>());
        let at_29 = compact(conversation(29, 5000), &p);
        assert_eq!(at_29[..21], at_20[..21], "the stubbed prefix is stable");
        assert_eq!(stubbed(&compact(conversation(30, 5000), &p)).len(), 20);
    }

    #[test]
    fn the_boundary_moves_only_for_a_batch_worth_stubbing() {
        let p = MicroPolicy::default();
        // 4,000-byte results: one batch of 10 saves about 37,500 bytes, not enough; two do.
        assert!(stubbed(&compact(conversation(20, 4000), &p)).is_empty());
        assert_eq!(stubbed(&compact(conversation(30, 4000), &p)).len(), 20);
        assert_eq!(p.boundary(&[0; 35]), 0);
        assert_eq!(p.boundary(&[50_000; 35]), 20);
    }

    #[test]
    fn small_and_unsaved_results_are_kept_and_the_conversation_is_untouched() {
        let p = MicroPolicy::default();
        assert!(stubbed(&compact(conversation(40, 100), &p)).is_empty());
        let mut conv = conversation(40, 5000);
        for m in &mut conv {
            for b in &mut m.content {
                if let ContentBlock::ToolResult(r) = b {
                    r.saved_to = None;
                }
            }
        }
        let before = conv.clone();
        assert_eq!(compact(conv, &p), before);
    }
}
