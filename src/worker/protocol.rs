//! What lead and worker nodes say to each other over ractor_cluster: the wire types
//! (`ToWorker`, `ToLead`) and the two actor message enums that carry them. A remote
//! variant is encoded as one frame — a length-prefixed JSON header, then the raw git
//! bundle, if any — so a repository is never inflated into a JSON array. Local-only
//! variants (replies, timers) never cross nodes: serialising one is refused.
//!
//! Decoding fails closed: a frame that does not parse is dropped by ractor (an error,
//! never a panic), whoever sent it.

use ractor::message::{BoxedDowncastErr, SerializedMessage};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

pub use super::team_wire::{AskAnswerWire, AskWire, IdleWire, MailWire, SentWire, TeammateSpawn};
use crate::events::Event;
use crate::permission::{Layer, PermissionMode, Verdict};
use crate::protocol::Usage;

/// The pg group every worker node's actor joins; a lead finds workers through it.
pub const WORKERS_GROUP: &str = "crew.workers";

/// The tag of our frames (the format's version). v2: a spawn carries the subagent's
/// permission mode; a v1 worker, which would run an auto-mode subagent under dontAsk
/// unclassified, does not understand a v2 lead at all.
const FRAME_TAG: &str = "crew.v2";

/// One permission rule of the lead, as shipped to a worker (parsed again there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleWire {
    /// The rule as written (`Bash(git push:*)`).
    pub text: String,
    /// Allow, ask or deny.
    pub kind: Verdict,
    /// The layer it came from (precedence is kept on the worker).
    pub layer: Layer,
}

/// The agent a worker runs: the lead's subagent spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentWire {
    /// Its id (`type/task`).
    pub id: String,
    /// The model name (resolved on the worker: `anthropic:…`, `script:PATH`, …).
    pub model: String,
    /// Its system prompt.
    pub system_prompt: String,
    /// Tools it may use (`None`: all the worker offers).
    pub allowed_tools: Option<Vec<String>>,
    /// Turn limit.
    pub max_turns: u32,
    /// Output token limit per turn.
    pub max_tokens: u32,
}

/// A request to run one subagent on a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteSpawn {
    /// The lead's task id (also the worker's directory name).
    pub task_id: String,
    /// The pg group of the lead's link actor, where reports go.
    pub lead: String,
    /// What it is for.
    pub description: String,
    /// The task.
    pub prompt: String,
    /// The agent.
    pub agent: AgentWire,
    /// The lead's rules: the worker's engine uses these and nothing wider.
    pub rules: Vec<RuleWire>,
    /// The commit the work starts from.
    pub base_commit: String,
    /// The branch to work on (the lead's worktree branch of this task).
    pub branch: String,
    /// A subagent's permission mode on the worker: dontAsk, or auto when the lead is in
    /// auto (its Asks then come to the lead, whose classifier judges them). A teammate's
    /// mode is [`TeammateSpawn::mode`]; this field is dontAsk for it.
    pub mode: PermissionMode,
    /// A git bundle holding `base_commit` (sent after the header, not in JSON).
    #[serde(skip)]
    pub bundle: Vec<u8>,
}

/// A worker's load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerStatus {
    /// The node's name.
    pub node: String,
    /// Slots offered.
    pub slots: u32,
    /// Tasks running now.
    pub running: Vec<String>,
    /// Finished tasks whose branch waits to be handed back.
    pub kept: Vec<String>,
    /// The id the asking lead knows this node by (echoed from `Hello`).
    pub node_id: u64,
}

/// How a remote run ended (the lead's `RunStatus`, flattened for the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteStatus {
    /// The model finished.
    Completed,
    /// The turn limit was reached.
    MaxTurns,
    /// Stopped by the lead.
    Cancelled,
    /// The run or its set-up failed.
    Failed,
}

/// A finished remote run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteResult {
    /// The task id.
    pub task_id: String,
    /// The node it ran on.
    pub node: String,
    /// How it ended.
    pub status: RemoteStatus,
    /// The final answer or the failure.
    pub result: String,
    /// Token usage.
    pub usage: Usage,
    /// Tool calls made.
    pub tool_calls: u32,
    /// The branch's head on the worker (`None`: nothing was committed).
    pub head: Option<String>,
    /// Where the worker's time went.
    #[serde(default)]
    pub phases: Phases,
    /// A bundle of `base..head` (empty when `head` is `None`).
    #[serde(skip)]
    pub bundle: Vec<u8>,
}

