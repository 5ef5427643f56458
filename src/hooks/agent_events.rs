//! The agent loop's and the session's events: `UserPromptSubmit` (the user's task for the
//! lead, before the model sees it; not crew's own follow-up runs), `Stop`/`SubagentStop`/`TeammateIdle` (an agent is about to finish
//! or go idle; a block makes it go on with the reason), `SubagentStart`, `SessionStart`,
//! `SessionEnd`, `Notification` (an approval is needed) and `PreCompact` (before an
//! agent's conversation is compacted; as in Claude Code it cannot stop the compaction).

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::client::{Firing, HookClient};
use super::event::HookEvent;
use super::report::Report;
use crate::permission::PermissionMode;

/// Who an agent is, for the events its loop fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The lead: `Stop`, `UserPromptSubmit`.
    Lead,
    /// A subagent: `SubagentStart`, `SubagentStop`.
    Subagent,
    /// A teammate: `TeammateIdle`.
    Teammate,
}

impl Role {
    /// The event fired when an agent of this role is about to finish its run.
    pub fn stop_event(self) -> HookEvent {
        match self {
            Role::Lead => HookEvent::Stop,
            Role::Subagent => HookEvent::SubagentStop,
            Role::Teammate => HookEvent::TeammateIdle,
        }
    }
}

/// A subagent's or teammate's type from its id (`type/task`, `type/name`).
pub(crate) fn agent_type(agent: &str) -> &str {
    agent.split('/').next().unwrap_or(agent)
}

/// A teammate's name from its id (`type/name`).
pub(crate) fn member_name(agent: &str) -> &str {
    agent.rsplit_once('/').map_or(agent, |(_, name)| name)
}

/// Wraps hook context for the model.
pub(crate) fn context_text(event: HookEvent, context: &str) -> String {
    format!(
        "<hook event=\"{event}\" context>\n{}\n</hook>",
        crate::envelope::body(context)
    )
}

impl HookClient {
    /// The hooks of a run's start: `SubagentStart` for a subagent, `UserPromptSubmit`
    /// with the task for the lead when `prompt` is the user's (`None`: one of crew's own
    /// follow-up runs; a teammate's runs fire neither). Returns the context for the
    /// opening message, or why a `UserPromptSubmit` hook refused the prompt.
    // A String error: the hook's own reason for refusing, relayed verbatim.
    pub async fn run_start(
        &self,
        role: Role,
        agent: &str,
        cwd: &Path,
        mode: PermissionMode,
        prompt: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Vec<String>, String> {
        let (event, report) = match role {
            Role::Subagent => (
                HookEvent::SubagentStart,
                self.subagent_start(agent, cwd, cancel).await,
            ),
            Role::Lead => {
                let Some(task) = prompt else {
                    return Ok(Vec::new());
                };
                let report = self
                    .user_prompt_submit(agent, cwd, mode, task, cancel)
                    .await;
                if let Some(reason) = report.block.clone().or_else(|| report.stop.clone()) {
                    return Err(reason);
                }
                (HookEvent::UserPromptSubmit, report)
            }
            Role::Teammate => return Ok(Vec::new()),
        };
        Ok(report
            .context
            .iter()
            .map(|c| context_text(event, c))
            .collect())
    }

    /// Fires `UserPromptSubmit` for the lead's task.
    pub async fn user_prompt_submit(
        &self,
        agent: &str,
        cwd: &Path,
        mode: PermissionMode,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Report {
        let f = Firing {
            event: HookEvent::UserPromptSubmit,
            agent,
            cwd,
            subject: Vec::new(),
        };
        let mut input = self.input(&f);
        input.permission_mode = Some(mode.as_str().to_string());
        input.prompt = Some(prompt.to_string());
        self.fire(f, input, cancel).await
    }

    /// Fires the stop event of `role` (`Stop`, `SubagentStop`, `TeammateIdle`);
    /// `active`: the agent already goes on because of such a hook; `last`: its final text
    /// (`last_assistant_message`).
    #[allow(clippy::too_many_arguments)]
    pub async fn stop(
        &self,
        role: Role,
        agent: &str,
        cwd: &Path,
        mode: PermissionMode,
        active: bool,
        last: &str,
        cancel: &CancellationToken,
    ) -> Report {
        let event = role.stop_event();
        let subject = match role {
            Role::Subagent => vec![agent_type(agent).to_string()],
            _ => Vec::new(),
        };
        let f = Firing {
            event,
            agent,
            cwd,
            subject,
        };
        let mut input = self.input(&f);
        input.permission_mode = Some(mode.as_str().to_string());
        input.stop_hook_active = Some(active);
        input.last_assistant_message = Some(last.to_string());
        match role {
            Role::Subagent => input.agent_type = Some(agent_type(agent).to_string()),
            Role::Teammate => {
                input.agent_type = Some(agent_type(agent).to_string());
                input.teammate_name = Some(member_name(agent).to_string());
            }
            Role::Lead => {}
        }
        self.fire(f, input, cancel).await
    }

    /// Fires `SubagentStart`.
    pub async fn subagent_start(
        &self,
        agent: &str,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> Report {
        let kind = agent_type(agent).to_string();
        let f = Firing {
            event: HookEvent::SubagentStart,
            agent,
            cwd,
            subject: vec![kind.clone()],
        };
        let mut input = self.input(&f);
        input.agent_type = Some(kind);
        self.fire(f, input, cancel).await
    }

    /// Fires `SessionStart` (`source`: `startup`, `resume` or `clear`) or `SessionEnd`
    /// (`source`: the reason, `clear` or `other`).
    pub async fn session(&self, event: HookEvent, cwd: &Path, source: &str) -> Report {
        let f = Firing {
            event,
            agent: "lead",
            cwd,
            subject: vec![source.to_string()],
        };
        let mut input = self.input(&f);
        if event == HookEvent::SessionEnd {
            input.reason = Some(source.to_string());
        } else {
            input.source = Some(source.to_string());
        }
        self.fire(f, input, &CancellationToken::new()).await
    }

    /// Fires `PreCompact` (`trigger`: `auto` or `manual`, its matcher's subject) before
    /// `agent`'s conversation is compacted; `custom`: what the user asked of the summary.
    pub async fn pre_compact(
        &self,
        agent: &str,
        cwd: &Path,
        trigger: &str,
        custom: Option<&str>,
        cancel: &CancellationToken,
    ) -> Report {
        let f = Firing {
            event: HookEvent::PreCompact,
            agent,
            cwd,
            subject: vec![trigger.to_string()],
        };
        let mut input = self.input(&f);
        input.trigger = Some(trigger.to_string());
        input.custom_instructions = Some(custom.unwrap_or("").to_string());
        self.fire(f, input, cancel).await
    }

    /// Fires `Notification` (`kind`: e.g. `permission_prompt`) with `message`.
    pub async fn notification(&self, agent: &str, cwd: &Path, kind: &str, message: &str) -> Report {
        let f = Firing {
            event: HookEvent::Notification,
            agent,
            cwd,
            subject: vec![kind.to_string()],
        };
        let mut input = self.input(&f);
        input.message = Some(message.to_string());
        input.notification_type = Some(kind.to_string());
        self.fire(f, input, &CancellationToken::new()).await
    }
}
