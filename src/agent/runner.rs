//! The ReAct loop: stream a model turn, run its tool calls through the pipeline (reads
//! concurrently, side effects in order, results in call order), append the results, and
//! repeat until a turn makes no tool calls, the turn limit is reached, or the run is
//! cancelled. The conversation only ever receives whole turns: a cancelled or failed
//! turn leaves no half message or unanswered tool call behind.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::join_all;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use ractor::ActorRef;

use super::delegate::Delegator;
use super::fork::ForkBase;
use super::mode::{self, AgentMode};
use super::pipeline::{CallerContext, Pipeline};
use crate::events::EventKind;
use crate::gate::actor::GateMsg;
use crate::hooks::agent_events::Role as HookRole;
use crate::permission::SharedMode;
use crate::protocol::{ContentBlock, Message, Role, StopReason, ToolCall, ToolResult, Usage};
use crate::provider::{ModelRequest, Provider, ProviderError, StreamEvent};
use crate::skills;
use crate::tasks::actor::TaskMsg;
use crate::tools::deferred::Deferral;
use crate::tools::{CommandSandbox, Safety, ToolContext};

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

/// What one run is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Chat, plan or do.
    pub mode: AgentMode,
    /// The user's task.
    pub task: String,
    /// The approved plan (Do mode).
    pub plan: Option<String>,
}

/// Where and under which permission mode a run works.
#[derive(Clone)]
pub struct RunPlace {
    /// The working directory (and first sandbox root).
    pub cwd: std::path::PathBuf,
    /// The permission mode, shared with whoever may switch it; each call reads it.
    pub permission_mode: SharedMode,
    /// OS confinement for commands.
    pub sandbox: CommandSandbox,
    /// Starts subagents for this agent (`None`: the `agent` tool refuses).
    pub delegate: Option<Arc<dyn Delegator>>,
    /// The session's task manager (`None`: no background tasks).
    pub tasks: Option<ActorRef<TaskMsg>>,
    /// What directory walkers may show (built once per session from its policy).
    pub walk: Arc<crate::permission::walk::WalkFilter>,
    /// The agent's team and member name (`None`: not in a team).
    pub team: Option<crate::team::TeamHandle>,
    /// The agent's mailbox in its team: unread mail is injected at each turn boundary.
    pub mail: Option<Arc<crate::team::actor::Mailbox>>,
}

impl std::fmt::Debug for RunPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunPlace")
            .field("cwd", &self.cwd)
            .field("permission_mode", &self.permission_mode)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model finished.
    Completed,
    /// The turn limit was reached while the model still wanted tools.
    MaxTurns,
    /// The run was cancelled.
    Cancelled,
    /// The provider failed.
    Failed,
    /// The session's spending passed its budget (`--max-budget-usd`); the run stopped
    /// between turns.
    BudgetExhausted,
}

impl RunStatus {
    /// The status name used in events and output.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::MaxTurns => "max_turns",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Failed => "failed",
            RunStatus::BudgetExhausted => "budget_exhausted",
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The last assistant text (or the error, when failed).
    pub result: String,
    /// How the run ended.
    pub status: RunStatus,
    /// Summed token usage.
    pub usage: Usage,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: u32,
}

/// Runs an agent's loop against a provider and the tool pipeline.
#[derive(Clone)]
pub struct Runner {
    /// The tool path.
    pub pipeline: Pipeline,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// The agent's configuration.
    pub spec: AgentSpec,
}

struct TurnOutput {
    text: String,
    thinking: Vec<ContentBlock>,
    calls: Vec<ToolCall>,
    usage: Usage,
    stop: StopReason,
}

enum TurnError {
    Cancelled,
    Provider(ProviderError),
}

/// The first user message of a run.
pub fn opening_message(req: &RunRequest) -> String {
    match req.mode {
        AgentMode::Chat => req.task.clone(),
        AgentMode::Plan => mode::plan_prompt(&req.task),
        AgentMode::Do => mode::do_prompt(&req.task, req.plan.as_deref().unwrap_or("")),
    }
}

