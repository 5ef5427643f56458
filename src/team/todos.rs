//! The shared work list: one `todos/<id>.json` per item, ids "1", "2", … per team.
//!
//! Every change happens under `todos.lock` (an exclusive `flock`), so claiming an item is
//! atomic across threads and processes: of two teammates racing to claim one item, exactly
//! one wins and the other is told who holds it. An item is *blocked* while any item in its
//! `blocked_by` is pending or in progress; completing (or deleting) a blocker unblocks it.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::{Result, TeamError, io_at};
pub use super::item::{NewTodo, TodoId, TodoItem, TodoStatus, TodoUpdate};
use super::{MemberName, Team, lock, now_ms};

/// The ids in `item.blocked_by` that are still open work, in the order listed. Ids missing
/// from `items` count as open: a lost blocker must not silently unblock work.
pub fn open_blockers(items: &BTreeMap<TodoId, TodoItem>, item: &TodoItem) -> Vec<TodoId> {
    item.blocked_by
        .iter()
        .copied()
        .filter(|b| items.get(b).is_none_or(|i| i.status.is_open()))
        .collect()
}

/// The open items nothing blocks any more: work a run that ends leaves undone (a pending
/// item anyone could have claimed, or one its holder did not finish), in id order.
pub(crate) fn unfinished(items: &BTreeMap<TodoId, TodoItem>) -> Vec<&TodoItem> {
    items
        .values()
        .filter(|i| i.status.is_open() && open_blockers(items, i).is_empty())
        .collect()
}

impl Team {
    /// Adds an item on behalf of `by`; returns it with its new id.
    pub fn add_todo(&self, by: &MemberName, new: NewTodo) -> Result<TodoItem> {
        let subject = new.subject.trim();
        if subject.is_empty() {
            return Err(TeamError::Empty { field: "subject" });
        }
        let _locked = self.lock_todos()?;
        let items = self.load_todos()?;
        let mut blocked_by = Vec::new();
        for b in new.blocked_by {
            if !items.contains_key(&b) {
                return Err(unknown("blocked_by", b));
            }
            if !blocked_by.contains(&b) {
                blocked_by.push(b);
            }
        }
        let id = TodoId(items.keys().next_back().map_or(1, |last| last.0 + 1));
        let now = now_ms();
        let item = TodoItem {
            id,
            subject: subject.to_string(),
            description: new.description.filter(|d| !d.trim().is_empty()),
            status: TodoStatus::Pending,
            owner: None,
            blocked_by,
            created_by: by.clone(),
            created_at_ms: now,
            updated_at_ms: now,
        };
        self.save_todo(&item)?;
        Ok(item)
    }

    /// Changes item `id` on behalf of `by` (the lead may change anyone's item); returns it as
    /// saved. Refused, with nothing written: a teammate changing an item somebody else owns
    /// (claiming one assigned to another included) or giving an unowned one away (see
    /// `authority`), claiming a blocked item (naming its blockers), unknown ids, cycles in
    /// `blocked_by`, invalid transitions.
    pub fn update_todo(&self, by: &MemberName, id: TodoId, update: TodoUpdate) -> Result<TodoItem> {
        let _locked = self.lock_todos()?;
        let items = self.load_todos()?;
        let mut item = items.get(&id).cloned().ok_or_else(|| unknown("id", id))?;
        super::authority::authorize(&item, by, &update)?;

        if !update.add_blocked_by.is_empty() {
            if !item.status.is_open() {
                return Err(frozen(&item, "add_blocked_by"));
            }
            for b in &update.add_blocked_by {
                if !items.contains_key(b) {
                    return Err(unknown("add_blocked_by", *b));
                }
                if let Some(cycle) = path_between(&items, *b, id) {
                    return Err(TeamError::Cycle {
                        id,
                        cycle: std::iter::once(id).chain(cycle).collect(),
                    });
                }
                if !item.blocked_by.contains(b) {
                    item.blocked_by.push(*b);
                }
            }
        }

        if let Some(owner) = &update.owner {
            if !item.status.is_open() {
                return Err(frozen(&item, "owner"));
            }
            if !self.roster()?.has_address(owner) {
                return Err(TeamError::UnknownMember {
                    field: "owner",
                    team: self.name.clone(),
                    name: owner.to_string(),
                });
            }
            item.owner = Some(owner.clone());
        }

        if let Some(to) = update.status {
            apply_status(&items, &mut item, by, to, update.owner.is_some())?;
        }
        item.updated_at_ms = now_ms();
        self.save_todo(&item)?;
        Ok(item)
    }

