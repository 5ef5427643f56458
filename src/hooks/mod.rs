//! Hooks: the user's own programs, configured in Claude Code's format, run at points of
//! an agent's work (design.md: "Hooks — runs Claude Code-format hooks for each event;
//! PreToolUse first").
//!
//! Modules: `event` (the events), `config` (the `hooks` object of each settings layer and
//! agent definitions, folder trust), `plugins` (plugins' `hooks/hooks.json`), `matcher`
//! (regex over names), `names` (our tool names and arguments as Claude Code's),
//! `protocol` (stdin/stdout JSON, exit codes), `process` (one hook in its own process
//! group), `report` (combining an event's hooks), `actor` (the `Hooks` actor: which hooks
//! run), `client` (firing an event), `tool_events` (PreToolUse/PostToolUse on the call
//! path), `agent_events` (the agent loop's and session's events), `listing` (the effective
//! hooks, for `crew hooks list` and `/hooks`).

pub(crate) mod actor;
pub(crate) mod agent_events;
pub(crate) mod client;
pub mod config;
pub(crate) mod event;
pub(crate) mod listing;
pub(crate) mod matcher;
pub(crate) mod names;
pub(crate) mod plugins;
pub(crate) mod process;
pub(crate) mod protocol;
pub(crate) mod report;
pub(crate) mod tool_events;

pub use actor::{Configured, HookTable, Hooks, HooksMsg};
pub use client::{Firing, HookClient};
pub use config::{Hook, Origin};
pub use event::HookEvent;
pub use report::Report;
pub use tool_events::PreToolUse;