impl Runner {
    /// Runs `req` on top of `conversation`, appending every completed message to it.
    pub async fn run(
        &self,
        conversation: &mut Vec<Message>,
        req: &RunRequest,
        place: &RunPlace,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let agent = self.spec.id.as_str();
        let events = &self.pipeline.events;
        events.publish(
            agent,
            EventKind::RunStarted {
                mode: req.mode.as_str().into(),
                task: req.task.clone(),
            },
        );
        let visible = mode::visible_definitions(
            req.mode,
            &self.pipeline.registry,
            self.spec.allowed_tools.as_ref(),
        );
        // Many MCP tools: they wait behind `tool_search` until the conversation loads them.
        let deferral = Deferral::plan(visible, &self.pipeline.registry);
        // The gate policy for this run (Agent Mode, tool list) was registered with the
        // gate by the agent's actor; the loop only carries the permission mode.
        let mut caller = self.caller(place, &cancel);
        caller.tool_ctx.deferred_tools = deferral.searchable();
        // Auto mode's classifier sees the task and the user's latest words, nothing more.
        caller.intent = Arc::new(crate::permission::auto::classifier::Intent::new(
            &req.task,
            agent == "lead",
            conversation,
        ));
        // Memory files: the cwd's and above go into this run's system prompt; those of
        // directories below are added to tool results as the agent reaches them.
        let mut memory = crate::memory::AgentMemory::start(&place.walk, &place.cwd, conversation);
        if conversation.is_empty() {
            for message in memory.warnings() {
                events.publish(agent, EventKind::Error { message });
            }
        }
        let system = super::prompt::with_memory(&self.spec.system_prompt, &memory.prompt_section());
        let role = hook_role(agent, place);
        let mut opening = Message::user_text(opening_message(req));
        let mode = place.permission_mode.get();
        let hooks = &self.pipeline.hooks;
        // crew's own follow-up runs are not the user's prompts.
        let prompt = (!super::follow_up::is_follow_up(&req.task)).then_some(req.task.as_str());
        match hooks
            .run_start(role, agent, &place.cwd, mode, prompt, &cancel)
            .await
        {
            Ok(context) => opening
                .content
                .extend(context.into_iter().map(|text| ContentBlock::Text { text })),
            Err(refused) => {
                // The turn ends here: so do the skill's and the command's tool lists.
                self.pipeline.gate.cast(GateMsg::EndLimits {
                    agent: agent.to_string(),
                });
                return self.refused_by_hook(refused);
            }
        }
        conversation.push(opening);
        let mut stop_hook_active = false;
        // Messages are published (for the transcript) once final: user messages just
        // before the request that carries them, assistant messages when complete.
        let mut published = conversation.len() - 1;
        // Counts the context and compacts it at the `autoCompact` threshold.
        let mut context = super::context::Guard::new(self);

        let mut outcome = RunOutcome {
            result: String::new(),
            status: RunStatus::MaxTurns,
            usage: Usage::default(),
            turns: 0,
            tool_calls: 0,
        };
        for turn in 1..=self.spec.max_turns {
            // Between turns only: the last turn's tool calls have all finished.
            if let Some(reason) = self.pipeline.budget.stop_reason() {
                outcome.status = RunStatus::BudgetExhausted;
                outcome.result = reason;
                break;
            }
            if let Some(tasks) = &place.tasks {
                inject_notifications(conversation, tasks, agent).await;
            }
            let delivered = match &place.mail {
                Some(mail) => inject_mail(conversation, mail).await,
                None => None,
            };
            self.publish_messages(conversation, &mut published);
            // Acknowledged only once the messages are in the conversation and published to
            // the transcript (the inbox's delivery contract).
            if let (Some(mail), Some(through)) = (&place.mail, delivered) {
                mail.ack(through).await;
            }
            let reminder = mode::reminder(req.mode, turn);
            let tools = deferral.request_tools(conversation);
            let compacted = context
                .before_turn(
                    self,
                    conversation,
                    &system,
                    &tools,
                    reminder.as_deref(),
                    req,
                    place,
                    &cancel,
                )
                .await;
            match compacted {
                Ok(None) => {}
                // The compaction was recorded as one event holding the new conversation.
                Ok(Some(usage)) => {
                    outcome.usage.add(&usage);
                    published = conversation.len();
                }
                Err(stop) => {
                    outcome.status = stop.status;
                    outcome.result = stop.message;
                    break;
                }
            }
            let request = ModelRequest {
                model: self.spec.model.clone(),
                system: system.clone(),
                messages: crate::offload::micro::compact(
                    with_reminder(conversation, reminder),
                    &crate::offload::micro::MicroPolicy::default(),
                ),
                tools,
                max_tokens: self.spec.max_tokens,
                agent: agent.to_string(),
            };
            let output = match self.stream_turn(request, &cancel).await {
                Ok(o) => o,
                Err(TurnError::Cancelled) => {
                    outcome.status = RunStatus::Cancelled;
                    break;
                }
                Err(TurnError::Provider(e)) => {
                    events.publish(
                        agent,
                        EventKind::Error {
                            message: e.to_string(),
                        },
                    );
                    outcome.status = RunStatus::Failed;
                    outcome.result = format!("model request failed: {e}");
                    break;
                }
            };
            outcome.turns = turn;
            let (budget, model) = (&self.pipeline.budget, &self.spec.model);
            super::budget::after_turn(budget, events, agent, model, turn, &output.usage);
            outcome.usage.add(&output.usage);
            events.publish(
                agent,
                EventKind::TurnFinished {
                    turn,
                    stop_reason: output.stop.clone(),
                    usage: output.usage,
                },
            );
            conversation.push(assistant_message(&output));
            context.after_turn(&output.usage, conversation.len());
            self.publish_messages(conversation, &mut published);
            if !output.text.is_empty() || output.calls.is_empty() {
                outcome.result = output.text.clone();
            }
            if output.calls.is_empty() {
                outcome.status = RunStatus::Completed;
                // A Stop hook that blocks makes the agent go on with its reason.
                let mode = place.permission_mode.get();
                let report = hooks
                    .stop(role, agent, &place.cwd, mode, stop_hook_active, &cancel)
                    .await;
                match report.block {
                    Some(reason) if report.stop.is_none() && turn < self.spec.max_turns => {
                        stop_hook_active = true;
                        let event = role.stop_event();
                        conversation.push(Message::user_text(format!(
                            "<hook event=\"{event}\" decision=\"block\">\n{reason}\n</hook>"
                        )));
                        continue;
                    }
                    _ => break,
                }
            }
            outcome.tool_calls += output.calls.len() as u32;
            let mut caller = caller.clone();
            caller.tool_ctx.fork = self.fork_base(conversation, req.mode, &output.calls, &system);
            let calls = output.calls.clone();
            let registry = &self.pipeline.registry;
            let mut results = deferral
                .run_loaded(registry, conversation, output.calls, |calls| {
                    self.run_calls(&caller, calls)
                })
                .await;
            for (call, result) in calls.iter().zip(results.iter_mut()) {
                let tool = registry.canonical(&call.name).unwrap_or("");
                for message in memory.after_call(tool, call, result) {
                    events.publish(agent, EventKind::Error { message });
                }
            }
            conversation.push(Message {
                role: Role::User,
                content: results.into_iter().map(ContentBlock::ToolResult).collect(),
            });
            if cancel.is_cancelled() {
                outcome.status = RunStatus::Cancelled;
                break;
            }
            if let Some(reason) = caller.hook_stopped() {
                outcome.status = RunStatus::Completed;
                outcome.result = format!("stopped by a hook: {reason}");
                break;
            }
        }
        self.publish_messages(conversation, &mut published);
        // The turn is over: the active skill's and the command's tool lists end with it.
        self.pipeline.gate.cast(GateMsg::EndLimits {
            agent: agent.to_string(),
        });
        events.publish(
            agent,
            EventKind::RunFinished {
                result: outcome.result.clone(),
                status: outcome.status.as_str().into(),
                usage: outcome.usage,
                turns: outcome.turns,
            },
        );
        outcome
    }

