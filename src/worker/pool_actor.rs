//! The lead's side of the cluster: a node server that connects to the `--workers`
//! nodes with the cookie, and the `LeadLink` actor that knows each worker's slots,
//! places remote tasks on free ones (queueing when all are busy), routes the workers'
//! reports to the task waiting for them, and tells a task its worker was lost when that
//! node's session ends.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef};
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServer, NodeServerMessage};
use tokio::sync::{mpsc, oneshot};

use super::node_actor::{MAX_FRAME, lead_group, lock};
use super::protocol::{
    LeadLinkMsg, PlaceError, PlaceRequest, RuleWire, TaskNews, ToLead, ToWorker, WORKERS_GROUP,
    WorkerMsg, WorkerStatus,
};
use super::snapshot::{self, NodeView, Snapshot};

/// How long joining a worker may take (connect, handshake, first status).
const JOIN_TIMEOUT: Duration = Duration::from_secs(15);

/// One known worker.
struct Worker {
    actor: ActorRef<WorkerMsg>,
    status: WorkerStatus,
    busy: Vec<String>,
    alive: bool,
}

/// The link actor (configuration only).
pub struct LeadLink;

/// Its state.
pub struct LinkState {
    workers: Vec<Worker>,
    waiting: VecDeque<PlaceRequest>,
    tasks: HashMap<String, (String, mpsc::UnboundedSender<TaskNews>)>,
    status_waiters: HashMap<u64, oneshot::Sender<WorkerStatus>>,
    /// Where the lead's view is written on every change (`crew workers list` reads it).
    snapshot: Option<(PathBuf, String)>,
}

fn node_of(actor: &ActorRef<WorkerMsg>) -> Option<u64> {
    match actor.get_id() {
        ActorId::Remote { node_id, .. } => Some(node_id),
        ActorId::Local(_) => None,
    }
}

impl LinkState {
    /// Gives free slots to waiting requests, least-loaded worker first.
    fn place_waiting(&mut self) {
        let mut still = VecDeque::new();
        while let Some(req) = self.waiting.pop_front() {
            if req.reply.is_closed() {
                continue;
            }
            let best = self
                .workers
                .iter_mut()
                .filter(|w| w.alive && !req.exclude.contains(&w.status.node))
                .filter(|w| (w.busy.len() as u32) < w.status.slots)
                .min_by_key(|w| w.busy.len());
            match best {
                Some(w) => {
                    w.busy.push(req.task_id.clone());
                    self.tasks
                        .insert(req.task_id.clone(), (w.status.node.clone(), req.news));
                    let _ = req.reply.send(Ok((w.status.node.clone(), w.actor.clone())));
                }
                None => {
                    let usable = self
                        .workers
                        .iter()
                        .any(|w| w.alive && !req.exclude.contains(&w.status.node));
                    if usable {
                        still.push_back(req);
                    } else {
                        let _ = req.reply.send(Err(PlaceError::NoWorker));
                    }
                }
            }
        }
        self.waiting = still;
    }

    /// Rewrites the snapshot file, if this lead keeps one.
    fn write_snapshot(&self) {
        if let Some((path, lead)) = &self.snapshot {
            let views = self.workers.iter().map(|w| NodeView {
                node: w.status.node.clone(),
                slots: w.status.slots,
                tasks: w.busy.clone(),
                kept: w.status.kept.clone(),
                alive: w.alive,
            });
            snapshot::write(path, &Snapshot::now(lead, views.collect()));
        }
    }

    fn release(&mut self, task_id: &str) {
        self.tasks.remove(task_id);
        for w in &mut self.workers {
            w.busy.retain(|t| t != task_id);
        }
    }

    fn news(&self, task_id: &str, news: TaskNews) {
        if let Some((_, tx)) = self.tasks.get(task_id) {
            let _ = tx.send(news);
        }
    }
}

