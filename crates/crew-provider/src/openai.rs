//! OpenAI Chat Completions (`POST {base}/chat/completions`, streaming), as served by
//! OpenAI and by compatible servers (Ollama, vLLM, llama.cpp, OpenRouter): request
//! conversion and the chunk decoder, both pure; `http.rs` does the I/O.
//!
//! The decoder tolerates the known server quirks: tool-call fragments without `index`,
//! every call sent as index 0 (told apart by distinct ids), the name repeated in every
//! fragment, usage in a final chunk with empty `choices`, and reasoning text in
//! `delta.reasoning_content` / `delta.reasoning`.

use serde_json::{Value, json};

use super::http::{ApiRequest, Decoder, Failure, HttpClient};
use super::{EventStream, Messages, ModelRequest, Provider, ProviderError, StreamEvent};
use crew_protocol::{ContentBlock, Role, StopReason, ToolCall, Usage};

/// The default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A streaming client for Chat Completions.
#[derive(Clone)]
pub struct OpenAiProvider {
    http: HttpClient,
    base_url: String,
    api_key: Option<String>,
}

impl OpenAiProvider {
    /// A provider for `base_url` (including `/v1`); `api_key` `None` sends no
    /// `Authorization` header (local servers).
    pub fn new(http: HttpClient, base_url: &str, api_key: Option<&str>) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.map(str::to_string),
        }
    }

    /// The HTTP call for `request`.
    pub fn api_request(&self, request: &ModelRequest) -> ApiRequest {
        // OpenAI's own newer models reject `max_tokens`; compatible servers do not all
        // know `max_completion_tokens`.
        let limit = if self.base_url.starts_with(DEFAULT_BASE_URL) {
            LimitKey::MaxCompletionTokens
        } else {
            LimitKey::MaxTokens
        };
        ApiRequest {
            url: format!("{}/chat/completions", self.base_url),
            headers: self
                .api_key
                .iter()
                .map(|k| ("authorization".to_string(), format!("Bearer {k}")))
                .collect(),
            body: request_body(request, limit),
            auth_hint: "check OPENAI_API_KEY".into(),
        }
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        self.http
            .stream(self.api_request(&request), OpenAiDecoder::default)
    }
}

/// The key that carries a request's output limit: OpenAI's own newer models reject
/// `max_tokens`; compatible servers do not all know `max_completion_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKey {
    /// The older `max_tokens`, which compatible servers know.
    MaxTokens,
    /// `max_completion_tokens`, which OpenAI's own API wants.
    MaxCompletionTokens,
}

/// The JSON body for `request`, its output limit named by `limit`.
pub fn request_body(request: &ModelRequest, limit: LimitKey) -> Value {
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": { "include_usage": true },
        "messages": messages(&request.system, &request.messages),
    });
    let limit_key = match limit {
        LimitKey::MaxCompletionTokens => "max_completion_tokens",
        LimitKey::MaxTokens => "max_tokens",
    };
    body[limit_key] = json!(request.max_tokens);
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }
                })
            })
            .collect();
    }
    body
}

