//! The Anthropic Messages API (`POST {base}/v1/messages`, streaming): request
//! conversion with prompt-caching breakpoints, and the decoder of its server-sent events.
//! Both are pure; `http.rs` does the I/O.
//!
//! Prompt caching: `cache_control: ephemeral` goes on the system prompt, the last tool
//! definition and the last block of the newest message (3 of the 4 allowed breakpoints),
//! so each turn of an agent loop re-reads everything before its newest message from cache.
//! When that last block is a per-turn `<system-reminder>` (Plan Mode), the block before
//! it takes the 4th breakpoint, since the reminder is not repeated at that place.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::http::{ApiRequest, Decoder, Failure, HttpClient};
use super::{EventStream, Messages, ModelRequest, Provider, ProviderError, StreamEvent};
use crew_protocol::{ContentBlock, Role, StopReason, ToolCall, Usage};

/// The default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header value.
pub const API_VERSION: &str = "2023-06-01";

/// A streaming client for the Anthropic Messages API.
#[derive(Clone)]
pub struct AnthropicProvider {
    http: HttpClient,
    base_url: String,
    api_key: String,
}

impl AnthropicProvider {
    /// A provider for `base_url` (without `/v1`) authenticating with `api_key`.
    pub fn new(http: HttpClient, base_url: &str, api_key: &str) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
        }
    }

    /// The HTTP call for `request`.
    pub fn api_request(&self, request: &ModelRequest) -> ApiRequest {
        // No key (a base URL of the user's own that needs none): no key header at all.
        let key = (!self.api_key.is_empty()).then(|| ("x-api-key".into(), self.api_key.clone()));
        ApiRequest {
            url: format!("{}/v1/messages", self.base_url),
            headers: key
                .into_iter()
                .chain([("anthropic-version".into(), API_VERSION.into())])
                .collect(),
            body: request_body(request),
            auth_hint: "check ANTHROPIC_API_KEY".into(),
        }
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        self.http
            .stream(self.api_request(&request), AnthropicDecoder::default)
    }
}

fn ephemeral() -> Value {
    json!({ "type": "ephemeral" })
}

/// The JSON body for `request`, with cache breakpoints.
pub fn request_body(request: &ModelRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "messages": messages(&request.messages),
    });
    if !request.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": request.system,
            "cache_control": ephemeral(),
        }]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                })
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Our conversation as API messages: empty text blocks and unsigned thinking (which the
/// API rejects) are dropped, messages left empty are skipped, consecutive messages of
/// one role are merged, and the newest message's last cacheable block gets a breakpoint.
pub fn messages(conversation: &Messages) -> Vec<Value> {
    let mut out: Vec<(Role, Vec<Value>)> = Vec::new();
    for message in conversation.iter() {
        let blocks: Vec<Value> = message.content.iter().filter_map(|b| block(b)).collect();
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((role, existing)) if *role == message.role => existing.extend(blocks),
            _ => out.push((message.role, blocks)),
        }
    }
    if let Some((_, blocks)) = out.last_mut() {
        // Thinking blocks cannot carry cache_control.
        let mut cacheable = blocks.iter_mut().rev().filter(|b| b["type"] != "thinking");
        if let Some(b) = cacheable.next() {
            // A per-turn reminder is not sent again next turn: the block before it gets
            // the 4th breakpoint, so the next request still finds this prefix.
            let reminder = b["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("<system-reminder>"));
            b["cache_control"] = ephemeral();
            if reminder && let Some(before) = cacheable.next() {
                before["cache_control"] = ephemeral();
            }
        }
    }
    out.into_iter()
        .map(|(role, content)| {
            let role = match role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({ "role": role, "content": content })
        })
        .collect()
}

fn block(b: &ContentBlock) -> Option<Value> {
    Some(match b {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => json!({ "type": "text", "text": text }),
        ContentBlock::Thinking {
            thinking,
            signature: Some(signature),
        } => json!({ "type": "thinking", "thinking": thinking, "signature": signature }),
        ContentBlock::Thinking {
            signature: None, ..
        } => return None,
        ContentBlock::ToolUse(call) => json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": input_object(&call.arguments),
        }),
        ContentBlock::ToolResult(r) => json!({
            "type": "tool_result",
            "tool_use_id": r.tool_use_id,
            "content": r.content,
            "is_error": r.is_error,
        }),
    })
}

/// A call's arguments as the object the API requires; `{}` when the model's text was
/// not a JSON object (the call already failed validation and its result says so).
pub fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}

/// The stop reason named by the API.
pub fn stop_reason(name: &str) -> StopReason {
    match name {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        other => StopReason::Other(other.to_string()),
    }
}

#[derive(Debug)]
enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Other,
}

/// Decodes one attempt's events. Tool calls are held until `message_delta` reveals the
/// stop reason: with `max_tokens` the last block was cut off, so a tool call there is
/// dropped rather than run with truncated input.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    open: HashMap<u64, Block>,
    last_index: Option<u64>,
    last_was_tool: bool,
    finished_calls: Vec<(u64, ToolCall)>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
}

