//! `crew worker`: a ractor_cluster node that offers subagent slots. Its `WorkerNode` actor
//! joins the `crew.workers` pg group, where leads find it; each `Spawn` runs in a spawned
//! task (`remote_run`) and reports to the lead's link actor through the lead's own pg
//! group. Connections authenticate with the cookie handshake; a refused one is logged.
//! A lead that goes away leaves orphans: a running task is stopped and committed, and
//! after `orphan_timeout` its worktree is removed — its branch stays in the task's
//! repository on this node.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServer, NodeServerMessage};
use tokio_util::sync::CancellationToken;

use super::bundle::{self, TaskCopy};
use super::protocol::{
    LeadLinkMsg, RemoteResult, RemoteSpawn, ToLead, ToWorker, WORKERS_GROUP, WorkerMsg,
    WorkerStatus,
};
use super::remote_ask::Report;
use super::remote_run;

/// The largest frame a node accepts (a bundle travels in one frame).
pub(crate) const MAX_FRAME: u64 = 1 << 30;

/// What a worker node is started with.
#[derive(Debug, Clone)]
pub(crate) struct WorkerConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The shared secret (read from a file by the caller).
    pub cookie: String,
    /// The node's name (default `worker-PORT`).
    pub name: String,
    /// Subagents that may run at once.
    pub slots: u32,
    /// Where task copies live.
    pub workdir: PathBuf,
    /// How long an orphan's worktree stays after its lead went away.
    pub orphan_timeout: Duration,
    /// TLS: when set, the node accepts TLS connections only (see [`super::tls`]).
    pub tls: Option<super::tls::ServerTls>,
}

/// The pg group a lead's link actor joins: named after the lead's node, so a worker can
/// tell which tasks a lost node's departure orphans.
pub(crate) fn lead_group(node_full_name: &str) -> String {
    format!("crew.lead.{node_full_name}")
}

/// Sends `msg` to the lead's link actor in `group`; `false` if no such lead is known.
pub(crate) fn to_lead(group: &str, msg: ToLead) -> bool {
    let Some(cell) = ractor::pg::get_members(&group.to_string())
        .into_iter()
        .next()
    else {
        return false;
    };
    let link: ActorRef<LeadLinkMsg> = cell.into();
    link.cast(LeadLinkMsg::Remote(msg)).is_ok()
}

/// The worker node's actor (configuration only).
pub(crate) struct WorkerNode;

/// Its state.
pub(crate) struct WorkerState {
    cfg: WorkerConfig,
    node: String,
    running: HashMap<String, (CancellationToken, String)>,
    /// Finished tasks whose branch waits for the lead: task → lead group.
    kept: HashMap<String, String>,
    /// Running teammates: where their mail goes, and their Asks waiting for the lead.
    teammates: HashMap<String, super::teammate_node::Link>,
    /// Running subagents' Asks waiting for the lead (only auto-mode ones ever ask).
    asks: HashMap<String, std::sync::Arc<super::remote_ask::AskRelay>>,
}

