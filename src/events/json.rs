//! An event's JSON line, made once and shared by every recorder that writes it (the
//! transcript and the live journal).

use std::sync::Arc;

use super::{Event, message_line};

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

    /// `event`'s line made already.
    pub(super) fn made_as(event: &'a Event, line: String) -> Self {
        let made = std::cell::OnceCell::new();
        let _ = made.set(Some(Arc::new(line)));
        Self { event, line: made }
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
            if let Some(line) = message_line::line(self.event) {
                return Some(Arc::new(line));
            }
            serde_json::to_string(self.event)
                .inspect_err(|e| tracing::warn!("cannot serialise an event: {e}"))
                .ok()
                .map(Arc::new)
        })
    }
}
