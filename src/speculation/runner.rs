//! The speculation's loop: the lead's conversation forked (as `agent/fork.rs` forks it:
//! same system prompt, model and tool list, so the provider's cache serves the shared
//! prefix), the suggested prompt appended, and model turns run until the model finishes,
//! a call would need more than a read (`calls.rs` decides), a limit is reached (20
//! turns or 100 messages), or the user typed something else (cancel). Its messages go
//! nowhere until adopted: its events go to a private bus.

use futures::StreamExt;
use ractor::{Actor, ActorRef};
use tokio_util::sync::CancellationToken;

use super::calls::{CallPath, Halt};
use super::overlay::Overlay;
use crate::agent::lead_actor::LeadSnapshot;
use crate::agent::mode::{self, AgentMode};
use crate::agent::pipeline::Pipeline;
use crate::approver::actor::{Approver, ApproverMsg, ApproverPolicy};
use crate::events::EventBus;
use crate::gate::GatePolicy;
use crate::gate::actor::GateMsg;
use crate::protocol::{ContentBlock, Message, Role, ToolCall, ToolResult, Usage};
use crate::provider::{ModelRequest, StreamEvent};
use crate::tools::deferred::Deferral;

/// How far a speculation may run ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model turns.
    pub max_turns: u32,
    /// Messages added to the conversation.
    pub max_messages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: 20,
            max_messages: 100,
        }
    }
}

/// How a speculation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The model finished its answer: the speculation can be adopted.
    Completed,
    /// A call it may not run: it stopped before running it.
    Halted(Halt),
    /// A limit was reached.
    Limit(String),
    /// The user typed something else (or the session ended).
    Cancelled,
    /// The model request failed.
    Failed(String),
}

/// What a speculation produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Speculated {
    /// The messages it added after the lead's conversation: the prompt first.
    pub messages: Vec<Message>,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls run.
    pub tool_calls: u32,
    /// The last assistant text.
    pub result: String,
    /// Summed usage.
    pub usage: Usage,
    /// How it ended.
    pub ending: Ending,
}

/// The speculation's copy of the lead: its own agent id (registered with the gate), a
/// headless approver and a private event bus. Dropping it unregisters and stops both.
pub struct Fork {
    snapshot: LeadSnapshot,
    path: CallPath,
    approver: ActorRef<ApproverMsg>,
}

/// Why a speculation's fork of the lead could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// Its headless approver did not start.
    #[error("cannot start the speculation's approver: {0}")]
    Approver(ractor::SpawnErr),
}

impl Fork {
    /// Forks the lead as agent `agent` (`speculation/<n>`); `cancel` also stops the
    /// tools it runs.
    pub async fn new(
        snapshot: LeadSnapshot,
        agent: &str,
        cancel: &CancellationToken,
    ) -> Result<Self, ForkError> {
        let (approver, _) = Actor::spawn(None, Approver, ApproverPolicy::Headless)
            .await
            .map_err(ForkError::Approver)?;
        let mut pipeline: Pipeline = snapshot.runner.pipeline.clone();
        pipeline.approver = crate::supervise::Slot::new(approver.clone());
        pipeline.events = EventBus::new();
        let mut runner = snapshot.runner.clone();
        runner.pipeline = pipeline.clone();
        runner.spec.id = agent.to_string();
        pipeline.gate.cast(GateMsg::Register {
            agent: agent.to_string(),
            policy: GatePolicy::new(AgentMode::Chat, runner.spec.allowed_tools.clone()),
        });
        let caller = runner.caller(&snapshot.place, cancel);
        Ok(Self {
            path: CallPath { pipeline, caller },
            snapshot,
            approver,
        })
    }

