//! What reaches an agent between turns: its background tasks' completion notices and its
//! team mail, appended to the last user message so the model reads them next turn.

use ractor::ActorRef;

use crate::protocol::{ContentBlock, Message, Role};
use std::sync::atomic::Ordering;

use crate::tasks::actor::{QUEUED, TaskMsg};

/// Appends the completion notices of this agent's background tasks to the last user
/// message, so the model learns of them on its next turn. They are stored: they are
/// things that happened. `seen` is the count of queued notifications when this agent
/// last asked: the actor is asked only when it moved (`tasks::actor::QUEUED`).
pub(super) async fn inject_notifications(
    conversation: &mut [Message],
    tasks: &ActorRef<TaskMsg>,
    agent: &str,
    seen: &mut Option<u64>,
) {
    let now = QUEUED.load(Ordering::Acquire);
    if *seen == Some(now) {
        return;
    }
    let notes = match tasks
        .call(
            |r| TaskMsg::TakeNotifications(agent.to_string(), r),
            Some(std::time::Duration::from_secs(10)),
        )
        .await
    {
        Ok(ractor::rpc::CallResult::Success(notes)) => notes,
        _ => return,
    };
    *seen = Some(now);
    if let Some(last) = conversation.iter_mut().rev().find(|m| m.role == Role::User) {
        for rec in notes {
            last.content.push(ContentBlock::Text {
                text: crate::tasks::notification_text(&rec),
            });
        }
    }
}

/// Appends this agent's unread team mail (and, for the lead, its notices) to the last user
/// message, each marked with its sender; returns what to acknowledge.
pub(super) async fn inject_mail(
    conversation: &mut Vec<Message>,
    mail: &crate::team::actor::Mailbox,
) -> Option<u64> {
    let delivery = mail.take().await;
    if delivery.texts.is_empty() {
        return delivery.ack;
    }
    let blocks = delivery
        .texts
        .into_iter()
        .map(|text| ContentBlock::Text { text });
    match conversation.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(blocks),
        _ => conversation.push(Message {
            role: Role::User,
            content: blocks.collect(),
        }),
    }
    delivery.ack
}
