//! The typed event stream: what agents, tools and tasks report as they work. The CLI's
//! output formats, the tests and the TUI subscribe to it; nothing in the library prints.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::protocol::decision::{Source, Verdict};
use crate::protocol::{Message, StopReason, ToolCall, Usage};

mod json;
mod message_line;

pub use json::EventJson;

/// One thing that happened, attributed to an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The agent it concerns (`lead`, or a subagent's id).
    pub agent: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The kinds of event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A run started.
    RunStarted {
        /// The agent mode (`chat`, `plan`, `do`).
        mode: String,
        /// The task text.
        task: String,
    },
    /// A complete message joined the agent's conversation (what resume rebuilds from).
    MessageAppended {
        /// The message.
        message: Message,
    },
    /// Streamed model text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// The model asked for a tool call.
    ToolCallStarted {
        /// The call.
        call: ToolCall,
    },
    /// The permission engine (or a human) decided a call.
    PermissionDecided {
        /// The call's id.
        call_id: String,
        /// The verdict.
        verdict: Verdict,
        /// Who decided.
        source: Source,
        /// Why.
        reason: String,
    },
    /// A call asked for approval and was refused because nobody could answer.
    ApprovalRefused {
        /// The call's id.
        call_id: String,
        /// Why, and how to allow such calls.
        reason: String,
    },
    /// A tool call finished (ran, or was refused at some stage).
    ToolCallFinished {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// Whether it failed or was refused.
        is_error: bool,
        /// The error code, if any.
        error_code: Option<String>,
        /// The first line of the result, for compact display.
        summary: String,
    },
    /// A background task was created, started or ended.
    TaskChanged {
        /// The task id.
        id: String,
        /// `agent` or `command`.
        kind: String,
        /// Its new status.
        status: String,
        /// What it is for.
        description: String,
        /// Its result, once it has ended.
        result: Option<String>,
    },
    /// A teammate joined the team or changed status (idle, working, failed, …).
    TeamMemberChanged {
        /// The teammate's name.
        name: String,
        /// Its new status (`idle`, `working`, `failed`, `stopped`, `finished`).
        status: String,
        /// The work-list item it holds, if any.
        current_item: Option<String>,
    },
    /// A message was appended to a team member's inbox (`agent` is the sender's actor).
    TeamMessage {
        /// The sender (`lead`, `user` or a teammate).
        from: String,
        /// The recipient.
        to: String,
        /// The message's index in the recipient's inbox.
        index: u64,
        /// `text`, `shutdown_request`, `plan_approval_response`, …
        kind: String,
        /// The sender's summary, or the start of the message.
        summary: String,
    },
    /// A work-list item was added or changed.
    TodoChanged {
        /// The item's id ("1", "2", …).
        id: String,
        /// What it is.
        subject: String,
        /// `pending`, `in_progress`, `completed` or `deleted`.
        status: String,
        /// Who holds it.
        owner: Option<String>,
        /// The items it waits for.
        blocked_by: Vec<String>,
    },
    /// A provider is retrying a request.
    Retrying {
        /// Which attempt comes next.
        attempt: u32,
        /// How long it waits, in milliseconds.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// A model turn ended.
    TurnFinished {
        /// The turn's number within the run (1-based).
        turn: u32,
        /// Why it ended.
        stop_reason: StopReason,
        /// Its token usage.
        usage: Usage,
    },
    /// What one model request cost and how the prompt cache served its input.
    RequestUsage {
        /// The turn's number within the run (1-based).
        turn: u32,
        /// The model it was sent to.
        model: String,
        /// Input tokens read from the cache.
        cached: u64,
        /// Input tokens written to the cache.
        created: u64,
        /// Input tokens neither read nor written.
        uncached: u64,
        /// Output tokens.
        output: u64,
        /// Its cost at list price (`None`: the model has no known price).
        cost_usd: Option<f64>,
    },
    /// A run ended.
    RunFinished {
        /// The final assistant text.
        result: String,
        /// How it ended: `completed`, `max_turns`, `cancelled`, `failed`.
        status: String,
        /// The summed usage.
        usage: Usage,
        /// Model turns taken.
        turns: u32,
    },
    /// The agent's conversation was compacted: `messages` (the summary, then the newest
    /// exchanges verbatim) replace it. One event, so a transcript replays to the state
    /// before or after it, never a mix; the messages before stay in the transcript.
    Compacted {
        /// `auto` (the `autoCompact` threshold) or `manual` (`/compact`).
        trigger: String,
        /// The estimated context before, in tokens.
        tokens_before: u64,
        /// The estimated context after, in tokens.
        tokens_after: u64,
        /// The summary turn's usage (it counts towards the run's cost).
        #[serde(default)]
        usage: Usage,
        /// The whole conversation from now on.
        messages: Vec<Message>,
    },
    /// A hook has something for the user: its `systemMessage`, a non-blocking error
    /// (exit code, timeout, invalid JSON), or a `continue: false` stop reason.
    Hook {
        /// The hook event (`PreToolUse`, …).
        event: String,
        /// What to show, naming the hook.
        message: String,
    },
    /// Auto mode's breaker switched it off: calls ask again until `/auto reset`.
    AutoModeOff {
        /// Why (how many denials).
        reason: String,
    },
    /// The session restarted a crashed service actor (permission engine, approver, gate,
    /// executor, worktree manager) from its last good state.
    ActorRestarted {
        /// Which (`permission`, `approver`, `gate`, `executor`, `worktrees`).
        actor: String,
        /// How it died (its panic message, or `killed`).
        reason: String,
        /// Restarts within the current restart window, this one included.
        restarts: usize,
    },
    /// Something went wrong that did not stop the run (or that did: see `RunFinished`).
    Error {
        /// The message.
        message: String,
    },
}

