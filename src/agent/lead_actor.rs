//! The `LeadAgent` actor: owns the lead's conversation and runs one request at a time.
//! The ReAct loop runs in a spawned task (a model turn or a tool can take minutes), and
//! reports back with `Finished`; the mailbox stays free for `Cancel`, mode switches and
//! status queries. It registers the lead's gate policy with the gate (and updates it for
//! each run's Agent Mode), and holds the lead's `SharedMode`: a switch applies to the
//! running loop's next call.

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio_util::sync::CancellationToken;

use super::delegate::{ActorDelegate, ResumeRequest, SpawnRequest};
use super::mode::AgentMode;
use super::runner::{RunOutcome, RunPlace, RunRequest, RunStatus, Runner};
use super::subagent_actor::{SubagentEnv, launch, on_child_event, resume};
use crate::events::EventKind;
use crate::gate::GatePolicy;
use crate::gate::actor::GateMsg;
use crate::permission::PermissionMode;
use crate::protocol::{Message, Usage};
use crate::tools::delegate::DelegateError;

/// Why the lead refused a request or could not do it; its text is what the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeadError {
    /// A run is going on: one request at a time.
    #[error("the lead agent is already running a request")]
    Running,
    /// A compaction is going on.
    #[error("the lead is compacting its conversation; send the request again when that ends")]
    Compacting,
    /// A compaction was asked for while a run or another compaction is going on.
    #[error("the lead is busy; compact when the current turn ends")]
    Busy,
    /// A speculation's messages came after the conversation moved on (or while a run
    /// is going on): they were not appended.
    #[error("the conversation moved on since the speculation started")]
    Moved,
    /// The compaction itself failed (the model call, or nothing to compact).
    #[error(transparent)]
    CompactFailed(#[from] super::context::CompactNowError),
}

/// Messages the lead accepts.
pub enum LeadMsg {
    /// Run a request; the reply comes when the run ends.
    Run(RunRequest, RpcReplyPort<Result<RunOutcome, LeadError>>),
    /// Cancel the current run (no-op when idle).
    Cancel,
    /// Change the permission mode from the next call on (of a running run too).
    SetPermissionMode(PermissionMode),
    /// Use another model, and the provider that serves it, from the next run on (`/model`);
    /// a running run keeps the model it started with.
    SetModel {
        /// The provider.
        provider: Arc<dyn crate::provider::Provider>,
        /// The model name sent to it.
        model: String,
    },
    /// A copy of the conversation so far.
    Conversation(RpcReplyPort<Vec<Message>>),
    /// Start a subagent (the `agent` tool); replies with its task id.
    Spawn(SpawnRequest, RpcReplyPort<Result<String, DelegateError>>),
    /// Resume a finished subagent in the background; replies with its new task id.
    Resume(ResumeRequest, RpcReplyPort<Result<String, DelegateError>>),
    /// What the next `Run` gets from the slash command that starts it: its
    /// `allowed-tools` (in force for that run) and its model (for that run only).
    Prepare(TurnOverrides),
    /// Run one tool call as the lead, through the whole call path, under the gate policy
    /// of a run in `mode` plus the prepared command's limit (a slash command's `` !`cmd` ``
    /// and `@file`); refused while a run is going on.
    Dispatch {
        /// The Agent Mode the run will have (Plan Mode refuses side effects here too).
        mode: AgentMode,
        /// The call.
        call: crate::protocol::ToolCall,
        /// Receives the result or the refusal.
        reply: RpcReplyPort<crate::protocol::ToolResult>,
    },
    /// A copy of the lead as it stands between runs, for a speculation to run ahead
    /// from (`None` while a run is going on).
    Snapshot(RpcReplyPort<Option<LeadSnapshot>>),
    /// Append messages a speculation produced to the conversation (as if a run had
    /// produced them) and publish them; refused while a run is going on or when the
    /// conversation no longer has the length `after` it was forked at.
    Adopt {
        /// The conversation's length when the speculation forked it.
        after: usize,
        /// The messages to append.
        messages: Vec<Message>,
        /// Receives the refusal, if any.
        reply: RpcReplyPort<Result<(), LeadError>>,
    },
    /// Compact the conversation now (`/compact [instructions]`), with what the user asks
    /// of the summary; refused while a run is going on.
    Compact(
        Option<String>,
        RpcReplyPort<Result<super::context::Compacted, LeadError>>,
    ),
    /// Internal: a compaction ended (`conversation`: the new one, when it succeeded).
    CompactDone {
        /// The compacted conversation.
        conversation: Option<Vec<Message>>,
        /// What to answer.
        result: Result<super::context::Compacted, LeadError>,
        /// Who asked.
        reply: RpcReplyPort<Result<super::context::Compacted, LeadError>>,
    },
    /// Internal: the run task ended.
    Finished {
        /// The outcome.
        outcome: RunOutcome,
        /// The conversation after the run.
        conversation: Vec<Message>,
    },
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for LeadMsg {}

/// What a slash command sets for the run it starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOverrides {
    /// The command's `allowed-tools`.
    pub limit: Option<crate::gate::NameLimit>,
    /// The command's `model` (a `script:` model only under a scripted lead).
    pub model: Option<String>,
}

