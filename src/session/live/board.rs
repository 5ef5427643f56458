//! What each agent of a live session is doing now, kept from the session's events: thinking,
//! running a tool (which, since when), waiting for approval, idle, done or failed, with its
//! tokens and cost so far. `crew ps` reads it through the control socket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::events::{Event, EventBus, EventKind, Recorder};
use crate::protocol::decision::Verdict;

/// An agent's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// Waiting for (or reading) the model.
    Thinking,
    /// Running a tool.
    Running,
    /// A call waits for a human's answer.
    WaitingForApproval,
    /// Waiting for work (the lead between requests, a teammate between messages).
    Idle,
    /// Its run ended as asked.
    Done,
    /// Its run ended in failure (or was stopped).
    Failed,
}

impl Phase {
    /// The word `crew ps` shows.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::Thinking => "thinking",
            Phase::Running => "running",
            Phase::WaitingForApproval => "waiting for approval",
            Phase::Idle => "idle",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }
}

/// One agent as the board knows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AgentNow {
    /// The agent's id on the event bus (`lead`, `explore/t1a2b3c4`, `general-purpose/alice`).
    pub agent: String,
    /// What it is doing.
    pub phase: Phase,
    /// The tool it runs or waits to run.
    pub tool: Option<String>,
    /// Since when it is in this phase (Unix milliseconds).
    pub since_ms: u64,
    /// Tokens of all its model requests.
    pub tokens: u64,
    /// What its requests cost at list price (`None`: none had a known price).
    pub cost_usd: Option<f64>,
    /// Its task, from its run's start.
    pub task: Option<String>,
}

/// The session's agents, as their events say.
#[derive(Default)]
pub(crate) struct Board {
    agents: Mutex<HashMap<String, AgentNow>>,
    /// Teammates by name, with the status their team last announced, in joining order.
    members: Mutex<Vec<(String, String)>>,
}

impl Board {
    /// A board kept current from `events` until the bus closes. It is kept as the
    /// events are published (a recorder, not a subscriber): a change is a few fields under
    /// a lock, cheaper than waking a task for it on every event of every turn.
    pub(crate) fn follow(events: &EventBus) -> Arc<Board> {
        let board = Arc::new(Board::default());
        events.add_recorder(board.clone());
        board
    }

    /// Takes one event into account, as of `now_ms`.
    pub(crate) fn apply(&self, event: &Event, now_ms: u64) {
        if let EventKind::TeamMemberChanged { name, status, .. } = &event.kind {
            let mut members = self.members.lock().unwrap_or_else(|e| e.into_inner());
            match members.iter_mut().find(|(n, _)| n == name) {
                Some(member) => member.1 = status.clone(),
                None => members.push((name.clone(), status.clone())),
            }
            return;
        }
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let agent = agents
            .entry(event.agent.clone())
            .or_insert_with(|| AgentNow {
                agent: event.agent.clone(),
                phase: Phase::Thinking,
                tool: None,
                since_ms: now_ms,
                tokens: 0,
                cost_usd: None,
                task: None,
            });
        let set = |agent: &mut AgentNow, phase: Phase, tool: Option<String>| {
            if agent.phase != phase || agent.tool != tool {
                agent.since_ms = now_ms;
            }
            agent.phase = phase;
            agent.tool = tool;
        };
        match &event.kind {
            EventKind::RunStarted { task, .. } => {
                set(agent, Phase::Thinking, None);
                // The first request is what the agent is for; later runs are follow-ups.
                agent.task.get_or_insert_with(|| task.clone());
            }
            EventKind::ToolCallStarted { call } => {
                set(agent, Phase::Running, Some(call.name.clone()))
            }
            EventKind::PermissionDecided { verdict, .. } => {
                let tool = agent.tool.clone();
                match verdict {
                    Verdict::Ask => set(agent, Phase::WaitingForApproval, tool),
                    Verdict::Allow | Verdict::Deny => set(agent, Phase::Running, tool),
                }
            }
            EventKind::ToolCallFinished { .. } | EventKind::TurnFinished { .. } => {
                set(agent, Phase::Thinking, None)
            }
            EventKind::RequestUsage {
                cached,
                created,
                uncached,
                output,
                cost_usd,
                ..
            } => {
                agent.tokens += cached + created + uncached + output;
                if let Some(cost) = cost_usd {
                    agent.cost_usd = Some(agent.cost_usd.unwrap_or(0.0) + cost);
                }
            }
            EventKind::RunFinished { status, .. } => match (event.agent == "lead", &**status) {
                // The lead waits for the user's next request.
                (true, _) => set(agent, Phase::Idle, None),
                (false, "completed" | "max_turns") => set(agent, Phase::Done, None),
                (false, _) => set(agent, Phase::Failed, None),
            },
            _ => {}
        }
    }

