//! A teammate placed on a worker, seen from the lead. It is on the lead's roster like any
//! teammate, with its own worktree and branch made by the lead's worktree manager; its
//! actor here is a proxy, linked under the team actor like a local teammate's (so its
//! failure is seen there). The proxy relays the mail that arrives in the teammate's inbox
//! on the lead to the worker, sends what the teammate sends from the teammate's own
//! mailbox (the worker cannot choose the sender), republishes its events, puts its Asks
//! to the lead's approver ([`super::remote_ask`]), and brings its branch back — checked to
//! be a fast-forward — each time it goes idle and when it shuts down, so the branch is
//! diffable and mergeable like a local teammate's. A lost worker fails the teammate with
//! "worker lost" and the lead is told. Joining, status, acknowledgement, leaving, the
//! worktree's end and the failure notice (which names the kept worktree) are the local
//! teammate's, through [`MemberLife`]. It is started by [`super::teammate_launch`].

use std::path::PathBuf;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc;

use super::bundle;
use super::pool_actor::Pool;
use super::protocol::{
    AskAnswerWire, IdleWire, MailWire, RemoteResult, RemoteStatus, SentWire, TaskNews,
    TeammateSpawn, ToWorker, WorkerMsg,
};
use super::remote_ask::answer_on_lead;
use super::remote_judge;
use crate::agent::member_life::{MemberLife, failure};
use crate::agent::pipeline::Pipeline;
use crate::agent::subagent_actor::Workspaces;
use crate::auto_mode::classifier::Intent;
use crate::permission::{PermissionMode, SharedMode};
use crate::team::actor::Mailbox;
use crate::team::{Outgoing, Recipient};
use tokio_util::sync::CancellationToken;

/// The proxy's messages (local only).
pub(crate) enum ProxyMsg {
    /// Mail arrived in its inbox on the lead (or may have).
    Wake,
    /// What its worker reports.
    News(TaskNews),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for ProxyMsg {}

/// The lead's proxy of a remote teammate (configuration only).
pub(crate) struct RemoteTeammate;

/// What the proxy starts from.
pub(crate) struct ProxyArgs {
    pub(super) mailbox: Mailbox,
    pub(super) agent_id: String,
    pub(super) pipeline: Pipeline,
    pub(super) pool: Arc<Pool>,
    pub(super) worker: ActorRef<WorkerMsg>,
    pub(super) node: String,
    pub(super) work_id: String,
    pub(super) root: PathBuf,
    pub(super) branch: String,
    pub(super) workspace: Arc<dyn Workspaces>,
    pub(super) spawn: TeammateSpawn,
    pub(super) news: mpsc::UnboundedReceiver<TaskNews>,
}

/// The proxy's state.
pub(crate) struct ProxyState {
    /// Its mailbox and worktree (under `work_id`): joining, status, acknowledgement,
    /// leaving, failing — as for a local teammate.
    life: MemberLife,
    agent_id: String,
    pipeline: Pipeline,
    pool: Arc<Pool>,
    worker: ActorRef<WorkerMsg>,
    node: String,
    work_id: String,
    root: PathBuf,
    branch: String,
    /// Mail up to this inbox index went to the worker.
    relayed: u64,
    /// The worker's run is over (finished, refused or lost).
    ended: bool,
    /// Its permission mode as the lead shipped it (not as the worker claims): in auto its
    /// Asks go to the lead's classifier first.
    mode: SharedMode,
    /// What the classifier is told it works on.
    intent: Arc<Intent>,
}

impl Actor for RemoteTeammate {
    type Msg = ProxyMsg;
    type State = ProxyState;
    type Arguments = ProxyArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ProxyArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let life = MemberLife::new(args.mailbox, Some((args.workspace, args.work_id.clone())));
        life.join(myself.clone(), || ProxyMsg::Wake);
        life.working();
        let mut news = args.news;
        let me = myself.clone();
        tokio::spawn(async move {
            while let Some(n) = news.recv().await {
                if me.cast(ProxyMsg::News(n)).is_err() {
                    return;
                }
            }
        });
        tracing::info!("teammate {} runs on worker {}", life.name(), args.node);
        let mode = SharedMode::new(args.spawn.mode);
        let intent = Arc::new(Intent::new(
            &args.spawn.run.prompt,
            crate::classifier::TaskSource::Agent,
            &[],
        ));
        args.worker
            .cast(WorkerMsg::Remote(ToWorker::SpawnTeammate(Box::new(
                args.spawn,
            ))))
            .map_err(|e| format!("worker {} cannot be reached: {e}", args.node))?;
        Ok(ProxyState {
            life,
            agent_id: args.agent_id,
            pipeline: args.pipeline,
            pool: args.pool,
            worker: args.worker,
            node: args.node,
            work_id: args.work_id,
            root: args.root,
            branch: args.branch,
            relayed: 0,
            ended: false,
            mode,
            intent,
        })
    }

