//! The hook protocol, as Claude Code defines it: the JSON a hook reads on stdin
//! (`HookInput`, Claude Code's field names), the JSON it may print on stdout
//! (`HookOutput`), and how one hook's exit is read (`HookRun` → `Answer`): exit 0 is
//! success (stdout JSON obeyed, plain stdout is context for `UserPromptSubmit` and
//! `SessionStart`), exit 2 blocks with stderr as the reason, any other exit is a
//! non-blocking error that is shown. Stdout that looks like JSON but does not parse as
//! `HookOutput` (a misspelt decision, a wrong type) is reported and not obeyed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::event::HookEvent;

/// What a hook reads on stdin. Fields that do not apply to the event are left out.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HookInput {
    /// The session's id.
    pub session_id: String,
    /// The lead's transcript file.
    pub transcript_path: String,
    /// The calling agent's working directory.
    pub cwd: String,
    /// The event's name.
    pub hook_event_name: String,
    /// The caller's permission mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The calling agent's id (crewmaster's own field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The subagent's type (SubagentStart/SubagentStop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The tool's Claude Code name (`Bash`, `Write`, …) or ours where it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The tool's name in crewmaster (`run_command`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crew_tool_name: Option<String>,
    /// The call's arguments (file tools also carry `file_path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    /// The tool's result (PostToolUse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// The call's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The user's prompt (UserPromptSubmit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Whether the agent already goes on because of a Stop hook (Stop, SubagentStop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    /// The agent's final text before it stops (Stop, SubagentStop, TeammateIdle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
    /// `startup`/`resume`/`clear` (SessionStart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `manual` or `auto` (PreCompact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// What the user asked of a manual compaction's summary (PreCompact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
    /// Why the session ended (SessionEnd).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The notification's text (Notification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The notification's type, e.g. `permission_prompt` (Notification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<String>,
    /// The teammate's name (TeammateIdle, TaskCompleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teammate_name: Option<String>,
    /// The session's team, when it has one (every event; Claude Code sends it with
    /// TeammateIdle and TaskCompleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_name: Option<String>,
    /// The work-list item's id (TaskCompleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The work-list item's subject (TaskCompleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_subject: Option<String>,
}

/// A permission decision of a PreToolUse hook, ordered by strength.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Skip the ask (never a deny rule, a hard check, the gate or Plan Mode).
    Allow,
    /// Ask the user even where the engine would allow.
    Ask,
    /// Refuse the call; final.
    Deny,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpecificOutput {
    /// Which event the output is meant for (ignored when it names another event).
    pub hook_event_name: Option<String>,
    /// PreToolUse: allow, deny or ask.
    pub permission_decision: Option<PermissionDecision>,
    /// Why (to the model for deny, to the user for allow/ask).
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: replacement arguments.
    pub updated_input: Option<Value>,
    /// Text added for the model.
    pub additional_context: Option<String>,
}

/// The old `decision` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LegacyDecision {
    /// Block (PreToolUse: deny; others: feed `reason` back).
    Block,
    /// PreToolUse: allow.
    Approve,
}

/// What a hook may print on stdout (every field optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookOutput {
    /// `false`: the agent stops after this step; `stopReason` is shown to the user.
    #[serde(rename = "continue")]
    pub continue_: Option<bool>,
    /// Shown to the user when `continue` is false.
    pub stop_reason: Option<String>,
    /// Keep the hook's stdout out of the display. Accepted for Claude Code's format;
    /// crew never displays a hook's raw stdout, so there is nothing for it to hide.
    #[allow(dead_code)]
    pub suppress_output: Option<bool>,
    /// A warning shown to the user.
    pub system_message: Option<String>,
    /// `block` (with `reason`), or the old `approve`.
    pub decision: Option<LegacyDecision>,
    /// Why it blocks.
    pub reason: Option<String>,
    /// Event-specific fields.
    pub hook_specific_output: Option<SpecificOutput>,
}

