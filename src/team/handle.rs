//! `TeamHandle`: what a tool call knows of its caller's team — the team's storage and the
//! caller's member name (`lead` or a teammate's name). It rides on
//! [`crate::tools::ToolContext::team`]; the work-list and message tools act through it.
//!
//! The storage core is synchronous (it takes `flock`s and fsyncs), so every operation here
//! runs it on the blocking pool. Changes made through a handle that carries an event bus are
//! published as [`EventKind::TodoChanged`] / [`EventKind::TeamMessage`] for stream-json and
//! the TUI.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    Envelope, MemberName, NewTodo, Outgoing, Recipient, Result, Team, TeamError, TodoId, TodoItem,
    TodoUpdate,
};
use crate::events::{EventBus, EventKind};

/// One member's access to its team. Cheap to clone.
#[derive(Clone)]
pub struct TeamHandle {
    team: Arc<Team>,
    me: MemberName,
    events: Option<EventBus>,
}

impl std::fmt::Debug for TeamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamHandle")
            .field("team", &self.team.name())
            .field("me", &self.me)
            .field("events", &self.events.is_some())
            .finish()
    }
}

impl TeamHandle {
    /// `me`'s handle on `team`, publishing no events.
    pub fn new(team: Arc<Team>, me: MemberName) -> Self {
        Self {
            team,
            me,
            events: None,
        }
    }

    /// The same handle, publishing changes on `events` (attributed to the caller).
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = Some(events);
        self
    }

    /// A handle on the same team (and event bus) for another member, e.g. a new teammate.
    pub fn for_member(&self, me: MemberName) -> Self {
        Self {
            team: self.team.clone(),
            me,
            events: self.events.clone(),
        }
    }

    /// The team's storage.
    pub fn team(&self) -> &Arc<Team> {
        &self.team
    }

    /// The caller's member name.
    pub fn me(&self) -> &MemberName {
        &self.me
    }

    /// Runs a storage operation on the blocking pool with the team and the caller's name.
    pub async fn run<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Team, &MemberName) -> Result<T> + Send + 'static,
    {
        let team = self.team.clone();
        let me = self.me.clone();
        match tokio::task::spawn_blocking(move || op(&team, &me)).await {
            Ok(result) => result,
            Err(join) => Err(TeamError::Io {
                path: self.team.dir().to_path_buf(),
                source: std::io::Error::other(format!(
                    "the team store operation did not finish ({join}); try again"
                )),
            }),
        }
    }

    /// Adds a work-list item as the caller.
    pub async fn add_todo(&self, new: NewTodo) -> Result<TodoItem> {
        let item = self.run(move |t, me| t.add_todo(me, new)).await?;
        self.publish_todo(&item);
        Ok(item)
    }

    /// Changes item `id` as the caller (claims it with `status: in_progress`).
    pub async fn update_todo(&self, id: TodoId, update: TodoUpdate) -> Result<TodoItem> {
        let item = self.run(move |t, me| t.update_todo(me, id, update)).await?;
        self.publish_todo(&item);
        Ok(item)
    }

    /// One item.
    pub async fn get_todo(&self, id: TodoId) -> Result<TodoItem> {
        self.run(move |t, _| t.get_todo(id)).await
    }

    /// Every item (deleted ones included), by id.
    pub async fn list_todos(&self) -> Result<BTreeMap<TodoId, TodoItem>> {
        self.run(|t, _| t.list_todos()).await
    }

    /// Sends a message from the caller; returns one envelope per recipient.
    pub async fn send(&self, to: Recipient, out: Outgoing) -> Result<Vec<Envelope>> {
        let sent = self.run(move |t, me| t.send(me, &to, out)).await?;
        for envelope in &sent {
            self.publish_message(envelope);
        }
        Ok(sent)
    }

    /// Publishes a work-list change (no-op without an event bus).
    pub fn publish_todo(&self, item: &TodoItem) {
        if let Some(events) = &self.events {
            events.publish(self.me.as_str(), todo_event(item));
        }
    }

    /// Publishes a teammate's change (joined, idle, working, failed, …; no-op without an
    /// event bus).
    pub fn publish_member(&self, member: &super::Member) {
        if let Some(events) = &self.events {
            events.publish(self.me.as_str(), member_event(member));
        }
    }

    /// Publishes a delivered-to-inbox message (no-op without an event bus).
    pub fn publish_message(&self, envelope: &Envelope) {
        if let Some(events) = &self.events {
            events.publish(self.me.as_str(), message_event(envelope));
        }
    }
}

