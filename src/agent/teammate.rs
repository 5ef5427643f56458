//! Teammates: named agents that live on between assignments. The lead's `agent {name}` call
//! ends in [`launch`], which checks the request, gives the teammate its own worktree, adds
//! it to the roster and has the team actor spawn a `Teammate` actor linked under itself.
//!
//! The actor runs its ReAct loop (the shared `Runner`) in a spawned task; the runner injects
//! its unread mail at each turn boundary, marked with the sender, and acknowledges it. When
//! a run ends the actor looks at its inbox: new mail starts another run, none makes it idle
//! (the team actor tells the lead). A `shutdown_request` from the lead is answered with a
//! `shutdown_response` and ends the actor; a `plan_first` teammate works in Plan mode until
//! a `plan_approval_response {approve: true}` arrives, then carries its plan out in Do mode.
//! A crash of its run fails the actor, and the team actor's supervision releases its items.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, rpc::CallResult};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::delegate::SpawnRequest;
use super::mode::AgentMode;
use super::runner::{AgentSpec, RunOutcome, RunPlace, RunRequest, Runner};
use super::subagent::{SubagentEnv, Workspaces};
use crate::events::EventKind;
use crate::gate::GatePolicy;
use crate::gate::actor::GateMsg;
use crate::permission::delegation::Placement;
use crate::permission::{PermissionMode, SharedMode};
use crate::protocol::Message;
use crate::team::actor::{Mailbox, SpawnFn, TeamMsg};
use crate::team::{
    Envelope, Member, MemberName, MemberStatus, MessageKind, Outgoing, Recipient, Team,
};
use crate::tools::CommandSandbox;

/// The session's team, as the lead's actor holds it.
#[derive(Clone)]
pub struct TeamLink {
    /// The team actor.
    pub actor: ActorRef<TeamMsg>,
    /// The team's files.
    pub storage: Team,
}

impl TeamLink {
    /// The mailbox of member `me`.
    pub fn mailbox(&self, me: MemberName) -> Mailbox {
        Mailbox {
            team: self.storage.clone(),
            me,
            actor: self.actor.clone(),
        }
    }
}

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

