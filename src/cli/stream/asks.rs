//! Approval questions as the SDK's `can_use_tool` callback sees them
//! (`--permission-prompt-tool stdio`): crew's question becomes a `can_use_tool` control
//! request, and the callback's answer becomes an approval answer. Pure functions.
//!
//! The callback may only allow or deny the call the model made. An allow that changes the
//! call's input is refused: the permission engine judged the input it saw, and running
//! another would let the callback widen what was decided (Claude Code runs the changed
//! input; crew does not, and says so in the refusal).

use serde_json::{Value, json};

use crate::approver::{ApprovalAnswer, ApprovalRequest};

/// The name Claude Code gives the tool `name` (`write_file` → `Write`, `run_command` →
/// `Bash`), so callbacks written for Claude Code recognise it; MCP tools and tools with
/// no Claude Code counterpart keep their own.
pub(crate) fn claude_code_name(name: &str) -> String {
    crate::tools::builtin_definition(name)
        .and_then(|d| d.permission.as_ref())
        .and_then(|p| p.own_rule_name())
        .map(|r| r.as_str().to_string())
        .unwrap_or_else(|| name.to_string())
}

/// The `can_use_tool` request for `question`.
pub(crate) fn can_use_tool(question: &ApprovalRequest) -> Value {
    let call = &question.call;
    let mut request = json!({
        "subtype": "can_use_tool",
        "tool_name": claude_code_name(&call.name),
        "display_name": call.name,
        "input": super::messages::input_of(call),
        "tool_use_id": call.id,
        "decision_reason": question.decision.reason,
        "description": question.decision.target.clone().unwrap_or_default(),
        "permission_suggestions": [],
    });
    if question.agent != "lead" {
        request["agent_id"] = json!(question.agent);
    }
    request
}

/// What the callback's answer means for the call: the approval answer, and whether the
/// callback asked to stop the run too (`interrupt`).
pub(crate) fn answer(
    asked: &ApprovalRequest,
    reply: Result<&Value, &str>,
) -> (ApprovalAnswer, bool) {
    let response = match reply {
        Ok(v) => v,
        Err(e) => {
            return (
                deny(format!("the SDK's can_use_tool callback failed: {e}")),
                false,
            );
        }
    };
    match response.get("behavior").and_then(Value::as_str) {
        Some("allow") => {
            let asked_input = super::messages::input_of(&asked.call);
            if let Some(updated) = response.get("updatedInput")
                && *updated != asked_input
            {
                return (
                    deny(
                        "the can_use_tool callback changed the call's input; crew runs only \
                         the call the model made, so it was not run (allow it unchanged, or \
                         deny it with a message saying what to do instead)"
                            .into(),
                    ),
                    false,
                );
            }
            let for_session = response
                .get("updatedPermissions")
                .and_then(Value::as_array)
                .is_some_and(|u| u.iter().any(|p| p["destination"] == "session"));
            let answer = if for_session {
                ApprovalAnswer::AllowSession
            } else {
                ApprovalAnswer::AllowOnce
            };
            (answer, false)
        }
        Some("deny") => {
            let message = response
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .unwrap_or("the can_use_tool callback denied this call");
            let interrupt = response.get("interrupt").and_then(Value::as_bool) == Some(true);
            (deny(message.into()), interrupt)
        }
        other => (
            deny(format!(
                "the can_use_tool callback answered behavior {other:?}; expected \"allow\" or \"deny\""
            )),
            false,
        ),
    }
}

fn deny(message: String) -> ApprovalAnswer {
    ApprovalAnswer::Deny {
        message: Some(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::PermissionMode;
    use crate::protocol::ToolCall;
    use crate::protocol::decision::{Decision, Source, Verdict};

    fn question() -> ApprovalRequest {
        ApprovalRequest {
            agent: "lead".into(),
            call: ToolCall {
                id: "toolu_1".into(),
                name: "write_file".into(),
                arguments: r#"{"path":"out.txt","content":"hi"}"#.into(),
            },
            decision: Decision::new(Verdict::Ask, Source::Mode, "writes need approval"),
            mode: PermissionMode::Default,
            teammate: None,
        }
    }

    #[test]
    fn the_question_names_the_tool_as_claude_code_does() {
        let q = can_use_tool(&question());
        assert_eq!(q["subtype"], "can_use_tool");
        assert_eq!(q["tool_name"], "Write");
        assert_eq!(q["display_name"], "write_file");
        assert_eq!(q["input"]["path"], "out.txt");
        assert_eq!(q["tool_use_id"], "toolu_1");
        assert_eq!(claude_code_name("run_command"), "Bash");
        assert_eq!(claude_code_name("mcp__fs__read"), "mcp__fs__read");
    }

    #[test]
    fn allow_deny_and_broken_answers() {
        let q = question();
        let allow =
            json!({"behavior": "allow", "updatedInput": {"path": "out.txt", "content": "hi"}});
        assert_eq!(answer(&q, Ok(&allow)), (ApprovalAnswer::AllowOnce, false));
        let session = json!({"behavior": "allow", "updatedPermissions": [{"type": "addRules", "destination": "session"}]});
        assert_eq!(answer(&q, Ok(&session)).0, ApprovalAnswer::AllowSession);
        let deny_it = json!({"behavior": "deny", "message": "not here", "interrupt": true});
        assert_eq!(
            answer(&q, Ok(&deny_it)),
            (
                ApprovalAnswer::Deny {
                    message: Some("not here".into())
                },
                true
            )
        );
        for broken in [json!({"behavior": "maybe"}), json!({})] {
            assert!(matches!(
                answer(&q, Ok(&broken)).0,
                ApprovalAnswer::Deny { .. }
            ));
        }
        assert!(
            matches!(answer(&q, Err("boom")).0, ApprovalAnswer::Deny { message: Some(m) } if m.contains("boom"))
        );
    }

    /// The attack: a callback "allows" the write but points it elsewhere. Nothing the
    /// engine did not judge may run.
    #[test]
    fn an_allow_that_changes_the_input_is_a_refusal() {
        let q = question();
        let swapped =
            json!({"behavior": "allow", "updatedInput": {"path": "/etc/passwd", "content": "x"}});
        let (a, _) = answer(&q, Ok(&swapped));
        assert!(
            matches!(a, ApprovalAnswer::Deny { message: Some(m) } if m.contains("changed the call's input"))
        );
    }
}
