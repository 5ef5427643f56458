//! What the session tells the TUI: its events (streamed text, tool calls and their
//! decisions, results and usage, agents' runs, hooks, compactions), the end of the lead's
//! run, and background work or team mail that ends while the lead is idle.

use super::{App, FOLLOW_UP, verdict_str};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest, RunStatus};
use crate::events::{Event, EventKind};
use crate::tasks::TaskRecord;
use crate::tui::plan::PlanStage;
use crate::tui::transcript::Entry;

impl App {
    /// Applies a session event.
    pub(crate) fn on_event(&mut self, event: Event) {
        // Each request's usage, priced by the model it went to (`/cost`).
        self.spent.add_event(&event);
        let agent = event.agent.as_str();
        let lead = agent == "lead";
        match event.kind {
            EventKind::TextDelta { text } if lead => self.transcript.push_text(&text),
            EventKind::MessageAppended { message } => {
                self.approvals
                    .note_results(agent, &message, &self.transcript);
                self.transcript.tool_outputs(agent, &message);
                if lead {
                    self.memory_injected
                        .extend(crate::memory::render::injected_paths(std::slice::from_ref(
                            &message,
                        )))
                }
            }
            EventKind::ToolCallStarted { call } => self.transcript.tool_started(agent, &call),
            EventKind::PermissionDecided {
                call_id,
                verdict,
                source,
                ..
            } => self.transcript.tool_decided(
                agent,
                &call_id,
                verdict_str(verdict),
                &source.to_string(),
            ),
            EventKind::ToolCallFinished {
                call_id,
                is_error,
                error_code,
                summary,
                ..
            } => {
                // Refused after the engine allowed it (not in the mode's or the agent's
                // tools): "allow by mode" would say the opposite of what happened.
                if matches!(
                    error_code.as_deref(),
                    Some("tool_not_allowed" | "unknown_tool")
                ) {
                    self.transcript
                        .tool_decided(agent, &call_id, "refused", "the gate");
                }
                self.transcript
                    .tool_finished(agent, &call_id, is_error, &summary)
            }
            EventKind::TurnFinished { usage, .. } => {
                self.usage.add(&usage);
                if lead {
                    self.last_request = usage;
                }
            }
            EventKind::RunStarted { .. } if !lead => self.notice(format!("[{agent}] started")),
            EventKind::RunFinished { status, .. } if !lead => {
                // A teammate whose run ends waits for mail: idle, not done.
                let teammate = self.team.view.as_ref().is_some_and(|v| {
                    v.members
                        .iter()
                        .any(|m| m.agent_id.as_deref() == Some(agent))
                });
                match &*status {
                    "completed" if teammate => self.notice(format!("[{agent}] idle")),
                    _ => self.notice(format!("[{agent}] {status}")),
                }
            }
            EventKind::Retrying {
                attempt, reason, ..
            } => self.notice(format!("[{agent}] retrying (attempt {attempt}): {reason}")),
            EventKind::Error { message } => self
                .transcript
                .push(Entry::Error(format!("[{agent}] {message}"))),
            EventKind::Hook { message, .. } => self.notice(format!("[hook] {message}")),
            EventKind::AutoModeOff { reason } => self.on_auto_off(reason),
            EventKind::ActorRestarted { actor, reason, .. } => self.notice(format!(
                "[session] restarted the {actor} after it failed: {reason}"
            )),
            EventKind::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                usage,
                ..
            } => {
                self.usage.add(&usage);
                // A manual compaction is reported when it answers.
                if trigger == "auto" {
                    self.notice(format!(
                        "[{agent}] context compacted: about {tokens_before} → {tokens_after} tokens"
                    ));
                }
            }
            _ => {}
        }
    }

    /// The lead's run ended.
    pub(crate) fn on_run_finished(
        &mut self,
        result: Result<RunOutcome, crate::tui::jobs::JobError>,
    ) {
        self.running = None;
        let plan = match &result {
            Ok(o) if o.status == RunStatus::Completed => Some(o.result.clone()),
            _ => None,
        };
        match &result {
            Ok(o) if o.status == RunStatus::Completed => {}
            Ok(o) => match o.status {
                RunStatus::Cancelled => self.notice("Turn cancelled."),
                RunStatus::MaxTurns => self.notice("Stopped at the turn limit (--max-turns)."),
                _ => self
                    .transcript
                    .push(Entry::Error(format!("The run failed: {}", o.result))),
            },
            Err(e) => self.transcript.push(Entry::Error(e.to_string())),
        }
        if matches!(self.plan, PlanStage::Planning { .. }) {
            self.plan.planned(plan, self.permission);
            if matches!(self.plan, PlanStage::Review { .. }) {
                self.notice("Plan ready: 1 approve · 2 edit · 3 reject.");
            }
        }
        if let Some(next) = self.queued.pop_front() {
            self.submit(next);
        }
    }

    /// A background task of the lead ended while the lead is idle: the lead continues.
    pub(crate) fn on_task_completed(&mut self, rec: &TaskRecord) {
        if self.running.is_some() || self.quit {
            return;
        }
        self.notice(format!(
            "Background task {} ({}) {}; the lead continues.",
            rec.id,
            rec.description,
            rec.status.as_str()
        ));
        self.start_run(RunRequest {
            mode: AgentMode::Chat,
            task: FOLLOW_UP.into(),
            plan: None,
        });
    }

    /// Teammates wrote to the lead: an idle lead starts a run that reads their mail (as a
    /// headless lead does); a busy one reads it when its run ends.
    pub(crate) fn on_team_mail(&mut self) {
        if self.running.is_some() || self.quit {
            return;
        }
        self.notice("Your team wrote to the lead; the lead continues.".to_string());
        self.start_run(RunRequest {
            mode: AgentMode::Chat,
            task: crate::agent::follow_up::TEAM_NEWS.into(),
            plan: None,
        });
    }
}
