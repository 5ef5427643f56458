//! The one error type of the team store: every variant names the file, field or id it is
//! about and, where there is one, what to do about it.

use std::path::PathBuf;

use super::todos::{TodoId, TodoStatus};

/// What went wrong in the team store.
#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    /// A name (team, member) is not a safe file name or is reserved.
    #[error("{field} {value:?} is not allowed: {reason}")]
    InvalidName {
        /// Which argument or field held the name.
        field: &'static str,
        /// The rejected value.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A required text field is empty.
    #[error("{field} must not be empty")]
    Empty {
        /// The empty field.
        field: &'static str,
    },
    /// The home directory is unknown, so `~/.crew/teams` cannot be located.
    #[error("cannot locate ~/.crew/teams: HOME is not set")]
    NoHome,
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Taking the lock file failed.
    #[error("locking {path}: {source}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: nix::errno::Errno,
    },
    /// The lock file was held by something else for longer than crew waits.
    #[error(
        "{path} is still locked after {} ms: something other than this team's own updates holds it (find it with `fuser -v {path}` and stop it), then retry",
        .waited.as_millis()
    )]
    LockHeld {
        /// The lock file.
        path: PathBuf,
        /// How long crew waited.
        waited: std::time::Duration,
    },
    /// A JSON file is torn or not what the store wrote.
    #[error("{path} is not a valid team file ({source}); fix or remove it")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A complete inbox line is not a message (only the last, torn line is ever skipped).
    #[error("{path} line {line}: {reason}; fix or remove the line")]
    CorruptLine {
        /// The inbox file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A todo id that does not exist.
    #[error("{field}: there is no item with id {id} (see todo_list)")]
    UnknownTodo {
        /// The argument that named it (`id`, `blocked_by`, `add_blocked_by`).
        field: &'static str,
        /// The unknown id.
        id: String,
    },
    /// A claim or completion refused because unfinished items block it.
    #[error("item {id} is blocked by {}; finish those first", list(.blockers))]
    Blocked {
        /// The refused item.
        id: TodoId,
        /// The pending / in-progress items it waits for.
        blockers: Vec<TodoId>,
    },
    /// Somebody else already holds the item.
    #[error("item {id} is already in progress, owned by {owner}")]
    AlreadyClaimed {
        /// The item.
        id: TodoId,
        /// Its current owner.
        owner: String,
    },
    /// Only the owner (or the lead) may change an item somebody holds.
    #[error("item {id} is owned by {owner}; only {owner} or the lead may change it")]
    NotOwner {
        /// The item.
        id: TodoId,
        /// Its current owner.
        owner: String,
    },
    /// A teammate tried to claim an item assigned to somebody else.
    #[error(
        "item {id} is assigned to {owner}: only the lead or the current owner ({owner}) may change the owner of item {id}, so {by} cannot claim it"
    )]
    Assigned {
        /// The item.
        id: TodoId,
        /// Its current owner.
        owner: String,
        /// Who tried to claim it.
        by: String,
    },
    /// A teammate tried to give an item nobody owns to somebody else.
    #[error(
        "only the lead or the current owner may change the owner of item {id}; it has none, so {by} may claim it for itself but not assign it to {to}"
    )]
    OwnerChange {
        /// The item.
        id: TodoId,
        /// Who tried.
        by: String,
        /// The owner it named.
        to: String,
    },
    /// A status change the work list does not allow.
    #[error("item {id}: status cannot go from {from} to {to}")]
    InvalidTransition {
        /// The item.
        id: TodoId,
        /// Its current status.
        from: TodoStatus,
        /// The requested status.
        to: TodoStatus,
    },
    /// A field that cannot change on an item in this status.
    #[error("item {id}: {field} cannot change once the item is {status}")]
    Frozen {
        /// The item.
        id: TodoId,
        /// The field the update tried to change.
        field: &'static str,
        /// The item's (terminal) status.
        status: TodoStatus,
    },
    /// `blocked_by` would make items wait for each other in a circle.
    #[error("add_blocked_by of item {id}: {} would form a cycle", list(.cycle))]
    Cycle {
        /// The item being changed.
        id: TodoId,
        /// The cycle, starting and ending at `id`.
        cycle: Vec<TodoId>,
    },
    /// A name that is not in the team.
    #[error("{field}: team {team} has no member named {name} (see `crew team show`)")]
    UnknownMember {
        /// The argument that named it (`to`, `from`, `name`).
        field: &'static str,
        /// The team.
        team: String,
        /// The unknown name.
        name: String,
    },
    /// A member with this name already exists.
    #[error("team {team} already has a member named {name}; pick another name")]
    DuplicateMember {
        /// The team.
        team: String,
        /// The taken name.
        name: String,
    },
    /// An acknowledgement past the end of the inbox.
    #[error("{path}: cannot mark {through} messages delivered, the inbox holds {available}")]
    AckBeyondEnd {
        /// The inbox file.
        path: PathBuf,
        /// The requested delivered count.
        through: u64,
        /// How many complete messages the inbox holds.
        available: u64,
    },
    /// A teammate that is not running (stopped, finished, or never started) was asked to
    /// stop.
    #[error("{name} is not a running teammate")]
    NotRunning {
        /// The teammate.
        name: super::MemberName,
    },
    /// A teammate's actor could not be started.
    #[error("could not start teammate: {message}")]
    StartFailed {
        /// What the actor system said.
        message: String,
    },
    /// A storage call on the blocking pool ended without an answer (it panicked).
    #[error("the team store call failed: {message}")]
    StoreCall {
        /// What the runtime said.
        message: String,
    },
}

/// Shorthand for results of the team store.
pub type Result<T, E = TeamError> = std::result::Result<T, E>;

fn list(ids: &[TodoId]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Attaches a path to an I/O error.
pub(crate) fn io_at(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> TeamError + '_ {
    move |source| TeamError::Io {
        path: path.to_path_buf(),
        source,
    }
}
