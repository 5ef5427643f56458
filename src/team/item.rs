//! The work-list item types: ids, statuses, the stored item and the arguments of
//! `todo_add` / `todo_update`. Plain data; the rules live in `todos.rs`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::MemberName;
use super::error::{Result, TeamError};

/// A work-list item's id: a positive number, written as a string ("1", "2", …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TodoId(pub(crate) u64);

impl TodoId {
    /// Parses an id given in argument `field` ("3"; surrounding spaces and a leading `#` allowed).
    pub fn parse(field: &'static str, text: &str) -> Result<Self> {
        let digits = text.trim().trim_start_matches('#');
        match digits.parse::<u64>() {
            Ok(n) if n > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(Self(n)),
            _ => Err(TeamError::UnknownTodo {
                field,
                id: text.to_string(),
            }),
        }
    }

    /// The id as a number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TodoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for TodoId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TodoId {
    /// Accepts "3" and, because models write it, the number 3.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Number(u64),
        }
        match Repr::deserialize(d)? {
            Repr::Text(t) => TodoId::parse("id", &t).map_err(serde::de::Error::custom),
            Repr::Number(0) => Err(serde::de::Error::custom("todo ids start at 1")),
            Repr::Number(n) => Ok(TodoId(n)),
        }
    }
}

/// Where an item is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Waiting for somebody to claim it.
    Pending,
    /// Claimed by its owner.
    InProgress,
    /// Done (terminal; unblocks its dependents).
    Completed,
    /// Dropped (terminal; kept on disk so ids are never reused; unblocks its dependents).
    Deleted,
}

impl TodoStatus {
    /// Whether the item is still open work (and so blocks its dependents).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::InProgress)
    }
}

impl fmt::Display for TodoStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Deleted => "deleted",
        })
    }
}

/// One item of the work list, as stored in `todos/<id>.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Its id.
    pub id: TodoId,
    /// One line saying what to do.
    pub subject: String,
    /// Details, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where it is in its life.
    pub status: TodoStatus,
    /// Who holds (or held, once completed) it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<MemberName>,
    /// Items that must be completed or deleted before this one can be claimed.
    #[serde(default)]
    pub blocked_by: Vec<TodoId>,
    /// Who added it.
    pub created_by: MemberName,
    /// When it was added (Unix ms).
    pub created_at_ms: u64,
    /// When it last changed (Unix ms).
    pub updated_at_ms: u64,
}

/// The arguments of `todo_add`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct NewTodo {
    /// One line saying what to do.
    pub subject: String,
    /// Details, if any.
    #[serde(default)]
    pub description: Option<String>,
    /// Items that must be finished first.
    #[serde(default)]
    pub blocked_by: Vec<TodoId>,
}

/// The arguments of `todo_update` (besides `id`). Unset fields are left alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct TodoUpdate {
    /// The new status; `in_progress` claims the item.
    #[serde(default)]
    pub status: Option<TodoStatus>,
    /// The new owner; when claiming, the claimer if unset.
    #[serde(default)]
    pub owner: Option<MemberName>,
    /// More items this one must wait for.
    #[serde(default)]
    pub add_blocked_by: Vec<TodoId>,
}
