//! Shared helpers for the provider tests: a wiremock responder that replays a sequence
//! of responses and records when each request arrived (the mock's clock), SSE body
//! builders in the real APIs' shapes, and a client whose waits are recorded, not slept.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crewmaster::protocol::StopReason;
use crewmaster::provider::http::{HttpClient, Sleeper};
use crewmaster::provider::retry::RetryPolicy;
use crewmaster::provider::{EventStream, ModelRequest, ProviderError, StreamEvent};
use crewmaster::tools::ToolSpec;
use futures::StreamExt;
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// Replays responses in order (the last one repeats) and timestamps each request.
#[derive(Clone)]
pub struct Sequence {
    queue: Arc<Mutex<VecDeque<ResponseTemplate>>>,
    last: ResponseTemplate,
    pub arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl Sequence {
    pub fn new(responses: Vec<ResponseTemplate>) -> Self {
        let last = responses.last().cloned().expect("at least one response");
        Self {
            queue: Arc::new(Mutex::new(responses.into())),
            last,
            arrivals: Arc::default(),
        }
    }

    pub fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().unwrap().clone()
    }
}

impl Respond for Sequence {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        self.arrivals.lock().unwrap().push(Instant::now());
        self.queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| self.last.clone())
    }
}

/// A 200 response carrying an event stream.
pub fn sse_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// An Anthropic SSE body: each event as `event: TYPE` + `data: JSON`.
pub fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
        .collect()
}

pub fn a_message_start(input: u64, cache_read: u64) -> Value {
    json!({"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":input,"cache_creation_input_tokens":0,"cache_read_input_tokens":cache_read,"output_tokens":1}}})
}

pub fn a_text_block(index: u64, chunks: &[&str]) -> Vec<Value> {
    let mut v = vec![
        json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}}),
    ];
    v.extend(chunks.iter().map(|t| json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":t}})));
    v.push(json!({"type":"content_block_stop","index":index}));
    v
}

pub fn a_tool_block(index: u64, id: &str, name: &str, fragments: &[&str]) -> Vec<Value> {
    let mut v = vec![
        json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
    ];
    v.extend(fragments.iter().map(|f| json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":f}})));
    v.push(json!({"type":"content_block_stop","index":index}));
    v
}

pub fn a_end(stop_reason: &str, output: u64) -> Vec<Value> {
    vec![
        json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},"usage":{"output_tokens":output}}),
        json!({"type":"message_stop"}),
    ]
}

/// A complete Anthropic text turn.
pub fn a_text_turn(chunks: &[&str]) -> String {
    let mut e = vec![a_message_start(10, 0)];
    e.extend(a_text_block(0, chunks));
    e.extend(a_end("end_turn", 5));
    anthropic_sse(&e)
}

/// An OpenAI SSE body: `data: JSON` chunks then `data: [DONE]`.
pub fn openai_sse(chunks: &[Value]) -> String {
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

/// One Chat Completions chunk with a single choice.
pub fn o_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id":"chatcmpl-AzXp1","object":"chat.completion.chunk","created":1735000000,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_b8bc95a0ac","choices":[{"index":0,"delta":delta,"logprobs":null,"finish_reason":finish}],"usage":null})
}

/// The final usage chunk (empty `choices`).
pub fn o_usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"id":"chatcmpl-AzXp1","object":"chat.completion.chunk","created":1735000000,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_b8bc95a0ac","choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion,"prompt_tokens_details":{"cached_tokens":cached,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}})
}

/// A complete OpenAI text turn.
pub fn o_text_turn(chunks: &[&str]) -> String {
    let mut c = vec![o_chunk(
        json!({"role":"assistant","content":"","refusal":null}),
        None,
    )];
    c.extend(chunks.iter().map(|t| o_chunk(json!({"content":t}), None)));
    c.push(o_chunk(json!({}), Some("stop")));
    c.push(o_usage(20, 5, 0));
    openai_sse(&c)
}

/// A client that records the waits it was asked for instead of sleeping.
pub fn recording_client(max_retries: u32) -> (HttpClient, Arc<Mutex<Vec<Duration>>>) {
    let waits: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let w = waits.clone();
    let sleeper: Sleeper = Arc::new(move |d| {
        w.lock().unwrap().push(d);
        Box::pin(async {})
    });
    let client = HttpClient::new()
        .unwrap()
        .with_policy(RetryPolicy::default().with_max_retries(max_retries))
        .with_sleeper(sleeper);
    (client, waits)
}

pub fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({"type":"object","properties":{"path":{"type":"string"}}}),
    }
}

pub fn request(text: &str) -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: "You are a careful coding agent.".into(),
        messages: vec![crewmaster::protocol::Message::user_text(text)].into(),
        tools: vec![tool("read_file"), tool("find_files")].into(),
        max_tokens: 4096,
        agent: "lead".into(),
    }
}

pub async fn collect(stream: EventStream) -> Vec<Result<StreamEvent, ProviderError>> {
    stream.collect().await
}

/// The events of a stream that must succeed.
pub fn ok(events: Vec<Result<StreamEvent, ProviderError>>) -> Vec<StreamEvent> {
    events
        .into_iter()
        .map(|e| e.unwrap_or_else(|err| panic!("unexpected error: {err}")))
        .collect()
}

pub fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn calls(events: &[StreamEvent]) -> Vec<(String, String, String)> {
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

pub fn retries(events: &[StreamEvent]) -> Vec<(u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => Some((*attempt, *delay_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

pub fn stop(events: &[StreamEvent]) -> Option<StopReason> {
    match events.last() {
        Some(StreamEvent::Stop { reason }) => Some(reason.clone()),
        _ => None,
    }
}

pub async fn bodies(server: &wiremock::MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect()
}
