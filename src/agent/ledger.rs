//! What each agent of a session has spent: a subscriber adds up the `RequestUsage`
//! events per agent and keeps `<session>/costs.json` current (within a flush window), so
//! `crew tasks list` and `crew team show` can show each agent's cost from another process.
//! The transcript is the record: a resumed session adds its spending up again from it
//! ([`Ledger::replay`]), so `costs.json` is written behind and never on a turn's path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::events::{Event, EventBus, EventKind, Recorder};
use crate::protocol::Usage;
use crate::store::behind::{self, Flush, Throttle};

/// One agent's spending.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentSpend {
    /// The model of its latest request.
    pub model: String,
    /// Summed usage.
    pub usage: Usage,
    /// Summed cost of its priced requests, in US dollars.
    pub cost_usd: f64,
    /// Requests whose model had no price (their cost is not in `cost_usd`).
    #[serde(default)]
    pub unpriced_requests: u32,
    /// Model requests made.
    pub requests: u32,
}

/// Spending per agent id (`lead`, `type/task-id` for subagents, `type/name` for
/// teammates).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ledger {
    /// By agent id.
    pub agents: BTreeMap<String, AgentSpend>,
}

impl Ledger {
    /// `<session>/costs.json`.
    pub(crate) fn path(session_dir: &Path) -> PathBuf {
        session_dir.join("costs.json")
    }