impl Actor for WorkerNode {
    type Msg = WorkerMsg;
    type State = WorkerState;
    type Arguments = (WorkerConfig, String);

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        (cfg, node): (WorkerConfig, String),
    ) -> Result<Self::State, ActorProcessingErr> {
        ractor::pg::join(WORKERS_GROUP.to_string(), vec![myself.get_cell()]);
        Ok(WorkerState {
            cfg,
            node,
            running: HashMap::new(),
            kept: HashMap::new(),
            teammates: HashMap::new(),
            asks: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            WorkerMsg::Remote(ToWorker::Hello { lead, node_id }) => {
                to_lead(&lead, ToLead::Status(status(state, node_id)));
            }
            WorkerMsg::Remote(ToWorker::Spawn(spawn)) => {
                if let Some((dir, cancel)) = begin(state, &spawn, "task") {
                    let (task_id, lead) = (spawn.task_id.clone(), spawn.lead.clone());
                    let node = state.node.clone();
                    let report = reporter(&lead);
                    // An auto-mode subagent's Asks wait here for the lead's answers.
                    let asks = super::remote_ask::AskRelay::new(&task_id, report.clone());
                    state.asks.insert(task_id.clone(), asks.clone());
                    let run = remote_run::run(*spawn, dir, node.clone(), cancel, report, asks);
                    run_then_end(myself.clone(), task_id, lead, node, "the run", run);
                }
            }
            WorkerMsg::Remote(ToWorker::SpawnTeammate(t)) => {
                if let Some((dir, cancel)) = begin(state, &t.run, "teammate task") {
                    let task_id = t.run.task_id.clone();
                    let link = super::teammate_node::start(
                        myself.clone(),
                        *t,
                        dir,
                        state.node.clone(),
                        cancel,
                    );
                    state.teammates.insert(task_id, link);
                }
            }
            WorkerMsg::Remote(ToWorker::Mail(mail)) => {
                super::teammate_node::mail(&state.teammates, mail);
            }
            WorkerMsg::Remote(ToWorker::AskAnswer(answer)) => match state.asks.get(&answer.task_id)
            {
                Some(relay) => {
                    if let Err(e) = relay.answer(&answer.ask_id, answer.answer) {
                        tracing::warn!("refused an AskAnswer for task {}: {e}", answer.task_id);
                    }
                }
                None => super::teammate_node::answer(&state.teammates, answer),
            },
            WorkerMsg::Remote(ToWorker::Stop { task_id }) => {
                if let Some((cancel, _)) = state.running.get(&task_id) {
                    cancel.cancel();
                }
            }
            WorkerMsg::Remote(ToWorker::Handback { task_id }) => {
                if state.kept.remove(&task_id).is_some() && remote_run::valid_task_id(&task_id) {
                    let dir = state.cfg.workdir.join(&task_id);
                    tracing::info!("task {task_id}: handed back, removing {}", dir.display());
                    tokio::spawn(async move {
                        let _ = tokio::fs::remove_dir_all(dir).await;
                    });
                }
            }
            WorkerMsg::Ended {
                task_id,
                lead,
                result,
            } => {
                state.running.remove(&task_id);
                state.teammates.remove(&task_id);
                state.asks.remove(&task_id);
                tracing::info!("task {task_id}: ended ({:?})", result.status);
                state.kept.insert(task_id.clone(), lead.clone());
                if !to_lead(&lead, ToLead::Finished(*result)) {
                    orphan(&myself, state, &task_id);
                }
            }
            WorkerMsg::LeadLost { node } => {
                let group = lead_group(&node);
                for (id, (cancel, lead)) in &state.running {
                    if *lead == group {
                        tracing::warn!(
                            "task {id}: its lead {node} went away; stopping it, its branch is kept"
                        );
                        cancel.cancel();
                    }
                }
                let orphans: Vec<String> = state
                    .kept
                    .iter()
                    .filter(|(_, lead)| **lead == group)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in orphans {
                    orphan(&myself, state, &id);
                }
            }
            WorkerMsg::OrphanTimeout { task_id } => {
                if state.kept.remove(&task_id).is_some() {
                    let copy = TaskCopy::at(state.cfg.workdir.join(&task_id));
                    tracing::warn!(
                        "task {task_id}: never handed back; its worktree is removed, its branch kept in {}",
                        copy.repo.display()
                    );
                    tokio::spawn(async move {
                        let _ = bundle::drop_worktree(&copy).await;
                    });
                }
            }
            WorkerMsg::Status(reply) => {
                let _ = reply.send(status(state, 0));
            }
        }
        Ok(())
    }
}

