//! What each agent of a session has spent: a subscriber adds up the `RequestUsage`
//! events per agent and keeps `<session>/costs.json` current (within a flush window), so
//! `crew tasks list` and `crew team show` can show each agent's cost from another process.
//! The transcript is the record: a resumed session adds its spending up again from it
//! ([`Ledger::replay`]), so `costs.json` is written behind and never on a turn's path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::events::{Event, EventBus, EventKind};
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
pub(crate) fn record(bus: &EventBus, session_dir: PathBuf, start: Ledger) -> JoinHandle<()> {
    // Woken by usage reports only, not by every streamed token and tool event.
    let mut rx = bus.subscribe_where(|e| matches!(e.kind, EventKind::RequestUsage { .. }));
    tokio::spawn(async move {
        let path = Ledger::path(&session_dir);
        // A killed run may have left the file behind what the transcript records.
        let mut changed = start != Ledger::load(&session_dir);
        let mut ledger = start;
        let mut throttle = Throttle::new(behind::window());
        if changed && throttle.changed(Instant::now()) {
            write(&path, &ledger, Flush::Derived).await;
        }
        loop {
            let due = throttle.due();
            let event = tokio::select! {
                event = rx.recv() => event,
                () = sleep_until(due), if due.is_some() => {
                    throttle.written(Instant::now());
                    write(&path, &ledger, Flush::Derived).await;
                    continue;
                }
            };
            let Some(event) = event else { break };
            if ledger.add_event(&event) {
                changed = true;
                if throttle.changed(Instant::now()) {
                    write(&path, &ledger, Flush::Derived).await;
                }
            }
        }
        if changed {
            write(&path, &ledger, Flush::Now).await;
        }
    })
}

/// Sleeps until `due` (never returns when there is none; the caller guards it).
async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due.into()).await,
        None => std::future::pending().await,
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
        bus.publish(
            "lead",
            EventKind::RequestUsage {
                turn: 1,
                model: "m".into(),
                cached: 0,
                created: 0,
                uncached: 1,
                output: 1,
                cost_usd: Some(1.0),
            },
        );
        bus.close();
        ledger.await.unwrap();
        let lead = &Ledger::load(&session).agents["lead"];
        assert_eq!((lead.requests, lead.cost_usd), (3, 1.5));
    }
}