    /// One item.
    pub fn get_todo(&self, id: TodoId) -> Result<TodoItem> {
        let path = self.todo_path(id);
        match std::fs::read(&path) {
            Ok(bytes) => parse_item(&path, &bytes, id),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(unknown("id", id)),
            Err(e) => Err(io_at(&path)(e)),
        }
    }

    /// Every item (deleted ones included), by id.
    pub fn list_todos(&self) -> Result<BTreeMap<TodoId, TodoItem>> {
        self.load_todos()
    }

    /// Returns the `in_progress` items of a crashed or stopped teammate to `pending` with no
    /// owner; returns their ids.
    pub fn release_owner(&self, name: &MemberName) -> Result<Vec<TodoId>> {
        let _locked = self.lock_todos()?;
        let mut released = Vec::new();
        for mut item in self.load_todos()?.into_values() {
            if item.status == TodoStatus::InProgress && item.owner.as_ref() == Some(name) {
                item.status = TodoStatus::Pending;
                item.owner = None;
                item.updated_at_ms = now_ms();
                self.save_todo(&item)?;
                released.push(item.id);
            }
        }
        Ok(released)
    }

    fn lock_todos(&self) -> Result<lock::Locked> {
        lock::exclusive(&self.dir.join("todos.lock"))
    }

    /// Reads every `<n>.json` in `todos/` (temp files of interrupted writes are ignored).
    fn load_todos(&self) -> Result<BTreeMap<TodoId, TodoItem>> {
        let dir = self.todo_dir();
        let mut items = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).map_err(io_at(&dir))? {
            let path = entry.map_err(io_at(&dir))?.path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            let Ok(id) = TodoId::parse("id", stem) else {
                continue;
            };
            let bytes = std::fs::read(&path).map_err(io_at(&path))?;
            items.insert(id, parse_item(&path, &bytes, id)?);
        }
        Ok(items)
    }

    fn save_todo(&self, item: &TodoItem) -> Result<()> {
        let path = self.todo_path(item.id);
        let bytes = serde_json::to_vec_pretty(item).map_err(|source| TeamError::Corrupt {
            path: path.clone(),
            source,
        })?;
        crate::store::write_atomic(&path, &bytes).map_err(io_at(&path))
    }
}

/// The status machine: pending → in_progress | completed | deleted; in_progress → pending
/// (released, owner cleared) | completed | deleted; completed → deleted. Claiming or
/// completing needs every blocker finished.
fn apply_status(
    items: &BTreeMap<TodoId, TodoItem>,
    item: &mut TodoItem,
    by: &MemberName,
    to: TodoStatus,
    owner_given: bool,
) -> Result<()> {
    use TodoStatus::*;
    let from = item.status;
    match (from, to) {
        _ if from == to => {}
        (Pending, InProgress | Completed) => {
            let blockers = open_blockers(items, item);
            if !blockers.is_empty() {
                return Err(TeamError::Blocked {
                    id: item.id,
                    blockers,
                });
            }
            if !owner_given && (to == InProgress || item.owner.is_none()) {
                item.owner = Some(by.clone());
            }
        }
        (InProgress, Pending) => {
            if !owner_given {
                item.owner = None;
            }
        }
        (Pending | InProgress, Deleted) | (InProgress, Completed) | (Completed, Deleted) => {}
        _ => {
            return Err(TeamError::InvalidTransition {
                id: item.id,
                from,
                to,
            });
        }
    }
    item.status = to;
    Ok(())
}

/// The chain `from → … → to` along `blocked_by` edges, excluding `from`, if there is one.
fn path_between(
    items: &BTreeMap<TodoId, TodoItem>,
    from: TodoId,
    to: TodoId,
) -> Option<Vec<TodoId>> {
    let mut stack = vec![(from, vec![from])];
    let mut seen = std::collections::BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        if at == to {
            return Some(path);
        }
        if !seen.insert(at) {
            continue;
        }
        for next in items
            .get(&at)
            .map(|i| i.blocked_by.as_slice())
            .unwrap_or_default()
        {
            let mut longer = path.clone();
            longer.push(*next);
            stack.push((*next, longer));
        }
    }
    None
}

