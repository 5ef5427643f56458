//! What each agent of a session has spent: a subscriber adds up the `RequestUsage`
//! events per agent and keeps `<session>/costs.json` current, so `crew tasks list` and
//! `crew team show` can show each agent's cost from another process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::events::{EventBus, EventKind};
use crate::protocol::Usage;

/// One agent's spending.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentSpend {
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
pub struct Ledger {
    /// By agent id.
    pub agents: BTreeMap<String, AgentSpend>,
}

impl Ledger {
    /// `<session>/costs.json`.
    pub fn path(session_dir: &Path) -> PathBuf {
        session_dir.join("costs.json")
    }

    /// The session's ledger (empty when it has none or it cannot be read).
    pub fn load(session_dir: &Path) -> Self {
        std::fs::read(Self::path(session_dir))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Adds one request.
    pub fn add(&mut self, agent: &str, model: &str, usage: &Usage, cost: Option<f64>) {
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
    pub fn for_task(&self, task_id: &str) -> Option<&AgentSpend> {
        let suffix = format!("/{task_id}");
        self.agents
            .iter()
            .find(|(id, _)| id.ends_with(&suffix))
            .map(|(_, a)| a)
    }

    /// An agent's cost for display: `$0.0123`, or `-` when nothing priced was spent.
    pub fn cost_text(spend: Option<&AgentSpend>) -> String {
        match spend {
            Some(a) if a.requests > a.unpriced_requests => format!("${:.4}", a.cost_usd),
            _ => "-".to_string(),
        }
    }
}

/// Keeps `<session>/costs.json` up to date from `bus` until it closes (starting from
/// what a resumed session already spent).
pub fn record(bus: &EventBus, session_dir: PathBuf) -> JoinHandle<()> {
    // Woken by usage reports only, not by every streamed token and tool event.
    let mut rx = bus.subscribe_where(|e| matches!(e.kind, EventKind::RequestUsage { .. }));
    tokio::spawn(async move {
        let mut ledger = Ledger::load(&session_dir);
        while let Some(event) = rx.recv().await {
            let EventKind::RequestUsage {
                model,
                cached,
                created,
                uncached,
                output,
                cost_usd,
                ..
            } = event.kind
            else {
                continue;
            };
            let usage = Usage {
                input_tokens: uncached,
                output_tokens: output,
                cache_creation_input_tokens: created,
                cache_read_input_tokens: cached,
            };
            ledger.add(&event.agent, &model, &usage, cost_usd);
            let path = Ledger::path(&session_dir);
            let Ok(bytes) = serde_json::to_vec_pretty(&ledger) else {
                continue;
            };
            let written =
                tokio::task::spawn_blocking(move || crate::store::write_atomic(&path, &bytes))
                    .await;
            if let Ok(Err(e)) = written {
                tracing::warn!("cannot write {}: {e}", session_dir.display());
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn request_costs_add_up_per_agent_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let bus = EventBus::new();
        let task = record(&bus, dir.path().to_path_buf());
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
}