impl RemoteResult {
    /// A run of task `task_id` on `node` that failed before it had anything to show.
    pub fn failed(task_id: &str, node: &str, reason: String) -> Self {
        RemoteResult {
            task_id: task_id.to_string(),
            node: node.to_string(),
            status: RemoteStatus::Failed,
            result: reason,
            usage: Usage::default(),
            tool_calls: 0,
            head: None,
            phases: Phases::default(),
            bundle: Vec::new(),
        }
    }
}

/// Milliseconds a remote run spent in each phase on the worker (for `worker_bench` and
/// the task's result: what limits scaling).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phases {
    /// Unpacking the bundle and checking the worktree out.
    pub checkout_ms: u64,
    /// The agent's session, start to shutdown.
    pub run_ms: u64,
    /// Committing what it left and bundling the branch.
    pub bundle_ms: u64,
}

/// What a lead sends a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// Introduce the lead; the worker answers with its `Status`.
    Hello {
        /// The lead's link group.
        lead: String,
        /// The lead's id for this node (echoed back).
        node_id: u64,
    },
    /// Run a subagent.
    Spawn(Box<RemoteSpawn>),
    /// Stop a running task (its work so far still comes back).
    Stop {
        /// The task id.
        task_id: String,
    },
    /// The lead holds the task's branch: the worker may remove its copy.
    Handback {
        /// The task id.
        task_id: String,
    },
    /// Run a teammate (long-lived: it waits for mail between runs).
    SpawnTeammate(Box<TeammateSpawn>),
    /// Team mail for a remote teammate.
    Mail(MailWire),
    /// The lead's answer to a remote teammate's Ask.
    AskAnswer(AskAnswerWire),
}

/// What a worker sends a lead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToLead {
    /// The worker's load (answer to `Hello`).
    Status(WorkerStatus),
    /// The task runs (its checkout is ready).
    Started {
        /// The task id.
        task_id: String,
        /// The node.
        node: String,
    },
    /// One event of the remote agent (tool calls, text, usage).
    Event {
        /// The task id.
        task_id: String,
        /// The event, as published on the worker.
        event: Event,
    },
    /// The run ended; the branch travels in the frame's bundle.
    Finished(RemoteResult),
    /// The worker would not run it (no free slot, bad bundle).
    Refused {
        /// The task id.
        task_id: String,
        /// Why.
        reason: String,
    },
    /// A remote teammate's `send_message`.
    TeamSend(SentWire),
    /// A remote teammate went idle; its branch so far travels in the frame's bundle.
    Idle(IdleWire),
    /// A remote teammate's engine answered Ask: a question for the lead's approver.
    AskRequest(AskWire),
}

impl ToWorker {
    fn blob(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            ToWorker::Spawn(s) => Some(&mut s.bundle),
            ToWorker::SpawnTeammate(t) => Some(&mut t.run.bundle),
            _ => None,
        }
    }
}

impl ToLead {
    fn blob(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            ToLead::Finished(r) => Some(&mut r.bundle),
            ToLead::Idle(i) => Some(&mut i.bundle),
            _ => None,
        }
    }
}

