//! The conversation as one model request sends it, without copying it per turn: the
//! agent's stored conversation, shared (`Arc`), and what this request alone adds.
//!
//! - Consecutive messages of one role are sent as one (a resumed or notified conversation
//!   can hold two user messages in a row, which APIs reject).
//! - The per-turn reminder goes after the last user message's blocks, or in a user message
//!   of its own when the conversation ends with the model's. It is never stored.
//! - Micro-compaction ([`crate::micro`]): old large tool results saved to a file are sent as
//!   a stub naming the file.
//!
//! Providers read it through [`Messages::iter`], which borrows every block but the few a
//! request changes (the reminder, the stubs). Serialised, as recorded requests are, it is
//! the list of messages as sent, exactly as a `Vec<Message>` of them serialises.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::micro::MicroPolicy;
use crew_protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};

/// The messages of one request (cheap to clone: the conversation is shared).
#[derive(Clone, Default)]
pub struct Messages {
    /// The conversation as stored.
    stored: Arc<Vec<Message>>,
    /// This turn's reminder.
    reminder: Option<String>,
    /// How many of the oldest exchanges have their large saved results stubbed (0: none).
    stubbed: usize,
    /// Which results count as large.
    policy: MicroPolicy,
}

/// One message as sent: the blocks of one or more stored messages of the same role.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sent<'a> {
    /// The author.
    pub role: Role,
    /// The blocks, borrowed from the conversation unless this request changed them.
    pub content: Vec<Cow<'a, ContentBlock>>,
}

impl Sent<'_> {
    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b.as_ref() {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b.as_ref() {
            ContentBlock::ToolUse(call) => Some(call),
            _ => None,
        })
    }

    /// An owned copy.
    pub fn to_message(&self) -> Message {
        Message {
            role: self.role,
            content: self
                .content
                .iter()
                .map(|b| b.clone().into_owned())
                .collect(),
        }
    }
}

impl Messages {
    /// The stored conversation, sent as it is (merged by role).
    pub fn new(stored: Arc<Vec<Message>>) -> Self {
        Self {
            stored,
            ..Self::default()
        }
    }

    /// The same with `reminder` after the last user message's blocks.
    pub fn with_reminder(mut self, reminder: Option<String>) -> Self {
        self.reminder = reminder;
        self
    }

    /// The same with the large saved results of old exchanges stubbed as `policy` says
    /// ([`crate::micro`]).
    pub fn micro_compacted(mut self, policy: &MicroPolicy) -> Self {
        self.policy = *policy;
        self.stubbed = crate::micro::stubbed_exchanges(&self.stored, policy);
        self
    }

    /// The messages as sent, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            of: self,
            next: 0,
            exchange: 0,
            reminder_sent: self.reminder.is_none(),
        }
    }

    /// An owned copy of the messages as sent.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().map(|m| m.to_message()).collect()
    }

    /// Whether nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.stored.is_empty() && self.reminder.is_none()
    }

    /// `block` of a user message in exchange `exchange` (counted from 1 at each model
    /// turn), as sent: a stub when it is a large saved result of a stubbed exchange.
    fn block<'a>(&self, block: &'a ContentBlock, exchange: usize) -> Cow<'a, ContentBlock> {
        match block {
            ContentBlock::ToolResult(r) if self.stubbed > 0 && exchange <= self.stubbed => {
                match crate::micro::stub_of(r, &self.policy) {
                    Some(content) => Cow::Owned(ContentBlock::ToolResult(ToolResult {
                        tool_use_id: r.tool_use_id.clone(),
                        content,
                        is_error: r.is_error,
                        error_code: r.error_code.clone(),
                        saved_to: r.saved_to.clone(),
                    })),
                    None => Cow::Borrowed(block),
                }
            }
            _ => Cow::Borrowed(block),
        }
    }
}

