//! crewmaster's protocol: the plain data every layer exchanges — an agent's configuration
//! and a fork's snapshot of it ([`agent_spec`]), messages and their
//! content blocks, tool calls and results, token usage and stop reasons ([`message`]),
//! what the model is shown of a tool ([`tool`]), what a run is for ([`mode`]) and the tool
//! list a skill or command narrows it to ([`name_limit`]); and of
//! the permission engine's contract, what it answers ([`decision`]), the modes it decides
//! in ([`permission_mode`]) and what it must know of each tool ([`permission_spec`]),
//! and the sandbox profile it picks for a command, which the runner enforces
//! ([`sandbox_profile`]).
//!
//! Types only, with small constructors and conversions: no I/O, no async runtime, no
//! actors. This crate must never depend on `tokio`, `ractor`, another `crew-*` crate or
//! `crewmaster` itself; everything else depends on it, so an import that runs back up
//! from here is a compile error. Its dependencies are `serde` and `serde_json`.

pub mod agent_spec;
pub mod decision;
pub mod message;
pub mod mode;
pub mod name_limit;
pub mod permission_mode;
pub mod permission_spec;
pub mod sandbox_profile;
pub mod tool;

pub use message::{ContentBlock, Message, Role, StopReason, ToolCall, ToolResult, Usage};
