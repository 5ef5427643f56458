//! The ReAct loop: stream a model turn, run its tool calls through the pipeline (reads
//! concurrently, side effects in order, results in call order), append the results, and
//! repeat until a turn makes no tool calls, the turn limit is reached, or the run is
//! cancelled. The conversation only ever receives whole turns: a cancelled or failed
//! turn leaves no half message or unanswered tool call behind.

mod between;
mod calls;
pub(crate) mod shared;
mod spec;
mod turn;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::context::accounting::Measured;
use super::fork::ForkBase;
use super::mode::{self, AgentMode};
use super::pipeline::{CallerContext, Pipeline};
use crate::events::EventKind;
use crate::gate::actor::GateMsg;
use crate::hooks::agent_events::Role as HookRole;
use crate::offload::micro::MicroPolicy;
use crate::protocol::{ContentBlock, Message, Role, ToolCall, Usage};
use crate::provider::{Messages, ModelRequest, Provider};
use crate::tools::ToolContext;
use crate::tools::deferred::Deferral;

pub use spec::{AgentSpec, RunOutcome, RunPlace, RunRequest, RunStatus};
use turn::{TurnError, assistant_message};

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
        caller.intent = Arc::new(crate::auto_mode::classifier::Intent::new(
            &req.task,
            if agent == "lead" {
                crate::auto_mode::classifier::TaskSource::User
            } else {
                crate::auto_mode::classifier::TaskSource::Agent
            },
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
        // Shared with each turn's request rather than copied into it; given back at the end.
        let mut conversation = shared::Shared::take(conversation);
        let mut stop_hook_active = false;
        // Messages are published (for the transcript) once final: user messages just
        // before the request that carries them, assistant messages when complete.
        let mut published = conversation.len() - 1;
        // Counts the context and compacts it at the `autoCompact` threshold.
        let mut context = super::context::Guard::new(self);
        // The count of queued task notifications when this agent last asked for its own.
        let mut notices_seen = None;

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
                between::inject_notifications(conversation.edit(), tasks, agent, &mut notices_seen)
                    .await;
            }
            let delivered = match &place.mail {
                Some(mail) => between::inject_mail(conversation.edit(), mail).await,
                None => None,
            };
            context.measured(self.publish_messages(&conversation, &mut published));
            // Acknowledged only once the messages are in the conversation and published to
            // the transcript (the inbox's delivery contract).
            if let (Some(mail), Some(through)) = (&place.mail, delivered) {
                mail.ack(through).await;
            }
            let reminder = mode::reminder(req.mode, turn);
            let tools = deferral.request_tools(&conversation);
            let compacted = context
                .before_turn(
                    self,
                    conversation.edit(),
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
                messages: Messages::new(conversation.share())
                    .with_reminder(reminder)
                    .micro_compacted(&MicroPolicy::default()),
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
            conversation.edit().push(assistant_message(&output));
            context.after_turn(&output.usage, conversation.len());
            context.measured(self.publish_messages(&conversation, &mut published));
            if !output.text.is_empty() || output.calls.is_empty() {
                outcome.result = output.text.clone();
            }
            if output.calls.is_empty() {
                outcome.status = RunStatus::Completed;
                // A Stop hook that blocks makes the agent go on with its reason.
                let mode = place.permission_mode.get();
                let report = hooks
                    .stop(
                        role,
                        agent,
                        &place.cwd,
                        mode,
                        stop_hook_active,
                        &output.text,
                        &cancel,
                    )
                    .await;
                match report.block {
                    Some(reason) if report.stop.is_none() && turn < self.spec.max_turns => {
                        stop_hook_active = true;
                        let event = role.stop_event();
                        conversation.edit().push(Message::user_text(format!(
                            "<hook event=\"{event}\" decision=\"block\">\n{}\n</hook>",
                            crate::envelope::body(&reason)
                        )));
                        continue;
                    }
                    _ => break,
                }
            }
            outcome.tool_calls += output.calls.len() as u32;
            let mut caller = caller.clone();
            caller.tool_ctx.fork = self.fork_base(&conversation, req.mode, &output.calls, &system);
            let calls = output.calls.clone();
            let registry = &self.pipeline.registry;
            let mut results = deferral
                .run_loaded(registry, &conversation, output.calls, |calls| {
                    self.run_calls(&caller, calls)
                })
                .await;
            for (call, result) in calls.iter().zip(results.iter_mut()) {
                let tool = registry.canonical(&call.name).unwrap_or("");
                for message in memory.after_call(tool, call, result) {
                    events.publish(agent, EventKind::Error { message });
                }
            }
            conversation.edit().push(Message {
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
        // The run is over: nothing counts these sizes any more.
        drop(self.publish_messages(&conversation, &mut published));
        drop(conversation);
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

    /// Publishes the messages of `conversation` from `published` on; returns each one's
    /// place, blocks and JSON length, which the context accounting then need not measure.
    fn publish_messages(&self, conversation: &[Message], published: &mut usize) -> Vec<Measured> {
        let from = *published;
        let measured = conversation[from..]
            .iter()
            .enumerate()
            .filter_map(|(i, message)| {
                let events = &self.pipeline.events;
                let bytes = events.publish_message(&self.spec.id, message.clone())?;
                Some(Measured {
                    index: from + i,
                    blocks: message.content.len(),
                    bytes,
                })
            })
            .collect();
        *published = conversation.len();
        measured
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
