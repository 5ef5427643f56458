//! Unit tests of the Anthropic request conversion and event decoder.

use super::*;
use crew_protocol::tool::ToolSpec;
use crew_protocol::{Message, ToolResult};

fn request(messages: Vec<Message>, tools: &[&str]) -> ModelRequest {
    ModelRequest {
        model: "claude-test".into(),
        system: "You are a coder.".into(),
        messages: messages.into(),
        tools: tools
            .iter()
            .map(|n| ToolSpec {
                name: (*n).into(),
                description: format!("{n} tool"),
                input_schema: json!({"type": "object"}),
            })
            .collect::<Vec<_>>()
            .into(),
        max_tokens: 1024,
        agent: "lead".into(),
    }
}

/// Feeds every `data:` line of an SSE transcript to a fresh decoder, then finishes.
fn decode(sse: &str) -> Result<Vec<StreamEvent>, Failure> {
    let mut d = AnthropicDecoder::default();
    let mut out = Vec::new();
    for line in sse.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            out.extend(d.event("", data)?);
        }
    }
    out.extend(d.finish()?);
    Ok(out)
}

fn count_breakpoints(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            usize::from(m.contains_key("cache_control"))
                + m.values().map(count_breakpoints).sum::<usize>()
        }
        Value::Array(a) => a.iter().map(count_breakpoints).sum(),
        _ => 0,
    }
}

#[test]
fn body_marks_system_last_tool_and_newest_message_for_caching() {
    let body = request_body(&request(
        vec![
            Message::user_text("hi"),
            Message::assistant_text("hello"),
            Message::user_text("read a.txt"),
        ],
        &["read_file", "write_file"],
    ));
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["system"][0]["text"], "You are a coder.");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
    assert_eq!(body["tools"][1]["input_schema"]["type"], "object");
    assert!(
        body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        body["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(count_breakpoints(&body), 3);
}

#[test]
fn empty_system_and_tools_are_omitted() {
    let mut r = request(vec![Message::user_text("x")], &[]);
    r.system.clear();
    let body = request_body(&r);
    assert!(body.get("system").is_none() && body.get("tools").is_none());
    assert_eq!(count_breakpoints(&body), 1);
}

#[test]
fn tool_use_results_and_thinking_convert() {
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a.txt"}"#.into(),
    };
    let broken = ToolCall {
        id: "toolu_2".into(),
        name: "read_file".into(),
        arguments: "{not json".into(),
    };
    let conversation = vec![
        Message::user_text("go"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "plan".into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::Thinking {
                    thinking: "unsigned".into(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: String::new(),
                },
                ContentBlock::ToolUse(call),
                ContentBlock::ToolUse(broken),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult(ToolResult::ok("toolu_1", "contents")),
                ContentBlock::ToolResult(ToolResult::error("toolu_2", "invalid_arguments", "bad")),
            ],
        },
        Message::user_text("reminder"),
    ];
    let m = messages(&conversation.into());
    assert_eq!(m.len(), 3, "the two user messages merge: {m:#?}");
    let a = &m[1]["content"];
    assert_eq!(
        a.as_array().unwrap().len(),
        3,
        "unsigned thinking and empty text dropped"
    );
    assert_eq!(
        a[0],
        json!({"type":"thinking","thinking":"plan","signature":"sig"})
    );
    assert_eq!(a[1]["input"], json!({"path": "a.txt"}));
    assert_eq!(a[2]["input"], json!({}));
    let u = &m[2]["content"];
    assert_eq!(u[0]["type"], "tool_result");
    assert_eq!(u[0]["is_error"], false);
    assert_eq!(u[1]["is_error"], true);
    assert_eq!(u[1]["tool_use_id"], "toolu_2");
    assert_eq!(u[2]["text"], "reminder");
    assert_eq!(u[2]["cache_control"]["type"], "ephemeral");
    assert!(u[1].get("cache_control").is_none());
}

const TEXT_AND_TOOL: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading it."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":".txt\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}

event: message_stop
data: {"type":"message_stop"}
"#;

#[test]
fn decodes_text_tool_call_usage_and_stop() {
    let events = decode(TEXT_AND_TOOL).unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta {
                text: "Reading it.".into()
            },
            StreamEvent::ToolCall {
                call: ToolCall {
                    id: "toolu_01".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path": "a.txt"}"#.into()
                }
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 12,
                    output_tokens: 42,
                    cache_creation_input_tokens: 100,
                    cache_read_input_tokens: 2000
                }
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );
}

#[test]
fn cut_stream_never_yields_the_open_tool_call() {
    let cut = TEXT_AND_TOOL
        .split("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}")
        .next()
        .unwrap();
    let mut d = AnthropicDecoder::default();
    let mut out = Vec::new();
    for line in cut.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            out.extend(d.event("", data).unwrap());
        }
    }
    assert!(
        !out.iter()
            .any(|e| matches!(e, StreamEvent::ToolCall { .. }))
    );
    let err = d.finish().unwrap_err();
    assert_eq!(err.retry_reason.as_deref(), Some("stream cut off"));
    // A cut between message_delta and message_stop is torn too.
    let before_stop = TEXT_AND_TOOL.replace("data: {\"type\":\"message_stop\"}", "");
    assert!(decode(&before_stop).is_err());
}

#[test]
fn max_tokens_inside_a_tool_input_drops_that_call_only() {
    let sse = r#"data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"find_files","input":{}}}
data: {"type":"content_block_stop","index":0}
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"write_file","input":{}}}
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a.txt\", \"content\": \"hal"}}
data: {"type":"content_block_stop","index":1}
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":9}}
data: {"type":"message_stop"}"#;
    let events = decode(sse).unwrap();
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall { call } => Some((call.id.as_str(), call.arguments.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![("toolu_a", "{}")],
        "empty input is {{}}; the cut call is dropped"
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::MaxTokens
        })
    );
}

#[test]
fn thinking_block_is_emitted_whole_with_signature() {
    let sse = r#"data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAh"}}
data: {"type":"content_block_stop","index":0}
data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}
data: {"type":"content_block_stop","index":1}
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"42"}}
data: {"type":"content_block_stop","index":2}
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}
data: {"type":"message_stop"}"#;
    let events = decode(sse).unwrap();
    assert_eq!(
        events[0],
        StreamEvent::Thinking {
            thinking: "Let me think.".into(),
            signature: Some("EqQBCgIYAh".into())
        }
    );
    assert_eq!(events[1], StreamEvent::TextDelta { text: "42".into() });
}

#[test]
fn in_stream_errors_classify() {
    let mut d = AnthropicDecoder::default();
    let f = d
        .event(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap_err();
    assert_eq!(f.retry_reason.as_deref(), Some("overloaded"));
    assert!(f.error.to_string().contains("Overloaded"));
    let f = d
        .event(
            "error",
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#,
        )
        .unwrap_err();
    assert_eq!(f.retry_reason, None);
}

#[test]
fn malformed_json_is_a_retryable_stream_error() {
    let mut d = AnthropicDecoder::default();
    let f = d
        .event("content_block_delta", "{\"type\":\"content_blo")
        .unwrap_err();
    assert_eq!(f.retry_reason.as_deref(), Some("malformed stream"));
    assert!(matches!(f.error, ProviderError::Stream(ref m) if m.contains("content_blo")));
}
