//! Teammates: named agents that live on between assignments. The lead's `agent {name}`
//! call ends in [`super::team_launch::launch`], which checks the request, gives the
//! teammate its own worktree, adds it to the roster and has the team actor spawn a
//! `Teammate` actor linked under itself.
//!
//! The actor runs its ReAct loop (the shared `Runner`) in a spawned task; the runner injects
//! its unread mail at each turn boundary, marked with the sender, and acknowledges it. When
//! a run ends the actor looks at its inbox: new mail starts another run, none makes it idle
//! (the team actor tells the lead). A `shutdown_request` from the lead is answered with a
//! `shutdown_response` and ends the actor; a `plan_first` teammate works in Plan mode until
//! a `plan_approval_response {approve: true}` arrives, then carries its plan out in Do mode.
//! A crash of its run fails the actor, and the team actor's supervision releases its items.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::mode::AgentMode;
use super::runner::{RunOutcome, RunPlace, RunRequest, Runner};
use super::subagent::Workspaces;
use crate::events::EventKind;
use crate::gate::GatePolicy;
use crate::gate::actor::GateMsg;
use crate::protocol::Message;
use crate::team::actor::{Mailbox, TeamMsg};
use crate::team::{Envelope, MemberName, MemberStatus, MessageKind, Outgoing, Recipient};

/// Messages a teammate accepts.
pub enum TeammateMsg {
    /// Mail arrived (or may have): run if idle.
    Wake,
    /// Internal: the run ended (`Err`: it crashed, with the reason).
    Finished {
        /// The outcome.
        outcome: Result<RunOutcome, String>,
        /// The conversation after the run.
        conversation: Vec<Message>,
    },
}

/// The teammate actor (configuration only).
pub struct Teammate;

/// What a teammate starts from (built by [`super::team_launch::launch`]).
pub struct TeammateArgs {
    pub(super) name: MemberName,
    pub(super) runner: Runner,
    pub(super) place: RunPlace,
    pub(super) mailbox: Mailbox,
    /// Its first assignment; `None` for a teammate restored by `crew --continue`, which
    /// starts idle and runs when its inbox holds unread mail.
    pub(super) first: Option<RunRequest>,
    /// The conversation it starts with (empty for a new teammate).
    pub(super) conversation: Vec<Message>,
    pub(super) workspace: Option<(Arc<dyn Workspaces>, String)>,
    pub(super) slots: Arc<Semaphore>,
}

/// A teammate's state.
pub struct TeammateState {
    name: MemberName,
    runner: Runner,
    place: RunPlace,
    mailbox: Mailbox,
    conversation: Vec<Message>,
    first: Option<RunRequest>,
    running: Option<CancellationToken>,
    mode: AgentMode,
    /// The plan sent for approval (plan_first), until approved.
    plan: Option<String>,
    workspace: Option<(Arc<dyn Workspaces>, String)>,
    /// The session's agent slots: a teammate holds one while it runs, not while idle.
    slots: Arc<Semaphore>,
}