/// The lead between runs: what a speculation needs to run ahead as a copy of it.
#[derive(Clone)]
pub struct LeadSnapshot {
    /// The lead's loop (pipeline, provider, spec).
    pub runner: Runner,
    /// Where it works, with its shared permission mode.
    pub place: RunPlace,
    /// Its conversation so far.
    pub conversation: Vec<Message>,
}

/// The lead actor (configuration only).
pub struct LeadAgent;

/// What the lead needs to start.
pub struct LeadArgs {
    /// Its loop.
    pub runner: Runner,
    /// Where it works.
    pub place: RunPlace,
    /// A conversation to resume, if any.
    pub conversation: Vec<Message>,
    /// What subagents need (`None`: the lead cannot delegate).
    pub subagents: Option<SubagentEnv>,
}

/// The lead's state.
pub struct LeadState {
    runner: Runner,
    place: RunPlace,
    conversation: Vec<Message>,
    running: Option<(
        CancellationToken,
        RpcReplyPort<Result<RunOutcome, LeadError>>,
    )>,
    subagents: Option<SubagentEnv>,
    children: HashMap<ActorId, String>,
    /// What the next run gets from the slash command that starts it.
    next: TurnOverrides,
    /// A `/compact` is going on: runs wait for it (they would lose its result).
    compacting: bool,
}

impl LeadState {
    /// Registers the gate policy of a run in `mode`, with the prepared command's limit.
    fn set_policy(&self, mode: AgentMode) {
        let gate = &self.runner.pipeline.gate;
        let agent = self.runner.spec.id.clone();
        let mut policy = GatePolicy::new(mode, self.runner.spec.allowed_tools.clone());
        if let Some(limit) = &self.next.limit {
            policy.narrow(limit.clone());
        }
        gate.cast(GateMsg::Update { agent, policy });
    }
}

