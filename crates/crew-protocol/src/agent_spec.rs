//! What an agent is configured with ([`AgentSpec`]), and what a fork of it starts from
//! ([`ForkBase`]): the caller as it was when it called `agent {fork: true}`, which the
//! `agent` tool hands to the delegator without looking inside.

use std::collections::HashSet;

use crate::message::Message;
use crate::mode::AgentMode;

/// The fixed configuration of one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// The agent's id (`lead`, or a subagent's `type/id`).
    pub id: String,
    /// The model name sent to the provider.
    pub model: String,
    /// The system prompt.
    pub system_prompt: String,
    /// The tools this agent may see and call (`None`: all).
    pub allowed_tools: Option<HashSet<String>>,
    /// The most model turns one run may take.
    pub max_turns: u32,
    /// Output token limit per turn.
    pub max_tokens: u32,
}

/// The agent type forks are registered and identified under (`fork/<task id>`).
pub const FORK_TYPE: &str = "fork";

/// What a child of the agent that called `agent {fork: true}` starts from: a copy of the
/// caller at the moment of the call. Set by the runner on the tool context of each turn
/// that calls `agent`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkBase {
    /// The caller's configuration (system prompt, model, tools).
    pub spec: AgentSpec,
    /// The caller's Agent Mode for the run that made the call.
    pub mode: AgentMode,
    /// The caller's conversation up to and including the assistant message that called
    /// `agent`.
    pub messages: Vec<Message>,
}
