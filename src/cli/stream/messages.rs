//! Claude Code's message schema, built from crew's data: the `system` init message,
//! `assistant` and `user` messages with content blocks, `stream_event` text deltas, the
//! `result` message and control responses. Pure functions; what the real CLI writes for
//! the same session is the oracle (`tests/suite/claude_code_stream.rs`).

use serde_json::{Value, json};

use crate::agent::runner::{RunOutcome, RunStatus};
use crate::protocol::{ContentBlock, Message, Role, ToolCall, Usage};

/// The Claude Code version whose protocol crew speaks, reported as `claude_code_version`
/// in the init message. The SDKs read it only to warn about CLIs too old for them; crew's
/// own version goes beside it as `crew_version`.
pub(crate) const PROTOCOL_VERSION: &str = "2.1.0";

/// What every message of one session carries.
pub(crate) struct Stamp<'a> {
    /// The session's id.
    pub session_id: &'a str,
    /// The model's name (`message.model` of assistant messages).
    pub model: &'a str,
}

/// A fresh message uuid.
fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What the init message reports about the session.
pub(crate) struct Init<'a> {
    /// The lead's working directory.
    pub cwd: &'a std::path::Path,
    /// The lead's tools, by the names the model sees.
    pub tools: &'a [String],
    /// The permission mode's name (`plan` when the run starts in Plan Mode).
    pub permission_mode: &'a str,
    /// Slash commands and skills by name.
    pub slash_commands: Vec<String>,
    /// The MCP servers by name.
    pub mcp_servers: Vec<String>,
    /// The agent definitions by name.
    pub agents: Vec<String>,
    /// Which key the provider uses (`ANTHROPIC_API_KEY`, `none`, …).
    pub api_key_source: &'a str,
}

/// The `system` init message that opens a session's output.
pub(crate) fn init(stamp: &Stamp<'_>, init: &Init<'_>) -> Value {
    let servers: Vec<Value> = init
        .mcp_servers
        .iter()
        .map(|name| json!({"name": name, "status": "connected"}))
        .collect();
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": init.cwd,
        "session_id": stamp.session_id,
        "tools": init.tools,
        "mcp_servers": servers,
        "model": stamp.model,
        "permissionMode": init.permission_mode,
        "slash_commands": init.slash_commands,
        "agents": init.agents,
        "apiKeySource": init.api_key_source,
        "claude_code_version": PROTOCOL_VERSION,
        "crew_version": env!("CARGO_PKG_VERSION"),
        "output_style": "default",
        "uuid": uuid(),
    })
}

/// A tool call's arguments as the JSON object the model sent (a string that is not JSON
/// stays a string, so nothing the model wrote is lost).
pub(crate) fn input_of(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::String(call.arguments.clone()))
}

/// One content block in Claude Code's shape.
fn block(b: &ContentBlock) -> Value {
    match b {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Thinking {
            thinking,
            signature,
        } => json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": signature.clone().unwrap_or_default(),
        }),
        ContentBlock::ToolUse(call) => json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": input_of(call),
        }),
        ContentBlock::ToolResult(r) => json!({
            "type": "tool_result",
            "tool_use_id": r.tool_use_id,
            "content": r.content,
            "is_error": r.is_error,
        }),
    }
}

/// The message a complete conversation message becomes: an `assistant` message for the
/// model's, a `user` message for tool results. The user's own prompts and crew's notices
/// to the model (plain text on the user's side) are not echoed, as Claude Code does not
/// echo them.
pub(crate) fn conversation(stamp: &Stamp<'_>, message: &Message) -> Option<Value> {
    let content: Vec<Value> = message.content.iter().map(block).collect();
    match message.role {
        Role::Assistant => Some(json!({
            "type": "assistant",
            "message": {
                "id": format!("msg_{}", uuid().replace('-', "")),
                "type": "message",
                "role": "assistant",
                "model": stamp.model,
                "content": content,
                "stop_reason": null,
            },
            "parent_tool_use_id": null,
            "session_id": stamp.session_id,
            "uuid": uuid(),
        })),
        Role::User => {
            let has_results = message
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(_)));
            has_results.then(|| {
                json!({
                    "type": "user",
                    "message": {"role": "user", "content": content},
                    "parent_tool_use_id": null,
                    "session_id": stamp.session_id,
                    "uuid": uuid(),
                })
            })
        }
    }
}

/// A `stream_event` carrying streamed text (`--include-partial-messages`).
pub(crate) fn text_delta(stamp: &Stamp<'_>, text: &str) -> Value {
    json!({
        "type": "stream_event",
        "event": {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        },
        "parent_tool_use_id": null,
        "session_id": stamp.session_id,
        "uuid": uuid(),
    })
}

/// How a run ended, in Claude Code's words: the result's `subtype` and whether it is an
/// error.
pub(crate) fn subtype(status: &RunStatus) -> (&'static str, bool) {
    match status {
        RunStatus::Completed => ("success", false),
        RunStatus::MaxTurns => ("error_max_turns", true),
        RunStatus::BudgetExhausted => ("error_max_budget_usd", true),
        RunStatus::Cancelled | RunStatus::Failed => ("error_during_execution", true),
    }
}

