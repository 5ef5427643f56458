//! The hook events, named as in Claude Code's settings (`PreToolUse`, `Stop`, …), and what
//! each event's matcher is matched against.

use serde::{Deserialize, Serialize};

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool call, ahead of the permission engine: may deny, allow (skipping an
    /// ask), ask, or rewrite the arguments.
    PreToolUse,
    /// After a tool ran: may add context to the result or feed back a reason.
    PostToolUse,
    /// When the user submits a prompt, before the model sees it: may block it or add
    /// context.
    UserPromptSubmit,
    /// When the lead is about to finish its answer: may make it go on.
    Stop,
    /// When a subagent starts.
    SubagentStart,
    /// When a subagent is about to finish: may make it go on.
    SubagentStop,
    /// When a session starts (or resumes): may add context.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// Before an agent's conversation is compacted (matcher: `auto` or `manual`).
    PreCompact,
    /// When crewmaster needs the user's attention (an approval is needed).
    Notification,
    /// When a teammate is about to go idle: may keep it working.
    TeammateIdle,
    /// When a work-list item is being marked completed: may refuse the completion.
    TaskCompleted,
}

/// What an event's matcher is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOn {
    /// The tool's name (ours and Claude Code's).
    Tool,
    /// The event's source or kind (`startup`/`resume`, `manual`/`auto`, the notification
    /// type, the end reason).
    Kind,
    /// The subagent's type.
    AgentType,
    /// Nothing: every hook of the event runs (a matcher is ignored).
    Nothing,
}

impl HookEvent {
    /// Every event, in settings order.
    pub const ALL: [HookEvent; 12] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
        HookEvent::Notification,
        HookEvent::TeammateIdle,
        HookEvent::TaskCompleted,
    ];

    /// The name as written in settings and sent as `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
            HookEvent::TeammateIdle => "TeammateIdle",
            HookEvent::TaskCompleted => "TaskCompleted",
        }
    }

    /// The event called `name` in settings.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// What this event's matcher applies to.
    pub fn match_on(self) -> MatchOn {
        match self {
            HookEvent::PreToolUse | HookEvent::PostToolUse => MatchOn::Tool,
            HookEvent::SessionStart
            | HookEvent::SessionEnd
            | HookEvent::PreCompact
            | HookEvent::Notification => MatchOn::Kind,
            HookEvent::SubagentStart | HookEvent::SubagentStop => MatchOn::AgentType,
            HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::TeammateIdle
            | HookEvent::TaskCompleted => MatchOn::Nothing,
        }
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in HookEvent::ALL {
            assert_eq!(HookEvent::parse(e.as_str()), Some(e));
        }
        assert_eq!(HookEvent::parse("preToolUse"), None);
    }
}
