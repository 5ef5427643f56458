//! Agent teams on disk: the storage and concurrency core behind the lead, its named
//! teammates, their durable inboxes and the shared work list.
//!
//! A team lives in `~/.crew/teams/<team>/` (the team name is the session id):
//!
//! ```text
//! config.json            the roster (roster.rs)
//! inboxes/<name>.jsonl   one append-only inbox per member, `lead` included (inbox.rs)
//! inboxes/<name>.cursor  how many of those messages were delivered (inbox.rs)
//! todos/<id>.json        one file per work-list item, ids "1", "2", … (todos.rs)
//! *.lock                 flock(2) lock files that serialise writers across processes
//! ```
//!
//! Who may change a work-list item is decided in `authority.rs`; a lock is waited for at
//! most `lock::BOUND`, and the whole directory is hidden from every sandboxed command
//! (`sandbox::hidden`).
//!
//! Every operation is synchronous and may block on a lock or an fsync: actors call it from
//! `tokio::task::spawn_blocking` (the inbox's `try_*` operations never wait, for the actors'
//! hot path). Every file is written with [`store::write_atomic`] except the inboxes, which
//! are appended under a lock and fsynced by group commit (inbox.rs).

pub mod actor;
mod authority;
mod error;
mod flusher;
pub(crate) mod handle;
pub(crate) mod inbox;
mod inbox_file;
mod inbox_read;
mod inbox_registry;
mod inbox_send;
mod item;
mod lock;
pub(crate) mod mailbox;
mod message;
mod notices_count;
pub mod restore;
pub(crate) mod roster;
pub(crate) mod todos;
pub(crate) mod todos_stamp;
pub(crate) mod view;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::store;
pub use error::{Result, TeamError};
pub use handle::TeamHandle;
pub use inbox::{Envelope, MessageKind, Outgoing};
pub use roster::{Member, MemberStatus, PlanStage, Roster};
pub use todos::{NewTodo, TodoId, TodoItem, TodoStatus, TodoUpdate, open_blockers};

/// The lead's name in every team: its inbox is `inboxes/lead.jsonl`.
pub const LEAD: &str = "lead";
/// The sender name of messages typed by the user (`crew team send`).
pub const USER: &str = "user";
/// The recipient that means "every member but the sender".
pub const BROADCAST: &str = "*";

/// Names a teammate may not take: they already mean someone else.
const RESERVED: [&str; 2] = [LEAD, USER];
const MAX_NAME: usize = 64;

/// A member's name, checked to be a safe file name: 1–64 ASCII letters, digits, `-` or `_`,
/// starting with a letter or digit. `lead` and `user` are valid names (for addressing) but
/// cannot be given to a teammate (see [`MemberName::teammate`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MemberName(String);

impl MemberName {
    /// Checks `name` as an address (`lead` and `user` allowed).
    pub fn parse(name: &str) -> Result<Self> {
        check_file_name("name", name)?;
        Ok(Self(name.to_string()))
    }

    /// Checks `name` as a new teammate's name: also refuses the reserved `lead` and `user`.
    pub fn teammate(name: &str) -> Result<Self> {
        let parsed = Self::parse(name)?;
        if RESERVED.contains(&name) {
            return Err(TeamError::InvalidName {
                field: "name",
                value: name.to_string(),
                reason: "reserved (lead and user name the lead and the human)",
            });
        }
        Ok(parsed)
    }

    /// The lead's name.
    pub fn lead() -> Self {
        Self(LEAD.to_string())
    }

    /// The user's name (messages from `crew team send`).
    pub fn user() -> Self {
        Self(USER.to_string())
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the lead.
    pub fn is_lead(&self) -> bool {
        self.0 == LEAD
    }
}

impl fmt::Display for MemberName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for MemberName {
    type Error = TeamError;
    fn try_from(s: String) -> Result<Self> {
        Self::parse(&s)
    }
}

impl From<MemberName> for String {
    fn from(n: MemberName) -> String {
        n.0
    }
}

/// Who a message goes to: one member or everyone but the sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recipient {
    /// One member (or `lead`).
    Member(MemberName),
    /// `*`: every member, the lead included, except the sender.
    Broadcast,
}

impl Recipient {
    /// Parses a `to` argument: `*` or a member name.
    pub fn parse(to: &str) -> Result<Self> {
        if to == BROADCAST {
            Ok(Self::Broadcast)
        } else {
            MemberName::parse(to)
                .map(Self::Member)
                .map_err(|e| rename_field(e, "to"))
        }
    }
}

/// One team's directory. Cheap to clone; clones share the inboxes' open files and
/// in-memory state (as do other handles on the same directory in this process).
#[derive(Clone, Debug)]
pub struct Team {
    name: String,
    dir: PathBuf,
    inboxes: Arc<inbox_registry::Inboxes>,
    /// Notices queued for the lead, ever (`notices_count`).
    notices: Arc<std::sync::atomic::AtomicU64>,
}