/// The messages of a request, as sent.
pub struct Iter<'a> {
    of: &'a Messages,
    /// The next stored message.
    next: usize,
    /// Model turns seen so far.
    exchange: usize,
    reminder_sent: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Sent<'a>;

    fn next(&mut self) -> Option<Sent<'a>> {
        let of = self.of;
        let stored = &of.stored[..];
        let Some(first) = stored.get(self.next) else {
            if self.reminder_sent {
                return None;
            }
            self.reminder_sent = true;
            let text = of.reminder.clone().unwrap_or_default();
            return Some(Sent {
                role: Role::User,
                content: vec![Cow::Owned(ContentBlock::Text { text })],
            });
        };
        let role = first.role;
        if role == Role::Assistant {
            self.exchange += 1;
        }
        let mut content = Vec::new();
        while let Some(m) = stored.get(self.next).filter(|m| m.role == role) {
            let exchange = self.exchange;
            content.extend(m.content.iter().map(|b| match role {
                Role::User => of.block(b, exchange),
                Role::Assistant => Cow::Borrowed(b),
            }));
            self.next += 1;
        }
        if self.next == stored.len() && role == Role::User && !self.reminder_sent {
            self.reminder_sent = true;
            let text = of.reminder.clone().unwrap_or_default();
            content.push(Cow::Owned(ContentBlock::Text { text }));
        }
        Some(Sent { role, content })
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Self {
        Self::new(Arc::new(messages))
    }
}

impl PartialEq for Messages {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Messages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Messages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(conversation: Vec<Message>, reminder: Option<&str>) -> Vec<Message> {
        Messages::from(conversation)
            .with_reminder(reminder.map(str::to_string))
            .to_vec()
    }

    #[test]
    fn the_reminder_goes_after_the_last_user_message_and_is_never_stored() {
        let conv = Arc::new(vec![Message::user_text("task")]);
        let messages = Messages::new(conv.clone()).with_reminder(Some("remember".into()));
        let out = messages.to_vec();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].content.len(), 2);
        assert_eq!(out[0].text(), "taskremember");
        assert_eq!(
            conv[0].content.len(),
            1,
            "the stored conversation is untouched"
        );
        let out = sent(
            vec![Message::user_text("task"), Message::assistant_text("hi")],
            Some("remember"),
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out[2], Message::user_text("remember"));
        assert_eq!(sent(vec![], Some("r")), vec![Message::user_text("r")]);
        assert!(sent(vec![], None).is_empty());
    }

    #[test]
    fn consecutive_messages_of_one_role_are_sent_as_one() {
        let out = sent(
            vec![
                Message::user_text("a"),
                Message::user_text("b"),
                Message::assistant_text("c"),
                Message::assistant_text("d"),
                Message::user_text("e"),
            ],
            Some("r"),
        );
        let texts: Vec<String> = out.iter().map(Message::text).collect();
        assert_eq!(texts, ["ab", "cd", "er"]);
    }

    #[test]
    fn the_request_shares_the_conversation_instead_of_copying_it() {
        let conv = Arc::new(vec![Message::user_text("x".repeat(1000))]);
        let messages = Messages::new(conv.clone()).with_reminder(Some("r".into()));
        let request = messages.clone();
        assert_eq!(Arc::strong_count(&conv), 3);
        let first = request.iter().next().unwrap();
        assert!(matches!(first.content[0], Cow::Borrowed(_)));
        assert!(matches!(first.content[1], Cow::Owned(_)));
    }

    #[test]
    fn serialises_and_compares_as_the_messages_sent() {
        let conv = vec![
            Message::user_text("a"),
            Message::user_text("b"),
            Message::assistant_text("c"),
        ];
        let messages = Messages::from(conv).with_reminder(Some("r".into()));
        let expected = vec![
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::Text { text: "a".into() },
                    ContentBlock::Text { text: "b".into() },
                ],
            },
            Message::assistant_text("c"),
            Message::user_text("r"),
        ];
        assert_eq!(
            serde_json::to_string(&messages).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        let back: Messages =
            serde_json::from_str(&serde_json::to_string(&messages).unwrap()).unwrap();
        assert_eq!(back, messages);
        assert_eq!(back, Messages::from(expected));
    }
}
