//! crewmaster's model interface and wire protocols. A provider turns a [`ModelRequest`]
//! into a stream of normalised [`StreamEvent`]s; dropping the stream cancels the request.
//! Each provider implements one required `stream()`; request/response conversion lives in
//! pure functions beside it. Here: the Anthropic Messages and OpenAI Chat Completions
//! codecs (`anthropic`, `openai`), their HTTP transport with retries (`http`, `retry`),
//! the request's view of a conversation with micro-compaction (`messages`, `micro`), the
//! provider configuration (`config`), a prompt-cache simulator (`cache_sim`) and the
//! scripted model tests and examples drive agents with (`scripted`, `replay`).
//!
//! It depends on `crew-protocol` for the data it carries and on the HTTP and async
//! plumbing it needs, and must never depend on `crewmaster`, `ractor`, the permission
//! engine, the tools or the sandbox: a model is untrusted input, and this layer only
//! turns bytes into events.

pub mod anthropic;
pub mod cache_sim;
pub mod config;
pub mod http;
pub mod messages;
pub mod micro;
pub mod openai;
pub mod replay;
pub mod retry;
pub mod scripted;

use std::pin::Pin;

use std::sync::Arc;

use futures::Stream;
use serde::{Deserialize, Serialize};

pub use messages::Messages;

use crew_protocol::tool::ToolSpec;
use crew_protocol::{StopReason, ToolCall, Usage};

/// One request for a model turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The model name, without the provider prefix.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far as sent: shared with the agent, not copied, with this
    /// turn's reminder and micro-compaction's stubs (`messages::Messages::iter`).
    pub messages: Messages,
    /// The tool definitions the model may call (shared: the same list request after
    /// request).
    pub tools: Arc<[ToolSpec]>,
    /// Output token limit.
    pub max_tokens: u32,
    /// The requesting agent (never sent to an API; lets the scripted model route turns).
    #[serde(default)]
    pub agent: String,
}

/// A normalised streaming event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Visible text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A complete reasoning block (sent back verbatim on later turns).
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Its signature, if the provider gave one.
        signature: Option<String>,
    },
    /// A complete tool call (never a fragment: a call whose input did not finish
    /// streaming is never emitted).
    ToolCall {
        /// The call.
        call: ToolCall,
    },
    /// Token usage so far for this turn (the last one wins).
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// The turn's stop reason.
    Stop {
        /// Why the turn ended.
        reason: StopReason,
    },
    /// The provider is retrying after a failure (shown to the user).
    Retrying {
        /// The attempt about to start (2 = first retry).
        attempt: u32,
        /// The wait before it, in milliseconds.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
}

/// Why a model turn failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ProviderError {
    /// The configuration is unusable (names the variable or setting to fix).
    #[error("{0}")]
    Config(String),
    /// The server answered with an error status.
    #[error("HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The error message from the body.
        message: String,
    },
    /// The connection failed or broke.
    #[error("connection error: {0}")]
    Connection(String),
    /// The stream carried something we could not understand, or an error event.
    #[error("stream error: {0}")]
    Stream(String),
}

/// A boxed stream of provider events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A model backend.
pub trait Provider: Send + Sync + 'static {
    /// A short name for logs (`anthropic`, `openai`, `script`).
    fn name(&self) -> &str;

    /// Starts one turn. The returned stream ends after `Stop` or an error.
    fn stream(&self, request: ModelRequest) -> EventStream;
}
