//! The OpenAI-compatible provider against a local mock of Chat Completions: normalised
//! events, what was sent, server quirks, retries, torn streams.

use crate::support;

use std::time::Duration;

use crewmaster::protocol::{ContentBlock, Message, Role, StopReason, ToolCall, ToolResult, Usage};
use crewmaster::provider::http::HttpClient;
use crewmaster::provider::openai::OpenAiProvider;
use crewmaster::provider::{Provider, ProviderError, StreamEvent};
use serde_json::json;
use support::provider::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn server_with(responses: Vec<ResponseTemplate>) -> (MockServer, Sequence) {
    let server = MockServer::start().await;
    let seq = Sequence::new(responses);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(seq.clone())
        .mount(&server)
        .await;
    (server, seq)
}

fn provider(server: &MockServer, client: HttpClient, key: Option<&str>) -> OpenAiProvider {
    OpenAiProvider::new(client, &format!("{}/v1", server.uri()), key)
}

#[tokio::test]
async fn text_turn_with_usage_chunk_and_what_was_sent() {
    let mut chunks = vec![o_chunk(
        json!({"role":"assistant","content":"","refusal":null}),
        None,
    )];
    chunks.push(o_chunk(json!({"content":"Hello"}), None));
    chunks.push(o_chunk(json!({"content":" there"}), None));
    chunks.push(o_chunk(json!({}), Some("stop")));
    chunks.push(o_usage(3000, 7, 2048));
    let (server, _) = server_with(vec![sse_response(openai_sse(&chunks))]).await;
    let (client, _) = recording_client(8);
    let mut req = request("hi");
    req.messages = vec![
        Message::user_text("read a"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolCall {
                id: "call_9".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
            })],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok("call_9", "alpha"))],
        },
    ]
    .into();
    let events = ok(collect(provider(&server, client, Some("sk-test")).stream(req)).await);
    assert_eq!(text(&events), "Hello there");
    assert_eq!(
        events[events.len() - 2],
        StreamEvent::Usage {
            usage: Usage {
                input_tokens: 952,
                output_tokens: 7,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 2048
            }
        }
    );
    assert_eq!(stop(&events), Some(StopReason::EndTurn));

    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["authorization"], "Bearer sk-test");
    assert_eq!(sent.headers["content-type"], "application/json");
    let body: serde_json::Value = sent.body_json().unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["tools"][1]["type"], "function");
    assert_eq!(body["tools"][1]["function"]["name"], "find_files");
    assert_eq!(
        body["tools"][1]["function"]["parameters"]["properties"]["path"]["type"],
        "string"
    );
    let m = &body["messages"];
    assert_eq!(
        m[0],
        json!({"role":"system","content":"You are a careful coding agent."})
    );
    assert_eq!(
        m[2]["tool_calls"][0]["function"],
        json!({"name":"read_file","arguments":"{\"path\":\"a\"}"})
    );
    assert_eq!(
        m[3],
        json!({"role":"tool","tool_call_id":"call_9","content":"alpha"})
    );
}

#[tokio::test]
async fn one_and_several_tool_calls_by_index() {
    let chunks = vec![
        o_chunk(
            json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"read_file","arguments":""}}],"refusal":null}),
            None,
        ),
        o_chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}),
            None,
        ),
        o_chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"th\": \"x.rs\"}"}}]}),
            None,
        ),
        o_chunk(
            json!({"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"find_files","arguments":""}}]}),
            None,
        ),
        o_chunk(json!({}), Some("tool_calls")),
        o_usage(100, 20, 0),
    ];
    let (server, _) = server_with(vec![sse_response(openai_sse(&chunks))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client, Some("k")).stream(request("x"))).await);
    assert_eq!(
        calls(&events),
        vec![
            (
                "call_A".into(),
                "read_file".into(),
                r#"{"path": "x.rs"}"#.into()
            ),
            ("call_B".into(), "find_files".into(), "{}".into()),
        ]
    );
    assert_eq!(stop(&events), Some(StopReason::ToolUse));
}

#[tokio::test]
async fn compatible_server_quirks_and_no_key_means_no_auth_header() {
    // As some local servers stream: every call at index 0 with its own id, the name in
    // every fragment, continuation fragments without index, usage in the last choice.
    let chunks = vec![
        json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"llama3","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_x1","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]},"finish_reason":null}]}),
        json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"llama3","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_x1","type":"function","function":{"name":"read_file","arguments":"\"a\"}"}}]},"finish_reason":null}]}),
        json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"llama3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}]},"finish_reason":null}]}),
        json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"llama3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}),
    ];
    let (server, _) = server_with(vec![sse_response(openai_sse(&chunks))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client, None).stream(request("x"))).await);
    assert_eq!(
        calls(&events),
        vec![
            (
                "call_x1".into(),
                "read_file".into(),
                r#"{"path":"a"}"#.into()
            ),
            (
                "call_x2".into(),
                "read_file".into(),
                r#"{"path":"b"}"#.into()
            ),
        ]
    );
    assert!(events.contains(&StreamEvent::Usage {
        usage: Usage {
            input_tokens: 40,
            output_tokens: 12,
            ..Usage::default()
        }
    }));
    let sent = &server.received_requests().await.unwrap()[0];
    assert!(sent.headers.get("authorization").is_none());
}

