//! The conversation during a run, shared with the request in flight instead of copied
//! into it each turn. The run edits it only between turns, when no request holds it, so an
//! edit copies nothing; should a provider keep a request (the scripted model's in-memory
//! record), the edit copies first and the kept request still shows what was sent. When
//! the run ends, or its future is dropped, the conversation goes back to its owner. A
//! compaction lends the conversation to its summary request the same way.

use std::ops::Deref;
use std::sync::Arc;

use crate::protocol::Message;

/// A run's conversation, taken from its owner's vector and given back on drop.
pub(crate) struct Shared<'a> {
    owner: &'a mut Vec<Message>,
    conversation: Arc<Vec<Message>>,
}

impl<'a> Shared<'a> {
    /// Takes `owner`'s conversation for the run.
    pub(crate) fn take(owner: &'a mut Vec<Message>) -> Self {
        let conversation = Arc::new(std::mem::take(owner));
        Self {
            owner,
            conversation,
        }
    }

    /// The conversation to send: another reference, not a copy.
    pub(crate) fn share(&self) -> Arc<Vec<Message>> {
        Arc::clone(&self.conversation)
    }

    /// The conversation to change (copied first only if a request still holds it).
    pub(super) fn edit(&mut self) -> &mut Vec<Message> {
        Arc::make_mut(&mut self.conversation)
    }
}

impl Deref for Shared<'_> {
    type Target = Vec<Message>;

    fn deref(&self) -> &Vec<Message> {
        &self.conversation
    }
}

impl Drop for Shared<'_> {
    fn drop(&mut self) {
        let conversation = std::mem::take(&mut self.conversation);
        *self.owner = Arc::try_unwrap(conversation).unwrap_or_else(|kept| (*kept).clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_reach_the_owner_and_a_kept_share_keeps_what_it_saw() {
        let mut owner = vec![Message::user_text("a")];
        let kept = {
            let mut shared = Shared::take(&mut owner);
            let sent = shared.share();
            shared.edit().push(Message::assistant_text("b"));
            assert_eq!(sent.len(), 1, "the request still holds what it sent");
            drop(sent);
            shared.edit().push(Message::user_text("c"));
            shared.share()
        };
        assert_eq!(owner.len(), 3);
        assert_eq!(owner[2].text(), "c");
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn an_edit_with_no_request_alive_copies_nothing() {
        let mut owner = vec![Message::user_text("x".repeat(100))];
        let mut shared = Shared::take(&mut owner);
        let before = shared[0].content.as_ptr();
        let sent = shared.share();
        drop(sent);
        shared.edit().push(Message::assistant_text("y"));
        assert_eq!(
            shared[0].content.as_ptr(),
            before,
            "the messages were not copied"
        );
    }
}
