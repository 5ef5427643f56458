//! What every teammate's life shares, wherever it runs (issue 27 item 3): it joins the
//! team through its mailbox, is working or idle, acknowledges the mail it has read, leaves
//! the team when it shuts down, ends its worktree (removed when clean, kept and named
//! otherwise) and, when it fails, tells the lead why and where its kept work is. The local
//! teammate (`teammate_actor`) and the lead's proxy of a teammate on a worker
//! (`worker::remote_teammate_actor`) both live through a [`MemberLife`]; what differs
//! between them — running the ReAct loop here, or relaying mail to a worker and bringing
//! its branch back — stays in their actors.

use std::sync::Arc;

use ractor::{ActorProcessingErr, ActorRef};

use super::lifecycle;
use super::subagent_actor::Workspaces;
use crate::team::actor::Mailbox;
use crate::team::{Envelope, MemberName, MemberStatus, Outgoing, Recipient};

/// A teammate's place in the team and its worktree: the one way its actor joins, reports
/// its status, acknowledges its inbox, leaves, and ends its worktree.
pub(crate) struct MemberLife {
    mailbox: Mailbox,
    /// The worktree and the id it was created under; taken when it is finished, so it
    /// is finished once.
    workspace: Option<(Arc<dyn Workspaces>, String)>,
}

impl MemberLife {
    /// The life of the member whose mailbox is `mailbox`, working in the worktree
    /// `workspace` created under its id (`None`: it has none).
    pub(crate) fn new(mailbox: Mailbox, workspace: Option<(Arc<dyn Workspaces>, String)>) -> Self {
        Self { mailbox, workspace }
    }

    /// Its name on the team.
    pub(crate) fn name(&self) -> &MemberName {
        &self.mailbox.me
    }

    /// Its mailbox, for what only one kind of teammate sends (plans, relayed messages)
    /// and the team's files.
    pub(crate) fn mailbox(&self) -> &Mailbox {
        &self.mailbox
    }

    /// Joins the team: from now on mail for it sends `wake()` to `member`.
    pub(crate) fn join<M: ractor::Message>(&self, member: ActorRef<M>, wake: fn() -> M) {
        self.mailbox.join(member, wake);
    }

    /// Tells the team it is working.
    pub(crate) fn working(&self) {
        self.mailbox.set_status(MemberStatus::Working);
    }

    /// Tells the team it is idle (the team actor tells the lead).
    pub(crate) fn idle(&self) {
        self.mailbox.set_status(MemberStatus::Idle);
    }

    /// Its unread mail in inbox order; an inbox that cannot be read counts as empty (and
    /// is logged), so a teammate goes idle rather than failing on it.
    pub(crate) async fn unread(&self) -> Vec<Envelope> {
        self.mailbox.unread().await.unwrap_or_else(|e| {
            tracing::warn!("could not read {}'s inbox: {e}", self.name());
            Vec::new()
        })
    }

    /// Acknowledges its inbox through `through` messages (nothing when `through` is 0).
    pub(crate) async fn ack_through(&self, through: u64) {
        if through > 0 {
            self.mailbox.ack(through).await;
        }
    }

    /// Sends `out` to the lead; a failure is logged (`what` says what was being sent):
    /// the teammate goes on either way.
    pub(crate) async fn tell_lead(&self, out: Outgoing, what: &str) {
        if let Err(e) = self
            .mailbox
            .send(Recipient::Member(MemberName::lead()), out)
            .await
        {
            tracing::warn!("{} could not send {what}: {e}", self.name());
        }
    }

    /// Tells the team it has left, finished (after its last message: the team actor
    /// handles these in order).
    pub(crate) fn leave(&self) {
        self.mailbox.leave(MemberStatus::Finished);
    }

    /// Ends its worktree: removed when it holds nothing, kept otherwise. Returns what
    /// became of it (`[worktree] …`, naming where kept work is), or `None` when it had
    /// none or it was finished already.
    pub(crate) async fn finish_worktree(&mut self) -> Option<String> {
        let (ws, id) = self.workspace.take()?;
        Some(lifecycle::finish_worktree(ws.as_ref(), &id).await)
    }

    /// Ends its worktree and returns the failure to fail its actor with: `reason`, and
    /// where its kept work is (the team actor's supervision tells the lead both).
    pub(crate) async fn fail(&mut self, reason: String) -> ActorProcessingErr {
        let worktree = self.finish_worktree().await;
        failure(reason, worktree)
    }
}

/// The reason a teammate failed with, and what became of its worktree (from
/// [`MemberLife::finish_worktree`]): one shape for every teammate's failure notice.
pub(crate) fn failure(reason: String, worktree: Option<String>) -> ActorProcessingErr {
    match worktree {
        Some(worktree) => format!("{reason}; {worktree}").into(),
        None => reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_its_kept_worktree_after_the_reason() {
        let err = failure(
            "its run failed".into(),
            Some("[worktree] kept at /w on branch crew/a-1".into()),
        );
        assert_eq!(
            err.to_string(),
            "its run failed; [worktree] kept at /w on branch crew/a-1"
        );
        assert_eq!(failure("lost".into(), None).to_string(), "lost");
    }
}