/// Writes events through inside `publish`, before it returns: a caller that publishes an
/// event and then acts (the pipeline publishes `ToolCallStarted`, then runs the tool) knows
/// the recorder has it. The transcript is one.
pub trait Recorder: Send + Sync {
    /// Records one event; may return a notice for the user (published in turn, and
    /// recorded too).
    fn record(&self, event: &Event) -> Option<Event>;
    /// [`Recorder::record`] with the event's JSON, made once for every recorder that
    /// needs it (the transcript and the live journal write the same line).
    fn record_json(&self, event: &Event, _json: &EventJson<'_>) -> Option<Event> {
        self.record(event)
    }
    /// Records events published together, in order (a transcript writes them in one
    /// `write`); the notices come back in order.
    fn record_all(&self, events: &[EventJson<'_>]) -> Vec<Event> {
        events
            .iter()
            .filter_map(|json| self.record_json(json.event(), json))
            .collect()
    }
    /// The bus closed: last chance to write what is held back.
    fn close(&self);
}

/// Which events a subscriber wants (see [`EventBus::subscribe_where`]).
pub type Interest = Arc<dyn Fn(&Event) -> bool + Send + Sync>;

/// One subscriber: its channel and, if it is not interested in everything, its filter.
struct Subscriber {
    tx: mpsc::UnboundedSender<Event>,
    interest: Option<Interest>,
}

impl Subscriber {
    /// Sends `event` if the subscriber wants it; false once the receiver is gone.
    fn offer(&self, event: &Event) -> bool {
        match &self.interest {
            Some(wants) if !wants(event) => !self.tx.is_closed(),
            _ => self.tx.send(event.clone()).is_ok(),
        }
    }
}

/// A fan-out of events to any number of subscribers. Unbounded on purpose: a slow
/// subscriber must not lose events (`stream-json` and the TUI need them all), and
/// producers must never block on a subscriber. Recorders are called synchronously first.
/// A subscriber that wants only some events says so (`subscribe_where`): the others are
/// neither cloned for it nor wake its task, so a task monitor among 32 is woken by its own
/// agent's events only.
#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<Subscriber>>>,
    recorders: Arc<Mutex<Vec<Arc<dyn Recorder>>>>,
    /// The latest notices (see [`is_notice`]), for a subscriber that comes after a
    /// session's start: taken and given under the subscribers' lock.
    notices: Arc<Mutex<std::collections::VecDeque<Event>>>,
}

/// How many notices a bus keeps for late subscribers.
const KEPT_NOTICES: usize = 32;

/// Whether `event` tells the user something went wrong (a restarted actor, an error):
/// what a user-facing subscriber that starts late must still show.
fn is_notice(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::ActorRestarted { .. } | EventKind::Error { .. }
    )
}