impl Actor for LeadLink {
    type Msg = LeadLinkMsg;
    type State = LinkState;
    /// The lead's group, and where to keep the snapshot (with the lead's node name).
    type Arguments = (String, Option<(PathBuf, String)>);

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        (group, snapshot): Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        ractor::pg::join(group, vec![myself.get_cell()]);
        Ok(LinkState {
            workers: Vec::new(),
            waiting: VecDeque::new(),
            tasks: HashMap::new(),
            status_waiters: HashMap::new(),
            snapshot,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some((path, _)) = &state.snapshot {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let changes = !matches!(msg, LeadLinkMsg::List(_) | LeadLinkMsg::AwaitStatus { .. });
        match msg {
            LeadLinkMsg::Remote(ToLead::Status(status)) => {
                if let Some(w) = state
                    .workers
                    .iter_mut()
                    .find(|w| node_of(&w.actor) == Some(status.node_id))
                {
                    w.status = status.clone();
                }
                if let Some(tx) = state.status_waiters.remove(&status.node_id) {
                    let _ = tx.send(status);
                }
            }
            LeadLinkMsg::Remote(ToLead::Started { task_id, .. }) => {
                state.news(&task_id, TaskNews::Started)
            }
            LeadLinkMsg::Remote(ToLead::Event { task_id, event }) => {
                state.news(&task_id, TaskNews::Event(Box::new(event)))
            }
            LeadLinkMsg::Remote(ToLead::Finished(result)) => {
                let id = result.task_id.clone();
                state.news(&id, TaskNews::Finished(Box::new(result)));
                state.release(&id);
                state.place_waiting();
            }
            LeadLinkMsg::Remote(ToLead::TeamSend(sent)) => {
                state.news(&sent.task_id.clone(), TaskNews::TeamSend(sent))
            }
            LeadLinkMsg::Remote(ToLead::Idle(idle)) => {
                state.news(&idle.task_id.clone(), TaskNews::Idle(Box::new(idle)))
            }
            LeadLinkMsg::Remote(ToLead::AskRequest(ask)) => {
                state.news(&ask.task_id.clone(), TaskNews::Ask(Box::new(ask)))
            }
            LeadLinkMsg::Remote(ToLead::Refused { task_id, reason }) => {
                state.news(&task_id, TaskNews::Refused(reason));
                state.release(&task_id);
                state.place_waiting();
            }
            LeadLinkMsg::Place(req) => {
                state.waiting.push_back(req);
                state.place_waiting();
            }
            LeadLinkMsg::Release { task_id } => {
                state.release(&task_id);
                state.place_waiting();
            }
            LeadLinkMsg::Joined { actor } => {
                if let Some(id) = node_of(&actor) {
                    state.workers.retain(|w| node_of(&w.actor) != Some(id));
                }
                state.workers.push(Worker {
                    actor,
                    status: WorkerStatus {
                        node: String::new(),
                        slots: 0,
                        running: vec![],
                        kept: vec![],
                        node_id: 0,
                    },
                    busy: Vec::new(),
                    alive: true,
                });
            }
            LeadLinkMsg::NodeDown { node_id } => {
                let mut lost = Vec::new();
                for w in &mut state.workers {
                    if w.alive && node_of(&w.actor) == Some(node_id) {
                        w.alive = false;
                        tracing::warn!("worker {} lost", w.status.node);
                        lost.extend(w.busy.drain(..).map(|t| (t, w.status.node.clone())));
                    }
                }
                for (task, node) in lost {
                    state.news(&task, TaskNews::Lost(node));
                    state.tasks.remove(&task);
                }
                state.place_waiting();
            }
            LeadLinkMsg::List(reply) => {
                let list = state
                    .workers
                    .iter()
                    .filter(|w| w.alive)
                    .map(|w| WorkerStatus {
                        running: w.busy.clone(),
                        ..w.status.clone()
                    })
                    .collect();
                let _ = reply.send(list);
            }
            LeadLinkMsg::AwaitStatus { node_id, reply } => {
                state.status_waiters.insert(node_id, reply);
            }
        }
        if changes {
            state.write_snapshot();
        }
        Ok(())
    }
}

/// Tells the link when a worker's session ends, and records connections that were
/// refused before authenticating.
struct Sessions {
    link: ActorRef<LeadLinkMsg>,
    refused: Arc<Mutex<Vec<String>>>,
    authenticated: Arc<Mutex<Vec<u64>>>,
}

impl NodeEventSubscription for Sessions {
    fn node_session_opened(&self, _ses: NodeServerSessionInformation) {}

    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        let mut auth = lock(&self.authenticated);
        if let Some(i) = auth.iter().position(|n| *n == ses.node_id) {
            auth.remove(i);
            let _ = self.link.cast(LeadLinkMsg::NodeDown {
                node_id: ses.node_id,
            });
        } else {
            tracing::warn!(
                "worker {} refused the connection: the cookie handshake failed (wrong cookie, or a TLS worker reached without --worker-ca?)",
                ses.peer_addr
            );
            lock(&self.refused).push(ses.peer_addr);
        }
    }

    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        lock(&self.authenticated).push(ses.node_id);
    }
}