fn parse_item(path: &Path, bytes: &[u8], id: TodoId) -> Result<TodoItem> {
    let corrupt = |source| TeamError::Corrupt {
        path: path.to_path_buf(),
        source,
    };
    let item: TodoItem = serde_json::from_slice(bytes).map_err(corrupt)?;
    if item.id != id {
        return Err(corrupt(serde::de::Error::custom(format!(
            "holds item {} but is named for item {id}",
            item.id
        ))));
    }
    Ok(item)
}

fn unknown(field: &'static str, id: TodoId) -> TeamError {
    TeamError::UnknownTodo {
        field,
        id: id.to_string(),
    }
}

fn frozen(item: &TodoItem, field: &'static str) -> TeamError {
    TeamError::Frozen {
        id: item.id,
        field,
        status: item.status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::TeamError;

    use crate::team::test_team::{name, team};

    fn add(team: &Team, subject: &str, blocked_by: &[u64]) -> TodoId {
        let new = NewTodo {
            subject: subject.into(),
            description: None,
            blocked_by: blocked_by.iter().map(|&n| TodoId(n)).collect(),
        };
        team.add_todo(&MemberName::lead(), new).unwrap().id
    }

    fn set(status: TodoStatus) -> TodoUpdate {
        TodoUpdate {
            status: Some(status),
            ..TodoUpdate::default()
        }
    }

    #[test]
    fn unfinished_work_is_the_open_items_nothing_blocks() {
        let (_root, team) = team();
        let a = add(&team, "a", &[]);
        add(&team, "b", &[1]);
        let c = add(&team, "c", &[]);
        team.update_todo(&MemberName::lead(), c, set(TodoStatus::Completed))
            .unwrap();
        let items = team.list_todos().unwrap();
        let ids = |items: &BTreeMap<TodoId, TodoItem>| -> Vec<TodoId> {
            unfinished(items).iter().map(|i| i.id).collect()
        };
        // b waits for a, so only a is left undone; once a is done, b is.
        assert_eq!(ids(&items), [a]);
        team.update_todo(&MemberName::lead(), a, set(TodoStatus::Completed))
            .unwrap();
        assert_eq!(ids(&team.list_todos().unwrap()), [TodoId(2)]);
    }

    #[test]
    fn ids_count_up_and_survive_deletion() {
        let (_root, team) = team();
        assert_eq!(add(&team, "a", &[]), TodoId(1));
        assert_eq!(add(&team, "b", &[1]), TodoId(2));
        team.update_todo(&MemberName::lead(), TodoId(2), set(TodoStatus::Deleted))
            .unwrap();
        assert_eq!(add(&team, "c", &[]), TodoId(3));
        let err = team
            .add_todo(
                &MemberName::lead(),
                NewTodo {
                    subject: "d".into(),
                    blocked_by: vec![TodoId(9)],
                    ..NewTodo::default()
                },
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "blocked_by: there is no item with id 9 (see todo_list)"
        );
        assert!(matches!(
            team.add_todo(&MemberName::lead(), NewTodo::default()),
            Err(TeamError::Empty { field: "subject" })
        ));
    }

    #[test]
    fn claim_release_and_ownership() {
        let (_root, team) = team();
        let id = add(&team, "a", &[]);
        let item = team
            .update_todo(&name("alice"), id, set(TodoStatus::InProgress))
            .unwrap();
        assert_eq!(item.owner, Some(name("alice")));
        let err = team
            .update_todo(&name("bob"), id, set(TodoStatus::InProgress))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "item 1 is already in progress, owned by alice"
        );
        let err = team
            .update_todo(&name("bob"), id, set(TodoStatus::Completed))
            .unwrap_err();
        assert!(matches!(err, TeamError::NotOwner { .. }), "{err}");
        // Releasing clears the owner; then bob may claim it.
        team.update_todo(&name("alice"), id, set(TodoStatus::Pending))
            .unwrap();
        assert_eq!(team.get_todo(id).unwrap().owner, None);
        team.update_todo(&name("bob"), id, set(TodoStatus::InProgress))
            .unwrap();
        // The lead may reassign explicitly.
        let item = team
            .update_todo(
                &MemberName::lead(),
                id,
                TodoUpdate {
                    owner: Some(name("alice")),
                    ..TodoUpdate::default()
                },
            )
            .unwrap();
        assert_eq!(item.owner, Some(name("alice")));
        let err = team
            .update_todo(
                &MemberName::lead(),
                id,
                TodoUpdate {
                    owner: Some(name("carol")),
                    ..TodoUpdate::default()
                },
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("owner: team t has no member named carol"),
            "{err}"
        );
    }

    #[test]
    fn terminal_states_refuse_changes() {
        let (_root, team) = team();
        let id = add(&team, "a", &[]);
        team.update_todo(&name("alice"), id, set(TodoStatus::Completed))
            .unwrap();
        let err = team
            .update_todo(&name("alice"), id, set(TodoStatus::InProgress))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "item 1: status cannot go from completed to in_progress"
        );
        let other = add(&team, "b", &[]);
        let err = team
            .update_todo(
                &name("alice"),
                id,
                TodoUpdate {
                    add_blocked_by: vec![other],
                    ..TodoUpdate::default()
                },
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                TeamError::Frozen {
                    field: "add_blocked_by",
                    ..
                }
            ),
            "{err}"
        );
        team.update_todo(&name("alice"), id, set(TodoStatus::Deleted))
            .unwrap();
        assert!(
            team.update_todo(&name("alice"), id, set(TodoStatus::Pending))
                .is_err()
        );
    }

    #[test]
    fn cycles_and_unknown_ids_are_refused() {
        let (_root, team) = team();
        add(&team, "a", &[]);
        add(&team, "b", &[1]);
        add(&team, "c", &[2]);
        let lead = MemberName::lead();
        let blocked_by = |ids: &[u64]| TodoUpdate {
            add_blocked_by: ids.iter().map(|&n| TodoId(n)).collect(),
            ..TodoUpdate::default()
        };
        let err = team
            .update_todo(&lead, TodoId(1), blocked_by(&[3]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "add_blocked_by of item 1: #1, #3, #2, #1 would form a cycle"
        );
        assert!(matches!(
            team.update_todo(&lead, TodoId(1), blocked_by(&[1])),
            Err(TeamError::Cycle { .. })
        ));
        let err = team
            .update_todo(&lead, TodoId(1), blocked_by(&[7]))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("add_blocked_by: there is no item with id 7")
        );
        let err = team
            .update_todo(&lead, TodoId(8), set(TodoStatus::Completed))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("id: there is no item with id 8")
        );
        // Nothing was written by the refused updates.
        assert!(team.get_todo(TodoId(1)).unwrap().blocked_by.is_empty());
    }

    #[test]
    fn ids_parse_from_text_and_numbers() {
        assert_eq!(TodoId::parse("id", " #12 ").unwrap(), TodoId(12));
        for bad in ["0", "-1", "x", "+3", ""] {
            assert!(TodoId::parse("id", bad).is_err(), "{bad:?}");
        }
        let up: TodoUpdate = serde_json::from_str(r#"{"add_blocked_by": [1, "2"]}"#).unwrap();
        assert_eq!(up.add_blocked_by, vec![TodoId(1), TodoId(2)]);
        assert_eq!(serde_json::to_string(&TodoId(4)).unwrap(), "\"4\"");
    }

    #[test]
    fn garbage_item_files_are_reported_with_their_path() {
        let (_root, team) = team();
        add(&team, "a", &[]);
        std::fs::write(team.todo_path(TodoId(1)), b"{\"id\": \"1\", \"sub").unwrap();
        let err = team.list_todos().unwrap_err().to_string();
        assert!(
            err.contains("todos/1.json") && err.contains("fix or remove"),
            "{err}"
        );
        assert!(team.get_todo(TodoId(1)).is_err());
        assert!(
            team.add_todo(
                &MemberName::lead(),
                NewTodo {
                    subject: "b".into(),
                    ..NewTodo::default()
                }
            )
            .is_err()
        );
        // An item file holding another id is refused too.
        let two = serde_json::to_vec(&TodoItem {
            id: TodoId(2),
            subject: "x".into(),
            description: None,
            status: TodoStatus::Pending,
            owner: None,
            blocked_by: vec![],
            created_by: MemberName::lead(),
            created_at_ms: 0,
            updated_at_ms: 0,
        })
        .unwrap();
        std::fs::write(team.todo_path(TodoId(1)), two).unwrap();
        let err = team.get_todo(TodoId(1)).unwrap_err().to_string();
        assert!(err.contains("named for item 1"), "{err}");
    }
}
