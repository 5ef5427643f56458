//! Unit tests of the Chat Completions request conversion and chunk decoder.

use super::*;
use crew_protocol::tool::ToolSpec;
use crew_protocol::{Message, ToolResult};

fn decode(sse: &str) -> Result<Vec<StreamEvent>, Failure> {
    let mut d = OpenAiDecoder::default();
    let mut out = Vec::new();
    for line in sse.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            out.extend(d.event("message", data)?);
            if d.is_done() {
                break;
            }
        }
    }
    out.extend(d.finish()?);
    Ok(out)
}

fn calls(events: &[StreamEvent]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall { call } => {
                Some((call.id.clone(), call.name.clone(), call.arguments.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn body_has_stream_options_tools_and_limit() {
    let r = ModelRequest {
        model: "gpt-test".into(),
        system: "sys".into(),
        messages: vec![Message::user_text("hi")].into(),
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads".into(),
            input_schema: json!({"type":"object","properties":{"path":{"type":"string"}}}),
        }]
        .into(),
        max_tokens: 77,
        agent: "lead".into(),
    };
    let body = request_body(&r, LimitKey::MaxTokens);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["max_tokens"], 77);
    assert!(body.get("max_completion_tokens").is_none());
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(
        body["messages"][0],
        json!({"role":"system","content":"sys"})
    );
    assert_eq!(
        request_body(&r, LimitKey::MaxCompletionTokens)["max_completion_tokens"],
        77
    );
}

#[test]
fn tool_calls_and_results_convert_to_tool_messages() {
    let conversation = vec![
        Message::user_text("go"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hidden".into(),
                    signature: None,
                },
                ContentBlock::ToolUse(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a"}"#.into(),
                }),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult(ToolResult::ok("call_1", "text of a")),
                ContentBlock::Text {
                    text: "<reminder>".into(),
                },
            ],
        },
    ];
    let m = messages("", &conversation.into());
    assert_eq!(m.len(), 4, "{m:#?}");
    assert_eq!(m[1]["content"], Value::Null);
    assert_eq!(m[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        m[1]["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a"}"#
    );
    assert_eq!(
        m[2],
        json!({"role":"tool","tool_call_id":"call_1","content":"text of a"})
    );
    assert_eq!(m[3], json!({"role":"user","content":"<reminder>"}));
}

#[test]
fn decodes_text_tool_calls_and_usage_chunk() {
    let sse = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Let me look."},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"a\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"find_files","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]
"#;
    let events = decode(sse).unwrap();
    assert_eq!(
        events[0],
        StreamEvent::TextDelta {
            text: "Let me look.".into()
        }
    );
    assert_eq!(
        calls(&events),
        vec![
            (
                "call_a".into(),
                "read_file".into(),
                r#"{"path": "a"}"#.into()
            ),
            ("call_b".into(), "find_files".into(), "{}".into()),
        ]
    );
    assert_eq!(
        events[events.len() - 2],
        StreamEvent::Usage {
            usage: Usage {
                input_tokens: 176,
                output_tokens: 30,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 1024
            }
        }
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn quirks_index_zero_missing_index_repeated_name() {
    // Two calls both at index 0 (distinct ids), the name repeated in every fragment,
    // continuation fragments without an index, and `stop` instead of `tool_calls`.
    let sse = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\""}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"read_file","arguments":":\"a\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
data: [DONE]"#;
    let events = decode(sse).unwrap();
    assert_eq!(
        calls(&events),
        vec![
            (
                "call_1".into(),
                "read_file".into(),
                r#"{"path":"a"}"#.into()
            ),
            (
                "call_2".into(),
                "read_file".into(),
                r#"{"path":"b"}"#.into()
            ),
        ]
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn length_drops_the_cut_call_and_no_finish_is_torn() {
    let sse = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"write_file","arguments":"{\"content\":\"hal"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}
data: [DONE]"#;
    let events = decode(sse).unwrap();
    assert!(calls(&events).is_empty());
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::MaxTokens
        })
    );
    let torn = r#"data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#;
    let f = decode(torn).unwrap_err();
    assert_eq!(f.retry_reason.as_deref(), Some("stream cut off"));
    // A cut after the finish_reason may have lost the usage chunk: still torn.
    let before_done = r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    assert!(decode(before_done).is_err());
}

#[test]
fn reasoning_content_becomes_one_thinking_block_before_text() {
    let sse = r#"data: {"choices":[{"index":0,"delta":{"reasoning_content":"Think "}}]}
data: {"choices":[{"index":0,"delta":{"reasoning_content":"hard."}}]}
data: {"choices":[{"index":0,"delta":{"content":"42"}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
data: [DONE]"#;
    let events = decode(sse).unwrap();
    assert_eq!(
        events[0],
        StreamEvent::Thinking {
            thinking: "Think hard.".into(),
            signature: None
        }
    );
    assert_eq!(events[1], StreamEvent::TextDelta { text: "42".into() });
}

#[test]
fn error_chunks_and_bad_json_fail() {
    let mut d = OpenAiDecoder::default();
    let f = d
        .event(
            "message",
            r#"{"error":{"message":"model overloaded","type":"server_error"}}"#,
        )
        .unwrap_err();
    assert_eq!(f.retry_reason.as_deref(), Some("server error"));
    let f = d
        .event(
            "message",
            r#"{"error":{"message":"bad tools","type":"invalid_request_error"}}"#,
        )
        .unwrap_err();
    assert_eq!(f.retry_reason, None);
    let f = d.event("message", "{\"choices\":[").unwrap_err();
    assert_eq!(f.retry_reason.as_deref(), Some("malformed stream"));
}