    /// The session's ledger (empty when it has none or it cannot be read).
    pub(crate) fn load(session_dir: &Path) -> Self {
        std::fs::read(Self::path(session_dir))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// What a session's transcripts record it spent: every `request_usage` line of the
    /// lead's transcript and of each agent's (`agents_dir/*.jsonl`) added up. This is the
    /// ledger's source of truth; `costs.json` is a copy that may lag behind it. Torn or
    /// unreadable lines are skipped.
    pub(crate) fn replay(transcript: &Path, agents_dir: &Path) -> Self {
        let mut ledger = Ledger::default();
        let agents = std::fs::read_dir(agents_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"));
        for file in std::iter::once(transcript.to_path_buf()).chain(agents) {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            // Only usage lines are parsed: a transcript is mostly messages.
            for line in text
                .lines()
                .filter(|l| l.contains(r#""type":"request_usage""#))
            {
                if let Ok(event) = serde_json::from_str::<Event>(line) {
                    ledger.add_event(&event);
                }
            }
        }
        ledger
    }

    /// Adds the request a `request_usage` event reports; `false` for any other event.
    pub(crate) fn add_event(&mut self, event: &Event) -> bool {
        let EventKind::RequestUsage {
            model,
            cached,
            created,
            uncached,
            output,
            cost_usd,
            ..
        } = &event.kind
        else {
            return false;
        };
        let usage = Usage {
            input_tokens: *uncached,
            output_tokens: *output,
            cache_creation_input_tokens: *created,
            cache_read_input_tokens: *cached,
        };
        self.add(&event.agent, model, &usage, *cost_usd);
        true
    }

    /// Adds one request.
    pub(crate) fn add(&mut self, agent: &str, model: &str, usage: &Usage, cost: Option<f64>) {
        let a = self.agents.entry(agent.to_string()).or_default();
        a.model = model.to_string();
        a.usage.add(usage);
        a.requests += 1;
        match cost {
            Some(c) => a.cost_usd += c,
            None => a.unpriced_requests += 1,
        }
    }

    /// The spending of the subagent that ran task `task_id` (its id ends `/<task_id>`).
    pub(crate) fn for_task(&self, task_id: &str) -> Option<&AgentSpend> {
        let suffix = format!("/{task_id}");
        self.agents
            .iter()
            .find(|(id, _)| id.ends_with(&suffix))
            .map(|(_, a)| a)
    }

    /// An agent's cost for display: `$0.0123`, or `-` when nothing priced was spent.
    pub(crate) fn cost_text(spend: Option<&AgentSpend>) -> String {
        match spend {
            Some(a) if a.requests > a.unpriced_requests => format!("${:.4}", a.cost_usd),
            _ => "-".to_string(),
        }
    }
}

/// Keeps `<session>/costs.json` up to date from `bus` until it closes, starting from
/// `start` (what a resumed session already spent: [`Ledger::replay`]).
///
/// The file is derived: it is rewritten at most once per flush window (the first change
/// at once) without `fsync`, and once more, synced, when the bus closes; a write lost to a
/// crash or a power loss costs nothing, as resuming computes it again from the transcript.
///
/// The sums are kept by a recorder, inside `publish`: a usage report adds to them there
/// and wakes the writer only when no write is waiting already, so a busy run wakes it
/// about once a window rather than once a turn (waking a task on the other worker thread
/// costs more than the addition).
pub(crate) fn record(bus: &EventBus, session_dir: PathBuf, start: Ledger) -> JoinHandle<()> {
    record_every(bus, session_dir, start, behind::window())
}

/// [`record`], writing at most once per `window`.
fn record_every(
    bus: &EventBus,
    session_dir: PathBuf,
    start: Ledger,
    window: std::time::Duration,
) -> JoinHandle<()> {
    let kept = Arc::new(Kept {
        sums: Mutex::new(Sums {
            ledger: start,
            waiting: false,
            closed: false,
        }),
        wake: Notify::new(),
    });
    bus.add_recorder(Arc::new(Adder(kept.clone())));
    tokio::spawn(write_behind(kept, session_dir, window))
}

/// The sums, shared by the recorder that adds to them and the task that writes them.
struct Kept {
    sums: Mutex<Sums>,
    /// Woken when a change starts waiting to be written, and when the bus closes.
    wake: Notify,
}

struct Sums {
    ledger: Ledger,
    /// A change is not written yet, and the writer has been woken for it.
    waiting: bool,
    /// The bus closed: the writer writes a last time and ends.
    closed: bool,
}

impl Kept {
    fn sums(&self) -> std::sync::MutexGuard<'_, Sums> {
        // A poisoned lock only means a panic mid-addition; the sums stay usable.
        self.sums.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Adds each usage report to the sums as it is published.
struct Adder(Arc<Kept>);

impl Recorder for Adder {
    fn record(&self, event: &Event) -> Option<Event> {
        let mut sums = self.0.sums();
        if sums.ledger.add_event(event) && !std::mem::replace(&mut sums.waiting, true) {
            self.0.wake.notify_one();
        }
        None
    }

    fn close(&self) {
        self.0.sums().closed = true;
        self.0.wake.notify_one();
    }
}

/// A bus dropped without being closed ends the writer too.
impl Drop for Adder {
    fn drop(&mut self) {
        self.close();
    }
}

/// Writes the sums when they change, at most once a flush window (the first change at
/// once), and a last time, synced, when the bus closes.
async fn write_behind(kept: Arc<Kept>, session_dir: PathBuf, window: std::time::Duration) {
    let path = Ledger::path(&session_dir);
    let mut throttle = Throttle::new(window);
    // A killed run may have left the file behind what the transcript records.
    let start = kept.sums().ledger.clone();
    let mut changed = start != Ledger::load(&session_dir);
    if changed {
        throttle.changed(Instant::now());
        write(&path, &start, Flush::Derived).await;
    }
    loop {
        kept.wake.notified().await;
        // Within the last write's window, wait it out: changes meanwhile join this write.
        if !kept.sums().closed
            && !throttle.changed(Instant::now())
            && let Some(due) = throttle.due()
        {
            tokio::select! {
                () = tokio::time::sleep_until(due.into()) => {}
                // Only the bus's closing wakes a writer that is already waiting.
                () = kept.wake.notified() => {}
            }
            throttle.written(Instant::now());
        }
        let (ledger, closed) = {
            let mut sums = kept.sums();
            changed |= std::mem::replace(&mut sums.waiting, false);
            (sums.ledger.clone(), sums.closed)
        };
        if closed {
            if changed {
                write(&path, &ledger, Flush::Now).await;
            }
            return;
        }
        write(&path, &ledger, Flush::Derived).await;
    }
}

/// Writes the ledger to `path` off the async runtime; a failure is logged.
async fn write(path: &Path, ledger: &Ledger, flush: Flush) {
    let Ok(bytes) = serde_json::to_vec_pretty(ledger) else {
        return;
    };
    let target = path.to_path_buf();
    let written =
        tokio::task::spawn_blocking(move || behind::write_replace(&target, &bytes, flush)).await;
    if let Ok(Err(e)) = written {
        tracing::warn!("cannot write {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn request_costs_add_up_per_agent_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let bus = EventBus::new();
        let task = record(&bus, dir.path().to_path_buf(), Ledger::default());
        for (agent, cost) in [
            ("lead", Some(0.5)),
            ("explore/t1", Some(0.25)),
            ("lead", None),
        ] {
            bus.publish(
                agent,
                EventKind::RequestUsage {
                    turn: 1,
                    model: "m".into(),
                    cached: 10,
                    created: 0,
                    uncached: 1,
                    output: 2,
                    cost_usd: cost,
                },
            );
        }
        bus.close();
        task.await.unwrap();
        let ledger = Ledger::load(dir.path());
        let lead = &ledger.agents["lead"];
        assert_eq!((lead.requests, lead.unpriced_requests), (2, 1));
        assert_eq!(lead.usage.cache_read_input_tokens, 20);
        assert_eq!(Ledger::cost_text(Some(lead)), "$0.5000");
        assert_eq!(Ledger::cost_text(ledger.for_task("t1")), "$0.2500");
        assert_eq!(Ledger::cost_text(ledger.for_task("t2")), "-");
    }

    #[tokio::test]
    async fn replaying_the_transcripts_gives_what_the_ledger_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let (main, agents) = (dir.path().join("s.jsonl"), dir.path().join("s/agents"));
        let session = dir.path().join("s");
        let bus = EventBus::new();
        let transcript = crate::transcript::record(&bus, main.clone(), agents.clone());
        let ledger = record(&bus, session.clone(), Ledger::default());
        for (agent, cost) in [
            ("lead", Some(0.5)),
            ("explore/t1", Some(0.25)),
            ("lead", None),
        ] {
            bus.publish(
                agent,
                EventKind::RequestUsage {
                    turn: 1,
                    model: "m".into(),
                    cached: 3,
                    created: 1,
                    uncached: 1,
                    output: 2,
                    cost_usd: cost,
                },
            );
        }
        bus.close();
        transcript.await.unwrap();
        ledger.await.unwrap();
        let replayed = Ledger::replay(&main, &agents);
        assert_eq!(replayed.agents["lead"].requests, 2);
        assert_eq!(replayed, Ledger::load(&session));
        // A resumed session starts from the replay, whatever costs.json says.
        std::fs::write(Ledger::path(&session), "{}").unwrap();
        let bus = EventBus::new();
        let ledger = record(&bus, session.clone(), Ledger::replay(&main, &agents));
        usage(&bus, 1.0);
        bus.close();
        ledger.await.unwrap();
        let lead = &Ledger::load(&session).agents["lead"];
        assert_eq!((lead.requests, lead.cost_usd), (3, 1.5));
    }

    fn usage(bus: &EventBus, cost: f64) {
        bus.publish(
            "lead",
            EventKind::RequestUsage {
                turn: 1,
                model: "m".into(),
                cached: 0,
                created: 0,
                uncached: 1,
                output: 1,
                cost_usd: Some(cost),
            },
        );
    }

    /// Waits (at most 10 s) until costs.json records `n` requests of the lead.
    async fn written(session: &Path, n: u32) {
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while Ledger::load(session).agents.get("lead").map(|a| a.requests) != Some(n) {
            assert!(
                Instant::now() < deadline,
                "costs.json never showed {n} requests"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_burst_of_reports_is_written_once_at_once_then_once_after_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let bus = EventBus::new();
        let window = std::time::Duration::from_millis(1500);
        let task = record_every(&bus, dir.path().to_path_buf(), Ledger::default(), window);
        let started = Instant::now();
        usage(&bus, 1.0);
        written(dir.path(), 1).await;
        for _ in 0..20 {
            usage(&bus, 1.0);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Inside the window the file keeps the first write; the sums go on in memory.
        if started.elapsed() < window {
            assert_eq!(Ledger::load(dir.path()).agents["lead"].requests, 1);
        }
        written(dir.path(), 21).await;
        assert!(
            started.elapsed() >= window,
            "written before the window ended"
        );
        usage(&bus, 0.5);
        bus.close();
        task.await.unwrap();
        let lead = &Ledger::load(dir.path()).agents["lead"];
        assert_eq!((lead.requests, lead.cost_usd), (22, 21.5));
    }

    #[tokio::test]
    async fn a_bus_dropped_unclosed_still_gets_its_last_write() {
        let dir = tempfile::tempdir().unwrap();
        let bus = EventBus::new();
        let window = std::time::Duration::from_secs(60);
        let task = record_every(&bus, dir.path().to_path_buf(), Ledger::default(), window);
        usage(&bus, 1.0);
        written(dir.path(), 1).await;
        usage(&bus, 1.0);
        drop(bus);
        tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("the writer ends with the bus")
            .unwrap();
        assert_eq!(Ledger::load(dir.path()).agents["lead"].requests, 2);
    }
}