fn malformed(data: &str, what: &str) -> Failure {
    Failure::retryable(
        "malformed stream",
        ProviderError::Stream(format!(
            "Anthropic stream: {what}: {}",
            super::http::shorten(data, 200)
        )),
    )
}

fn read_usage(into: &mut Usage, u: &Value) {
    let get = |k: &str| u.get(k).and_then(Value::as_u64);
    if let Some(v) = get("input_tokens") {
        into.input_tokens = v;
    }
    if let Some(v) = get("output_tokens") {
        into.output_tokens = v;
    }
    if let Some(v) = get("cache_creation_input_tokens") {
        into.cache_creation_input_tokens = v;
    }
    if let Some(v) = get("cache_read_input_tokens") {
        into.cache_read_input_tokens = v;
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, Failure> {
        let v: Value = serde_json::from_str(data).map_err(|e| malformed(data, &e.to_string()))?;
        let index = v.get("index").and_then(Value::as_u64);
        let mut out = Vec::new();
        match v.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => read_usage(&mut self.usage, &v["message"]["usage"]),
            "content_block_start" => {
                let index = index.ok_or_else(|| malformed(data, "block without index"))?;
                let cb = &v["content_block"];
                let text = |k: &str| cb.get(k).and_then(Value::as_str).unwrap_or_default();
                let block = match text("type") {
                    "text" => {
                        if !text("text").is_empty() {
                            out.push(StreamEvent::TextDelta {
                                text: text("text").into(),
                            });
                        }
                        Block::Text
                    }
                    "tool_use" => Block::Tool {
                        id: text("id").into(),
                        name: text("name").into(),
                        json: String::new(),
                    },
                    "thinking" => Block::Thinking {
                        text: text("thinking").into(),
                        signature: cb
                            .get("signature")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    },
                    // redacted_thinking and server tools have no place in our protocol.
                    _ => Block::Other,
                };
                self.last_was_tool = matches!(block, Block::Tool { .. });
                self.last_index = Some(index);
                self.open.insert(index, block);
            }
            "content_block_delta" => {
                let index = index.ok_or_else(|| malformed(data, "delta without index"))?;
                let d = &v["delta"];
                let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
                match (self.open.get_mut(&index), s("type")) {
                    (Some(Block::Text), "text_delta") if !s("text").is_empty() => {
                        out.push(StreamEvent::TextDelta {
                            text: s("text").into(),
                        });
                    }
                    (Some(Block::Tool { json, .. }), "input_json_delta") => {
                        json.push_str(s("partial_json"));
                    }
                    (Some(Block::Thinking { text, .. }), "thinking_delta") => {
                        text.push_str(s("thinking"));
                    }
                    (Some(Block::Thinking { signature, .. }), "signature_delta") => {
                        signature.get_or_insert_default().push_str(s("signature"));
                    }
                    (None, _) => return Err(malformed(data, "delta for a block never started")),
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = index.ok_or_else(|| malformed(data, "stop without index"))?;
                match self.open.remove(&index) {
                    Some(Block::Tool { id, name, json }) => {
                        let arguments = if json.trim().is_empty() {
                            "{}".to_string()
                        } else {
                            json
                        };
                        self.finished_calls.push((
                            index,
                            ToolCall {
                                id,
                                name,
                                arguments,
                            },
                        ));
                    }
                    Some(Block::Thinking { text, signature }) => out.push(StreamEvent::Thinking {
                        thinking: text,
                        signature,
                    }),
                    _ => {}
                }
            }
            "message_delta" => {
                read_usage(&mut self.usage, &v["usage"]);
                let reason = v["delta"]
                    .get("stop_reason")
                    .and_then(Value::as_str)
                    .map(stop_reason);
                if let Some(reason) = reason {
                    if reason == StopReason::MaxTokens && self.last_was_tool {
                        let cut = self.last_index;
                        self.finished_calls.retain(|(i, _)| Some(*i) != cut);
                    }
                    out.extend(
                        self.finished_calls
                            .drain(..)
                            .map(|(_, call)| StreamEvent::ToolCall { call }),
                    );
                    out.push(StreamEvent::Usage { usage: self.usage });
                    self.stop = Some(reason);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let kind = v["error"]["type"].as_str().unwrap_or("error");
                let message = v["error"]["message"].as_str().unwrap_or(kind);
                let error = ProviderError::Stream(format!("Anthropic {kind}: {message}"));
                return Err(match kind {
                    "overloaded_error" => Failure::retryable("overloaded", error),
                    "rate_limit_error" => Failure::retryable("rate limited", error),
                    "api_error" | "timeout_error" => Failure::retryable("server error", error),
                    _ => Failure::fatal(error),
                });
            }
            // ping and event types added to the API later.
            _ => {}
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, Failure> {
        // Only message_stop proves the message is whole: a cut just before it may have
        // lost a final block or usage, so that too is a torn stream.
        if !self.done {
            return Err(Failure::retryable(
                "stream cut off",
                ProviderError::Stream("the Anthropic stream ended before message_stop".into()),
            ));
        }
        let reason = self.stop.take().unwrap_or(StopReason::EndTurn);
        Ok(vec![StreamEvent::Stop { reason }])
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