    /// The calling agent's situation for a run (or a single call) in `place`.
    pub fn caller(&self, place: &RunPlace, cancel: &CancellationToken) -> CallerContext {
        let agent = self.spec.id.as_str();
        let mut tool_ctx = ToolContext::new(place.cwd.clone(), agent);
        tool_ctx.cancel = cancel.clone();
        tool_ctx.sandbox = place.sandbox.clone();
        tool_ctx.delegate = place.delegate.clone();
        tool_ctx.tasks = place.tasks.clone();
        tool_ctx.walk = place.walk.clone();
        // A teammate reaches the work list as itself; the lead's handle comes with its place.
        tool_ctx.team = place.team.clone().or_else(|| {
            place.mail.as_ref().map(|m| {
                crate::team::TeamHandle::new(Arc::new(m.team.clone()), m.me.clone())
                    .with_events(self.pipeline.events.clone())
            })
        });
        tool_ctx.mailbox = place.mail.clone();
        CallerContext {
            agent: agent.to_string(),
            mode: place.permission_mode.clone(),
            tool_ctx,
            hook_stop: Default::default(),
            intent: Default::default(),
        }
    }

    /// The outcome of a run whose prompt a `UserPromptSubmit` hook refused: the model
    /// never saw it, and the user is told why.
    fn refused_by_hook(&self, reason: String) -> RunOutcome {
        let agent = self.spec.id.as_str();
        let message = format!("UserPromptSubmit hook blocked the prompt: {reason}");
        self.pipeline.events.publish(
            agent,
            EventKind::Hook {
                event: "UserPromptSubmit".into(),
                message: message.clone(),
            },
        );
        let outcome = RunOutcome {
            result: message,
            status: RunStatus::Completed,
            usage: Usage::default(),
            turns: 0,
            tool_calls: 0,
        };
        self.pipeline.events.publish(
            agent,
            EventKind::RunFinished {
                result: outcome.result.clone(),
                status: outcome.status.as_str().into(),
                usage: outcome.usage,
                turns: 0,
            },
        );
        outcome
    }

