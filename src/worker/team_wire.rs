//! The wire types of a teammate placed on a worker (issue 16): its spawn, the team mail
//! relayed to it and from it, its idle checkpoints (the branch so far, as a bundle) and
//! its Asks with their answers. They ride in the `ToWorker` / `ToLead` frames of
//! [`super::protocol`]; a bundle travels after the JSON header, never inside it.

use serde::{Deserialize, Serialize};

use super::protocol::RemoteSpawn;
use crate::approver::{ApprovalAnswer, ApprovalRequest};
use crate::permission::PermissionMode;
use crate::team::{Envelope, MessageKind};

/// A teammate to run on a worker: the subagent spawn (repository, rules, agent) plus its
/// name on the lead's team and the permission mode it shares with the lead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeammateSpawn {
    /// The run: task id (its work id), branch, base commit, rules, agent, first prompt.
    pub run: RemoteSpawn,
    /// Its name on the lead's team.
    pub name: String,
    /// The lead's mode (narrowed by its definition); the worker's engine uses it with the
    /// lead's rules only, so an Ask still comes to the lead.
    pub mode: PermissionMode,
}

/// Team mail for a remote teammate, as it lies in its inbox on the lead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MailWire {
    /// The teammate's task (work) id.
    pub task_id: String,
    /// The envelopes, in inbox order.
    pub mail: Vec<Envelope>,
}

/// A message the remote teammate sends (its `send_message`). The lead sends it from the
/// teammate's own mailbox: the worker cannot choose the sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentWire {
    /// The teammate's task id.
    pub task_id: String,
    /// A member name or `*`.
    pub to: String,
    /// The body.
    pub message: String,
    /// A short preview.
    pub summary: Option<String>,
    /// What kind of message it is.
    pub kind: MessageKind,
}

/// The remote teammate went idle: the mail it has consumed and its branch so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleWire {
    /// The teammate's task id.
    pub task_id: String,
    /// It has read its lead-side inbox up to (not including) this index.
    pub through: u64,
    /// The branch's head on the worker (`None`: nothing committed yet).
    pub head: Option<String>,
    /// A bundle of `base..head` (sent after the header).
    #[serde(skip)]
    pub bundle: Vec<u8>,
}

/// An Ask of the remote teammate's engine, for the lead's approver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskWire {
    /// The teammate's task id.
    pub task_id: String,
    /// The worker's id for this question (its answer must name it).
    pub ask_id: String,
    /// The question (the lead overwrites who is asking).
    pub request: ApprovalRequest,
}

/// The lead's answer to one [`AskWire`]. The worker applies it to that call only: any
/// allow becomes "allow once" there, and an unknown or repeated `ask_id` is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskAnswerWire {
    /// The teammate's task id.
    pub task_id: String,
    /// The question answered.
    pub ask_id: String,
    /// The answer.
    pub answer: ApprovalAnswer,
}

#[cfg(test)]
#[path = "team_wire_tests.rs"]
mod tests;
