//! The `TaskManager` actor: the live registry of background tasks. It records state
//! changes (persisting them at once, so other terminals see them), holds each task's
//! cancellation token, answers waits when tasks end, queues completion notifications for
//! the agent that started each task, and honours stop requests written by
//! `crew tasks stop` from another process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;

use super::{
    TaskKind, TaskRecord, TaskStatus, log_path, new_task_id, now_ms, save_records,
    stop_request_path,
};
use crate::events::{EventBus, EventKind};
use crate::protocol::Usage;

/// How often stop-request files are checked.
const STOP_POLL: Duration = Duration::from_millis(300);

/// What is needed to register a task.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// Agent or command.
    pub kind: TaskKind,
    /// What it is for.
    pub description: String,
    /// The agent starting it.
    pub owner: String,
    /// The subagent type.
    pub agent_type: Option<String>,
    /// The command.
    pub command: Option<String>,
}

/// Why a task could not be stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StopError {
    /// No task has this id.
    #[error("no task with id `{0}`; `task_list` shows the ids")]
    Unknown(String),
}

/// Messages the task manager accepts.
pub enum TaskMsg {
    /// Register a pending task; `cancel` stops it.
    Create(NewTask, CancellationToken, RpcReplyPort<TaskRecord>),
    /// The task started running (with its process group, for commands).
    Running {
        /// Task id.
        id: String,
        /// Process group of a command.
        pgid: Option<i32>,
        /// Worktree of an agent.
        worktree: Option<PathBuf>,
    },
    /// The task was placed on a worker node.
    Placed {
        /// Task id.
        id: String,
        /// The node's name.
        node: String,
    },
    /// Progress of an agent task.
    Activity {
        /// Task id.
        id: String,
        /// Tool calls since the last update.
        tool_calls: u32,
        /// Usage to add.
        usage: Usage,
        /// What it is doing now.
        activity: Option<String>,
    },
    /// The task ended.
    Finish {
        /// Task id.
        id: String,
        /// Its final status.
        status: TaskStatus,
        /// Its answer, exit status or failure reason.
        result: String,
    },
    /// All records, oldest first.
    List(RpcReplyPort<Vec<TaskRecord>>),
    /// One record.
    Get(String, RpcReplyPort<Option<TaskRecord>>),
    /// Reply when the task has ended (at once if it has).
    Wait(String, RpcReplyPort<Option<TaskRecord>>),
    /// Reply with the next ended task of this owner whose notification is still queued,
    /// or `None` when the owner has nothing queued and nothing running.
    WaitNext(String, RpcReplyPort<Option<TaskRecord>>),
    /// Take the queued completion notifications of this owner.
    TakeNotifications(String, RpcReplyPort<Vec<TaskRecord>>),
    /// Whether this owner has pending or running tasks.
    HasActive(String, RpcReplyPort<bool>),
    /// Whether any task is pending or running.
    HasActiveAny(RpcReplyPort<bool>),
    /// Stop a task; replies when it has ended (or at once if it had).
    Stop(String, RpcReplyPort<Result<TaskRecord, StopError>>),
    /// Stop every task still active (session shutdown).
    StopAll,
    /// Internal: check for stop requests from other processes.
    PollStops,
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for TaskMsg {}

/// The task manager actor (configuration only).
pub struct TaskManager;

/// Each live task's cancellation token, shared with the supervisor so that a restarted
/// manager can still stop the tasks its predecessor started.
pub type Cancels = Arc<Mutex<HashMap<String, CancellationToken>>>;

/// What the task manager starts from.
#[derive(Clone)]
pub struct TaskArgs {
    /// The session directory where records and logs live.
    pub session_dir: PathBuf,
    /// Where to announce changes.
    pub events: Option<EventBus>,
    /// The live tasks' tokens.
    pub cancels: Cancels,
    /// Start from the records on disk (a restart) rather than from none. A live task whose
    /// token is gone with its manager is recorded as failed.
    pub restore: bool,
}

impl TaskArgs {
    /// A fresh manager for `session_dir`.
    pub fn new(session_dir: PathBuf, events: Option<EventBus>) -> Self {
        Self {
            session_dir,
            events,
            cancels: Cancels::default(),
            restore: false,
        }
    }
}

/// The live state.
pub struct TaskState {
    session_dir: PathBuf,
    events: Option<EventBus>,
    records: Vec<TaskRecord>,
    cancels: Cancels,
    waiters: HashMap<String, Vec<RpcReplyPort<Option<TaskRecord>>>>,
    stop_waiters: HashMap<String, Vec<RpcReplyPort<Result<TaskRecord, StopError>>>>,
    next_waiters: HashMap<String, Vec<RpcReplyPort<Option<TaskRecord>>>>,
    notifications: HashMap<String, Vec<TaskRecord>>,
}

impl TaskState {
    fn cancels(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        // A poisoned lock only means a panic mid-insert; the map is still usable.
        self.cancels.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find(&mut self, id: &str) -> Option<&mut TaskRecord> {
        self.records.iter_mut().find(|r| r.id == id)
    }

    /// Tells subscribers (stream-json, the TUI, transcripts) about a task's new state.
    fn announce(&self, rec: &TaskRecord) {
        if let Some(events) = &self.events {
            events.publish(
                &rec.owner,
                EventKind::TaskChanged {
                    id: rec.id.clone(),
                    kind: match rec.kind {
                        TaskKind::Agent => "agent".into(),
                        TaskKind::Command => "command".into(),
                    },
                    status: rec.status.as_str().into(),
                    description: rec.description.clone(),
                    result: rec.result.clone(),
                },
            );
        }
    }

    fn persist(&self) {
        if let Err(e) = save_records(&self.session_dir, &self.records) {
            tracing::warn!(
                "cannot save task state in {}: {e}",
                self.session_dir.display()
            );
        }
    }

    fn has_active(&self, owner: &str) -> bool {
        self.records
            .iter()
            .any(|r| r.owner == owner && !r.status.is_terminal())
    }

    fn finish(&mut self, id: &str, status: TaskStatus, result: String) {
        let Some(rec) = self.find(id) else { return };
        if rec.status.is_terminal() {
            return;
        }
        rec.status = status;
        rec.ended_ms = Some(now_ms());
        rec.result = Some(result);
        let rec = rec.clone();
        self.cancels().remove(id);
        let _ = std::fs::remove_file(stop_request_path(&self.session_dir, id));
        for w in self.waiters.remove(id).unwrap_or_default() {
            let _ = w.send(Some(rec.clone()));
        }
        for w in self.stop_waiters.remove(id).unwrap_or_default() {
            let _ = w.send(Ok(rec.clone()));
        }
        self.announce(&rec);
        // Counted before it is queued: a runner that reads the new count asks after this
        // handler, and finds it.
        QUEUED.fetch_add(1, Ordering::AcqRel);
        self.notifications
            .entry(rec.owner.clone())
            .or_default()
            .push(rec.clone());
        for w in self.next_waiters.remove(&rec.owner).unwrap_or_default() {
            let _ = w.send(Some(rec.clone()));
        }
        self.persist();
    }
}

/// How many completion notifications this process has queued, ever. An agent's loop asks
/// for its own only when this moved since it last asked: that saves the round trip to
/// the actor on a turn with nothing new, and never loses a notification (the count is read
/// before asking, and one queued after that moves it).
pub(crate) static QUEUED: AtomicU64 = AtomicU64::new(0);

impl Actor for TaskManager {
    type Msg = TaskMsg;
    type State = TaskState;
    /// The session directory where records and logs live, and where to announce changes.
    type Arguments = TaskArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: TaskArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let TaskArgs {
            session_dir,
            events,
            cancels,
            restore,
        } = args;
        std::fs::create_dir_all(session_dir.join("tasks"))?;
        // The ticker ends by itself once the actor is gone (the cast fails).
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(STOP_POLL);
            loop {
                tick.tick().await;
                if myself.cast(TaskMsg::PollStops).is_err() {
                    break;
                }
            }
        });
        let records = match restore {
            true => super::load_records(&session_dir)?,
            false => Vec::new(),
        };
        let mut state = TaskState {
            session_dir,
            events,
            records,
            cancels,
            waiters: HashMap::new(),
            stop_waiters: HashMap::new(),
            next_waiters: HashMap::new(),
            notifications: HashMap::new(),
        };
        // A task whose token died with the previous manager can no longer be stopped or
        // trusted to report: it is recorded as failed rather than shown running forever.
        let orphaned: Vec<String> = state
            .records
            .iter()
            .filter(|r| !r.status.is_terminal() && !state.cancels().contains_key(&r.id))
            .map(|r| r.id.clone())
            .collect();
        for id in orphaned {
            let why = "lost when the task manager restarted".to_string();
            state.finish(&id, TaskStatus::Failed, why);
        }
        state.persist();
        Ok(state)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TaskMsg::Create(new, cancel, reply) => {
                let id = new_task_id();
                let rec = TaskRecord {
                    output_file: log_path(&state.session_dir, &id),
                    id: id.clone(),
                    kind: new.kind,
                    description: new.description,
                    status: TaskStatus::Pending,
                    owner: new.owner,
                    agent_type: new.agent_type,
                    command: new.command,
                    created_ms: now_ms(),
                    started_ms: None,
                    ended_ms: None,
                    tool_calls: 0,
                    usage: Usage::default(),
                    last_activity: "queued".into(),
                    result: None,
                    worktree: None,
                    pgid: None,
                    host_pid: std::process::id(),
                    node: None,
                };
                state.cancels().insert(id, cancel);
                state.records.push(rec.clone());
                state.persist();
                state.announce(&rec);
                let _ = reply.send(rec);
            }
            TaskMsg::Running { id, pgid, worktree } => {
                if let Some(rec) = state.find(&id).filter(|r| !r.status.is_terminal()) {
                    rec.status = TaskStatus::Running;
                    rec.started_ms = Some(now_ms());
                    rec.pgid = pgid;
                    rec.worktree = worktree;
                    rec.last_activity = "started".into();
                    let rec = rec.clone();
                    state.persist();
                    state.announce(&rec);
                }
            }
            TaskMsg::Placed { id, node } => {
                if let Some(rec) = state.find(&id) {
                    rec.node = Some(node);
                    let rec = rec.clone();
                    state.persist();
                    state.announce(&rec);
                }
            }
            TaskMsg::Activity {
                id,
                tool_calls,
                usage,
                activity,
            } => {
                if let Some(rec) = state.find(&id) {
                    rec.tool_calls += tool_calls;
                    rec.usage.add(&usage);
                    if let Some(a) = activity {
                        rec.last_activity = a;
                    }
                    state.persist();
                }
            }
            TaskMsg::Finish { id, status, result } => state.finish(&id, status, result),
            TaskMsg::List(reply) => {
                let _ = reply.send(state.records.clone());
            }
            TaskMsg::Get(id, reply) => {
                let _ = reply.send(state.find(&id).cloned());
            }
            TaskMsg::Wait(id, reply) => match state.find(&id).cloned() {
                None => {
                    let _ = reply.send(None);
                }
                Some(rec) if rec.status.is_terminal() => {
                    let _ = reply.send(Some(rec));
                }
                Some(_) => state.waiters.entry(id).or_default().push(reply),
            },
            TaskMsg::WaitNext(owner, reply) => {
                if let Some(first) = state.notifications.get(&owner).and_then(|q| q.first()) {
                    let _ = reply.send(Some(first.clone()));
                } else if state.has_active(&owner) {
                    state.next_waiters.entry(owner).or_default().push(reply);
                } else {
                    let _ = reply.send(None);
                }
            }
            TaskMsg::TakeNotifications(owner, reply) => {
                let _ = reply.send(state.notifications.remove(&owner).unwrap_or_default());
            }
            TaskMsg::HasActive(owner, reply) => {
                let _ = reply.send(state.has_active(&owner));
            }
            TaskMsg::HasActiveAny(reply) => {
                let _ = reply.send(state.records.iter().any(|r| !r.status.is_terminal()));
            }
            TaskMsg::Stop(id, reply) => match state.find(&id).cloned() {
                None => {
                    let _ = reply.send(Err(StopError::Unknown(id)));
                }
                Some(rec) if rec.status.is_terminal() => {
                    let _ = reply.send(Ok(rec));
                }
                Some(_) => {
                    request_stop(state, &id);
                    state.stop_waiters.entry(id).or_default().push(reply);
                }
            },
            TaskMsg::StopAll => {
                let active: Vec<String> = state
                    .records
                    .iter()
                    .filter(|r| !r.status.is_terminal())
                    .map(|r| r.id.clone())
                    .collect();
                for id in active {
                    request_stop(state, &id);
                }
            }
            TaskMsg::PollStops => {
                let requested: Vec<String> = state
                    .records
                    .iter()
                    .filter(|r| !r.status.is_terminal())
                    .filter(|r| stop_request_path(&state.session_dir, &r.id).exists())
                    .map(|r| r.id.clone())
                    .collect();
                for id in requested {
                    let _ = std::fs::remove_file(stop_request_path(&state.session_dir, &id));
                    request_stop(state, &id);
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Nothing may outlive the session: cancel whatever is still running and record it.
        let active: Vec<String> = state
            .records
            .iter()
            .filter(|r| !r.status.is_terminal())
            .map(|r| r.id.clone())
            .collect();
        for id in active {
            request_stop(state, &id);
            state.finish(&id, TaskStatus::Cancelled, "the session ended".into());
        }
        Ok(())
    }
}

/// Cancels a task's work; a command's process group is also signalled directly, so it
/// dies even if its waiter is busy, and so are the processes it started outside its group
/// (its guardian is asked to kill them: a SIGKILL of the group would end the guardian
/// first).
fn request_stop(state: &mut TaskState, id: &str) {
    if let Some(cancel) = state.cancels().get(id) {
        cancel.cancel();
    }
    if let Some(rec) = state.find(id) {
        rec.last_activity = "stopping".into();
        if let Some(pgid) = rec.pgid {
            let _ =
                crate::sandbox::process::kill_group_and_escapees(nix::unistd::Pid::from_raw(pgid));
        }
    }
}