    /// A copy of this agent for the forks its `agent` calls of this turn may start
    /// (`None` when the turn does not call `agent`: no copy is made). `system` is the
    /// system prompt as sent, memory files included: the child keeps it verbatim.
    fn fork_base(
        &self,
        conversation: &[Message],
        mode: AgentMode,
        calls: &[ToolCall],
        system: &str,
    ) -> Option<Arc<ForkBase>> {
        let registry = &self.pipeline.registry;
        calls
            .iter()
            .any(|c| registry.canonical(&c.name) == Some("agent"))
            .then(|| {
                let mut spec = self.spec.clone();
                spec.system_prompt = system.to_string();
                Arc::new(ForkBase {
                    spec,
                    mode,
                    messages: conversation.to_vec(),
                })
            })
    }

    fn publish_messages(&self, conversation: &[Message], published: &mut usize) {
        for message in &conversation[*published..] {
            self.pipeline.events.publish(
                &self.spec.id,
                EventKind::MessageAppended {
                    message: message.clone(),
                },
            );
        }
        *published = conversation.len();
    }

    async fn stream_turn(
        &self,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<TurnOutput, TurnError> {
        let agent = self.spec.id.as_str();
        let events = &self.pipeline.events;
        let mut stream = self.provider.stream(request);
        let mut out = TurnOutput {
            text: String::new(),
            thinking: Vec::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            stop: StopReason::EndTurn,
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(TurnError::Cancelled),
                next = stream.next() => next,
            };
            match next {
                None => break,
                Some(Err(e)) => return Err(TurnError::Provider(e)),
                Some(Ok(event)) => match event {
                    StreamEvent::TextDelta { text } => {
                        out.text.push_str(&text);
                        events.publish(agent, EventKind::TextDelta { text });
                    }
                    StreamEvent::Thinking {
                        thinking,
                        signature,
                    } => {
                        out.thinking.push(ContentBlock::Thinking {
                            thinking,
                            signature,
                        });
                    }
                    StreamEvent::ToolCall { call } => out.calls.push(call),
                    StreamEvent::Usage { usage } => out.usage = usage,
                    StreamEvent::Stop { reason } => out.stop = reason,
                    StreamEvent::Retrying {
                        attempt,
                        delay_ms,
                        reason,
                    } => events.publish(
                        agent,
                        EventKind::Retrying {
                            attempt,
                            delay_ms,
                            reason,
                        },
                    ),
                },
            }
        }
        Ok(out)
    }

    /// Runs calls: consecutive read-only calls concurrently, side-effecting calls one at
    /// a time in order; results come back in call order.
    async fn run_calls(&self, caller: &CallerContext, calls: Vec<ToolCall>) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut batch: Vec<ToolCall> = Vec::new();
        for call in calls {
            let read_only = self.pipeline.registry.safety(&call.name) == Some(Safety::ReadOnly);
            // Loading a skill changes what the calls after it may run: it runs alone.
            let skill = self.pipeline.registry.canonical(&call.name) == Some(skills::tool::NAME);
            if read_only && !skill {
                batch.push(call);
                continue;
            }
            results.extend(self.run_batch(caller, std::mem::take(&mut batch)).await);
            let args = call.arguments.clone();
            let result = self.pipeline.dispatch(caller, call).await;
            if skill && !result.is_error {
                self.activate_skill(&args);
            }
            results.push(result);
        }
        results.extend(self.run_batch(caller, batch).await);
        results
    }

    /// Puts a just-loaded skill's `allowed-tools` in force at the gate for this agent
    /// (before its next call is submitted: one sender, one mailbox, in order).
    fn activate_skill(&self, arguments: &str) {
        if let Some(limit) = self.pipeline.registry.skills().limit_for(arguments) {
            let agent = self.spec.id.clone();
            self.pipeline.gate.cast(GateMsg::Narrow { agent, limit });
        }
    }

    async fn run_batch(&self, caller: &CallerContext, batch: Vec<ToolCall>) -> Vec<ToolResult> {
        join_all(batch.into_iter().map(|c| self.pipeline.dispatch(caller, c))).await
    }
}

