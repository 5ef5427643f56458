//! What Anthropic's prompt cache would bill for a request, computed from the breakpoints
//! our Anthropic codec really sends (`anthropic::request_body`), so the scripted model
//! can report cache reads and writes and tests can measure our cache layout offline.
//!
//! The rules modelled (Anthropic's prompt-caching documentation):
//! - the prompt is the tools, then the system blocks, then the messages' blocks, in order;
//! - at most 4 `cache_control` breakpoints; the prefix up to each breakpoint is written to
//!   the cache when it is at least the model's minimum cacheable length;
//! - a read needs an exact prefix match: at each breakpoint the cache is looked up at
//!   that block boundary and at the 20 boundaries before it, and the longest hit wins;
//! - billing: tokens of the hit prefix are read, tokens from there to the last written
//!   breakpoint are created, the rest is plain input.
//!
//! Tokens are estimated at 4 bytes each of a block's JSON; entries never expire (a
//! scripted run is far shorter than the 5-minute lifetime).

use std::collections::HashSet;

use serde_json::Value;

use super::ModelRequest;

/// Block boundaries before a breakpoint at which a cache hit is looked for.
pub const LOOKBACK_BLOCKS: usize = 20;

/// The most breakpoints a request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// The shortest prefix (in tokens) Sonnet and Opus models cache.
pub const MIN_CACHEABLE_TOKENS: u64 = 1024;

/// How a request's input tokens would be billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheBill {
    /// Read from the cache.
    pub read: u64,
    /// Written to the cache.
    pub created: u64,
    /// Neither.
    pub uncached: u64,
}

impl CacheBill {
    /// All input tokens.
    pub fn total(&self) -> u64 {
        self.read + self.created + self.uncached
    }
}

/// The cache of one organisation: the prefixes written so far.
#[derive(Debug, Clone)]
pub struct CacheSim {
    written: HashSet<u64>,
    min_tokens: u64,
}

impl Default for CacheSim {
    fn default() -> Self {
        Self::new(MIN_CACHEABLE_TOKENS)
    }
}

/// One block of the linear prompt.
struct Block {
    /// Hash of the prompt up to and including this block.
    prefix: u64,
    /// Tokens up to and including this block.
    tokens: u64,
    breakpoint: bool,
}

impl CacheSim {
    /// An empty cache that keeps prefixes of at least `min_tokens`.
    pub fn new(min_tokens: u64) -> Self {
        Self {
            written: HashSet::new(),
            min_tokens,
        }
    }

    /// Bills `request` as Anthropic would, and writes its breakpoints' prefixes.
    pub fn bill(&mut self, request: &ModelRequest) -> CacheBill {
        let blocks = linear(&super::anthropic::request_body(request));
        let total = blocks.last().map_or(0, |b| b.tokens);
        let breakpoints: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.breakpoint)
            .map(|(i, _)| i)
            .take(MAX_BREAKPOINTS)
            .collect();
        let mut hit: Option<usize> = None;
        for &bp in &breakpoints {
            let found = (bp.saturating_sub(LOOKBACK_BLOCKS)..=bp)
                .rev()
                .find(|&i| self.written.contains(&blocks[i].prefix));
            hit = hit.max(found);
        }
        let read = hit.map_or(0, |i| blocks[i].tokens);
        let mut last_written = read;
        for &bp in &breakpoints {
            let b = &blocks[bp];
            if b.tokens >= self.min_tokens {
                self.written.insert(b.prefix);
                last_written = last_written.max(b.tokens);
            }
        }
        let created = last_written - read;
        CacheBill {
            read,
            created,
            uncached: total - read - created,
        }
    }
}