impl Team {
    /// The team of a session, in `~/.crew/teams/<session-id>/` (created if missing).
    pub fn for_session(session_id: &str) -> Result<Self> {
        let root = store::teams_dir().ok_or(TeamError::NoHome)?;
        Self::open(&root, session_id)
    }

    /// The team of a session if it exists, without creating anything (for monitoring).
    pub fn find_for_session(session_id: &str) -> Result<Option<Self>> {
        let root = store::teams_dir().ok_or(TeamError::NoHome)?;
        check_file_name("team", session_id)?;
        if root.join(session_id).is_dir() {
            Self::open(&root, session_id).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The team `name` under `teams_root` (created if missing). Tests pass a temp dir.
    pub fn open(teams_root: &Path, name: &str) -> Result<Self> {
        check_file_name("team", name)?;
        let dir = teams_root.join(name);
        for sub in ["inboxes", "todos"] {
            let dir = dir.join(sub);
            std::fs::create_dir_all(&dir).map_err(error::io_at(&dir))?;
        }
        Ok(Self {
            name: name.to_string(),
            inboxes: Arc::new(inbox_registry::Inboxes::new(&dir.join("inboxes"))),
            notices: notices_count::for_dir(&dir),
            dir,
        })
    }

    /// Counts a notice for the lead, before it is queued (a mailbox that reads the new
    /// count asks the actor after that).
    pub(crate) fn notice_queued(&self) {
        self.notices
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// How many notices have been queued for the lead, ever.
    pub(crate) fn notices_queued(&self) -> u64 {
        self.notices.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The team's name (its session id).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The team's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `config.json`: the roster.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// `inboxes/`.
    pub fn inbox_dir(&self) -> PathBuf {
        self.dir.join("inboxes")
    }

    /// `inboxes/<name>.jsonl`.
    pub fn inbox_path(&self, name: &MemberName) -> PathBuf {
        self.inbox_dir().join(format!("{name}.jsonl"))
    }

    /// `todos/`.
    pub fn todo_dir(&self) -> PathBuf {
        self.dir.join("todos")
    }

    /// `todos/<id>.json`.
    pub fn todo_path(&self, id: TodoId) -> PathBuf {
        self.todo_dir().join(format!("{id}.json"))
    }
}

/// A safe single path component: no separators, no dots-only names, no control characters.
fn check_file_name(field: &'static str, value: &str) -> Result<()> {
    let bad = |reason| TeamError::InvalidName {
        field,
        value: value.to_string(),
        reason,
    };
    if value.is_empty() || value.len() > MAX_NAME {
        return Err(bad("use 1 to 64 characters"));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(bad("use only ASCII letters, digits, '-' and '_'"));
    }
    if !value.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(bad("start with a letter or digit"));
    }
    Ok(())
}

fn rename_field(e: TeamError, to: &'static str) -> TeamError {
    match e {
        TeamError::InvalidName { value, reason, .. } => TeamError::InvalidName {
            field: to,
            value,
            reason,
        },
        other => other,
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_safe_file_names() {
        for bad in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "-x",
            "a b",
            "é",
            &"a".repeat(65),
        ] {
            assert!(MemberName::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            MemberName::parse("alice_2-b").unwrap().as_str(),
            "alice_2-b"
        );
    }

    #[test]
    fn lead_and_user_are_reserved_for_teammates_but_addressable() {
        assert!(MemberName::parse("lead").unwrap().is_lead());
        let err = MemberName::teammate("lead").unwrap_err().to_string();
        assert!(err.contains("reserved"), "{err}");
        assert!(MemberName::teammate("user").is_err());
    }

    #[test]
    fn star_is_broadcast_and_bad_recipient_names_the_field() {
        assert_eq!(Recipient::parse("*").unwrap(), Recipient::Broadcast);
        let err = Recipient::parse("a/b").unwrap_err().to_string();
        assert!(err.starts_with("to "), "{err}");
    }

    #[test]
    fn team_name_is_checked_and_dirs_created() {
        let root = tempfile::tempdir().unwrap();
        assert!(Team::open(root.path(), "../escape").is_err());
        let team = Team::open(root.path(), "sess-1").unwrap();
        assert!(team.inbox_dir().is_dir() && team.todo_dir().is_dir());
        assert_eq!(
            team.todo_path(TodoId(3)),
            root.path().join("sess-1/todos/3.json")
        );
    }
}

/// What the team's unit tests share: a team of alice and bob in a temporary directory.
#[cfg(test)]
pub(crate) mod test_team {
    use super::{Member, MemberName, Team};

    /// A member name that is known to be valid.
    pub(crate) fn name(s: &str) -> MemberName {
        MemberName::parse(s).unwrap()
    }

    /// A team `t` with the members alice and bob.
    pub(crate) fn team() -> (tempfile::TempDir, Team) {
        let root = tempfile::tempdir().unwrap();
        let team = Team::open(root.path(), "t").unwrap();
        for n in ["alice", "bob"] {
            team.add_member(Member::new(name(n), n, "coder", None))
                .unwrap();
        }
        (root, team)
    }
}