    async fn post_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        relay(state).await;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if !state.ended {
            let _ = state.worker.cast(WorkerMsg::Remote(ToWorker::Stop {
                task_id: state.work_id.clone(),
            }));
            state.pool.release(&state.work_id);
        }
        state.life.finish_worktree().await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ProxyMsg::Wake => relay(state).await,
            ProxyMsg::News(TaskNews::Started) => {}
            // Republished as the teammate's own; a worker cannot speak for another agent.
            ProxyMsg::News(TaskNews::Event(e)) if e.agent == state.agent_id => {
                state.pipeline.events.publish(&e.agent, e.kind)
            }
            ProxyMsg::News(TaskNews::Event(e)) => {
                tracing::warn!(
                    "worker {} sent an event for {}; dropped",
                    state.node,
                    e.agent
                )
            }
            ProxyMsg::News(TaskNews::TeamSend(sent)) => send(state, sent).await,
            ProxyMsg::News(TaskNews::Idle(idle)) => on_idle(state, *idle).await,
            ProxyMsg::News(TaskNews::Ask(ask)) => {
                let (pipeline, worker) = (state.pipeline.clone(), state.worker.clone());
                let (agent, name, cwd) = (
                    state.agent_id.clone(),
                    state.life.name().to_string(),
                    state.root.clone(),
                );
                let task_id = state.work_id.clone();
                let (mode, intent) = (state.mode.clone(), state.intent.clone());
                // The human (or the classifier) may take a while: never in the handler.
                tokio::spawn(async move {
                    let ask_id = ask.ask_id.clone();
                    let mut request = ask.request.clone();
                    request.agent = agent.clone();
                    let judged = if mode.get() == PermissionMode::Auto {
                        let cancel = CancellationToken::new();
                        remote_judge::classify(&pipeline, &request, &intent, &mode, &cancel).await
                    } else {
                        None
                    };
                    let answer = match judged {
                        Some(answer) => answer,
                        None => answer_on_lead(&pipeline, *ask, &agent, &name, &cwd).await,
                    };
                    let _ = worker.cast(WorkerMsg::Remote(ToWorker::AskAnswer(AskAnswerWire {
                        task_id,
                        ask_id,
                        answer,
                    })));
                });
            }
            ProxyMsg::News(TaskNews::Finished(result)) => {
                state.ended = true;
                let failed = (result.status == RemoteStatus::Failed).then(|| result.result.clone());
                // A failed teammate is not marked finished: its failure is the team's to
                // report.
                let team = match failed {
                    None => Team::Leave,
                    Some(_) => Team::Stay,
                };
                let worktree = on_finished(state, *result, team).await;
                if let Some(reason) = failed {
                    // Its work is back; the failure is the team's to report, naming where
                    // the work was kept.
                    let reason = format!("its run failed on worker {}: {reason}", state.node);
                    return Err(failure(reason, worktree));
                }
                myself.stop(Some("shut down".into()));
            }
            ProxyMsg::News(TaskNews::Refused(reason)) => {
                state.ended = true;
                let reason = format!("worker {} refused the teammate: {reason}", state.node);
                return Err(state.life.fail(reason).await);
            }
            ProxyMsg::News(TaskNews::Lost(node)) => {
                state.ended = true;
                let reason = format!("worker lost: {node} disconnected while it ran");
                return Err(state.life.fail(reason).await);
            }
        }
        Ok(())
    }
}