/// What a teammate starts from (built by [`launch`]).
pub struct TeammateArgs {
    name: MemberName,
    runner: Runner,
    place: RunPlace,
    mailbox: Mailbox,
    first: RunRequest,
    workspace: Option<(Arc<dyn Workspaces>, String)>,
    slots: Arc<Semaphore>,
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

/// Starts teammate `req.name` for the lead: checks, worktree, roster, actor. Returns its
/// agent id. `mode` is the lead's permission mode: the teammate shares it (a switch applies
/// to the teammate too) unless its definition narrows it to a stricter one.
pub async fn launch(
    env: &SubagentEnv,
    team: &TeamLink,
    req: SpawnRequest,
    mode: SharedMode,
) -> Result<String, String> {
    let raw = req.name.clone().unwrap_or_default();
    let name = MemberName::teammate(&raw).map_err(|e| e.to_string())?;
    let def = env
        .catalog
        .get(&req.subagent_type)
        .cloned()
        .ok_or_else(|| {
            format!(
                "unknown subagent_type `{}`; available: {}",
                req.subagent_type,
                env.catalog.names().join(", ")
            )
        })?;
    let storage = team.storage.clone();
    let taken = name.clone();
    let exists = tokio::task::spawn_blocking(move || storage.roster())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?
        .member(&taken)
        .is_some();
    if exists {
        return Err(format!(
            "a teammate called {name} already exists: message it with send_message instead"
        ));
    }
    let placement = super::delegate::placement(
        &req,
        &def,
        &env.runner.pipeline.registry,
        env.workspaces.is_some(),
    )?;
    let agent_id = format!("{}/{name}", def.name);
    let work_id = format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let (cwd, note, workspace) = match (&env.workspaces, placement) {
        (Some(ws), Placement::Worktree) => {
            let root = ws.create(&work_id, &req.description).await?;
            let rel = env
                .main_cwd
                .strip_prefix(ws.repo_root())
                .unwrap_or(Path::new(""));
            let note = format!(
                "\n\nYou work in your own git worktree at {}. Paths of the main checkout {} map into it: \
use paths inside your worktree. You cannot write outside it.",
                root.display(),
                ws.repo_root().display()
            );
            (root.join(rel), note, Some((ws.clone(), work_id.clone())))
        }
        _ => (env.main_cwd.clone(), String::new(), None),
    };
    let worktree_root = workspace.as_ref().map(|_| cwd.clone());
    let member = Member::new(name.clone(), &agent_id, &def.name, worktree_root.clone());
    let storage = team.storage.clone();
    let added = tokio::task::spawn_blocking(move || storage.add_member(member))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    if let Err(e) = added {
        if let Some((ws, id)) = &workspace {
            let _ = ws.finish(id).await;
        }
        return Err(e);
    }

    let all: Vec<String> = env
        .runner
        .pipeline
        .registry
        .definitions()
        .map(|d| d.name.clone())
        .collect();
    let mut allowed: HashSet<String> = def
        .allowed_tools(all.iter().cloned())
        .unwrap_or_else(|| all.into_iter().collect());
    // Teammates cannot start teammates (nor, for now, subagents).
    allowed.remove("agent");
    allowed.insert("send_message".into());
    let mut runner = env.runner.clone();
    runner.spec = AgentSpec {
        id: agent_id.clone(),
        model: match def.model.as_deref().or(req.model.as_deref()).map(str::trim) {
            None | Some("" | "inherit" | "sonnet" | "opus" | "haiku") => {
                env.runner.spec.model.clone()
            }
            Some(m) => m.to_string(),
        },
        system_prompt: format!(
            "{}{note}\n\nYou are teammate `{name}` on a team led by `lead`. Messages from the lead and \
other teammates arrive in your conversation marked <team-message from=\"...\">. Report to the lead with \
send_message {{to: \"lead\"}} (it does not see your output otherwise). When you have nothing left to do, \
end your turn: you wait, idle, until a message arrives.",
            def.prompt
        ),
        allowed_tools: Some(allowed),
        max_turns: def.max_turns.unwrap_or(env.default_max_turns),
        max_tokens: env.runner.spec.max_tokens,
    };
    let mailbox = team.mailbox(name.clone());
    let writable = match &worktree_root {
        Some(root) => {
            let mut roots = vec![root.clone()];
            roots.extend(crate::tools::landlock::git_writable_dirs(root));
            roots
        }
        None => vec![cwd.clone()],
    };
    let place = RunPlace {
        cwd,
        permission_mode: narrowed(mode, def.permission_mode.as_deref()),
        sandbox: CommandSandbox::Landlock {
            writable_roots: writable,
        },
        delegate: None,
        tasks: None,
        walk: env.walk.clone(),
        mail: Some(Arc::new(mailbox.clone())),
    };
    let first = RunRequest {
        mode: if req.plan_first {
            AgentMode::Plan
        } else {
            AgentMode::Chat
        },
        task: req.prompt.clone(),
        plan: None,
    };
    let args = TeammateArgs {
        name: name.clone(),
        runner,
        place,
        mailbox,
        first,
        workspace: workspace.clone(),
        slots: env.slots.clone(),
    };
    let spawn: SpawnFn = Box::new(move |cell| {
        Box::pin(async move {
            Actor::spawn_linked(None, Teammate, args, cell)
                .await
                .map(|(actor, _)| actor.get_id())
                .map_err(|e| format!("could not start teammate: {e}"))
        })
    });
    let started = team
        .actor
        .call(
            |reply| TeamMsg::Adopt {
                name: name.clone(),
                spawn,
                reply,
            },
            Some(std::time::Duration::from_secs(30)),
        )
        .await;
    match started {
        Ok(CallResult::Success(Ok(_))) => Ok(agent_id),
        Ok(CallResult::Success(Err(e))) => Err(e),
        _ => Err("the team did not answer; the teammate may not have started".into()),
    }
}

/// The lead's mode, or the definition's when that is stricter (a definition may narrow the
/// lead's mode, never widen it).
fn narrowed(lead: SharedMode, definition: Option<&str>) -> SharedMode {
    let Some(name) = definition else {
        return lead;
    };
    let (own, _) = PermissionMode::parse_lenient(name);
    if strictness(own) > strictness(lead.get()) {
        SharedMode::new(own)
    } else {
        lead
    }
}

/// Higher is stricter: how much a mode asks before it lets a call through.
fn strictness(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Strict => 3,
        PermissionMode::Default => 2,
        PermissionMode::AcceptEdits => 1,
        PermissionMode::BypassPermissions | PermissionMode::DontAsk => 0,
    }
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
        let _ = args.runner.pipeline.gate.cast(GateMsg::Register {
            agent: args.runner.spec.id.clone(),
            policy: GatePolicy::new(args.first.mode, args.runner.spec.allowed_tools.clone()),
        });
        Ok(TeammateState {
            name: args.name,
            runner: args.runner,
            place: args.place,
            mailbox: args.mailbox,
            conversation: Vec::new(),
            mode: args.first.mode,
            first: Some(args.first),
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
        if let Some(first) = state.first.take() {
            start_run(myself, state, first);
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
    let (team, me) = (state.mailbox.team.clone(), state.name.clone());
    let unread: Vec<Envelope> = tokio::task::spawn_blocking(move || team.unread(&me))
        .await
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_narrows_the_leads_mode_but_never_widens_it() {
        let lead = SharedMode::new(PermissionMode::AcceptEdits);
        let own = narrowed(lead.clone(), Some("default"));
        assert_eq!(own.get(), PermissionMode::Default);
        lead.set(PermissionMode::BypassPermissions);
        assert_eq!(
            own.get(),
            PermissionMode::Default,
            "a narrowed mode is its own"
        );
        let shared = narrowed(lead.clone(), Some("bypassPermissions"));
        lead.set(PermissionMode::Strict);
        assert_eq!(
            shared.get(),
            PermissionMode::Strict,
            "a wider one follows the lead"
        );
        assert_eq!(narrowed(lead, None).get(), PermissionMode::Strict);
    }
}
