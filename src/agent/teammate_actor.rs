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
//! A crash of its run, or a run that ends on a provider error, fails the actor, and the
//! team actor's supervision releases its items and tells the lead why, and where its
//! kept work is. Its place on the team and its worktree are a [`MemberLife`], shared with
//! the lead's proxy of a teammate on a worker.
//!
//! A teammate may start plain subagents (not teammates) through its own actor, which
//! links them under itself, with the subagents' depth and concurrency limits; it is idle
//! only once they have ended, and one that ends wakes it (`teammate_tasks`). A teammate
//! restored by `crew --continue` comes back in the mode its plan stage says, and one cut
//! off mid-turn carries on with its task even when no mail is waiting.

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::delegate::{ActorDelegate, ResumeRequest, SpawnRequest};
use super::member_life::MemberLife;
use super::mode::AgentMode;
use super::run_error::{Crash, TeammateRunError};
use super::runner::{RunOutcome, RunPlace, RunRequest, RunStatus, Runner};
use super::subagent_actor::{SubagentEnv, Workspaces, launch, on_child_event, resume};
use super::teammate_tasks::{SUBAGENT_DEPTH, TASK_NEWS, watch};
use crate::events::EventKind;
use crate::gate::GatePolicy;
use crate::gate::actor::GateMsg;
use crate::protocol::Message;
use crate::team::actor::Mailbox;
use crate::team::{Envelope, MemberName, MessageKind, Outgoing, PlanStage, Team};
use crate::tools::delegate::DelegateError;

/// The task a teammate cut off mid-turn is restarted with.
const CARRY_ON: &str = "The session was stopped while you were working and has now resumed. \
Carry on with your task from where you left off (tool calls cut off by the stop were not run).";