/// The request body as Anthropic sees it for caching: tools, system, then each message's
/// blocks, each with the running prefix hash and token count.
fn linear(body: &Value) -> Vec<Block> {
    let mut items: Vec<(String, bool)> = Vec::new();
    let mut push = |tag: &str, v: &Value| {
        let breakpoint = v.get("cache_control").is_some();
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("cache_control");
        }
        items.push((format!("{tag}:{v}"), breakpoint));
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        push("tool", t);
    }
    for s in body["system"].as_array().into_iter().flatten() {
        push("system", s);
    }
    for (i, m) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        // The message index and role are part of what a block means.
        let tag = format!("{i}/{}", m["role"].as_str().unwrap_or(""));
        for b in m["content"].as_array().into_iter().flatten() {
            push(&tag, b);
        }
    }
    let mut prefix = FNV_OFFSET;
    let mut tokens = 0;
    items
        .into_iter()
        .map(|(text, breakpoint)| {
            prefix = fnv(prefix, text.as_bytes());
            tokens += (text.len() as u64).div_ceil(4);
            Block {
                prefix,
                tokens,
                breakpoint,
            }
        })
        .collect()
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, chained: a stable hash of the whole prefix.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_protocol::{ContentBlock, Message, ToolCall, ToolResult};

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: "s".repeat(8000),
            messages: messages.into(),
            tools: Vec::new().into(),
            max_tokens: 100,
            agent: "lead".into(),
        }
    }

    fn exchange(i: usize) -> Vec<Message> {
        let call = ToolCall {
            id: format!("c{i}"),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        vec![
            Message {
                role: crew_protocol::Role::Assistant,
                content: vec![ContentBlock::ToolUse(call)],
            },
            Message {
                role: crew_protocol::Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult::ok(
                    format!("c{i}"),
                    "r".repeat(400),
                ))],
            },
        ]
    }

    #[test]
    fn the_first_request_writes_and_the_next_reads_the_previous_prefix() {
        let mut sim = CacheSim::default();
        let mut conv = vec![Message::user_text("task")];
        let first = sim.bill(&request(conv.clone()));
        assert_eq!(first.read, 0);
        assert!(first.created > 2000, "{first:?}");
        assert_eq!(first.uncached, 0);
        conv.extend(exchange(1));
        let second = sim.bill(&request(conv.clone()));
        assert_eq!(second.read, first.created, "{second:?}");
        assert!(second.created > 0 && second.created < 200, "{second:?}");
        // The same request again is read whole.
        let again = sim.bill(&request(conv.clone()));
        assert_eq!((again.read, again.created), (second.total(), 0));
    }

    #[test]
    fn a_changed_early_block_breaks_the_prefix_after_it() {
        let mut sim = CacheSim::default();
        let mut conv = vec![Message::user_text("task")];
        conv.extend(exchange(1));
        conv.extend(exchange(2));
        let first = sim.bill(&request(conv.clone()));
        if let ContentBlock::ToolResult(r) = &mut conv[2].content[0] {
            r.content = "stub".into();
        }
        let second = sim.bill(&request(conv));
        // Only the system prompt (its own breakpoint) is still read.
        assert!(
            second.read > 2000 && second.read + 200 < first.total(),
            "{second:?}"
        );
        assert!(second.created > 0);
    }

    #[test]
    fn short_prompts_are_not_cached_and_far_breakpoints_miss() {
        let mut sim = CacheSim::default();
        let mut req = request(vec![Message::user_text("hi")]);
        req.system = "short".into();
        assert_eq!(sim.bill(&req).read, 0);
        let bill = sim.bill(&req);
        assert_eq!((bill.read, bill.created), (0, 0), "below the minimum");
        // More than 20 new blocks after the last cached prefix: the lookback misses it
        // (only the system prompt's breakpoint is read).
        let mut sim = CacheSim::default();
        let mut conv = vec![Message::user_text("task")];
        let first = sim.bill(&request(conv.clone()));
        for i in 0..12 {
            conv.extend(exchange(i));
        }
        let later = sim.bill(&request(conv));
        assert!(later.read < first.created, "{later:?} vs {first:?}");
    }
}
