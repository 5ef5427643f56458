//! The open work an agent's summary must not forget, read from the session itself rather
//! than from the model's memory: its background tasks and subagents still pending or
//! running, and the team's work-list items not completed.

use std::time::Duration;

use ractor::rpc::CallResult;

use crate::agent::runner::RunPlace;
use crate::tasks::TaskStatus;
use crate::tasks::actor::TaskMsg;

/// How long the task manager may take to list its tasks.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// One line per open task of `agent` and per open work-list item of its team.
pub(crate) async fn lines(place: &RunPlace, agent: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(tasks) = &place.tasks
        && let Ok(CallResult::Success(records)) =
            tasks.call(TaskMsg::List, Some(LIST_TIMEOUT)).await
    {
        for r in records {
            if r.owner == agent && matches!(r.status, TaskStatus::Pending | TaskStatus::Running) {
                let what = r
                    .agent_type
                    .as_deref()
                    .map(|t| format!("subagent `{t}`"))
                    .or_else(|| r.command.as_deref().map(|c| format!("command `{c}`")))
                    .unwrap_or_else(|| "task".into());
                out.push(format!(
                    "background task {} ({what}) is {}: {}",
                    r.id,
                    r.status.as_str(),
                    r.description
                ));
            }
        }
    }
    let team = place.team.clone().or_else(|| {
        place.mail.as_ref().map(|m| {
            crate::team::TeamHandle::new(std::sync::Arc::new(m.team.clone()), m.me.clone())
        })
    });
    if let Some(team) = team
        && let Ok(items) = team.list_todos().await
    {
        for item in items.values().filter(|i| i.status.is_open()) {
            let owner = item
                .owner
                .as_ref()
                .map(|o| format!(", held by {o}"))
                .unwrap_or_default();
            out.push(format!(
                "work-list item {} [{}{owner}]: {}",
                item.id, item.status, item.subject
            ));
        }
    }
    out
}
