//! The script file format of the scripted provider (`--model script:PATH`), and its parser.
//!
//! Format (JSON):
//!
//! ```json
//! {
//!   "turns": [
//!     { "text": "Looking around.",
//!       "tool_calls": [ { "name": "find_files", "input": { "pattern": "**/*.md" } } ] },
//!     { "text": "Done.", "usage": { "input_tokens": 10, "output_tokens": 3 } }
//!   ],
//!   "agents": { "<agent id or subagent type>": { "turns": [ ... ] } }
//! }
//! ```
//!
//! A turn has optional `text`, `thinking`, `tool_calls` (each with `name` and either an
//! `input` value or raw `arguments` text, optional `id`), `usage`, `stop_reason`,
//! `delay_ms` (simulated latency before the first event), `chunk_delay_ms` (between
//! text chunks) and `error` (the turn fails with this message). `panic: true` makes the
//! turn panic (to test crash containment).
//!
//! Two fields let a test gate a turn on its own events instead of on wall-clock time:
//! `touch` (a path, created empty when the turn starts, after `delay_ms`) tells the test
//! the turn is running; `wait_for` (a path) makes the turn stream its thinking and text,
//! then block until that file exists before it sends its tool calls and ends
//! (`wait_timeout_ms`, default 120000, bounds the wait; the turn then fails naming the
//! file). In both paths `{agent}` stands for the requesting agent's id with `/` replaced
//! by `_`, so agents sharing one script signal separately. Relative paths are taken from
//! crew's working directory. Requests from an agent whose id or type
//! (`ModelRequest::agent`, `type/id`) has an entry under `agents` replay that entry —
//! each such agent from its first turn; all others share `turns`. A compaction's summary
//! request comes from `<agent>/compact`, so an entry `compact` scripts every summary
//! turn (without one, the summary is the agent's next turn). Once a script runs out, every further turn answers
//! `[script exhausted]` and ends.
//!
//! Top-level `"model": NAME` makes the run use (and be priced as) that model name;
//! `"cache": true` makes turns without their own `usage` report what Anthropic's prompt
//! cache would bill for the request (`cache_sim`), output estimated at 4 bytes a token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crew_protocol::{StopReason, Usage};

/// A script file's contents.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns replayed to agents without their own entry.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Per-agent scripts, keyed by agent id or subagent type.
    #[serde(default)]
    pub agents: HashMap<String, AgentScript>,
    /// The model this script stands in for: requests name it and its price applies
    /// (default: `script`, which has no price).
    #[serde(default)]
    pub model: Option<String>,
    /// Report each turn's usage as Anthropic's prompt cache would bill the request
    /// (`cache_sim`); a turn with its own `usage` keeps it.
    #[serde(default)]
    pub cache: bool,
}

/// One agent's turns.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentScript {
    /// The turns, in order.
    pub turns: Vec<Turn>,
}

/// One scripted model turn.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Text the model streams.
    #[serde(default)]
    pub text: Option<String>,
    /// A reasoning block.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Reported usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Stop reason (default: `tool_use` when there are calls, else `end_turn`).
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Latency before the first event.
    #[serde(default)]
    pub delay_ms: u64,
    /// Latency between text chunks.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Fail the turn with this message.
    #[serde(default)]
    pub error: Option<String>,
    /// Panic inside the provider stream.
    #[serde(default)]
    pub panic: bool,
    /// Create this (empty) file when the turn starts, after `delay_ms`.
    #[serde(default)]
    pub touch: Option<String>,
    /// After the thinking and text, block until this file exists.
    #[serde(default)]
    pub wait_for: Option<String>,
    /// Bound on the `wait_for` wait, in milliseconds (default 120000).
    #[serde(default)]
    pub wait_timeout_ms: Option<u64>,
}

/// One scripted tool call.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// Call id (default: `call_<turn>_<index>`).
    #[serde(default)]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON value, kept as its text until the call is made: a script of
    /// thousands of calls would otherwise hold a parsed tree for each (a long bench's
    /// script took 6 MiB that way).
    #[serde(default)]
    pub input: Option<Box<RawValue>>,
    /// Arguments as raw text (to send malformed JSON).
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid script.
    #[error("script {path} is invalid at line {line}, column {column}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// Parses a script from JSON text; `origin` names it in errors.
pub fn parse(text: &str, origin: &Path) -> Result<Script, ScriptError> {
    serde_json::from_str(text).map_err(|e| ScriptError::Parse {
        path: origin.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// Reads and parses a script file.
pub fn load(path: &Path) -> Result<Script, ScriptError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}
