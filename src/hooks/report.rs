//! What all the hooks of one event said together (`Report`), combined from each hook's
//! `Answer` by a pure function. Hooks of one event run in parallel, so nothing depends on
//! their order: any block blocks (reasons joined), the strongest permission decision wins
//! (deny > ask > allow), and `updatedInput` is used only when every hook that gave one
//! gave the same — two different rewrites block the call (fail closed).

use serde_json::Value;

use super::event::HookEvent;
use super::protocol::{Answer, LegacyDecision, PermissionDecision, stdout_is_context};

/// The combined answer of an event's hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Blocked, with the reason for the model (or, for `UserPromptSubmit`, the user):
    /// PreToolUse: the call is refused; PostToolUse: feedback on the result; Stop,
    /// SubagentStop, TeammateIdle: the agent goes on with this as its next instruction;
    /// UserPromptSubmit: the prompt is dropped; TaskCompleted: the item stays open.
    pub block: Option<String>,
    /// PreToolUse: an `allow` or `ask` (a `deny` is a `block`), with its reason.
    pub permission: Option<(PermissionDecision, String)>,
    /// PreToolUse: the arguments to use instead.
    pub updated_input: Option<Value>,
    /// Text for the model (`additionalContext`, and plain stdout where that is context).
    pub context: Vec<String>,
    /// `continue: false`: the agent stops after this step; the reason is for the user.
    pub stop: Option<String>,
    /// For the user: `systemMessage`s and hook errors (non-blocking exits, timeouts,
    /// invalid JSON), each naming its hook.
    pub notices: Vec<String>,
}

/// Whether the event acts on a block (elsewhere exit code 2 only shows stderr).
pub(crate) fn can_block(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::PostToolUse
            | HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::SubagentStop
            | HookEvent::TeammateIdle
            | HookEvent::TaskCompleted
    )
}

/// Combines the answers of `event`'s hooks, each labelled with its command.
pub(crate) fn combine(event: HookEvent, answers: Vec<(String, Answer)>) -> Report {
    let mut r = Report::default();
    let mut blocks: Vec<String> = Vec::new();
    let mut updates: Vec<Value> = Vec::new();
    for (label, answer) in answers {
        let output = match answer {
            Answer::Error(m) => {
                r.notices.push(format!("{event} hook `{label}` {m}"));
                continue;
            }
            Answer::Blocked(reason) if can_block(event) => {
                blocks.push(reason);
                continue;
            }
            Answer::Blocked(reason) => {
                r.notices.push(format!(
                    "{event} hook `{label}` exited with code 2: {reason}"
                ));
                continue;
            }
            Answer::Success { output, text } => {
                if let Some(t) = text
                    && stdout_is_context(event)
                {
                    r.context.push(t);
                }
                output
            }
        };
        if let Some(m) = output.system_message {
            r.notices.push(format!("{event} hook `{label}`: {m}"));
        }
        if output.continue_ == Some(false) {
            let why = output
                .stop_reason
                .unwrap_or_else(|| format!("hook `{label}` asked to stop"));
            r.stop = Some(match r.stop.take() {
                Some(prev) => format!("{prev}; {why}"),
                None => why,
            });
        }
        let reason = output.reason.clone();
        match output.decision {
            Some(LegacyDecision::Block) if can_block(event) => blocks.push(
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by hook `{label}`")),
            ),
            Some(LegacyDecision::Approve) if event == HookEvent::PreToolUse => prefer(
                &mut r.permission,
                PermissionDecision::Allow,
                reason.clone(),
                &label,
            ),
            _ => {}
        }
        let Some(specific) = output.hook_specific_output else {
            continue;
        };
        if let Some(name) = &specific.hook_event_name
            && name != event.as_str()
        {
            r.notices.push(format!(
                "{event} hook `{label}`: hookSpecificOutput is for `{name}`, not {event}; it was ignored"
            ));
            continue;
        }
        if let Some(c) = specific.additional_context {
            r.context.push(c);
        }
        if event != HookEvent::PreToolUse {
            continue;
        }
        match specific.permission_decision {
            Some(PermissionDecision::Deny) => blocks.push(
                specific
                    .permission_decision_reason
                    .unwrap_or_else(|| format!("denied by hook `{label}`")),
            ),
            Some(d) => prefer(
                &mut r.permission,
                d,
                specific.permission_decision_reason,
                &label,
            ),
            None => {}
        }
        if let Some(u) = specific.updated_input {
            updates.push(u);
        }
    }
    if let Some(first) = updates.first() {
        if updates.iter().all(|u| u == first) {
            r.updated_input = Some(first.clone());
        } else {
            blocks.push(
                "PreToolUse hooks returned different updatedInput values; the call was not run"
                    .into(),
            );
        }
    }
    if !blocks.is_empty() {
        r.block = Some(blocks.join("\n"));
    }
    r
}