/// Admits `spawn` (a `what`, for the log) or refuses it to its lead with the reason. An
/// admitted one is recorded as running: its directory and its stop switch are returned.
fn begin(
    state: &mut WorkerState,
    spawn: &RemoteSpawn,
    what: &str,
) -> Option<(PathBuf, CancellationToken)> {
    if let Err(refusal) = admit(state, spawn) {
        let reason = refusal.to_string();
        tracing::warn!("refused {what} {}: {reason}", spawn.task_id);
        to_lead(
            &spawn.lead,
            ToLead::Refused {
                task_id: spawn.task_id.clone(),
                reason,
            },
        );
        return None;
    }
    let cancel = CancellationToken::new();
    state
        .running
        .insert(spawn.task_id.clone(), (cancel.clone(), spawn.lead.clone()));
    tracing::info!("{what} {}: started for {}", spawn.task_id, spawn.lead);
    Some((state.cfg.workdir.join(&spawn.task_id), cancel))
}

/// How a run on this node reports to its lead's link actor (in pg group `lead`).
pub(super) fn reporter(lead: &str) -> Report {
    let lead = lead.to_string();
    Arc::new(move |m| to_lead(&lead, m))
}

/// Runs task `task_id`'s `run` in its own task; its result — or, should `what` panic, a
/// failure saying so — reaches the node's actor as `Ended`.
pub(super) fn run_then_end(
    node_actor: ActorRef<WorkerMsg>,
    task_id: String,
    lead: String,
    node: String,
    what: &'static str,
    run: impl Future<Output = RemoteResult> + Send + 'static,
) {
    tokio::spawn(async move {
        let result = match tokio::spawn(run).await {
            Ok(r) => r,
            Err(e) => RemoteResult::failed(
                &task_id,
                &node,
                format!("{what} crashed on the worker: {e}"),
            ),
        };
        let _ = node_actor.cast(WorkerMsg::Ended {
            task_id,
            lead,
            result: Box::new(result),
        });
    });
}

/// Why this node refuses a spawn (sent to the lead as the refusal's reason).
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// The spawn names something invalid.
    #[error(transparent)]
    Spawn(#[from] remote_run::BadSpawn),
    /// Every slot is in use.
    #[error("no free slot on {node} ({slots} in use)")]
    NoSlot { node: String, slots: u32 },
    /// The task id was seen before.
    #[error("task {task_id} already exists on {node}")]
    Exists { task_id: String, node: String },
}

/// Whether this node takes `spawn`: valid names, a free slot, a task id not seen before.
fn admit(state: &WorkerState, spawn: &RemoteSpawn) -> Result<(), Refusal> {
    remote_run::check_spawn(spawn)?;
    if state.running.len() >= state.cfg.slots as usize {
        return Err(Refusal::NoSlot {
            node: state.node.clone(),
            slots: state.cfg.slots,
        });
    }
    if state.running.contains_key(&spawn.task_id)
        || state.kept.contains_key(&spawn.task_id)
        || state.cfg.workdir.join(&spawn.task_id).exists()
    {
        return Err(Refusal::Exists {
            task_id: spawn.task_id.clone(),
            node: state.node.clone(),
        });
    }
    Ok(())
}

fn status(state: &WorkerState, node_id: u64) -> WorkerStatus {
    WorkerStatus {
        node: state.node.clone(),
        slots: state.cfg.slots,
        running: state.running.keys().cloned().collect(),
        kept: state.kept.keys().cloned().collect(),
        node_id,
    }
}

/// Starts the orphan clock of a finished task (kept until handed back or timed out).
fn orphan(myself: &ActorRef<WorkerMsg>, state: &WorkerState, task_id: &str) {
    let (me, id, after) = (
        myself.clone(),
        task_id.to_string(),
        state.cfg.orphan_timeout,
    );
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let _ = me.cast(WorkerMsg::OrphanTimeout { task_id: id });
    });
}

/// Logs connections: a session that closes before authenticating was refused (a wrong
/// cookie, most often); an authenticated one that closes was a lead leaving.
struct ConnectionLog {
    worker: ActorRef<WorkerMsg>,
    authenticated: Arc<Mutex<HashSet<u64>>>,
}