#[tokio::test]
async fn length_inside_a_tool_call_drops_it() {
    let chunks = vec![
        o_chunk(
            json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_cut","type":"function","function":{"name":"write_file","arguments":"{\"content\":\"Lorem"}}]}),
            None,
        ),
        o_chunk(json!({}), Some("length")),
        o_usage(10, 4096, 0),
    ];
    let (server, _) = server_with(vec![sse_response(openai_sse(&chunks))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client, Some("k")).stream(request("x"))).await);
    assert!(calls(&events).is_empty());
    assert_eq!(stop(&events), Some(StopReason::MaxTokens));
}

#[tokio::test]
async fn rate_limit_honours_retry_after_ms() {
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after-ms", "1200")
        .insert_header("retry-after", "2")
        .set_body_json(json!({"error":{"message":"Rate limit reached for gpt-4.1","type":"requests","param":null,"code":"rate_limit_exceeded"}}));
    let (server, seq) = server_with(vec![limited, sse_response(o_text_turn(&["ok"]))]).await;
    let (client, waits) = recording_client(8);
    let events = ok(collect(provider(&server, client, Some("k")).stream(request("x"))).await);
    assert_eq!(
        retries(&events),
        vec![(2, 1200, "rate limited (429)".to_string())]
    );
    assert_eq!(
        waits.lock().unwrap().clone(),
        vec![Duration::from_millis(1200)]
    );
    assert_eq!(seq.arrivals().len(), 2);
    assert_eq!(text(&events), "ok");
}

#[tokio::test]
async fn torn_stream_mid_output_restarts_without_repeating_text() {
    let torn = format!(
        "data: {}\n\n",
        o_chunk(json!({"content":"The answer"}), None)
    );
    let (server, seq) = server_with(vec![
        sse_response(torn),
        sse_response(o_text_turn(&["The ans", "wer is 42."])),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client, Some("k")).stream(request("x"))).await);
    assert_eq!(text(&events), "The answer is 42.");
    assert_eq!(retries(&events).len(), 1);
    assert_eq!(seq.arrivals().len(), 2);
}

#[tokio::test]
async fn malformed_json_line_and_server_500() {
    let bad = "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\n\n".to_string();
    let (server, seq) = server_with(vec![
        ResponseTemplate::new(500).set_body_json(json!({"error":{"message":"The server had an error while processing your request.","type":"server_error"}})),
        sse_response(bad),
        sse_response(o_text_turn(&["fine"])),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client, Some("k")).stream(request("x"))).await);
    let reasons: Vec<String> = retries(&events).into_iter().map(|r| r.2).collect();
    assert_eq!(reasons, vec!["server error (500)", "malformed stream"]);
    assert_eq!(text(&events), "fine");
    assert_eq!(seq.arrivals().len(), 3);
}

#[tokio::test]
async fn bad_request_is_fatal_with_the_api_message() {
    let (server, seq) = server_with(vec![ResponseTemplate::new(400).set_body_json(
        json!({"error":{"message":"Invalid schema for function 'read_file'","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}),
    )])
    .await;
    let (client, _) = recording_client(8);
    let events = collect(provider(&server, client, Some("k")).stream(request("x"))).await;
    assert_eq!(seq.arrivals().len(), 1);
    assert_eq!(
        events,
        vec![Err(ProviderError::Http {
            status: 400,
            message: "Invalid schema for function 'read_file'".into()
        })]
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    // Bind then close a port so nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (client, waits) = recording_client(2);
    let p = OpenAiProvider::new(client, &format!("http://127.0.0.1:{port}/v1"), Some("k"));
    let events = collect(p.stream(request("x"))).await;
    let shown: Vec<StreamEvent> = events.iter().filter_map(|e| e.clone().ok()).collect();
    assert_eq!(
        retries(&shown)
            .into_iter()
            .map(|r| (r.0, r.2))
            .collect::<Vec<_>>(),
        vec![
            (2, "connection error".to_string()),
            (3, "connection error".to_string())
        ]
    );
    assert_eq!(waits.lock().unwrap().len(), 2);
    assert!(matches!(
        events.last(),
        Some(Err(ProviderError::Connection(_)))
    ));
}