impl EventBus {
    /// A bus with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new receiver of every event published from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Event> {
        self.add(None)
    }

    /// A new receiver of the events published from now on for which `wants` is true
    /// (called inside `publish`, under the bus's lock: keep it a quick look at the event).
    pub fn subscribe_where(
        &self,
        wants: impl Fn(&Event) -> bool + Send + Sync + 'static,
    ) -> mpsc::UnboundedReceiver<Event> {
        self.add(Some(Arc::new(wants)))
    }

    /// Like [`EventBus::subscribe_where`], for a subscriber that shows events to the
    /// user: it first gets the notices (restarted actors, errors) it wants that were
    /// published before it subscribed, such as an actor that crashed while the session
    /// started, before the printer was there. Nothing is lost or doubled in between.
    pub fn subscribe_where_told(
        &self,
        wants: impl Fn(&Event) -> bool + Send + Sync + 'static,
    ) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut subscribers = self.lock();
        for notice in lock(&self.notices).iter().filter(|e| wants(e)) {
            let _ = tx.send(notice.clone());
        }
        subscribers.push(Subscriber {
            tx,
            interest: Some(Arc::new(wants)),
        });
        rx
    }

    fn add(&self, interest: Option<Interest>) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().push(Subscriber { tx, interest });
        rx
    }

    /// Publishes the permission decision `d` on the call `call_id` of `agent`.
    pub fn decided(&self, agent: &str, call_id: &str, d: &crate::protocol::decision::Decision) {
        self.decided_all(agent, [(call_id, d)]);
    }

    /// Publishes the decisions on calls of `agent` made together (one transcript write).
    pub fn decided_all<'d>(
        &self,
        agent: &str,
        decisions: impl IntoIterator<Item = (&'d str, &'d crate::protocol::decision::Decision)>,
    ) {
        let kinds = decisions
            .into_iter()
            .map(|(call_id, d)| EventKind::PermissionDecided {
                call_id: call_id.to_string(),
                verdict: d.verdict,
                source: d.source,
                reason: d.reason.clone(),
            })
            .collect();
        self.publish_all(agent, kinds);
    }

    /// Calls `recorder` with every event published from now on, inside `publish`.
    pub fn add_recorder(&self, recorder: Arc<dyn Recorder>) {
        lock(&self.recorders).push(recorder);
    }

    /// Publishes an event: recorders write it through first, then subscribers get it
    /// (those that went away are dropped).
    pub fn publish(&self, agent: &str, kind: EventKind) {
        self.publish_all(agent, vec![kind]);
    }

    /// Publishes `kinds` of `agent` together, in order: as one event after another, but
    /// recorders get them at once (the transcript writes them with one system call).
    pub fn publish_all(&self, agent: &str, kinds: Vec<EventKind>) {
        let events: Vec<Event> = kinds
            .into_iter()
            .map(|kind| Event {
                agent: agent.to_string(),
                kind,
            })
            .collect();
        let recorded: Vec<EventJson<'_>> = events.iter().map(EventJson::new).collect();
        self.deliver(&events, recorded);
    }

    /// Hands `events` (with their JSON, `recorded`) to the recorders, then to the
    /// subscribers, then publishes the recorders' notices.
    fn deliver(&self, events: &[Event], recorded: Vec<EventJson<'_>>) {
        // Notices are published once the lock is released (they are recorded too).
        let notices: Vec<Event> = lock(&self.recorders)
            .iter()
            .flat_map(|r| r.record_all(&recorded))
            .collect();
        drop(recorded);
        let mut subscribers = self.lock();
        subscribers.retain(|s| events.iter().all(|event| s.offer(event)));
        if events.iter().any(is_notice) {
            let mut kept = lock(&self.notices);
            for notice in events.iter().filter(|e| is_notice(e)) {
                if kept.len() == KEPT_NOTICES {
                    kept.pop_front();
                }
                kept.push_back(notice.clone());
            }
        }
        drop(subscribers);
        for notice in notices {
            self.publish(&notice.agent, notice.kind);
        }
    }

    /// Publishes `message` as appended to `agent`'s conversation, and returns the length
    /// of its JSON as the transcript line holds it (the context accounting's measure),
    /// so that nobody serializes it a second time to count it. `None` when the event
    /// cannot be serialized.
    pub fn publish_message(&self, agent: &str, message: Message) -> Option<usize> {
        // The line is written here, so the message's place in it is known.
        let line = message_line::message_line(agent, &message);
        let measured = line.as_ref().map(|(_, start, end)| end - start);
        let events = [Event {
            agent: agent.to_string(),
            kind: EventKind::MessageAppended { message },
        }];
        let json = match line {
            Some((line, _, _)) => EventJson::made_as(&events[0], line),
            None => EventJson::new(&events[0]),
        };
        self.deliver(&events, vec![json]);
        measured
    }

    /// Drops every subscriber's sender: receivers end once they have drained what was
    /// already published. Recorders get their `close` and are dropped. Called when a
    /// session ends, since spawned tasks may still hold clones of the bus.
    pub fn close(&self) {
        self.lock().clear();
        let recorders = std::mem::take(&mut *lock(&self.recorders));
        for r in recorders {
            r.close();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        lock(&self.subscribers)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a publisher panicked mid-push; the Vec is intact.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta() -> EventKind {
        EventKind::TextDelta { text: "t".into() }
    }

    #[tokio::test]
    async fn a_filtered_subscriber_gets_only_what_it_wants_and_everyone_else_gets_all() {
        let bus = EventBus::new();
        let mut all = bus.subscribe();
        let mut mine = bus.subscribe_where(|e| e.agent == "a1");
        bus.publish("a1", delta());
        bus.publish("a2", delta());
        bus.publish("a1", delta());
        bus.close();
        let mut seen_all = Vec::new();
        while let Some(e) = all.recv().await {
            seen_all.push(e.agent);
        }
        let mut seen_mine = Vec::new();
        while let Some(e) = mine.recv().await {
            seen_mine.push(e.agent);
        }
        assert_eq!(seen_all, ["a1", "a2", "a1"]);
        assert_eq!(seen_mine, ["a1", "a1"]);
    }

    #[test]
    fn a_filtered_subscriber_that_went_away_is_dropped_even_if_nothing_matched() {
        let bus = EventBus::new();
        drop(bus.subscribe_where(|_| false));
        let _kept = bus.subscribe_where(|_| false);
        bus.publish("a1", delta());
        assert_eq!(bus.lock().len(), 1);
    }

    #[tokio::test]
    async fn a_late_user_facing_subscriber_is_told_what_went_wrong_before_it_came() {
        let bus = EventBus::new();
        let restarted = |n: usize| EventKind::ActorRestarted {
            actor: "gate".into(),
            reason: "killed".into(),
            restarts: n,
        };
        bus.publish("session", restarted(1));
        bus.publish("lead", delta());
        let mut late = bus.subscribe_where_told(|e| e.agent == "session");
        let mut plain = bus.subscribe();
        bus.publish("session", restarted(2));
        let got = |rx: &mut mpsc::UnboundedReceiver<Event>| {
            let mut restarts = Vec::new();
            while let Ok(e) = rx.try_recv() {
                if let EventKind::ActorRestarted { restarts: n, .. } = e.kind {
                    restarts.push(n);
                }
            }
            restarts
        };
        // The notice from before, then the one after, once each; a plain subscriber
        // gets only what came after it.
        assert_eq!(got(&mut late), [1, 2]);
        assert_eq!(got(&mut plain), [2]);
        // Only the latest notices are kept.
        for n in 3..3 + KEPT_NOTICES {
            bus.publish("session", restarted(n));
        }
        let mut last = bus.subscribe_where_told(|_| true);
        let kept = got(&mut last);
        assert_eq!(kept.len(), KEPT_NOTICES);
        assert_eq!(kept.last(), Some(&(2 + KEPT_NOTICES)));
    }

    #[test]
    fn a_published_message_is_measured_as_its_json_whoever_sent_it() {
        use crate::protocol::{ContentBlock, Role, ToolResult};
        let bus = EventBus::new();
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a \"b\""}"#.into(),
        };
        let messages = [
            Message::user_text("quotes \" and \\ and \n and é and \u{1}"),
            Message::assistant_text(""),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text: "x".into() },
                    ContentBlock::ToolUse(call),
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult::error(
                    "c1",
                    "failed",
                    "one\ntwo\t\"three\"",
                ))],
            },
        ];
        for agent in ["lead", "explore/t1", "odd \"name\" \\ é"] {
            for message in messages.clone() {
                let json = serde_json::to_vec(&message).unwrap().len();
                assert_eq!(bus.publish_message(agent, message), Some(json), "{agent}");
            }
        }
    }
}