impl NodeEventSubscription for ConnectionLog {
    fn node_session_opened(&self, ses: NodeServerSessionInformation) {
        tracing::info!("connection from {}", ses.peer_addr);
    }

    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        let was = lock(&self.authenticated).remove(&ses.node_id);
        if !was {
            tracing::warn!(
                "refused a connection from {}: the cookie handshake failed (wrong cookie?)",
                ses.peer_addr
            );
            return;
        }
        let name = ses.peer_name.map(|n| n.name).unwrap_or_default();
        tracing::warn!("lead {name} ({}) disconnected", ses.peer_addr);
        let _ = self.worker.cast(WorkerMsg::LeadLost { node: name });
    }

    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        lock(&self.authenticated).insert(ses.node_id);
        let name = ses.peer_name.map(|n| n.name).unwrap_or_default();
        tracing::info!("lead {name} ({}) authenticated", ses.peer_addr);
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Poisoning only means a panic mid-update of a plain set; it is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running worker node.
pub(crate) struct WorkerHandle {
    /// The node server.
    pub server: ActorRef<NodeServerMessage>,
    /// The worker actor.
    pub worker: ActorRef<WorkerMsg>,
}

/// Why a worker node did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The work directory cannot be created.
    #[error("--workdir {}: {reason}", .path.display())]
    Workdir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// The listening address cannot be bound.
    #[error("--listen {addr}: {reason}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// The node server actor did not start.
    #[error("cannot start the node server on {addr}: {reason}")]
    NodeServer {
        /// The address.
        addr: std::net::SocketAddr,
        /// The spawn error.
        reason: ractor::SpawnErr,
    },
    /// The worker actor did not start.
    #[error("cannot start the worker actor: {0}")]
    Worker(ractor::SpawnErr),
}

/// Starts a worker node: the node server listening on `cfg.listen` (behind a TLS accept
/// loop when `cfg.tls` is set), and the worker actor.
pub(crate) async fn start(cfg: WorkerConfig) -> Result<WorkerHandle, StartError> {
    std::fs::create_dir_all(&cfg.workdir).map_err(|reason| StartError::Workdir {
        path: cfg.workdir.clone(),
        reason,
    })?;
    let host = cfg.listen.ip().to_string();
    // With TLS, our own loop owns the public port; the node server's listener is moved to
    // a loopback port the OS picks, and it too accepts only TLS.
    let (port, listen_ip, listener) = match &cfg.tls {
        Some(_) => {
            let listener = tokio::net::TcpListener::bind(cfg.listen)
                .await
                .map_err(|reason| StartError::Listen {
                    addr: cfg.listen,
                    reason,
                })?;
            (
                0,
                std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                Some(listener),
            )
        }
        None => (cfg.listen.port(), cfg.listen.ip(), None),
    };
    let server = NodeServer::new(
        port,
        cfg.cookie.clone(),
        cfg.name.clone(),
        host.clone(),
        cfg.tls
            .clone()
            .map(|t| ractor_cluster::IncomingEncryptionMode::Tls(t.0)),
        Some(ractor_cluster::node::NodeConnectionMode::Isolated),
    )
    .with_listen_addr(listen_ip)
    .with_max_inbound_frame_size(MAX_FRAME);
    let (server, _) =
        Actor::spawn(None, server, ())
            .await
            .map_err(|reason| StartError::NodeServer {
                addr: cfg.listen,
                reason,
            })?;
    if let (Some(listener), Some(tls)) = (listener, cfg.tls.clone()) {
        tokio::spawn(super::tls::accept_loop(listener, tls.0, server.clone()));
    }
    let node = format!("{}@{host}", cfg.name);
    let (worker, _) = Actor::spawn(None, WorkerNode, (cfg, node))
        .await
        .map_err(StartError::Worker)?;
    let _ = server.cast(NodeServerMessage::SubscribeToEvents {
        id: "crew-worker-log".into(),
        subscription: Box::new(ConnectionLog {
            worker: worker.clone(),
            authenticated: Arc::default(),
        }),
    });
    Ok(WorkerHandle { server, worker })
}
