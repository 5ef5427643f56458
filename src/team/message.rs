//! What travels between team members: a message to send ([`Outgoing`]), its kind (plain
//! text or a structured request or answer) and the [`Envelope`] stored in the recipient's
//! inbox, one JSON line each.

use serde::{Deserialize, Serialize};

use super::MemberName;

/// What a message is: plain text or one of the structured requests and answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageKind {
    /// Plain text.
    Text,
    /// The lead asks a teammate to shut down.
    ShutdownRequest,
    /// A teammate's answer to a shutdown request.
    ShutdownResponse {
        /// Whether it agrees to shut down.
        approve: bool,
    },
    /// A `plan_first` teammate submits its plan (the message is the plan).
    PlanApprovalRequest,
    /// The lead's verdict on a plan.
    PlanApprovalResponse {
        /// Whether the teammate may go on in Do mode.
        approve: bool,
        /// What to change, when not approved.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
}

/// A message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The body (the plan, for a plan approval request).
    pub message: String,
    /// A short preview for notifications and the team panel.
    pub summary: Option<String>,
    /// What kind of message it is.
    pub kind: MessageKind,
}

impl Outgoing {
    /// A plain text message.
    pub fn text(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            summary: None,
            kind: MessageKind::Text,
        }
    }
}

/// A message as stored in (and read back from) a recipient's inbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Its position in the recipient's inbox: 0, 1, 2, … (record it in the transcript).
    pub index: u64,
    /// A unique id.
    pub id: String,
    /// The sender (`lead`, `user` or a teammate).
    pub from: MemberName,
    /// The recipient (whose inbox this is).
    pub to: MemberName,
    /// The sender's sequence number in this inbox: 1, 2, 3, …
    pub seq: u64,
    /// When it was sent (Unix ms).
    pub sent_at_ms: u64,
    /// Whether it was sent to `*`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub broadcast: bool,
    /// A short preview.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The body.
    pub message: String,
    /// What kind of message it is.
    pub kind: MessageKind,
}