impl Actor for Teammate {
    type Msg = TeammateMsg;
    type State = TeammateState;
    type Arguments = TeammateArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: TeammateArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let me = myself.clone();
        let _ = args.mailbox.actor.cast(TeamMsg::Join(
            args.name.clone(),
            Arc::new(move || {
                let _ = me.cast(TeammateMsg::Wake);
            }),
        ));
        let mode = args.first.as_ref().map_or(AgentMode::Chat, |f| f.mode);
        let _ = args.runner.pipeline.gate.cast(GateMsg::Register {
            agent: args.runner.spec.id.clone(),
            policy: GatePolicy::new(mode, args.runner.spec.allowed_tools.clone()),
        });
        Ok(TeammateState {
            name: args.name,
            runner: args.runner,
            place: args.place,
            mailbox: args.mailbox,
            conversation: args.conversation,
            mode,
            first: args.first,
            running: None,
            plan: None,
            workspace: args.workspace,
            slots: args.slots,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match state.first.take() {
            Some(first) => start_run(myself, state, first),
            // Restored: unread mail wakes it at once, otherwise it is idle.
            None => next(myself, state).await,
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        tidy(state).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TeammateMsg::Wake => {
                if state.running.is_none() {
                    next(myself, state).await;
                }
            }
            TeammateMsg::Finished {
                outcome: Ok(outcome),
                conversation,
            } => {
                state.running = None;
                state.conversation = conversation;
                if state.mode == AgentMode::Plan && state.plan.is_none() {
                    // A plan_first teammate's plan goes to the lead for approval.
                    let plan = outcome.result.clone();
                    let out = Outgoing {
                        message: plan.clone(),
                        summary: Some(format!("plan from {}", state.name)),
                        kind: MessageKind::PlanApprovalRequest,
                    };
                    if let Err(e) = state
                        .mailbox
                        .send(Recipient::Member(MemberName::lead()), out)
                        .await
                    {
                        tracing::warn!("{} could not send its plan: {e}", state.name);
                    }
                    state.plan = Some(plan);
                }
                next(myself, state).await;
            }
            // Fail the actor: the team actor's supervision releases its items and tells
            // the lead.
            TeammateMsg::Finished {
                outcome: Err(reason),
                ..
            } => {
                state.running = None;
                tidy(state).await;
                return Err(reason.into());
            }
        }
        Ok(())
    }
}

/// After a run, or on a wake while idle: act on the inbox, or go idle.
async fn next(myself: ActorRef<TeammateMsg>, state: &mut TeammateState) {
    let unread: Vec<Envelope> = state.mailbox.unread().await.unwrap_or_default();
    if unread.is_empty() {
        let _ = state
            .mailbox
            .actor
            .cast(TeamMsg::Status(state.name.clone(), MemberStatus::Idle));
        return;
    }
    let from_lead = |e: &&Envelope| e.from.is_lead();
    if unread
        .iter()
        .filter(from_lead)
        .any(|e| e.kind == MessageKind::ShutdownRequest)
    {
        shut_down(myself, state, &unread).await;
        return;
    }
    let verdict = unread.iter().filter(from_lead).find_map(|e| match &e.kind {
        MessageKind::PlanApprovalResponse { approve, .. } => Some(*approve),
        _ => None,
    });
    let req = match (state.mode, verdict, &state.plan) {
        (AgentMode::Plan, Some(true), Some(plan)) => RunRequest {
            mode: AgentMode::Do,
            task: "The lead approved your plan: carry it out.".into(),
            plan: Some(plan.clone()),
        },
        (AgentMode::Plan, Some(false), _) => {
            // Revise: the next plan goes for approval again.
            state.plan = None;
            RunRequest {
                mode: AgentMode::Plan,
                task: "The lead did not approve your plan (its answer is below). Revise it.".into(),
                plan: None,
            }
        }
        (mode, _, _) => RunRequest {
            mode: if mode == AgentMode::Do {
                AgentMode::Chat
            } else {
                mode
            },
            task: "New messages arrived for you (below). Act on them.".into(),
            plan: None,
        },
    };
    start_run(myself, state, req);
}

/// Answers the lead's shutdown request (approving it: a teammate has no unfinished turn
/// when it reads its mail here), acknowledges its inbox and stops.
async fn shut_down(myself: ActorRef<TeammateMsg>, state: &mut TeammateState, unread: &[Envelope]) {
    let team = &state.mailbox.actor;
    // Busy until it has left (the team actor handles these in order), so the team cannot
    // look quiet before the lead has the answer.
    let _ = team.cast(TeamMsg::Status(state.name.clone(), MemberStatus::Working));
    if let Some(last) = unread.last() {
        state.mailbox.ack(last.index + 1).await;
    }
    let out = Outgoing {
        message: format!("{} is shutting down.", state.name),
        summary: None,
        kind: MessageKind::ShutdownResponse { approve: true },
    };
    if let Err(e) = state
        .mailbox
        .send(Recipient::Member(MemberName::lead()), out)
        .await
    {
        tracing::warn!("{} could not answer the shutdown request: {e}", state.name);
    }
    let _ = team.cast(TeamMsg::Left(state.name.clone(), MemberStatus::Finished));
    myself.stop(Some("shutdown approved".into()));
}

/// Starts a run in its own task; a panic inside it comes back as `Finished(Err)`.
fn start_run(myself: ActorRef<TeammateMsg>, state: &mut TeammateState, req: RunRequest) {
    state.mode = req.mode;
    let _ = state.runner.pipeline.gate.cast(GateMsg::Update {
        agent: state.runner.spec.id.clone(),
        policy: GatePolicy::new(req.mode, state.runner.spec.allowed_tools.clone()),
    });
    let _ = state
        .mailbox
        .actor
        .cast(TeamMsg::Status(state.name.clone(), MemberStatus::Working));
    let cancel = CancellationToken::new();
    state.running = Some(cancel.clone());
    let runner = state.runner.clone();
    let place = state.place.clone();
    let mut conversation = state.conversation.clone();
    let slots = state.slots.clone();
    tokio::spawn(async move {
        let events = runner.pipeline.events.clone();
        let agent = runner.spec.id.clone();
        let inner = tokio::spawn(async move {
            // Concurrency limits apply as for subagents (`maxConcurrentAgents`).
            let _slot = slots.acquire_owned().await;
            let outcome = runner.run(&mut conversation, &req, &place, cancel).await;
            (outcome, conversation)
        });
        let msg = match inner.await {
            Ok((outcome, conversation)) => TeammateMsg::Finished {
                outcome: Ok(outcome),
                conversation,
            },
            Err(e) => {
                let reason = if e.is_panic() {
                    format!(
                        "its run panicked: {}",
                        crate::executor::panic_message(e.into_panic())
                    )
                } else {
                    "its run was aborted".to_string()
                };
                events.publish(
                    &agent,
                    EventKind::Error {
                        message: reason.clone(),
                    },
                );
                TeammateMsg::Finished {
                    outcome: Err(reason),
                    conversation: Vec::new(),
                }
            }
        };
        let _ = myself.cast(msg);
    });
}

/// Cancels a running turn, unregisters the gate policy and ends the worktree (kept when
/// it holds work). Safe to call twice.
async fn tidy(state: &mut TeammateState) {
    if let Some(cancel) = state.running.take() {
        cancel.cancel();
    }
    let _ = state.runner.pipeline.gate.cast(GateMsg::Unregister {
        agent: state.runner.spec.id.clone(),
    });
    if let Some((ws, id)) = state.workspace.take() {
        let _ = ws.finish(&id).await;
    }
}