/// The lead's pool of worker nodes.
pub struct Pool {
    link: ActorRef<LeadLinkMsg>,
    group: String,
    rules: Vec<RuleWire>,
    lead_model: Option<String>,
    /// Bundles of base commits already made (most tasks of a run start from one).
    bundles: tokio::sync::Mutex<HashMap<String, Arc<Vec<u8>>>>,
    _server: ActorRef<NodeServerMessage>,
}

/// How the lead joins: TLS, and where its snapshot goes.
#[derive(Default, Clone)]
pub struct LinkOptions {
    /// Connect over TLS with this connector (see [`super::tls`]).
    pub tls: Option<tokio_rustls::TlsConnector>,
    /// Keep the lead's view of its workers in this file ([`super::snapshot`]).
    pub snapshot: Option<PathBuf>,
}

/// Why joining the workers failed.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The local node could not start.
    #[error("cannot start the cluster node: {0}")]
    Start(String),
    /// A worker could not be reached or refused us.
    #[error("worker {addr}: {reason}")]
    Worker {
        /// The address as given.
        addr: String,
        /// What happened and what to do.
        reason: String,
    },
}

impl Pool {
    /// Connects to every worker in `addrs` with `cookie`; `rules` are shipped with each
    /// spawn, and `lead_model` (the lead's `--model` as given, e.g. `anthropic:NAME`)
    /// names the model of subagents that use the lead's. `link` says whether to use TLS
    /// (never falling back to plaintext) and where to keep the snapshot. Fails if any
    /// worker cannot be joined (wrong address, wrong cookie, an untrusted certificate).
    pub async fn join(
        addrs: &[String],
        cookie: String,
        rules: Vec<RuleWire>,
        lead_model: Option<String>,
        link: LinkOptions,
    ) -> Result<Arc<Pool>, JoinError> {
        let name = format!("lead-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let host = "127.0.0.1";
        let server = NodeServer::new(
            0,
            cookie,
            name.clone(),
            host.to_string(),
            None,
            Some(ractor_cluster::node::NodeConnectionMode::Isolated),
        )
        .with_listen_addr(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
        .with_max_inbound_frame_size(MAX_FRAME);
        let (server, _) = Actor::spawn(None, server, ())
            .await
            .map_err(|e| JoinError::Start(e.to_string()))?;
        let group = lead_group(&format!("{name}@{host}"));
        let snapshot = link.snapshot.map(|p| (p, format!("{name}@{host}")));
        let tls = link.tls;
        let (link, _) = Actor::spawn(None, LeadLink, (group.clone(), snapshot))
            .await
            .map_err(|e| JoinError::Start(e.to_string()))?;
        let refused = Arc::new(Mutex::new(Vec::new()));
        let authenticated = Arc::new(Mutex::new(Vec::new()));
        let _ = server.cast(NodeServerMessage::SubscribeToEvents {
            id: "crew-lead".into(),
            subscription: Box::new(Sessions {
                link: link.clone(),
                refused: refused.clone(),
                authenticated: authenticated.clone(),
            }),
        });
        let pool = Pool {
            link,
            group,
            rules,
            lead_model,
            bundles: Default::default(),
            _server: server.clone(),
        };
        for addr in addrs {
            pool.join_one(&server, addr, &refused, tls.as_ref()).await?;
        }
        Ok(Arc::new(pool))
    }

    async fn join_one(
        &self,
        server: &ActorRef<NodeServerMessage>,
        addr: &str,
        refused: &Arc<Mutex<Vec<String>>>,
        tls: Option<&tokio_rustls::TlsConnector>,
    ) -> Result<(), JoinError> {
        let fail = |reason: String| JoinError::Worker {
            addr: addr.to_string(),
            reason,
        };
        let sock: std::net::SocketAddr = tokio::net::lookup_host(addr)
            .await
            .map_err(|e| fail(format!("cannot resolve: {e}")))?
            .next()
            .ok_or_else(|| fail("cannot resolve".into()))?;
        let before: Vec<u64> = ractor::pg::get_members(&WORKERS_GROUP.to_string())
            .iter()
            .filter_map(|c| match c.get_id() {
                ActorId::Remote { node_id, .. } => Some(node_id),
                ActorId::Local(_) => None,
            })
            .collect();
        match tls {
            Some(connector) => super::tls::connect(server, sock, addr, connector)
                .await
                .map_err(|e| fail(e.to_string()))?,
            None => ractor_cluster::client_connect(server, sock)
                .await
                .map_err(|e| fail(format!("cannot connect: {e}")))?,
        }
        let deadline = tokio::time::Instant::now() + JOIN_TIMEOUT;
        // Wait for the worker's actor to appear in the group (after the handshake and
        // the pg exchange), or for the session to be refused.
        let actor = loop {
            if lock(refused).iter().any(|a| a == &sock.to_string()) {
                return Err(fail(if tls.is_some() {
                    "refused the connection after TLS: a wrong cookie (use the worker's cookie file), or the worker demands a client certificate from its CA (--worker-cert/--worker-key)".into()
                } else {
                    "refused the connection: the cookie handshake failed; use the worker's cookie file, or, if the worker runs with --tls-cert, connect with --worker-ca".into()
                }));
            }
            let new = ractor::pg::get_members(&WORKERS_GROUP.to_string())
                .into_iter()
                .find(|c| match c.get_id() {
                    ActorId::Remote { node_id, .. } => !before.contains(&node_id),
                    ActorId::Local(_) => false,
                });
            if let Some(cell) = new {
                break ActorRef::<WorkerMsg>::from(cell);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(fail(format!(
                    "no crew worker answered within {} s",
                    JOIN_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let node_id = node_of(&actor).unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        let _ = self.link.cast(LeadLinkMsg::Joined {
            actor: actor.clone(),
        });
        let _ = self
            .link
            .cast(LeadLinkMsg::AwaitStatus { node_id, reply: tx });
        let _ = actor.cast(WorkerMsg::Remote(ToWorker::Hello {
            lead: self.group.clone(),
            node_id,
        }));
        match tokio::time::timeout(JOIN_TIMEOUT, rx).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(fail("the worker did not report its slots".into())),
        }
    }

    /// The lead's link group (where workers report).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The model a worker should use for an agent whose model name is `model`: the
    /// lead's full spec when it is the lead's model (`script` → `script:/abs/path`).
    pub fn model_for(&self, model: &str, lead: &str) -> String {
        match &self.lead_model {
            Some(spec) if model == lead => spec.clone(),
            _ => model.to_string(),
        }
    }

    /// The rules shipped with each spawn.
    pub fn rules(&self) -> &[RuleWire] {
        &self.rules
    }

    /// Waits for a free slot on a worker not in `exclude`; the worker's reports on
    /// `task_id` then arrive on `news`.
    pub async fn place(
        &self,
        task_id: &str,
        exclude: Vec<String>,
        news: mpsc::UnboundedSender<TaskNews>,
    ) -> Result<(String, ActorRef<WorkerMsg>), PlaceError> {
        let (reply, rx) = oneshot::channel();
        self.link
            .cast(LeadLinkMsg::Place(PlaceRequest {
                task_id: task_id.to_string(),
                exclude,
                reply,
                news,
            }))
            .map_err(|_| PlaceError::LinkGone)?;
        rx.await.map_err(|_| PlaceError::NoAnswer)?
    }

    /// Frees a task's slot (when the lead gives up on it).
    pub fn release(&self, task_id: &str) {
        let _ = self.link.cast(LeadLinkMsg::Release {
            task_id: task_id.to_string(),
        });
    }

    /// The workers and their load.
    pub async fn list(&self) -> Vec<WorkerStatus> {
        let (tx, rx) = oneshot::channel();
        if self.link.cast(LeadLinkMsg::List(tx)).is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    /// The bundle of `branch` (at `commit`) from `repo`, made once per commit.
    pub async fn base_bundle(
        &self,
        repo: &std::path::Path,
        branch: &str,
        commit: &str,
    ) -> Result<Arc<Vec<u8>>, super::bundle::BundleError> {
        let mut cache = self.bundles.lock().await;
        if let Some(b) = cache.get(commit) {
            return Ok(b.clone());
        }
        let bytes = Arc::new(super::bundle::create(repo, branch).await?);
        cache.insert(commit.to_string(), bytes.clone());
        Ok(bytes)
    }
}