    /// Runs `prompt` ahead, writing into `overlay`, until it ends (see [`Ending`]).
    pub async fn run(
        &self,
        prompt: &str,
        overlay: &mut Overlay,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Speculated {
        let lead = &self.snapshot.runner;
        let place = &self.snapshot.place;
        let registry = &self.path.pipeline.registry;
        let visible =
            mode::visible_definitions(AgentMode::Chat, registry, lead.spec.allowed_tools.as_ref());
        let deferral = Deferral::plan(visible, registry);
        let memory =
            crate::memory::AgentMemory::start(&place.walk, &place.cwd, &self.snapshot.conversation);
        let system =
            crate::agent::prompt::with_memory(&lead.spec.system_prompt, &memory.prompt_section());
        let mut conversation = self.snapshot.conversation.clone();
        let base = conversation.len();
        conversation.push(Message::user_text(prompt));
        let mut out = Speculated {
            messages: Vec::new(),
            turns: 0,
            tool_calls: 0,
            result: String::new(),
            usage: Usage::default(),
            ending: Ending::Limit(format!("{} turns", limits.max_turns)),
        };
        for turn in 1..=limits.max_turns {
            let tools = deferral.request_tools(&conversation);
            let request = ModelRequest {
                model: lead.spec.model.clone(),
                system: system.clone(),
                messages: conversation.clone().into(),
                tools: tools.clone(),
                max_tokens: lead.spec.max_tokens,
                agent: self.path.caller.agent.clone(),
            };
            let (thinking, text, calls, usage) = match self.turn(request, cancel).await {
                Ok(t) => t,
                Err(ending) => {
                    out.ending = ending;
                    break;
                }
            };
            out.turns = turn;
            out.usage.add(&usage);
            if !text.is_empty() || calls.is_empty() {
                out.result = text.clone();
            }
            // As the lead's loop stores a turn: reasoning first, then text, then calls.
            let mut content = thinking;
            if !text.is_empty() {
                content.push(ContentBlock::Text { text });
            }
            content.extend(calls.iter().cloned().map(ContentBlock::ToolUse));
            if calls.is_empty() {
                conversation.push(Message {
                    role: Role::Assistant,
                    content,
                });
                out.ending = Ending::Completed;
                break;
            }
            let offered: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            match self.run_calls(calls, &offered, overlay).await {
                Ok(results) => {
                    out.tool_calls += results.len() as u32;
                    conversation.push(Message {
                        role: Role::Assistant,
                        content,
                    });
                    conversation.push(Message {
                        role: Role::User,
                        content: results.into_iter().map(ContentBlock::ToolResult).collect(),
                    });
                }
                // The turn whose call may not run is left out: it was never answered.
                Err(halt) => {
                    out.ending = Ending::Halted(halt);
                    break;
                }
            }
            if cancel.is_cancelled() {
                out.ending = Ending::Cancelled;
                break;
            }
            if conversation.len() - base >= limits.max_messages {
                out.ending = Ending::Limit(format!("{} messages", limits.max_messages));
                break;
            }
        }
        out.messages = conversation.split_off(base);
        out
    }

    /// Runs one turn's calls in order; the first that may not run stops them all.
    async fn run_calls(
        &self,
        calls: Vec<ToolCall>,
        offered: &[&str],
        overlay: &mut Overlay,
    ) -> Result<Vec<ToolResult>, Halt> {
        let registry = &self.path.pipeline.registry;
        let mut results = Vec::with_capacity(calls.len());
        for mut call in calls {
            let Some(name) = registry.canonical(&call.name).map(String::from) else {
                return Err(Halt::SideEffect(call.name));
            };
            // A deferred tool not loaded yet is refused by the real loop: not foreseeable.
            if !offered.contains(&name.as_str()) {
                return Err(Halt::SideEffect(name));
            }
            call.name = name;
            results.push(self.path.run(call, overlay).await?);
        }
        Ok(results)
    }

    /// Streams one model turn: its text, calls and usage.
    async fn turn(
        &self,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<(Vec<ContentBlock>, String, Vec<ToolCall>, Usage), Ending> {
        let mut stream = self.snapshot.runner.provider.stream(request);
        let (mut text, mut calls, mut usage) = (String::new(), Vec::new(), Usage::default());
        let mut thinking = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Ending::Cancelled),
                next = stream.next() => next,
            };
            match next {
                None => return Ok((thinking, text, calls, usage)),
                Some(Ok(StreamEvent::Thinking {
                    thinking: t,
                    signature,
                })) => thinking.push(ContentBlock::Thinking {
                    thinking: t,
                    signature,
                }),
                Some(Err(e)) => return Err(Ending::Failed(e.to_string())),
                Some(Ok(StreamEvent::TextDelta { text: t })) => text.push_str(&t),
                Some(Ok(StreamEvent::ToolCall { call })) => calls.push(call),
                Some(Ok(StreamEvent::Usage { usage: u })) => usage = u,
                Some(Ok(_)) => {}
            }
        }
    }
}

impl Drop for Fork {
    fn drop(&mut self) {
        self.path.pipeline.gate.cast(GateMsg::Unregister {
            agent: self.path.caller.agent.clone(),
        });
        self.approver.stop(None);
    }
}
