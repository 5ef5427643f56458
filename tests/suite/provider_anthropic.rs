//! The Anthropic provider against a local mock of the Messages API: normalised events,
//! what was sent, retries, torn streams, cancellation.

use crate::support;

use std::time::Duration;

use crewmaster::protocol::{StopReason, Usage};
use crewmaster::provider::anthropic::AnthropicProvider;
use crewmaster::provider::http::HttpClient;
use crewmaster::provider::{Provider, ProviderError, StreamEvent};
use futures::StreamExt;
use serde_json::json;
use support::provider::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn server_with(responses: Vec<ResponseTemplate>) -> (MockServer, Sequence) {
    let server = MockServer::start().await;
    let seq = Sequence::new(responses);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(seq.clone())
        .mount(&server)
        .await;
    (server, seq)
}

fn provider(server: &MockServer, client: HttpClient) -> AnthropicProvider {
    AnthropicProvider::new(client, &server.uri(), "sk-ant-test")
}

#[tokio::test]
async fn text_turn_sends_headers_cache_breakpoints_and_tools() {
    let (server, _) = server_with(vec![sse_response(a_text_turn(&["Hello", ", world"]))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("hi"))).await);
    assert_eq!(text(&events), "Hello, world");
    assert_eq!(stop(&events), Some(StopReason::EndTurn));
    assert!(events.contains(&StreamEvent::Usage {
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        }
    }));

    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["x-api-key"], "sk-ant-test");
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert_eq!(sent.headers["content-type"], "application/json");
    let body: serde_json::Value = sent.body_json().unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type":"ephemeral"})
    );
    assert_eq!(body["tools"][0]["name"], "read_file");
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["path"]["type"],
        "string"
    );
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["name"], "find_files");
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type":"ephemeral"})
    );
    assert_eq!(body["messages"][0]["content"][0]["text"], "hi");
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type":"ephemeral"})
    );
}

#[tokio::test]
async fn several_tool_calls_one_without_arguments_and_cache_read_usage() {
    let mut e = vec![a_message_start(50, 4000)];
    e.extend(a_text_block(0, &["Looking."]));
    e.extend(a_tool_block(
        1,
        "toolu_01A",
        "read_file",
        &["", "{\"path\":", " \"src/main.rs\"}"],
    ));
    e.extend(a_tool_block(2, "toolu_01B", "find_files", &[]));
    e.extend(a_end("tool_use", 80));
    let (server, _) = server_with(vec![sse_response(anthropic_sse(&e))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("look"))).await);
    assert_eq!(
        calls(&events),
        vec![
            (
                "toolu_01A".into(),
                "read_file".into(),
                r#"{"path": "src/main.rs"}"#.into()
            ),
            ("toolu_01B".into(), "find_files".into(), "{}".into()),
        ]
    );
    assert!(events.contains(&StreamEvent::Usage {
        usage: Usage {
            input_tokens: 50,
            output_tokens: 80,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 4000
        }
    }));
    assert_eq!(stop(&events), Some(StopReason::ToolUse));
}

#[tokio::test]
async fn thinking_block_arrives_whole_with_signature() {
    let e = vec![
        a_message_start(5, 0),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants "}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a sum."}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}),
        json!({"type":"content_block_stop","index":0}),
    ];
    let mut e = e;
    e.extend(a_text_block(1, &["4"]));
    e.extend(a_end("end_turn", 20));
    let (server, _) = server_with(vec![sse_response(anthropic_sse(&e))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("2+2"))).await);
    assert_eq!(
        events[0],
        StreamEvent::Thinking {
            thinking: "The user wants a sum.".into(),
            signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into())
        }
    );
    assert_eq!(text(&events), "4");
}

#[tokio::test]
async fn max_tokens_inside_a_tool_input_never_yields_the_call() {
    let mut e = vec![a_message_start(5, 0)];
    e.extend(a_text_block(0, &["Writing."]));
    e.extend(a_tool_block(
        1,
        "toolu_cut",
        "write_file",
        &["{\"path\": \"a.txt\", \"content\": \"Lorem ip"],
    ));
    e.extend(a_end("max_tokens", 4096));
    let (server, seq) = server_with(vec![sse_response(anthropic_sse(&e))]).await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("write"))).await);
    assert!(calls(&events).is_empty(), "{events:?}");
    assert_eq!(stop(&events), Some(StopReason::MaxTokens));
    assert_eq!(
        seq.arrivals().len(),
        1,
        "max_tokens is an answer, not a failure"
    );
}