/// Keeps the stronger of the current and a new decision.
fn prefer(
    current: &mut Option<(PermissionDecision, String)>,
    d: PermissionDecision,
    reason: Option<String>,
    label: &str,
) {
    if current.as_ref().is_some_and(|(c, _)| *c >= d) {
        return;
    }
    *current = Some((d, reason.unwrap_or_else(|| format!("hook `{label}`"))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::protocol::{HookOutput, SpecificOutput};
    use serde_json::json;

    fn ok(specific: SpecificOutput) -> Answer {
        Answer::Success {
            output: HookOutput {
                hook_specific_output: Some(specific),
                ..Default::default()
            },
            text: None,
        }
    }

    fn decide(d: PermissionDecision) -> Answer {
        ok(SpecificOutput {
            permission_decision: Some(d),
            ..Default::default()
        })
    }

    #[test]
    fn strongest_decision_wins_and_deny_blocks() {
        use PermissionDecision::*;
        let r = combine(
            HookEvent::PreToolUse,
            vec![("a".into(), decide(Allow)), ("b".into(), decide(Ask))],
        );
        assert_eq!(r.permission.unwrap().0, Ask);
        assert!(r.block.is_none());
        let r = combine(
            HookEvent::PreToolUse,
            vec![("a".into(), decide(Allow)), ("b".into(), decide(Deny))],
        );
        assert_eq!(r.block.unwrap(), "denied by hook `b`");
    }

    #[test]
    fn exit_two_blocks_only_where_the_event_can_block() {
        let r = combine(
            HookEvent::PreToolUse,
            vec![("g".into(), Answer::Blocked("no".into()))],
        );
        assert_eq!(r.block.as_deref(), Some("no"));
        let r = combine(
            HookEvent::SessionEnd,
            vec![("g".into(), Answer::Blocked("no".into()))],
        );
        assert!(r.block.is_none());
        assert!(r.notices[0].contains("code 2"));
    }

    #[test]
    fn disagreeing_rewrites_block() {
        let up = |p: &str| {
            ok(SpecificOutput {
                updated_input: Some(json!({"path": p})),
                ..Default::default()
            })
        };
        let r = combine(
            HookEvent::PreToolUse,
            vec![("a".into(), up("x")), ("b".into(), up("x"))],
        );
        assert_eq!(r.updated_input, Some(json!({"path": "x"})));
        let r = combine(
            HookEvent::PreToolUse,
            vec![("a".into(), up("x")), ("b".into(), up("y"))],
        );
        assert!(r.updated_input.is_none() && r.block.is_some());
    }

    #[test]
    fn specific_output_for_another_event_is_ignored() {
        let r = combine(
            HookEvent::PostToolUse,
            vec![(
                "a".into(),
                ok(SpecificOutput {
                    hook_event_name: Some("PreToolUse".into()),
                    additional_context: Some("x".into()),
                    ..Default::default()
                }),
            )],
        );
        assert!(r.context.is_empty());
        assert_eq!(r.notices.len(), 1);
    }
}