    /// The team's members (name, announced status), in joining order.
    pub(crate) fn members(&self) -> Vec<(String, String)> {
        self.members
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The agent whose bus id is `id`, or ends with `/id` (a subagent's task id, a
    /// teammate's name).
    pub(crate) fn find(&self, id: &str) -> Option<AgentNow> {
        let agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        agents.get(id).cloned().or_else(|| {
            let tail = format!("/{id}");
            agents.values().find(|a| a.agent.ends_with(&tail)).cloned()
        })
    }
}

impl Recorder for Board {
    fn record(&self, event: &Event) -> Option<Event> {
        // Whole messages and streamed text say nothing a board needs.
        if !matches!(
            event.kind,
            EventKind::MessageAppended { .. }
                | EventKind::TextDelta { .. }
                | EventKind::Compacted { .. }
        ) {
            self.apply(event, crate::tasks::now_ms());
        }
        None
    }

    fn close(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;
    use crate::protocol::decision::Source;

    fn event(agent: &str, kind: EventKind) -> Event {
        Event {
            agent: agent.into(),
            kind,
        }
    }

    #[test]
    fn a_call_that_asks_shows_as_waiting_then_running_then_thinking() {
        let board = Board::default();
        let a = "explore/t1234567";
        board.apply(
            &event(
                a,
                EventKind::RunStarted {
                    mode: "do".into(),
                    task: "look".into(),
                },
            ),
            1,
        );
        let call = ToolCall {
            id: "c1".into(),
            name: "run_command".into(),
            arguments: "{}".into(),
        };
        board.apply(&event(a, EventKind::ToolCallStarted { call }), 5);
        let ask = EventKind::PermissionDecided {
            call_id: "c1".into(),
            verdict: Verdict::Ask,
            source: Source::Mode,
            reason: "ask".into(),
        };
        board.apply(&event(a, ask), 6);
        let now = board.find("t1234567").expect("found by its task id");
        assert_eq!(
            (now.phase, now.tool.as_deref(), now.since_ms),
            (Phase::WaitingForApproval, Some("run_command"), 6)
        );
        assert_eq!(now.task.as_deref(), Some("look"));
        let allow = EventKind::PermissionDecided {
            call_id: "c1".into(),
            verdict: Verdict::Allow,
            source: Source::User,
            reason: "yes".into(),
        };
        board.apply(&event(a, allow), 9);
        assert_eq!(board.find(a).map(|n| n.phase), Some(Phase::Running));
        let done = EventKind::ToolCallFinished {
            call_id: "c1".into(),
            name: "run_command".into(),
            is_error: false,
            error_code: None,
            summary: String::new(),
        };
        board.apply(&event(a, done), 12);
        assert_eq!(
            board.find(a).map(|n| (n.phase, n.tool)),
            Some((Phase::Thinking, None))
        );
    }

    #[test]
    fn usage_adds_up_and_a_run_end_says_how_it_ended() {
        let board = Board::default();
        for agent in ["lead", "plan/t7654321", "explore/t1111111"] {
            let usage = EventKind::RequestUsage {
                turn: 1,
                model: "m".into(),
                cached: 1,
                created: 2,
                uncached: 3,
                output: 4,
                cost_usd: Some(0.5),
            };
            board.apply(&event(agent, usage.clone()), 1);
            board.apply(&event(agent, usage), 2);
        }
        let end = |status: &str| EventKind::RunFinished {
            result: String::new(),
            status: status.into(),
            usage: Default::default(),
            turns: 1,
        };
        board.apply(&event("lead", end("completed")), 3);
        board.apply(&event("plan/t7654321", end("completed")), 3);
        board.apply(&event("explore/t1111111", end("failed")), 3);
        let lead = board.find("lead").unwrap();
        assert_eq!(
            (lead.phase, lead.tokens, lead.cost_usd),
            (Phase::Idle, 20, Some(1.0))
        );
        assert_eq!(board.find("t7654321").map(|n| n.phase), Some(Phase::Done));
        assert_eq!(board.find("t1111111").map(|n| n.phase), Some(Phase::Failed));
    }
}