/// The `team_member_changed` event for a teammate as the roster holds it.
pub(crate) fn member_event(member: &super::Member) -> EventKind {
    EventKind::TeamMemberChanged {
        name: member.name.to_string(),
        status: member.status.to_string(),
        current_item: member.current_item.map(|i| i.to_string()),
    }
}

/// The `todo_changed` event for an item as saved.
pub(crate) fn todo_event(item: &TodoItem) -> EventKind {
    EventKind::TodoChanged {
        id: item.id.to_string(),
        subject: item.subject.clone(),
        status: item.status.to_string(),
        owner: item.owner.as_ref().map(|o| o.to_string()),
        blocked_by: item.blocked_by.iter().map(|b| b.to_string()).collect(),
    }
}

/// The `team_message` event for a message appended to an inbox.
pub(crate) fn message_event(envelope: &Envelope) -> EventKind {
    EventKind::TeamMessage {
        from: envelope.from.to_string(),
        to: envelope.to.to_string(),
        index: envelope.index,
        kind: kind_name(&envelope.kind).into(),
        summary: envelope
            .summary
            .clone()
            .unwrap_or_else(|| preview(&envelope.message)),
    }
}

/// The snake_case name of a message kind.
pub(crate) fn kind_name(kind: &super::MessageKind) -> &'static str {
    use super::MessageKind::*;
    match kind {
        Text => "text",
        ShutdownRequest => "shutdown_request",
        ShutdownResponse { .. } => "shutdown_response",
        PlanApprovalRequest => "plan_approval_request",
        PlanApprovalResponse { .. } => "plan_approval_response",
    }
}

/// The first line of `text`, cut to 80 characters.
pub(crate) fn preview(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(80).collect();
    if line.chars().count() > 80 || text.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use crate::team::{Member, TodoStatus};

    fn name(s: &str) -> MemberName {
        MemberName::parse(s).unwrap()
    }

    #[tokio::test]
    async fn changes_run_as_the_caller_and_are_published() {
        let root = tempfile::tempdir().unwrap();
        let team = Arc::new(Team::open(root.path(), "s1").unwrap());
        team.add_member(Member::new(name("bob"), "b", "coder", None))
            .unwrap();
        let events = EventBus::new();
        let mut rx = events.subscribe();
        let lead = TeamHandle::new(team.clone(), MemberName::lead()).with_events(events);
        let bob = lead.for_member(name("bob"));

        let item = lead
            .add_todo(NewTodo {
                subject: "write docs".into(),
                ..NewTodo::default()
            })
            .await
            .unwrap();
        assert_eq!(item.created_by, MemberName::lead());
        let claimed = bob
            .update_todo(
                item.id,
                TodoUpdate {
                    status: Some(TodoStatus::InProgress),
                    ..TodoUpdate::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(claimed.owner, Some(name("bob")));
        bob.send(
            Recipient::parse("lead").unwrap(),
            Outgoing::text("on it\nmore"),
        )
        .await
        .unwrap();

        let got: Vec<Event> = (0..3).map(|_| rx.try_recv().unwrap()).collect();
        assert_eq!(got[0].agent, "lead");
        assert!(
            matches!(&got[0].kind, EventKind::TodoChanged { status, .. } if status == "pending")
        );
        assert_eq!(got[1].agent, "bob");
        assert!(matches!(&got[1].kind,
            EventKind::TodoChanged { status, owner: Some(o), .. } if status == "in_progress" && o == "bob"));
        assert!(matches!(&got[2].kind,
            EventKind::TeamMessage { from, to, summary, .. } if from == "bob" && to == "lead" && summary == "on it…"));
        // The storage saw the same: bob holds the item on disk.
        assert_eq!(
            team.get_todo(item.id).unwrap().status,
            TodoStatus::InProgress
        );
    }
}
