//! The lines `--input-format stream-json` reads on standard input, as the Claude Agent
//! SDKs write them: user messages, the control requests the SDK sends (initialize,
//! interrupt, set_permission_mode, …), and its answers to crew's own control requests
//! (the `can_use_tool` permission callback). Parsing only; `super::serve` acts on them.

use serde_json::Value;

/// One line of input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    /// A user message: its text.
    User(String),
    /// A control request from the SDK.
    Control {
        /// The id its answer must carry.
        request_id: String,
        /// What it asks.
        request: Control,
    },
    /// The SDK's answer to crew's control request `request_id`: the response object, or
    /// the error the SDK reported.
    Answer {
        /// The request answered.
        request_id: String,
        /// The answer.
        // A String error: the SDK's own error message, relayed verbatim from the peer.
        answer: Result<Value, String>,
    },
    /// A kind of line crew has nothing to do with (`keep_alive`, `control_cancel_request`
    /// for a request it has already answered, …).
    Ignored(String),
}

/// A control request the SDK sends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Control {
    /// The handshake: agent definitions to add, and whether SDK hook callbacks were
    /// registered (crew cannot call them back).
    Initialize {
        /// `agents`: Claude Code's JSON of agent definitions, if any.
        agents: Option<Value>,
        /// Whether `hooks` names any callback.
        hooks: bool,
    },
    /// Stop the current run.
    Interrupt,
    /// Switch the permission mode (`plan` switches the agent mode).
    SetPermissionMode(String),
    /// Anything else, by subtype.
    Other(String),
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum InputError {
    /// Not a JSON object.
    #[error("not a JSON object ({0}); each line must be one JSON message")]
    NotJson(String),
    /// A key the message needs is missing or of the wrong kind.
    #[error("`{0}` is missing or not {1}")]
    Field(&'static str, &'static str),
    /// A user message with no text in it.
    #[error("the user message has no text content (crew reads text blocks only)")]
    NoText,
}

/// Reads one line.
pub(crate) fn parse(line: &str) -> Result<Input, InputError> {
    let v: Value = serde_json::from_str(line).map_err(|e| InputError::NotJson(e.to_string()))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or(InputError::Field("type", "a string"))?;
    match kind {
        "user" => user_text(&v).map(Input::User),
        "control_request" => {
            let request_id = string(&v, "request_id")?;
            let request = v
                .get("request")
                .ok_or(InputError::Field("request", "an object"))?;
            Ok(Input::Control {
                request_id,
                request: control(request)?,
            })
        }
        "control_response" => {
            let response = v
                .get("response")
                .ok_or(InputError::Field("response", "an object"))?;
            let request_id = string(response, "request_id")?;
            let answer = match response.get("subtype").and_then(Value::as_str) {
                Some("error") => Err(response
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("the SDK reported an error")
                    .to_string()),
                _ => Ok(response.get("response").cloned().unwrap_or(Value::Null)),
            };
            Ok(Input::Answer { request_id, answer })
        }
        other => Ok(Input::Ignored(other.to_string())),
    }
}

fn string(v: &Value, key: &'static str) -> Result<String, InputError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(InputError::Field(key, "a string"))
}

/// The text of a user message: `message.content` as a string, or its text blocks joined.
fn user_text(v: &Value) -> Result<String, InputError> {
    let content = v
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or(InputError::Field("message.content", "a string or a list"))?;
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err(InputError::Field("message.content", "a string or a list")),
    };
    if text.trim().is_empty() {
        return Err(InputError::NoText);
    }
    Ok(text)
}

fn control(request: &Value) -> Result<Control, InputError> {
    let subtype = string(request, "subtype")?;
    Ok(match subtype.as_str() {
        "initialize" => Control::Initialize {
            agents: request.get("agents").filter(|a| !a.is_null()).cloned(),
            hooks: request
                .get("hooks")
                .and_then(Value::as_object)
                .is_some_and(|h| {
                    h.values()
                        .any(|m| m.as_array().is_some_and(|a| !a.is_empty()))
                }),
        },
        "interrupt" => Control::Interrupt,
        "set_permission_mode" => Control::SetPermissionMode(string(request, "mode")?),
        _ => Control::Other(subtype),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sdks_user_messages_in_both_shapes() {
        let plain = r#"{"type":"user","session_id":"","message":{"role":"user","content":"hello"},"parent_tool_use_id":null}"#;
        assert_eq!(parse(plain), Ok(Input::User("hello".into())));
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}}"#;
        assert_eq!(parse(blocks), Ok(Input::User("a\nb".into())));
        let empty = r#"{"type":"user","message":{"role":"user","content":[]}}"#;
        assert_eq!(parse(empty), Err(InputError::NoText));
    }

    #[test]
    fn reads_control_requests_and_answers() {
        let init = r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null,"agents":{"r":{"description":"d","prompt":"p"}}}}"#;
        let Ok(Input::Control {
            request_id,
            request,
        }) = parse(init)
        else {
            panic!("an initialize request");
        };
        assert_eq!(request_id, "req_1");
        assert!(
            matches!(request, Control::Initialize { agents: Some(a), hooks: false } if a["r"]["prompt"] == "p")
        );
        let hooks = r#"{"type":"control_request","request_id":"r","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":null,"hookCallbackIds":["hook_0"]}]}}}"#;
        assert!(matches!(
            parse(hooks),
            Ok(Input::Control {
                request: Control::Initialize { hooks: true, .. },
                ..
            })
        ));
        let mode = r#"{"type":"control_request","request_id":"r2","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}"#;
        assert!(matches!(
            parse(mode),
            Ok(Input::Control { request: Control::SetPermissionMode(m), .. }) if m == "acceptEdits"
        ));
        let deny = r#"{"type":"control_response","response":{"subtype":"success","request_id":"q1","response":{"behavior":"deny","message":"no"}}}"#;
        assert!(matches!(
            parse(deny),
            Ok(Input::Answer { request_id, answer: Ok(v) }) if request_id == "q1" && v["behavior"] == "deny"
        ));
        let failed = r#"{"type":"control_response","response":{"subtype":"error","request_id":"q2","error":"boom"}}"#;
        assert!(matches!(
            parse(failed),
            Ok(Input::Answer { answer: Err(e), .. }) if e == "boom"
        ));
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        assert!(matches!(parse("not json"), Err(InputError::NotJson(_))));
        assert_eq!(parse("{}"), Err(InputError::Field("type", "a string")));
        assert_eq!(
            parse(r#"{"type":"control_request","request":{"subtype":"interrupt"}}"#),
            Err(InputError::Field("request_id", "a string"))
        );
        assert_eq!(
            parse(r#"{"type":"keep_alive"}"#),
            Ok(Input::Ignored("keep_alive".into()))
        );
    }
}