/// Messages a teammate accepts.
pub(crate) enum TeammateMsg {
    /// Mail arrived (or may have): run if idle.
    Wake,
    /// Internal: the run ended (`Err`: it crashed, and how).
    Finished {
        /// The outcome.
        outcome: Result<RunOutcome, TeammateRunError>,
        /// The conversation after the run.
        conversation: Vec<Message>,
    },
    /// Start a plain subagent (its `agent` tool).
    Spawn(SpawnRequest, RpcReplyPort<Result<String, DelegateError>>),
    /// Resume a finished subagent (its `send_message` to one).
    Resume(ResumeRequest, RpcReplyPort<Result<String, DelegateError>>),
    /// Internal: one of its subagents ended (`ended`), or none is running.
    TaskNews {
        /// Whether a subagent ended with its notice still unreported.
        ended: bool,
    },
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for TeammateMsg {}

/// The teammate actor (configuration only).
pub(crate) struct Teammate;

/// What a teammate starts from (built by [`super::team_launch::launch`]).
pub(crate) struct TeammateArgs {
    pub(super) runner: Runner,
    pub(super) place: RunPlace,
    pub(super) mailbox: Mailbox,
    /// Its first assignment; `None` for a teammate restored by `crew --continue`, which
    /// starts idle and runs when its inbox holds unread mail (or at once when cut off).
    pub(super) first: Option<RunRequest>,
    /// For a restored teammate: where it was.
    pub(super) restored: Option<Restored>,
    /// What its own subagents share (the session's, with this teammate's loop).
    pub(super) env: SubagentEnv,
    /// The conversation it starts with (empty for a new teammate).
    pub(super) conversation: Vec<Message>,
    pub(super) workspace: Option<(Arc<dyn Workspaces>, String)>,
    pub(super) slots: Arc<Semaphore>,
}

/// Where a restored teammate was when the session stopped.
pub(crate) struct Restored {
    /// Its plan stage (`plan_first` teammates not yet approved).
    pub plan: Option<PlanStage>,
    /// Cut off mid-turn: carry on with the task.
    pub interrupted: bool,
}

/// A teammate's state.
pub(crate) struct TeammateState {
    /// Its mailbox and worktree: joining, status, acknowledgement, leaving, failing.
    life: MemberLife,
    runner: Runner,
    place: RunPlace,
    conversation: Vec<Message>,
    first: Option<RunRequest>,
    running: Option<CancellationToken>,
    mode: AgentMode,
    /// The plan sent for approval (plan_first), until approved.
    plan: Option<String>,
    /// The session's agent slots: a teammate holds one while it runs, not while idle.
    slots: Arc<Semaphore>,
    /// Restored mid-turn: the next look at an empty inbox carries on with the task.
    interrupted: bool,
    /// What its own subagents share.
    env: SubagentEnv,
    /// Its subagents (actor → task id), for supervision.
    children: HashMap<ActorId, String>,
    /// It has started subagents: it goes idle only once they have ended.
    delegated: bool,
    /// A watch for its subagents' ends is out (see `teammate_tasks`).
    watching: bool,
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
        let life = MemberLife::new(args.mailbox, args.workspace);
        life.join(myself.clone(), || TeammateMsg::Wake);
        let (plan_stage, interrupted) = args
            .restored
            .map_or((None, false), |r| (r.plan, r.interrupted));
        let (mode, plan) = match (&args.first, plan_stage) {
            (Some(first), _) => (first.mode, None),
            (None, Some(PlanStage::Drafting)) => (AgentMode::Plan, None),
            (None, Some(PlanStage::Awaiting { plan })) => (AgentMode::Plan, Some(plan)),
            (None, None) => (AgentMode::Chat, None),
        };
        args.runner.pipeline.gate.cast(GateMsg::Register {
            agent: args.runner.spec.id.clone(),
            policy: GatePolicy::new(mode, args.runner.spec.allowed_tools.clone()),
        });
        let mut place = args.place;
        // Its `agent` calls come to this actor, which starts the subagents under itself.
        place.delegate = Some(Arc::new(
            ActorDelegate::new(myself.clone(), TeammateMsg::Spawn).with_resume(TeammateMsg::Resume),
        ));
        place.tasks = Some(args.env.tasks.clone());
        Ok(TeammateState {
            life,
            runner: args.runner,
            place,
            conversation: args.conversation,
            mode,
            first: args.first,
            running: None,
            plan,
            slots: args.slots,
            interrupted,
            env: args.env,
            children: HashMap::new(),
            delegated: false,
            watching: false,
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
        halt(state);
        state.life.finish_worktree().await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A subagent's crash becomes a failed task; the teammate goes on.
        on_child_event(&mut state.children, &state.env.tasks, &evt);
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
            TeammateMsg::Spawn(req, reply) => {
                let r = launch(
                    myself.get_cell(),
                    &state.env,
                    SUBAGENT_DEPTH,
                    req,
                    &mut state.children,
                )
                .await;
                state.delegated |= r.is_ok();
                let _ = reply.send(r);
            }
            TeammateMsg::Resume(req, reply) => {
                let r = resume(myself.get_cell(), &state.env, req, &mut state.children).await;
                state.delegated |= r.is_ok();
                let _ = reply.send(r);
            }
            // While it runs, the runner reports ended subagents at each turn boundary, and
            // the end of the run looks again.
            TeammateMsg::TaskNews { .. } if state.running.is_some() => state.watching = false,
            TeammateMsg::TaskNews { ended: true } => {
                state.watching = false;
                let req = RunRequest {
                    mode: chat_unless_planning(state.mode),
                    task: TASK_NEWS.into(),
                    plan: None,
                };
                start_run(myself, state, req);
            }
            // Nothing of its own is running: now it is idle (mail that came meanwhile has
            // woken it already).
            TeammateMsg::TaskNews { ended: false } => {
                state.watching = false;
                state.life.idle();
            }
            // A run that ends on a provider error fails like a crash: its items go back
            // to the list and the lead hears of it, instead of a silent idle teammate.
            TeammateMsg::Finished {
                outcome: Ok(outcome),
                ..
            } if outcome.status == RunStatus::Failed => {
                state.running = None;
                halt(state);
                return Err(state.life.fail(outcome.result).await);
            }
            TeammateMsg::Finished {
                outcome: Ok(outcome),
                conversation,
            } => {
                state.running = None;
                state.conversation = conversation;
                if state.mode == AgentMode::Plan && state.plan.is_none() {
                    // A plan_first teammate's plan goes to the lead for approval, recorded
                    // first so a restored teammate still awaits the answer.
                    let plan = outcome.result.clone();
                    set_plan(
                        &state.life,
                        Some(PlanStage::Awaiting { plan: plan.clone() }),
                    )
                    .await;
                    let out = Outgoing {
                        message: plan.clone(),
                        summary: Some(format!("plan from {}", state.life.name())),
                        kind: MessageKind::PlanApprovalRequest,
                    };
                    state.life.tell_lead(out, "its plan").await;
                    state.plan = Some(plan);
                }
                next(myself, state).await;
            }
            // Fail the actor: the team actor's supervision releases its items and tells
            // the lead.
            TeammateMsg::Finished {
                outcome: Err(crash),
                ..
            } => {
                state.running = None;
                halt(state);
                return Err(state.life.fail(crash.to_string()).await);
            }
        }
        Ok(())
    }
}

/// After a run, or on a wake while idle: act on the inbox, or go idle.
async fn next(myself: ActorRef<TeammateMsg>, state: &mut TeammateState) {
    let unread: Vec<Envelope> = state.life.unread().await;
    if unread.is_empty() && std::mem::take(&mut state.interrupted) {
        let req = RunRequest {
            mode: chat_unless_planning(state.mode),
            task: CARRY_ON.into(),
            plan: None,
        };
        start_run(myself, state, req);
        return;
    }
    // Mail (if any) carries a cut-off teammate on from its conversation just as well.
    state.interrupted = false;
    if unread.is_empty() && state.delegated {
        // Idle once its subagents have ended and been reported (the watch answers).
        if !std::mem::replace(&mut state.watching, true) {
            watch(
                myself,
                state.env.tasks.clone(),
                state.runner.spec.id.clone(),
            );
        }
        return;
    }
    if unread.is_empty() {
        state.life.idle();
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
        (AgentMode::Plan, Some(true), Some(plan)) => {
            let plan = plan.clone();
            set_plan(&state.life, None).await;
            RunRequest {
                mode: AgentMode::Do,
                task: "The lead approved your plan: carry it out.".into(),
                plan: Some(plan),
            }
        }
        (AgentMode::Plan, Some(false), _) => {
            // Revise: the next plan goes for approval again.
            state.plan = None;
            set_plan(&state.life, Some(PlanStage::Drafting)).await;
            RunRequest {
                mode: AgentMode::Plan,
                task: "The lead did not approve your plan (its answer is below). Revise it.".into(),
                plan: None,
            }
        }
        (mode, _, _) => RunRequest {
            mode: chat_unless_planning(mode),
            task: "New messages arrived for you (below). Act on them.".into(),
            plan: None,
        },
    };
    start_run(myself, state, req);
}

/// The mode of a run that is not the approved plan's: Plan stays Plan, Do is over.
fn chat_unless_planning(mode: AgentMode) -> AgentMode {
    if mode == AgentMode::Do {
        AgentMode::Chat
    } else {
        mode
    }
}

/// Records the teammate's plan stage in the roster (for `crew --continue`); a failure is
/// only logged: the live teammate goes on either way.
async fn set_plan(life: &MemberLife, stage: Option<PlanStage>) {
    let (team, name): (Team, MemberName) = (life.mailbox().team.clone(), life.name().clone());
    let saved =
        tokio::task::spawn_blocking(move || team.update_member(&name, |m| m.plan = stage)).await;
    if let Ok(Err(e)) = saved {
        tracing::warn!("the plan stage could not be recorded: {e}");
    }
}

/// Answers the lead's shutdown request (approving it: a teammate has no unfinished turn
/// when it reads its mail here), acknowledges its inbox and stops.
async fn shut_down(myself: ActorRef<TeammateMsg>, state: &mut TeammateState, unread: &[Envelope]) {
    // Busy until it has left (the team actor handles these in order), so the team cannot
    // look quiet before the lead has the answer.
    state.life.working();
    state
        .life
        .ack_through(unread.last().map_or(0, |last| last.index + 1))
        .await;
    let out = Outgoing {
        message: format!("{} is shutting down.", state.life.name()),
        summary: None,
        kind: MessageKind::ShutdownResponse { approve: true },
    };
    state
        .life
        .tell_lead(out, "its answer to the shutdown request")
        .await;
    state.life.leave();
    myself.stop(Some("shutdown approved".into()));
}

/// Starts a run in its own task; a panic inside it comes back as `Finished(Err)`.
fn start_run(myself: ActorRef<TeammateMsg>, state: &mut TeammateState, req: RunRequest) {
    state.mode = req.mode;
    state.runner.pipeline.gate.cast(GateMsg::Update {
        agent: state.runner.spec.id.clone(),
        policy: GatePolicy::new(req.mode, state.runner.spec.allowed_tools.clone()),
    });
    state.life.working();
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
                let crash = TeammateRunError::from(Crash::from(e));
                events.publish(
                    &agent,
                    EventKind::Error {
                        message: crash.to_string(),
                    },
                );
                TeammateMsg::Finished {
                    outcome: Err(crash),
                    conversation: Vec::new(),
                }
            }
        };
        let _ = myself.cast(msg);
    });
}

/// Cancels a running turn and unregisters the gate policy (its worktree is ended by
/// its [`MemberLife`]). Safe to call twice.
fn halt(state: &mut TeammateState) {
    if let Some(cancel) = state.running.take() {
        cancel.cancel();
    }
    state.runner.pipeline.gate.cast(GateMsg::Unregister {
        agent: state.runner.spec.id.clone(),
    });
}
