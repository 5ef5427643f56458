//! crewmaster: an actor-based multi-agent coding orchestrator.
//!
//! A tool call's one path: agent → hooks (PreToolUse) → permission engine → (approver) →
//! gate → executor → hooks (PostToolUse).
//! See README.md for the actor diagram.

pub mod agent;
pub mod approver;
pub mod auto_mode;
pub mod cli;
pub mod commands;
pub mod config;
pub mod engine;
pub mod envelope;
pub mod events;
pub mod executor;
pub mod front_matter;
pub mod gate;
pub mod hooks;
pub mod mcp;
pub mod memory;
pub mod offload;
pub mod permission;
pub mod pricing;
pub mod protocol;
pub mod provider;
pub mod sanitize;
pub mod session;
pub mod skills;
pub mod speculation;
pub mod store;
pub mod supervise;
pub mod tasks;
pub mod team;
#[cfg(test)]
mod test_kernel;
pub mod tools;
pub mod transcript;
pub mod trust;
pub mod tui;
pub mod worker;
pub mod worktree;
