//! A member's mailbox: its connection to the team actor. Sends go through the actor (which
//! appends to the recipients' inboxes and wakes them); the member reads and acknowledges its
//! own inbox on its own task — a few system calls under the inbox lock, off the blocking
//! pool unless the lock is held elsewhere. The runner injects mail through it at turn
//! boundaries; the `send_message` tool sends through it.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;

use super::actor::{TeamMsg, blocking};
use super::todos_stamp::TodosStamp;
use super::{
    Envelope, MemberName, MemberStatus, MessageKind, Outgoing, Recipient, Team, TeamError,
};

/// How long a mailbox waits for the team actor to answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Why [`Mailbox::send`] did not deliver.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The team refused or failed the send.
    #[error(transparent)]
    Team(#[from] TeamError),
    /// The team actor did not answer in time.
    #[error("the team did not answer; the message may not have been sent")]
    NoAnswer,
}

/// One member's connection to its team: sends through the team actor, reads and
/// acknowledges its own inbox. The runner injects mail through it at turn boundaries; the
/// `send_message` tool sends through it.
#[derive(Clone)]
pub struct Mailbox {
    /// The team's files.
    pub team: Team,
    /// Whose mailbox this is.
    pub me: MemberName,
    /// The team actor.
    pub actor: ActorRef<TeamMsg>,
    /// For the lead: the count of queued notices and the work list's stamp when it last
    /// asked the actor for its notices.
    notices_seen: Arc<std::sync::Mutex<Option<(u64, TodosStamp)>>>,
}

/// What [`Mailbox::take`] found: the text to inject, and what to acknowledge afterwards.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Each message (and notice) as the model sees it, marked with its sender.
    pub texts: Vec<String>,
    /// Acknowledge through this count once the texts are in the conversation.
    pub ack: Option<u64>,
    /// The structured messages among them.
    pub envelopes: Vec<Envelope>,
}

impl Mailbox {
    /// The mailbox of member `me` of `team`, whose actor is `actor`.
    pub fn new(team: Team, me: MemberName, actor: ActorRef<TeamMsg>) -> Self {
        Self {
            team,
            me,
            actor,
            notices_seen: Arc::default(),
        }
    }

    /// Joins the team as this mailbox's member: from now on, mail for it (and a teammate's
    /// end it waits on) sends `wake()` to `member`.
    pub fn join<M: ractor::Message>(&self, member: ActorRef<M>, wake: fn() -> M) {
        let _ = self.actor.cast(TeamMsg::Join(
            self.me.clone(),
            Arc::new(move || {
                let _ = member.cast(wake());
            }),
        ));
    }

    /// Tells the team this member is now `status` (working or idle).
    pub fn set_status(&self, status: MemberStatus) {
        let _ = self.actor.cast(TeamMsg::Status(self.me.clone(), status));
    }

    /// Tells the team this member has left, `status` (after its last message: the team
    /// actor handles these in order).
    pub fn leave(&self, status: MemberStatus) {
        let _ = self.actor.cast(TeamMsg::Left(self.me.clone(), status));
    }

    /// Sends a message; returns once it is on disk in every recipient's inbox.
    pub async fn send(&self, to: Recipient, out: Outgoing) -> Result<Vec<Envelope>, SendError> {
        let from = self.me.clone();
        match self
            .actor
            .call(
                |reply| TeamMsg::Send {
                    from,
                    to,
                    out,
                    reply,
                },
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => Ok(r?),
            _ => Err(SendError::NoAnswer),
        }
    }

    /// The unread mail, in inbox order (read on the caller's task unless the inbox lock is
    /// taken elsewhere).
    pub async fn unread(&self) -> Result<Vec<Envelope>, TeamError> {
        match self.team.try_unread(&self.me) {
            Ok(Some(unread)) => Ok(unread),
            Ok(None) => {
                let (team, me) = (self.team.clone(), self.me.clone());
                blocking(move || team.unread(&me)).await
            }
            Err(e) => Err(e),
        }
    }

    /// The unread mail (and, for the lead, its notices), rendered for the model. Nothing is
    /// acknowledged: call [`Mailbox::ack`] with `ack` once the texts are in the conversation.
    pub async fn take(&self) -> Delivery {
        let unread = self.unread().await.unwrap_or_else(|e| {
            tracing::warn!("could not read the inbox: {e}");
            Vec::new()
        });
        let mut delivery = Delivery {
            texts: unread.iter().map(render).collect(),
            ack: unread.last().map(|e| e.index + 1),
            envelopes: unread,
        };
        if self.me.is_lead() {
            self.take_notices(&mut delivery).await;
        }
        delivery
    }

    /// The lead's notices, asked of the team actor only when one was queued or the work
    /// list may have changed (an item completed) since the last answer: the count and the
    /// stamp are read before asking, so anything after that moves one of them.
    async fn take_notices(&self, delivery: &mut Delivery) {
        let now = (
            self.team.notices_queued(),
            TodosStamp::of(&self.team.todo_dir()),
        );
        let seen = *self.notices_seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((count, stamp)) = seen
            && count == now.0
            && stamp.unchanged(now.1)
        {
            return;
        }
        if let Ok(ractor::rpc::CallResult::Success(notes)) = self
            .actor
            .call(TeamMsg::TakeNotices, Some(CALL_TIMEOUT))
            .await
        {
            delivery.texts.extend(notes);
            *self.notices_seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        }
    }

    /// Records that the inbox was delivered through `delivered` messages. The cursor file
    /// is written behind (see [`super::inbox`]): call it once the messages are in the
    /// transcript, whose resume-time ack covers a crash before the cursor is on disk.
    pub async fn ack(&self, delivered: u64) {
        let done = match self.team.try_ack_later(&self.me, delivered) {
            Ok(true) => Ok(()),
            Ok(false) => {
                let (team, me) = (self.team.clone(), self.me.clone());
                blocking(move || team.ack_later(&me, delivered)).await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = done {
            tracing::warn!("could not acknowledge {}'s inbox: {e}", self.me);
        }
    }
}

/// A message as the recipient's model sees it: marked with its sender, index and kind.
/// The body is escaped (`crate::envelope`), so it can neither close the envelope nor
/// forge another with a different sender.
pub fn render(e: &Envelope) -> String {
    let kind = match &e.kind {
        MessageKind::Text => "message".to_string(),
        MessageKind::ShutdownRequest => "shutdown_request".to_string(),
        MessageKind::ShutdownResponse { approve } => {
            format!("shutdown_response\" approve=\"{approve}")
        }
        MessageKind::PlanApprovalRequest => "plan_approval_request".to_string(),
        MessageKind::PlanApprovalResponse { approve, feedback } => format!(
            "plan_approval_response\" approve=\"{approve}\" feedback=\"{}",
            crate::envelope::attr(feedback.as_deref().unwrap_or(""))
        ),
    };
    let broadcast = if e.broadcast { " to=\"*\"" } else { "" };
    format!(
        "<team-message from=\"{}\"{broadcast} index=\"{}\" type=\"{kind}\">\n{}\n</team-message>",
        crate::envelope::attr(&e.from.to_string()),
        e.index,
        crate::envelope::body(&e.message)
    )
}
