//! The session's recent history as the lines the control socket streams to watchers (the
//! web dashboard): every event, numbered and timed, and the approvals' comings and goings.
//! Each line is serialized and masked once, whatever the number of watchers; a new watcher
//! gets the lines kept so far and then each new one, with neither gap nor repeat (both
//! happen under one lock). The journal records inside `publish` (it is a `Recorder`), so a
//! line reaches the watchers without a hop through another task.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use super::redact::Secrets;
use crate::events::{Event, EventJson, EventKind, Recorder};

/// The most lines kept for watchers that connect later.
const KEEP_LINES: usize = 20_000;

/// The most bytes kept for them (older lines go first). Every kept byte is memory the
/// process touches for the first time, and first touches are what a long run's memory
/// costs (a page fault and a cleared page each 4 KiB): at 16 MiB they were a tenth of an
/// 8-reads-a-turn run's time. 4 MiB is the last few hundred turns of a busy agent; the
/// whole history stays in the transcript.
const KEEP_BYTES: usize = 4 << 20;

/// One watcher's lines.
pub(crate) type Lines = mpsc::UnboundedReceiver<Arc<str>>;

#[derive(Default)]
struct Inner {
    seq: u64,
    kept: VecDeque<Entry>,
    bytes: usize,
    watchers: Vec<mpsc::UnboundedSender<Arc<str>>>,
}

/// One kept line: its number, its time, and its body, the masked JSON object (shared
/// with the transcript's line of the same event when nothing was masked). The line a
/// watcher gets is made when it is sent: there is seldom anyone watching.
struct Entry {
    seq: u64,
    at: u64,
    body: Arc<String>,
}

impl Entry {
    fn line(&self) -> Arc<str> {
        let rest = self.body.strip_prefix('{').unwrap_or(&self.body);
        let mut line = String::with_capacity(rest.len() + 48);
        let _ = write!(line, "{{\"seq\":{},\"at\":{},", self.seq, self.at);
        line.push_str(rest);
        line.into()
    }
}

/// The history and its watchers.
pub(crate) struct Journal {
    inner: Mutex<Inner>,
    secrets: Secrets,
}

impl Journal {
    /// An empty journal masking `secrets`.
    pub(crate) fn new(secrets: Secrets) -> Arc<Journal> {
        Arc::new(Journal {
            inner: Mutex::new(Inner::default()),
            secrets,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Poisoned only if a push panicked; the queue is intact.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a line whose body is the JSON object `body` (`{"agent":…,"type":…,…}`).
    fn add(&self, body: Arc<String>) {
        let at = crate::tasks::now_ms();
        let body = if self.secrets.found_in(&body) {
            Arc::new(self.secrets.mask(body.to_string()))
        } else {
            body
        };
        let mut inner = self.lock();
        inner.seq += 1;
        let entry = Entry {
            seq: inner.seq,
            at,
            body,
        };
        if !inner.watchers.is_empty() {
            let line = entry.line();
            inner.watchers.retain(|w| w.send(line.clone()).is_ok());
        }
        inner.bytes += entry.body.len();
        inner.kept.push_back(entry);
        while inner.kept.len() > KEEP_LINES || inner.bytes > KEEP_BYTES {
            match inner.kept.pop_front() {
                Some(old) => inner.bytes -= old.body.len(),
                None => break,
            }
        }
    }

    /// Adds a line that is not an event (an approval asked or answered): `body` must be a
    /// JSON object with a `type`.
    pub(crate) fn note(&self, body: &Value) {
        self.add(Arc::new(body.to_string()));
    }

    /// The lines kept so far, and a receiver of every later one.
    pub(crate) fn watch(&self) -> (Vec<Arc<str>>, Lines) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = self.lock();
        inner.watchers.push(tx);
        (inner.kept.iter().map(Entry::line).collect(), rx)
    }

    /// `text` with the secrets masked, for the socket's other answers.
    pub(crate) fn mask(&self, text: String) -> String {
        self.secrets.mask(text)
    }

    /// Ends every watcher's stream (the session closes).
    pub(crate) fn close_watchers(&self) {
        self.lock().watchers.clear();
    }
}

impl Recorder for Journal {
    fn record(&self, event: &Event) -> Option<Event> {
        self.record_json(event, &EventJson::new(event))
    }

    fn record_json(&self, event: &Event, json: &EventJson<'_>) -> Option<Event> {
        // A compaction repeats the whole conversation: say that it happened, not what.
        if let EventKind::Compacted {
            trigger,
            tokens_before,
            tokens_after,
            ..
        } = &event.kind
        {
            self.note(&serde_json::json!({
                "agent": event.agent,
                "type": "compacted",
                "trigger": trigger,
                "tokens_before": tokens_before,
                "tokens_after": tokens_after,
            }));
            return None;
        }
        if let Some(body) = json.shared() {
            self.add(body);
        }
        None
    }

    fn close(&self) {
        self.close_watchers();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> Event {
        Event {
            agent: "lead".into(),
            kind: EventKind::TextDelta { text: text.into() },
        }
    }

    #[tokio::test]
    async fn a_late_watcher_gets_the_history_then_the_rest_numbered_and_masked() {
        let journal = Journal::new(Secrets::from_vars([(
            "OPENAI_API_KEY".to_string(),
            "sk-fake-000000000".to_string(),
        )]));
        journal.record(&delta("one"));
        journal.record(&delta("key sk-fake-000000000"));
        let (kept, mut rx) = journal.watch();
        journal.record(&delta("three"));
        journal.close_watchers();
        let mut lines: Vec<String> = kept.iter().map(|l| l.to_string()).collect();
        while let Some(l) = rx.recv().await {
            lines.push(l.to_string());
        }
        let parsed: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let seqs: Vec<u64> = parsed.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(parsed[0]["type"], "text_delta");
        assert_eq!(parsed[0]["agent"], "lead");
        assert!(parsed[0]["at"].as_u64().unwrap() > 0);
        assert_eq!(parsed[1]["text"], "key [redacted]");
        assert_eq!(parsed[2]["text"], "three");
    }
}