/// Which hook events an agent's loop fires: the lead is `lead` (it has a mailbox too, in
/// a team), a teammate has a mailbox, every other agent is a subagent.
fn hook_role(agent: &str, place: &RunPlace) -> HookRole {
    if agent == "lead" {
        HookRole::Lead
    } else if place.mail.is_some() {
        HookRole::Teammate
    } else {
        HookRole::Subagent
    }
}

/// Appends the completion notices of this agent's background tasks to the last user
/// message, so the model learns of them on its next turn. They are stored: they are
/// things that happened.
async fn inject_notifications(
    conversation: &mut [Message],
    tasks: &ActorRef<TaskMsg>,
    agent: &str,
) {
    let notes = match tasks
        .call(
            |r| TaskMsg::TakeNotifications(agent.to_string(), r),
            Some(std::time::Duration::from_secs(10)),
        )
        .await
    {
        Ok(ractor::rpc::CallResult::Success(notes)) => notes,
        _ => return,
    };
    if let Some(last) = conversation.iter_mut().rev().find(|m| m.role == Role::User) {
        for rec in notes {
            last.content.push(ContentBlock::Text {
                text: crate::tasks::notification_text(&rec),
            });
        }
    }
}

/// Appends this agent's unread team mail (and, for the lead, its notices) to the last user
/// message, each marked with its sender; returns what to acknowledge.
async fn inject_mail(
    conversation: &mut Vec<Message>,
    mail: &crate::team::actor::Mailbox,
) -> Option<u64> {
    let delivery = mail.take().await;
    if delivery.texts.is_empty() {
        return delivery.ack;
    }
    let blocks = delivery
        .texts
        .into_iter()
        .map(|text| ContentBlock::Text { text });
    match conversation.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(blocks),
        _ => conversation.push(Message {
            role: Role::User,
            content: blocks.collect(),
        }),
    }
    delivery.ack
}

/// The conversation as sent for this turn: consecutive messages of one role merged (a
/// resumed or notified conversation can hold two user messages in a row, which APIs
/// reject), and the reminder appended to the last user message. A copy: the reminder is
/// never stored.
pub(crate) fn with_reminder(conversation: &[Message], reminder: Option<String>) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::with_capacity(conversation.len() + 1);
    for m in conversation {
        match messages.last_mut() {
            Some(prev) if prev.role == m.role => prev.content.extend(m.content.iter().cloned()),
            _ => messages.push(m.clone()),
        }
    }
    if let Some(text) = reminder {
        match messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(ContentBlock::Text { text }),
            _ => messages.push(Message::user_text(text)),
        }
    }
    messages
}

fn assistant_message(out: &TurnOutput) -> Message {
    let mut content = out.thinking.clone();
    if !out.text.is_empty() {
        content.push(ContentBlock::Text {
            text: out.text.clone(),
        });
    }
    content.extend(out.calls.iter().cloned().map(ContentBlock::ToolUse));
    Message {
        role: Role::Assistant,
        content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reminder_goes_on_a_copy_of_the_last_user_message() {
        let conv = vec![Message::user_text("task")];
        let sent = with_reminder(&conv, Some("remember".into()));
        assert_eq!(sent[0].content.len(), 2);
        assert_eq!(conv[0].content.len(), 1);
        let conv = vec![Message::user_text("task"), Message::assistant_text("hi")];
        let sent = with_reminder(&conv, Some("remember".into()));
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[2].text(), "remember");
        let conv = vec![
            Message::user_text("a"),
            Message::user_text("b"),
            Message::assistant_text("c"),
        ];
        let sent = with_reminder(&conv, None);
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0].text(), "ab");
    }
}