/// How one hook process ended.
#[derive(Debug, Clone)]
pub(crate) enum HookRun {
    /// It exited with this code.
    Exited {
        /// The exit code.
        code: i32,
        /// Its stdout.
        stdout: String,
        /// Its stderr.
        stderr: String,
    },
    /// It could not be run, was killed by a signal, or ran past its timeout (its whole
    /// process group was killed).
    Failed(String),
}

/// What one hook said.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// Exit 0: parsed output (empty when stdout held none) and plain stdout text.
    Success {
        /// The JSON output, if stdout held some.
        output: HookOutput,
        /// Stdout when it was not JSON.
        text: Option<String>,
    },
    /// Exit 2: blocked, with stderr as the reason.
    Blocked(String),
    /// A non-blocking error to show.
    Error(String),
}

/// Reads one hook's run.
pub(crate) fn answer(run: HookRun) -> Answer {
    let (code, stdout, stderr) = match run {
        HookRun::Failed(m) => return Answer::Error(m),
        HookRun::Exited {
            code,
            stdout,
            stderr,
        } => (code, stdout, stderr),
    };
    match code {
        0 => {
            let trimmed = stdout.trim();
            if trimmed.starts_with('{') {
                match serde_json::from_str::<HookOutput>(trimmed) {
                    Ok(output) => Answer::Success { output, text: None },
                    Err(e) => Answer::Error(format!(
                        "printed JSON that is not valid hook output ({e}); it was ignored"
                    )),
                }
            } else {
                Answer::Success {
                    output: HookOutput::default(),
                    text: (!trimmed.is_empty()).then(|| trimmed.to_string()),
                }
            }
        }
        2 => {
            let reason = stderr.trim();
            Answer::Blocked(if reason.is_empty() {
                "blocked by a hook (exit code 2, no message on stderr)".into()
            } else {
                reason.to_string()
            })
        }
        other => {
            let msg = stderr.trim();
            Answer::Error(format!(
                "exited with code {other}{}",
                if msg.is_empty() {
                    String::new()
                } else {
                    format!(": {msg}")
                }
            ))
        }
    }
}

/// Whether plain stdout of a successful hook is context for the model at this event.
pub(crate) fn stdout_is_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun::Exited {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes() {
        assert!(
            matches!(answer(exited(2, "", "no deploys\n")), Answer::Blocked(r) if r == "no deploys")
        );
        assert!(
            matches!(answer(exited(1, "", "oops")), Answer::Error(m) if m.contains("code 1: oops"))
        );
        assert!(
            matches!(answer(exited(0, "hello", "")), Answer::Success { text: Some(t), .. } if t == "hello")
        );
    }

    #[test]
    fn json_output_is_parsed_and_bad_json_is_reported() {
        let ok = answer(exited(
            0,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"path":"x"}},"continue":true}"#,
            "",
        ));
        let Answer::Success { output, .. } = ok else {
            panic!("{ok:?}")
        };
        let s = output.hook_specific_output.unwrap();
        assert_eq!(s.permission_decision, Some(PermissionDecision::Allow));
        assert_eq!(s.updated_input.unwrap()["path"], "x");
        for bad in [
            r#"{"hookSpecificOutput":{"permissionDecision":"yes"}}"#,
            r#"{"continue": "no"}"#,
            "{not json",
        ] {
            assert!(
                matches!(answer(exited(0, bad, "")), Answer::Error(_)),
                "{bad}"
            );
        }
    }

    #[test]
    fn input_uses_claude_code_field_names() {
        let input = HookInput {
            session_id: "s".into(),
            hook_event_name: "PreToolUse".into(),
            tool_name: Some("Bash".into()),
            tool_input: Some(serde_json::json!({"command": "ls"})),
            ..Default::default()
        };
        let v = serde_json::to_value(&input).unwrap();
        assert_eq!(v["tool_name"], "Bash");
        assert_eq!(v["tool_input"]["command"], "ls");
        assert!(v.get("prompt").is_none());
    }
}
