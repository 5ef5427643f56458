//! Follows the lead's events as Claude Code's output does: each complete message becomes
//! an `assistant` or `user` message (and streamed text a `stream_event` with
//! `--include-partial-messages`), and what a `result` needs besides the outcome — the
//! time spent waiting for the model, the calls that were refused — is counted on the way.
//! Subagents' and teammates' events stay in `--output-format events`.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;

use super::messages::{self, Denial, Stamp};
use crate::events::{Event, EventKind};
use crate::protocol::{Role, ToolCall};

/// What one printer emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emit {
    /// Messages as they happen (`stream-json`).
    Messages,
    /// Messages and streamed text (`stream-json --include-partial-messages`).
    MessagesAndDeltas,
    /// Nothing until the result (`json`): only the counts.
    Nothing,
}

/// The printer's state for one session.
pub(crate) struct Printer {
    session_id: String,
    model: String,
    emit: Emit,
    /// The lead's calls under way, by id, to name a refused one's input.
    calls: HashMap<String, ToolCall>,
    denials: Vec<Denial>,
    api_ms: u64,
    /// When the lead's current model request went out, if one is out.
    asked_at: Option<Instant>,
}

impl Printer {
    /// A printer for the session `session_id` on `model`.
    pub(crate) fn new(session_id: &str, model: &str, emit: Emit) -> Self {
        Self {
            session_id: session_id.to_string(),
            model: model.to_string(),
            emit,
            calls: HashMap::new(),
            denials: Vec::new(),
            api_ms: 0,
            asked_at: None,
        }
    }

    /// The stamp of this session's messages.
    pub(crate) fn stamp(&self) -> Stamp<'_> {
        Stamp {
            session_id: &self.session_id,
            model: &self.model,
        }
    }

    /// Takes in one event; returns the message to write for it, if any.
    pub(crate) fn on_event(&mut self, event: &Event) -> Option<Value> {
        if event.agent != "lead" {
            return None;
        }
        match &event.kind {
            // A request goes out when a run starts and after each batch of results.
            EventKind::RunStarted { .. } => {
                self.asked_at = Some(Instant::now());
                None
            }
            EventKind::TextDelta { text } if self.emit == Emit::MessagesAndDeltas => {
                Some(messages::text_delta(&self.stamp(), text))
            }
            EventKind::MessageAppended { message } => {
                match message.role {
                    Role::Assistant => {
                        if let Some(t) = self.asked_at.take() {
                            self.api_ms += u64::try_from(t.elapsed().as_millis()).unwrap_or(0);
                        }
                    }
                    Role::User => self.asked_at = Some(Instant::now()),
                }
                if self.emit == Emit::Nothing {
                    return None;
                }
                messages::conversation(&self.stamp(), message)
            }
            EventKind::ToolCallStarted { call } => {
                self.calls.insert(call.id.clone(), call.clone());
                None
            }
            EventKind::ToolCallFinished {
                call_id,
                error_code,
                ..
            } => {
                let call = self.calls.remove(call_id);
                let refused = matches!(
                    error_code.as_deref(),
                    Some("permission_denied" | "tool_not_allowed")
                );
                if let (true, Some(call)) = (refused, call) {
                    self.denials.push(Denial {
                        tool_input: messages::input_of(&call),
                        tool_name: call.name,
                        tool_use_id: call.id,
                    });
                }
                None
            }
            EventKind::RunFinished { .. } => {
                self.asked_at = None;
                None
            }
            _ => None,
        }
    }

    /// The model time and the refusals counted since the last call, for a run's result.
    pub(crate) fn take_run(&mut self) -> (u64, Vec<Denial>) {
        (
            std::mem::take(&mut self.api_ms),
            std::mem::take(&mut self.denials),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Message, ToolResult};

    fn lead(kind: EventKind) -> Event {
        Event {
            agent: "lead".into(),
            kind,
        }
    }

    fn call() -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: r#"{"path":"x"}"#.into(),
        }
    }

    #[test]
    fn refused_calls_are_listed_with_their_input_and_others_are_not() {
        let mut p = Printer::new("s", "m", Emit::Messages);
        p.on_event(&lead(EventKind::ToolCallStarted { call: call() }));
        p.on_event(&lead(EventKind::ToolCallFinished {
            call_id: "c1".into(),
            name: "write_file".into(),
            is_error: true,
            error_code: Some("permission_denied".into()),
            summary: String::new(),
        }));
        let mut ok = call();
        ok.id = "c2".into();
        p.on_event(&lead(EventKind::ToolCallStarted { call: ok }));
        p.on_event(&lead(EventKind::ToolCallFinished {
            call_id: "c2".into(),
            name: "write_file".into(),
            is_error: true,
            error_code: Some("failed".into()),
            summary: String::new(),
        }));
        let (_, denials) = p.take_run();
        assert_eq!(denials.len(), 1);
        assert_eq!(denials[0].tool_use_id, "c1");
        assert_eq!(denials[0].tool_input["path"], "x");
        assert!(p.take_run().1.is_empty(), "taken once");
    }

    #[test]
    fn only_the_leads_messages_are_printed_and_deltas_only_when_asked() {
        let mut p = Printer::new("s", "m", Emit::Messages);
        let reply = EventKind::MessageAppended {
            message: Message::assistant_text("hi"),
        };
        assert!(p.on_event(&lead(reply.clone())).is_some());
        let sub = Event {
            agent: "agent-1".into(),
            kind: reply,
        };
        assert!(p.on_event(&sub).is_none());
        let delta = EventKind::TextDelta { text: "h".into() };
        assert!(p.on_event(&lead(delta.clone())).is_none());
        let mut partial = Printer::new("s", "m", Emit::MessagesAndDeltas);
        let v = partial.on_event(&lead(delta)).unwrap();
        assert_eq!(v["event"]["delta"]["text"], "h");
    }

    #[test]
    fn json_output_prints_nothing_but_still_counts() {
        let mut p = Printer::new("s", "m", Emit::Nothing);
        p.on_event(&lead(EventKind::RunStarted {
            mode: "chat".into(),
            task: "t".into(),
        }));
        let results = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok("c1", "ok"))],
        };
        assert!(
            p.on_event(&lead(EventKind::MessageAppended { message: results }))
                .is_none()
        );
        assert!(p.asked_at.is_some(), "a request goes out after results");
    }
}