/// What a run's `result` message says besides the outcome.
pub(crate) struct Timing {
    /// Wall time of the run, in milliseconds.
    pub duration_ms: u64,
    /// Of that, the time spent waiting for the model.
    pub duration_api_ms: u64,
}

/// A tool call the permission engine or a human refused, as `permission_denials` lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Denial {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The call's id.
    pub tool_use_id: String,
    /// The call's arguments.
    pub tool_input: Value,
}

/// The `result` message of a run, Claude Code's keys first (crew adds its own beside
/// them: `status`, `turns`, `tool_calls`, `cost_usd`, …).
pub(crate) fn result(
    stamp: &Stamp<'_>,
    outcome: &RunOutcome,
    timing: &Timing,
    denials: &[Denial],
) -> Value {
    let (subtype, is_error) = subtype(&outcome.status);
    let cost = crate::pricing::cost_usd(stamp.model, &outcome.usage);
    let denials: Vec<Value> = denials
        .iter()
        .map(|d| {
            json!({
                "tool_name": d.tool_name,
                "tool_use_id": d.tool_use_id,
                "tool_input": d.tool_input,
            })
        })
        .collect();
    let mut v = json!({
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": timing.duration_ms,
        "duration_api_ms": timing.duration_api_ms,
        "num_turns": outcome.turns,
        "result": outcome.result,
        "session_id": stamp.session_id,
        "total_cost_usd": cost.unwrap_or(0.0),
        "usage": usage(&outcome.usage),
        "permission_denials": denials,
        "uuid": uuid(),
        "status": outcome.status.as_str(),
        "turns": outcome.turns,
        "tool_calls": outcome.tool_calls,
        "cost_usd": cost,
    });
    if is_error && outcome.status != RunStatus::Failed {
        v["errors"] = json!([outcome.result]);
    }
    v
}

/// Token usage in the Anthropic API's shape.
fn usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": u.output_tokens,
    })
}

/// A `control_request` crew sends (a permission question for `can_use_tool`).
pub(crate) fn control_request(request_id: &str, request: Value) -> Value {
    json!({"type": "control_request", "request_id": request_id, "request": request})
}

/// The success answer to the control request `request_id`.
pub(crate) fn control_success(request_id: &str, response: Value) -> Value {
    json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    })
}

/// The error answer to the control request `request_id`.
pub(crate) fn control_error(request_id: &str, error: &str) -> Value {
    json!({
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolResult;

    const STAMP: Stamp<'static> = Stamp {
        session_id: "s1",
        model: "claude-sonnet-4-5",
    };

    #[test]
    fn an_assistant_message_carries_its_blocks_and_the_model() {
        let m = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "ok".into() },
                ContentBlock::ToolUse(ToolCall {
                    id: "toolu_1".into(),
                    name: "write_file".into(),
                    arguments: r#"{"path":"a.txt","content":"hi"}"#.into(),
                }),
            ],
        };
        let v = conversation(&STAMP, &m).unwrap();
        assert_eq!(v["type"], "assistant");
        assert_eq!(v["message"]["model"], "claude-sonnet-4-5");
        assert_eq!(
            v["message"]["content"][0],
            json!({"type": "text", "text": "ok"})
        );
        assert_eq!(v["message"]["content"][1]["input"]["path"], "a.txt");
        assert_eq!(v["session_id"], "s1");
        assert!(v["parent_tool_use_id"].is_null());
    }

    #[test]
    fn tool_results_become_a_user_message_and_prompts_are_not_echoed() {
        let results = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok("toolu_1", "done"))],
        };
        let v = conversation(&STAMP, &results).unwrap();
        assert_eq!(v["message"]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(v["message"]["content"][0]["is_error"], false);
        assert!(conversation(&STAMP, &Message::user_text("do it")).is_none());
    }

    #[test]
    fn the_result_has_claude_codes_keys_and_crews() {
        let outcome = RunOutcome {
            result: "Reached the turn limit".into(),
            status: RunStatus::MaxTurns,
            usage: Usage::default(),
            turns: 3,
            tool_calls: 2,
        };
        let timing = Timing {
            duration_ms: 12,
            duration_api_ms: 5,
        };
        let v = result(&STAMP, &outcome, &timing, &[]);
        for key in [
            "subtype",
            "is_error",
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "session_id",
            "total_cost_usd",
            "usage",
        ] {
            assert!(v.get(key).is_some(), "{key} missing: {v}");
        }
        assert_eq!(v["subtype"], "error_max_turns");
        assert_eq!(v["is_error"], true);
        assert_eq!(v["num_turns"], 3);
        assert_eq!(v["status"], "max_turns");
        assert_eq!(v["errors"][0], "Reached the turn limit");
    }
}
