//! A team's state for display: its members (the lead first) with status, current item,
//! last activity and unread messages, and its work list with owners and open blockers.
//! `crew team show` prints it; the terminal UI's team panel draws it.

use serde::Serialize;

use super::{MemberName, MemberStatus, Team, TodoItem, TodoStatus, open_blockers};

/// What `crew team show --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct TeamView {
    /// The team's name (its session id).
    pub team: String,
    /// Its directory.
    pub dir: std::path::PathBuf,
    /// The lead, then the teammates in the order they joined.
    pub members: Vec<MemberView>,
    /// The work list (deleted items included), by id.
    pub items: Vec<ItemView>,
}

/// One member in [`TeamView`].
#[derive(Debug, Serialize)]
pub(crate) struct MemberView {
    /// Its name.
    pub name: String,
    /// `lead` for the lead, else the agent definition it runs.
    pub agent_type: String,
    /// Its agent id (its transcript is `<session>/agents/<id>.jsonl`); `None` for the lead.
    pub agent_id: Option<String>,
    /// `idle`, `working`, `failed`, `stopped`, `finished`; `None` for the lead.
    pub status: Option<MemberStatus>,
    /// The item it holds: the roster's, or else an in-progress item it owns.
    pub current_item: Option<String>,
    /// When it last changed (Unix ms); `None` for the lead.
    pub last_activity_ms: Option<u64>,
    /// Messages in its inbox not yet delivered to it.
    pub unread: usize,
    /// Its worktree, if it has one.
    pub worktree: Option<std::path::PathBuf>,
}

/// One work-list item in [`TeamView`].
#[derive(Debug, Serialize)]
pub(crate) struct ItemView {
    /// Its id.
    pub id: String,
    /// What it is.
    pub subject: String,
    /// Where it is in its life.
    pub status: TodoStatus,
    /// Who holds (or held) it.
    pub owner: Option<String>,
    /// Everything it waits for.
    pub blocked_by: Vec<String>,
    /// Those of `blocked_by` still open.
    pub open_blockers: Vec<String>,
}

/// Reads the team's state for display.
pub(crate) fn view(team: &Team) -> anyhow::Result<TeamView> {
    let roster = team.roster()?;
    let items = team.list_todos()?;
    let held = |name: &MemberName| {
        items
            .values()
            .find(|i| i.status == TodoStatus::InProgress && i.owner.as_ref() == Some(name))
            .map(|i| i.id.to_string())
    };
    let lead = MemberName::lead();
    let mut members = vec![MemberView {
        name: lead.to_string(),
        agent_type: "lead".into(),
        agent_id: None,
        status: None,
        current_item: held(&lead),
        last_activity_ms: None,
        unread: team.unread_count(&lead)?,
        worktree: None,
    }];
    for m in &roster.members {
        members.push(MemberView {
            name: m.name.to_string(),
            agent_type: m.agent_type.clone(),
            agent_id: Some(m.agent_id.clone()),
            status: Some(m.status),
            current_item: m
                .current_item
                .map(|i| i.to_string())
                .or_else(|| held(&m.name)),
            last_activity_ms: Some(m.last_activity_ms),
            unread: team.unread_count(&m.name)?,
            worktree: m.worktree.clone(),
        });
    }
    let ids = |list: &[super::TodoId]| list.iter().map(|i| i.to_string()).collect();
    let items = items
        .values()
        .map(|i: &TodoItem| ItemView {
            id: i.id.to_string(),
            subject: i.subject.clone(),
            status: i.status,
            owner: i.owner.as_ref().map(|o| o.to_string()),
            blocked_by: ids(&i.blocked_by),
            open_blockers: if i.status.is_open() {
                ids(&open_blockers(&items, i))
            } else {
                Vec::new()
            },
        })
        .collect();
    Ok(TeamView {
        team: team.name().to_string(),
        dir: team.dir().to_path_buf(),
        members,
        items,
    })
}