/// Relays the teammate's unread mail that has not gone to the worker yet.
async fn relay(state: &mut ProxyState) {
    if state.ended {
        return;
    }
    let unread = state.life.unread().await;
    let fresh: Vec<_> = unread
        .into_iter()
        .filter(|e| e.index >= state.relayed)
        .collect();
    let Some(newest) = fresh.last() else { return };
    state.relayed = newest.index + 1;
    state.life.working();
    let _ = state
        .worker
        .cast(WorkerMsg::Remote(ToWorker::Mail(MailWire {
            task_id: state.work_id.clone(),
            mail: fresh,
        })));
}

/// Sends the teammate's message from its own mailbox on the lead's team.
async fn send(state: &ProxyState, sent: SentWire) {
    let to = match Recipient::parse(&sent.to) {
        Ok(to) => to,
        Err(e) => {
            tracing::warn!(
                "{}'s message to `{}` dropped: {e}",
                state.life.name(),
                sent.to
            );
            return;
        }
    };
    let out = Outgoing {
        message: sent.message,
        summary: sent.summary,
        kind: sent.kind,
    };
    if let Err(e) = state.life.mailbox().send(to, out).await {
        tracing::warn!(
            "{}'s message to `{}` was not delivered: {e}",
            state.life.name(),
            sent.to
        );
    }
}

/// Brings the branch so far back; once the worker has read all relayed mail, the
/// teammate is idle (and its inbox on the lead acknowledged).
async fn on_idle(state: &mut ProxyState, idle: IdleWire) {
    if let Some(head) = &idle.head {
        fetch(state, &idle.bundle, head).await;
    }
    state
        .life
        .ack_through(idle.through.min(state.relayed))
        .await;
    if idle.through >= state.relayed {
        state.life.idle();
    }
    // Mail that came while the worker wrapped up goes out now.
    relay(state).await;
}

/// Whether a teammate whose run ended tells the team it has left, finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Team {
    /// It has: its run ended without failing.
    Leave,
    /// It has not: its run failed, which the team actor's supervision reports.
    Stay,
}

/// The final branch, the worktree finished (kept: it holds the work), the worker told it
/// may drop its copy, and (with [`Team::Leave`]) the teammate gone from the team. Returns
/// what became of the worktree, for a failure notice.
async fn on_finished(state: &mut ProxyState, result: RemoteResult, team: Team) -> Option<String> {
    if let Some(head) = &result.head {
        fetch(state, &result.bundle, head).await;
    }
    state.life.ack_through(state.relayed).await;
    state.pool.release(&state.work_id);
    let worktree = state.life.finish_worktree().await;
    let _ = state.worker.cast(WorkerMsg::Remote(ToWorker::Handback {
        task_id: state.work_id.clone(),
    }));
    if team == Team::Leave {
        state.life.leave();
    }
    worktree
}

/// Fast-forwards the teammate's worktree here to the worker's `head`.
async fn fetch(state: &ProxyState, bytes: &[u8], head: &str) {
    if let Err(e) = bundle::fetch_into(&state.root, bytes, &state.branch, head).await {
        tracing::warn!(
            "{}'s branch from {} was not applied: {e}",
            state.life.name(),
            state.node
        );
        state.pipeline.events.publish(
            &state.agent_id,
            crate::events::EventKind::Error {
                message: format!("the branch from worker {} was not applied: {e}", state.node),
            },
        );
    }
}