#[tokio::test]
async fn torn_stream_before_output_is_retried_silently_except_the_event() {
    // The first body stops right after message_start, as when a proxy cuts a stream.
    let torn = anthropic_sse(&[a_message_start(5, 0)]);
    let (server, seq) =
        server_with(vec![sse_response(torn), sse_response(a_text_turn(&["ok"]))]).await;
    let (client, waits) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    assert_eq!(text(&events), "ok");
    let r = retries(&events);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].0, r[0].2.as_str()), (2, "stream cut off"));
    assert_eq!(seq.arrivals().len(), 2);
    assert!(waits.lock().unwrap()[0] <= Duration::from_millis(500));
}

#[tokio::test]
async fn torn_stream_mid_output_restarts_once_without_repeating_text_or_calls() {
    let mut first = vec![a_message_start(5, 0)];
    first.push(
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    );
    first.push(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, wor"}}));
    let mut second = vec![a_message_start(5, 0)];
    second.extend(a_text_block(0, &["Hello", ", world!"]));
    second.extend(a_tool_block(
        1,
        "toolu_2",
        "read_file",
        &["{\"path\":\"a\"}"],
    ));
    second.extend(a_end("tool_use", 9));
    let (server, seq) = server_with(vec![
        sse_response(anthropic_sse(&first)),
        sse_response(anthropic_sse(&second)),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    assert_eq!(text(&events), "Hello, world!", "{events:?}");
    assert!(matches!(&events[0], StreamEvent::TextDelta { text } if text == "Hello, wor"));
    let r = retries(&events);
    assert_eq!(r.len(), 1);
    assert!(
        r[0].2.contains("stream interrupted after output"),
        "{}",
        r[0].2
    );
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(seq.arrivals().len(), 2);
}

#[tokio::test]
async fn a_second_break_after_output_is_an_error() {
    let mut torn = vec![a_message_start(5, 0)];
    torn.push(
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    );
    torn.push(
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}),
    );
    let mut longer = torn.clone();
    longer.push(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}));
    let (server, seq) = server_with(vec![
        sse_response(anthropic_sse(&torn)),
        sse_response(anthropic_sse(&longer)),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = collect(provider(&server, client).stream(request("x"))).await;
    assert!(
        matches!(events.last(), Some(Err(ProviderError::Stream(m))) if m.contains("ended before"))
    );
    let shown: Vec<_> = events.into_iter().filter_map(Result::ok).collect();
    assert_eq!(text(&shown), "Hi there");
    assert_eq!(
        seq.arrivals().len(),
        2,
        "mid-output breaks restart the turn only once"
    );
}

#[tokio::test]
async fn in_stream_overloaded_error_is_retried() {
    let overloaded = format!(
        "{}event: error\ndata: {}\n\n",
        anthropic_sse(&[a_message_start(5, 0)]),
        json!({"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"}})
    );
    let (server, seq) = server_with(vec![
        sse_response(overloaded),
        sse_response(a_text_turn(&["done"])),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    assert_eq!(retries(&events)[0].2, "overloaded");
    assert_eq!(text(&events), "done");
    assert_eq!(seq.arrivals().len(), 2);
}

#[tokio::test]
async fn rate_limit_429_waits_the_retry_after_it_was_given() {
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_json(json!({"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}));
    let (server, seq) = server_with(vec![limited, sse_response(a_text_turn(&["ok"]))]).await;
    // Real sleeping: the mock's own arrival timestamps show the wait.
    let client = HttpClient::new().unwrap();
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    assert_eq!(
        retries(&events),
        vec![(2, 1000, "rate limited (429)".to_string())]
    );
    let arrivals = seq.arrivals();
    assert_eq!(arrivals.len(), 2);
    let waited = arrivals[1] - arrivals[0];
    assert!(
        waited >= Duration::from_secs(1),
        "retried after only {waited:?}"
    );
}

#[tokio::test]
async fn overloaded_529_then_success_backs_off() {
    let overloaded = ResponseTemplate::new(529).set_body_json(
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    );
    let (server, seq) = server_with(vec![
        overloaded.clone(),
        overloaded,
        sse_response(a_text_turn(&["ok"])),
    ])
    .await;
    let (client, waits) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    let r = retries(&events);
    assert_eq!(
        r.iter().map(|x| (x.0, x.2.as_str())).collect::<Vec<_>>(),
        vec![(2, "overloaded (529)"), (3, "overloaded (529)")]
    );
    let waits = waits.lock().unwrap().clone();
    assert!(
        waits[0] >= Duration::from_millis(375) && waits[0] <= Duration::from_millis(500),
        "{waits:?}"
    );
    assert!(
        waits[1] >= Duration::from_millis(750) && waits[1] <= Duration::from_millis(1000),
        "{waits:?}"
    );
    assert_eq!(text(&events), "ok");
    assert_eq!(seq.arrivals().len(), 3);
}

#[tokio::test]
async fn server_500_then_success() {
    let (server, seq) = server_with(vec![
        ResponseTemplate::new(500).set_body_json(
            json!({"type":"error","error":{"type":"api_error","message":"Internal server error"}}),
        ),
        sse_response(a_text_turn(&["fine"])),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    assert_eq!(retries(&events)[0].2, "server error (500)");
    assert_eq!(text(&events), "fine");
    assert_eq!(seq.arrivals().len(), 2);
}

#[tokio::test]
async fn retries_stop_at_the_budget_and_x_should_retry_false() {
    let (server, seq) = server_with(vec![
        ResponseTemplate::new(503).set_body_string("upstream connect error"),
    ])
    .await;
    let (client, _) = recording_client(2);
    let events = collect(provider(&server, client).stream(request("x"))).await;
    assert_eq!(seq.arrivals().len(), 3, "1 attempt + 2 retries");
    assert_eq!(
        events.last(),
        Some(&Err(ProviderError::Http {
            status: 503,
            message: "upstream connect error".into()
        }))
    );

    let (server, seq) = server_with(vec![
        ResponseTemplate::new(529).insert_header("x-should-retry", "false"),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = collect(provider(&server, client).stream(request("x"))).await;
    assert_eq!(seq.arrivals().len(), 1);
    assert!(matches!(
        events.last(),
        Some(Err(ProviderError::Http { status: 529, .. }))
    ));
}

#[tokio::test]
async fn malformed_json_line_is_retried_then_succeeds() {
    let bad = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":\n\n"
        .to_string();
    let (server, seq) = server_with(vec![
        sse_response(bad),
        sse_response(a_text_turn(&["clean"])),
    ])
    .await;
    let (client, _) = recording_client(8);
    let events = ok(collect(provider(&server, client).stream(request("x"))).await);
    assert_eq!(retries(&events)[0].2, "malformed stream");
    assert_eq!(text(&events), "clean");
    assert_eq!(seq.arrivals().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_fatal_and_names_the_variable() {
    let (server, seq) = server_with(vec![ResponseTemplate::new(401)
        .set_body_json(json!({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}))])
    .await;
    let (client, _) = recording_client(8);
    let events = collect(provider(&server, client).stream(request("x"))).await;
    assert_eq!(seq.arrivals().len(), 1);
    let Some(Err(ProviderError::Http {
        status: 401,
        message,
    })) = events.last()
    else {
        panic!("{events:?}")
    };
    assert!(message.contains("invalid x-api-key") && message.contains("ANTHROPIC_API_KEY"));
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    // A raw server that sends the headers and one event, then waits: the client must
    // hang up once the consumer drops the stream (a cancelled turn).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = sock.read(&mut buf).await.unwrap();
        let event = a_text_turn(&["partial"]);
        let first = &event[..event.find("event: content_block_stop").unwrap()];
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
            first.len()
        );
        sock.write_all(head.as_bytes()).await.unwrap();
        // Returns when the client closes its end (read of 0 bytes or an error).
        loop {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    });
    let (client, _) = recording_client(8);
    let p = AnthropicProvider::new(client, &format!("http://{addr}"), "k");
    let mut stream = p.stream(request("x"));
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(
        first,
        StreamEvent::TextDelta {
            text: "partial".into()
        }
    );
    drop(stream);
    let closed = tokio::time::timeout(Duration::from_secs(10), server).await;
    assert!(
        matches!(closed, Ok(Ok(true))),
        "the server never saw the connection close"
    );
}

#[tokio::test]
async fn a_connection_dropped_mid_body_is_retried() {
    // A raw server: the first connection promises more body than it sends and hangs up
    // (a real transport error, not a clean end); the second answers in full.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for attempt in 0..2 {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            let _ = sock.read(&mut buf).await.unwrap();
            let body = a_text_turn(&["whole answer"]);
            let sent = if attempt == 0 { &body[..40] } else { &body[..] };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            sock.write_all(head.as_bytes()).await.unwrap();
            sock.write_all(sent.as_bytes()).await.unwrap();
            drop(sock);
        }
    });
    let (client, _) = recording_client(8);
    let p = AnthropicProvider::new(client, &format!("http://{addr}"), "k");
    let events = ok(collect(p.stream(request("x"))).await);
    assert_eq!(retries(&events)[0].2, "connection lost");
    assert_eq!(text(&events), "whole answer");
}
