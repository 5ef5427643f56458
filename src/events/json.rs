//! An event's JSON line, made once and shared by every recorder that writes it (the
//! transcript and the live journal), in an allocation sized for it.

use std::sync::Arc;

use super::{Event, EventKind};
use crate::protocol::ContentBlock;

/// An event's JSON line (without its newline), made on first use and then shared.
pub struct EventJson<'a> {
    event: &'a Event,
    line: std::cell::OnceCell<Option<Arc<String>>>,
}

impl<'a> EventJson<'a> {
    /// `event`'s line, not made yet.
    pub fn new(event: &'a Event) -> Self {
        Self {
            event,
            line: std::cell::OnceCell::new(),
        }
    }

    /// The event.
    pub fn event(&self) -> &'a Event {
        self.event
    }

    /// The line; `None` when the event cannot be serialized (said once, in the log).
    pub fn line(&self) -> Option<&str> {
        self.made().as_deref().map(String::as_str)
    }

    /// The line, shared rather than copied by a recorder that keeps it.
    pub fn shared(&self) -> Option<Arc<String>> {
        self.made().clone()
    }

    fn made(&self) -> &Option<Arc<String>> {
        self.line.get_or_init(|| {
            let mut line = Vec::with_capacity(line_hint(self.event));
            serde_json::to_writer(&mut line, self.event)
                .inspect_err(|e| tracing::warn!("cannot serialise an event: {e}"))
                .ok()?;
            // serde_json writes UTF-8 only.
            String::from_utf8(line).ok().map(Arc::new)
        })
    }
}

/// About how long `event`'s line will be: the texts it carries and room for the rest,
/// so that a message with its tool results (tens of kilobytes) is written into one
/// allocation instead of one grown by doubling, each growth a copy.
fn line_hint(event: &Event) -> usize {
    const ROOM: usize = 256;
    let EventKind::MessageAppended { message } = &event.kind else {
        return ROOM;
    };
    let texts: usize = message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::ToolUse(call) => call.arguments.len() + ROOM / 2,
            ContentBlock::ToolResult(result) => result.content.len() + ROOM / 2,
        })
        .sum();
    // Quotes, tabs and newlines take two bytes each once escaped.
    ROOM + texts + texts / 8
}