/// Our conversation as Chat Completions messages: the system prompt first, tool results
/// as `role: tool` messages right after the calls they answer (before any user text of
/// the same message), assistant calls as `tool_calls`. Thinking is not sent back.
pub fn messages(system: &str, conversation: &Messages) -> Vec<Value> {
    let mut out = Vec::new();
    if !system.is_empty() {
        out.push(json!({ "role": "system", "content": system }));
    }
    for m in conversation.iter() {
        let text = m.text();
        match m.role {
            Role::User => {
                for b in &m.content {
                    if let ContentBlock::ToolResult(r) = b.as_ref() {
                        out.push(json!({
                            "role": "tool",
                            "tool_call_id": r.tool_use_id,
                            "content": r.content,
                        }));
                    }
                }
                if !text.is_empty() {
                    out.push(json!({ "role": "user", "content": text }));
                }
            }
            Role::Assistant => {
                let calls: Vec<Value> = m
                    .tool_calls()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": { "name": c.name, "arguments": c.arguments },
                        })
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut msg = json!({ "role": "assistant", "content": text });
                if !calls.is_empty() {
                    if text.is_empty() {
                        msg["content"] = Value::Null;
                    }
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

/// The stop reason named by a `finish_reason`.
pub fn stop_reason(name: &str) -> StopReason {
    match name {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_string()),
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// Decodes one attempt's chunks. Tool calls are emitted whole once `finish_reason`
/// arrives; with `length` the last call was cut off and is dropped.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    calls: Vec<PartialCall>,
    reasoning: String,
    reasoning_sent: bool,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    done: bool,
}

impl OpenAiDecoder {
    /// The slot a tool-call fragment belongs to.
    fn slot(&mut self, fragment: &Value) -> &mut PartialCall {
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let index = fragment.get("index").and_then(Value::as_u64);
        let found = match (id, index) {
            // A known id continues its call; a new id starts one even at a reused index.
            (Some(id), _) => self.calls.iter().position(|c| c.id == id),
            (None, Some(i)) => self.calls.iter().rposition(|c| c.index == Some(i)),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let pos = match found {
            Some(p) => p,
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: id.unwrap_or_default().to_string(),
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        &mut self.calls[pos]
    }

    fn flush_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.reasoning.is_empty() && !self.reasoning_sent {
            self.reasoning_sent = true;
            out.push(StreamEvent::Thinking {
                thinking: std::mem::take(&mut self.reasoning),
                signature: None,
            });
        }
    }

    fn finish_calls(&mut self, reason: &StopReason, out: &mut Vec<StreamEvent>) {
        let mut calls = std::mem::take(&mut self.calls);
        if *reason == StopReason::MaxTokens {
            calls.pop();
        }
        for (i, c) in calls.into_iter().enumerate() {
            let arguments = if c.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                c.arguments
            };
            let id = if c.id.is_empty() {
                format!("call_{i}")
            } else {
                c.id
            };
            out.push(StreamEvent::ToolCall {
                call: ToolCall {
                    id,
                    name: c.name,
                    arguments,
                },
            });
        }
    }
}

fn read_usage(u: &Value) -> Option<Usage> {
    let prompt = u.get("prompt_tokens")?.as_u64()?;
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    Some(Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
    })
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, Failure> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            Failure::retryable(
                "malformed stream",
                ProviderError::Stream(format!(
                    "OpenAI stream: {e}: {}",
                    super::http::shorten(data, 200)
                )),
            )
        })?;
        if let Some(e) = v.get("error") {
            let message = e["message"].as_str().unwrap_or("unknown error");
            let error = ProviderError::Stream(format!("server error in stream: {message}"));
            let kind = format!("{} {}", e["type"].as_str().unwrap_or(""), e["code"]);
            return Err(
                if ["server_error", "overloaded", "rate_limit"]
                    .iter()
                    .any(|k| kind.contains(k))
                {
                    Failure::retryable("server error", error)
                } else {
                    Failure::fatal(error)
                },
            );
        }
        if let Some(u) = v.get("usage").and_then(read_usage) {
            self.usage = Some(u);
        }
        let mut out = Vec::new();
        let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(out);
        };
        let delta = &choice["delta"];
        for key in ["reasoning_content", "reasoning"] {
            if let Some(r) = delta.get(key).and_then(Value::as_str) {
                self.reasoning.push_str(r);
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.flush_reasoning(&mut out);
            out.push(StreamEvent::TextDelta { text: text.into() });
        }
        for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
            let f = &fragment["function"];
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let args = f
                .get("arguments")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let slot = self.slot(fragment);
            // Some servers repeat the whole name in every fragment: keep the first.
            if slot.name.is_empty() {
                slot.name = name.to_string();
            }
            slot.arguments.push_str(args);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            let mut reason = stop_reason(reason);
            self.flush_reasoning(&mut out);
            // Some servers say `stop` after tool calls.
            if reason == StopReason::EndTurn && !self.calls.is_empty() {
                reason = StopReason::ToolUse;
            }
            self.finish_calls(&reason, &mut out);
            self.stop = Some(reason);
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, Failure> {
        // Only `[DONE]` proves the stream is whole (the usage chunk comes after the
        // finish_reason); every compatible server we know sends it.
        if !self.done {
            return Err(Failure::retryable(
                "stream cut off",
                ProviderError::Stream("the OpenAI stream ended before [DONE]".into()),
            ));
        }
        let mut out = Vec::new();
        let reason = match self.stop.take() {
            Some(reason) => reason,
            None => {
                // `[DONE]` without a finish_reason: whatever calls arrived are whole.
                self.flush_reasoning(&mut out);
                let reason = if self.calls.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                };
                self.finish_calls(&reason, &mut out);
                reason
            }
        };
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage { usage });
        }
        out.push(StreamEvent::Stop { reason });
        Ok(out)
    }
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