/// Encodes a header and its blob: `u32` header length (big endian), JSON, blob.
fn encode<T: Serialize>(header: &T, blob: &[u8]) -> Result<Vec<u8>, BoxedDowncastErr> {
    let json = serde_json::to_vec(header).map_err(|_| BoxedDowncastErr)?;
    let len = u32::try_from(json.len()).map_err(|_| BoxedDowncastErr)?;
    let mut out = Vec::with_capacity(4 + json.len() + blob.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(blob);
    Ok(out)
}

/// Decodes a frame made by `encode`; `None` for anything malformed.
fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<(T, Vec<u8>)> {
    let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let json = bytes.get(4..4usize.checked_add(len)?)?;
    let header = serde_json::from_slice(json).ok()?;
    Some((header, bytes[4 + len..].to_vec()))
}

fn frame(args: Vec<u8>) -> SerializedMessage {
    SerializedMessage::Cast {
        variant: FRAME_TAG.to_string(),
        args,
        metadata: None,
    }
}

fn unframe(msg: SerializedMessage) -> Option<Vec<u8>> {
    match msg {
        SerializedMessage::Cast { variant, args, .. } if variant == FRAME_TAG => Some(args),
        _ => None,
    }
}

/// Messages a worker node's actor accepts.
pub enum WorkerMsg {
    /// From a lead (possibly over the network).
    Remote(ToWorker),
    /// Local: a task's run ended on this node.
    Ended {
        /// The task id.
        task_id: String,
        /// Where its report goes.
        lead: String,
        /// The report (sent to the lead by the actor, which also frees the slot).
        result: Box<RemoteResult>,
    },
    /// Local: a lead's node went away; its tasks are orphans.
    LeadLost {
        /// The lead's node name.
        node: String,
    },
    /// Local: an orphan's time is up (its worktree goes, its branch stays).
    OrphanTimeout {
        /// The task id.
        task_id: String,
    },
    /// Local: the node's status, for `crew workers list` run on the worker itself.
    Status(oneshot::Sender<WorkerStatus>),
}

impl ractor::Message for WorkerMsg {
    fn serializable() -> bool {
        true
    }

    fn serialize(self) -> Result<SerializedMessage, BoxedDowncastErr> {
        match self {
            WorkerMsg::Remote(mut m) => {
                let blob = m.blob().map(std::mem::take).unwrap_or_default();
                Ok(frame(encode(&m, &blob)?))
            }
            _ => Err(BoxedDowncastErr),
        }
    }

    fn deserialize(msg: SerializedMessage) -> Result<Self, BoxedDowncastErr> {
        let args = unframe(msg).ok_or(BoxedDowncastErr)?;
        let (mut m, blob): (ToWorker, Vec<u8>) = decode(&args).ok_or(BoxedDowncastErr)?;
        if let Some(slot) = m.blob() {
            *slot = blob;
        }
        Ok(WorkerMsg::Remote(m))
    }
}

/// Why no worker slot could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// No live worker is left that may take the task.
    #[error("no worker is connected (see `crew workers list`)")]
    NoWorker,
    /// The lead's cluster link actor is gone.
    #[error("the cluster link is gone")]
    LinkGone,
    /// The cluster link dropped the request.
    #[error("the cluster link did not answer")]
    NoAnswer,
}

/// A lead's request for a worker slot.
pub struct PlaceRequest {
    /// The task id.
    pub task_id: String,
    /// Nodes not to use (one that already lost this work).
    pub exclude: Vec<String>,
    /// Receives the chosen node and its actor, or why none can be had.
    pub reply: oneshot::Sender<Result<(String, ractor::ActorRef<WorkerMsg>), PlaceError>>,
    /// Receives what the worker reports about this task.
    pub news: tokio::sync::mpsc::UnboundedSender<TaskNews>,
}

/// What a lead's remote task hears.
#[derive(Debug)]
pub enum TaskNews {
    /// The worker started it.
    Started,
    /// One event.
    Event(Box<Event>),
    /// The run ended.
    Finished(Box<RemoteResult>),
    /// The worker refused it.
    Refused(String),
    /// The worker's node went away.
    Lost(String),
    /// A remote teammate sent a message.
    TeamSend(SentWire),
    /// A remote teammate went idle.
    Idle(Box<IdleWire>),
    /// A remote teammate's Ask.
    Ask(Box<AskWire>),
}

/// Messages the lead's link actor accepts.
pub enum LeadLinkMsg {
    /// From a worker (possibly over the network).
    Remote(ToLead),
    /// Local: find a worker slot for a task (answered when one is free).
    Place(PlaceRequest),
    /// Local: a task no longer needs its slot.
    Release {
        /// The task id.
        task_id: String,
    },
    /// Local: a worker node appeared (after its `Status`).
    Joined {
        /// Its actor.
        actor: ractor::ActorRef<WorkerMsg>,
    },
    /// Local: a node session ended.
    NodeDown {
        /// The node's id in this lead's node server.
        node_id: u64,
    },
    /// Local: the known workers and their load.
    List(oneshot::Sender<Vec<WorkerStatus>>),
    /// Local: wait for the `Status` of the node with this id.
    AwaitStatus {
        /// The node id.
        node_id: u64,
        /// Receives the status.
        reply: oneshot::Sender<WorkerStatus>,
    },
}

impl ractor::Message for LeadLinkMsg {
    fn serializable() -> bool {
        true
    }

    fn serialize(self) -> Result<SerializedMessage, BoxedDowncastErr> {
        match self {
            LeadLinkMsg::Remote(mut m) => {
                let blob = m.blob().map(std::mem::take).unwrap_or_default();
                Ok(frame(encode(&m, &blob)?))
            }
            _ => Err(BoxedDowncastErr),
        }
    }

    fn deserialize(msg: SerializedMessage) -> Result<Self, BoxedDowncastErr> {
        let args = unframe(msg).ok_or(BoxedDowncastErr)?;
        let (mut m, blob): (ToLead, Vec<u8>) = decode(&args).ok_or(BoxedDowncastErr)?;
        if let Some(slot) = m.blob() {
            *slot = blob;
        }
        Ok(LeadLinkMsg::Remote(m))
    }
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