impl Actor for LeadAgent {
    type Msg = LeadMsg;
    type State = LeadState;
    type Arguments = LeadArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: LeadArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut place = args.place;
        args.runner.pipeline.gate.cast(GateMsg::Register {
            agent: args.runner.spec.id.clone(),
            policy: GatePolicy::new(AgentMode::Chat, args.runner.spec.allowed_tools.clone()),
        });
        if let Some(env) = &args.subagents {
            place.delegate = Some(Arc::new(
                ActorDelegate::new(myself, LeadMsg::Spawn).with_resume(LeadMsg::Resume),
            ));
            place.tasks = Some(env.tasks.clone());
            if let Some(team) = &env.team {
                place.mail = Some(Arc::new(team.mailbox(crate::team::MemberName::lead())));
            }
        }
        Ok(LeadState {
            runner: args.runner,
            place,
            conversation: args.conversation,
            running: None,
            subagents: args.subagents,
            children: HashMap::new(),
            next: TurnOverrides::default(),
            compacting: false,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A run must not go on without its lead (the session ended under it).
        if let Some((cancel, _)) = &state.running {
            cancel.cancel();
        }
        state.runner.pipeline.gate.cast(GateMsg::Unregister {
            agent: state.runner.spec.id.clone(),
        });
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A subagent's crash becomes a failed task; the lead goes on.
        if let Some(env) = &state.subagents {
            on_child_event(&mut state.children, &env.tasks, &evt);
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            LeadMsg::Run(req, reply) => {
                if state.running.is_some() {
                    let _ = reply.send(Err(LeadError::Running));
                    return Ok(());
                }
                if state.compacting {
                    let _ = reply.send(Err(LeadError::Compacting));
                    return Ok(());
                }
                // Before the run's first call reaches the gate (one mailbox, in order).
                state.set_policy(req.mode);
                let next = std::mem::take(&mut state.next);
                let mut runner = state.runner.clone();
                if let Some(model) = next.model.as_deref() {
                    runner.spec.model =
                        super::subagent_spec::subagent_model(Some(model), &runner.spec.model);
                }
                let cancel = CancellationToken::new();
                state.running = Some((cancel.clone(), reply));
                spawn_run(
                    myself,
                    runner,
                    state.place.clone(),
                    state.conversation.clone(),
                    req,
                    cancel,
                );
            }
            LeadMsg::Spawn(req, reply) => {
                let result = match (&state.subagents, req.name.is_some()) {
                    (Some(env), true) => match &env.team {
                        Some(team) => {
                            let mode = state.place.permission_mode.clone();
                            super::team_launch::launch(env, team, req, mode).await
                        }
                        None => Err(DelegateError::Unsupported(
                            "this session has no team: leave out `name`".into(),
                        )),
                    },
                    (Some(env), false) => {
                        launch(myself.get_cell(), env, 1, req, &mut state.children).await
                    }
                    (None, _) => Err(DelegateError::Unsupported(
                        "this session cannot start subagents".into(),
                    )),
                };
                let _ = reply.send(result);
            }
            LeadMsg::Resume(req, reply) => {
                let result = match &state.subagents {
                    Some(env) => resume(myself.get_cell(), env, req, &mut state.children).await,
                    None => Err(DelegateError::Unsupported(
                        "this session has no subagents to resume".into(),
                    )),
                };
                let _ = reply.send(result);
            }
            LeadMsg::Prepare(next) => state.next = next,
            LeadMsg::Dispatch { mode, call, reply } => {
                if state.running.is_some() {
                    let _ = reply.send(crate::protocol::ToolResult::error(
                        &call.id,
                        "busy",
                        "the lead is running a request; the call was not run",
                    ));
                    return Ok(());
                }
                state.set_policy(mode);
                let runner = state.runner.clone();
                let caller = runner.caller(&state.place, &CancellationToken::new());
                tokio::spawn(async move {
                    let _ = reply.send(runner.pipeline.dispatch(&caller, call).await);
                });
            }
            LeadMsg::Compact(instructions, reply) => {
                if state.running.is_some() || state.compacting {
                    let _ = reply.send(Err(LeadError::Busy));
                    return Ok(());
                }
                state.compacting = true;
                let runner = state.runner.clone();
                let place = state.place.clone();
                let mut conversation = state.conversation.clone();
                tokio::spawn(async move {
                    let cancel = CancellationToken::new();
                    let custom = instructions.as_deref();
                    let result = super::context::compact_now(
                        &runner,
                        &mut conversation,
                        &place,
                        custom,
                        &cancel,
                    )
                    .await
                    .map_err(LeadError::CompactFailed);
                    let conversation = result.is_ok().then_some(conversation);
                    let _ = myself.cast(LeadMsg::CompactDone {
                        conversation,
                        result,
                        reply,
                    });
                });
            }
            LeadMsg::CompactDone {
                conversation,
                result,
                reply,
            } => {
                state.compacting = false;
                if let Some(c) = conversation {
                    state.conversation = c;
                }
                let _ = reply.send(result);
            }
            LeadMsg::Cancel => {
                if let Some((cancel, _)) = &state.running {
                    cancel.cancel();
                }
            }
            // The running loop shares this cell: its next call uses the new mode.
            LeadMsg::SetPermissionMode(mode) => state.place.permission_mode.set(mode),
            // Each run clones the runner as it starts: the running one is not changed.
            LeadMsg::SetModel { provider, model } => {
                state.runner.provider = provider;
                state.runner.spec.model = model;
            }
            LeadMsg::Conversation(reply) => {
                let _ = reply.send(state.conversation.clone());
            }
            LeadMsg::Snapshot(reply) => {
                let snapshot = state.running.is_none().then(|| LeadSnapshot {
                    runner: state.runner.clone(),
                    place: state.place.clone(),
                    conversation: state.conversation.clone(),
                });
                let _ = reply.send(snapshot);
            }
            LeadMsg::Adopt {
                after,
                messages,
                reply,
            } => {
                if state.running.is_some() || state.conversation.len() != after {
                    let _ = reply.send(Err(LeadError::Moved));
                    return Ok(());
                }
                // Published like a run's messages: the transcript file and the UI see them.
                for message in &messages {
                    state.runner.pipeline.events.publish(
                        &state.runner.spec.id,
                        EventKind::MessageAppended {
                            message: message.clone(),
                        },
                    );
                }
                state.conversation.extend(messages);
                let _ = reply.send(Ok(()));
            }
            LeadMsg::Finished {
                outcome,
                conversation,
            } => {
                state.conversation = conversation;
                if let Some((_, reply)) = state.running.take() {
                    let _ = reply.send(Ok(outcome));
                }
            }
        }
        Ok(())
    }
}

/// Runs the loop in its own task. A panic inside the run (a provider or our own bug) is
/// contained: the conversation is restored to what it was before the run and the run
/// is reported as failed.
fn spawn_run(
    lead: ActorRef<LeadMsg>,
    runner: Runner,
    place: RunPlace,
    before: Vec<Message>,
    req: RunRequest,
    cancel: CancellationToken,
) {
    tokio::spawn(async move {
        let events = runner.pipeline.events.clone();
        let agent = runner.spec.id.clone();
        let mut conversation = before.clone();
        let inner = tokio::spawn(async move {
            let outcome = runner.run(&mut conversation, &req, &place, cancel).await;
            (outcome, conversation)
        });
        let (outcome, conversation) = match inner.await {
            Ok(done) => done,
            Err(e) => {
                let message = if e.is_panic() {
                    "the agent's run crashed; the conversation was restored to its state before the run".to_string()
                } else {
                    "the agent's run was aborted".to_string()
                };
                events.publish(
                    &agent,
                    EventKind::Error {
                        message: message.clone(),
                    },
                );
                let outcome = RunOutcome {
                    result: message,
                    status: RunStatus::Failed,
                    usage: Usage::default(),
                    turns: 0,
                    tool_calls: 0,
                };
                (outcome, before)
            }
        };
        // If the lead is gone there is nobody to tell.
        let _ = lead.cast(LeadMsg::Finished {
            outcome,
            conversation,
        });
    });
}
