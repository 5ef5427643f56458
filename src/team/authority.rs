//! Who may change an item on the team's work list: the lead may change anything; a
//! teammate only an item it owns or nobody owns. Only the lead, or the item's current
//! owner, changes the owner: a teammate cannot claim an item assigned to someone else, nor
//! give an unowned item to another. Each refusal is a [`TeamError`] that names the rule.

use super::MemberName;
use super::error::{Result, TeamError};
use super::item::{TodoItem, TodoStatus, TodoUpdate};

/// Who may make `update` to `item`: only the lead, or the item's current owner, changes its
/// owner; a teammate changes nothing on an item somebody else owns (claiming included) and
/// may take an unowned item only for itself. The lead may reassign anything, but claiming
/// an item another holds in progress still needs an explicit `owner`.
pub(super) fn authorize(item: &TodoItem, by: &MemberName, update: &TodoUpdate) -> Result<()> {
    let claiming = update.status == Some(TodoStatus::InProgress);
    let holder = item.owner.as_ref().filter(|o| *o != by);
    if by.is_lead() {
        if let Some(holder) = holder
            && item.status == TodoStatus::InProgress
            && claiming
            && update.owner.is_none()
        {
            return Err(TeamError::AlreadyClaimed {
                id: item.id,
                owner: holder.to_string(),
            });
        }
        return Ok(());
    }
    if let Some(holder) = holder {
        return Err(match (claiming, item.status) {
            (true, TodoStatus::InProgress) => TeamError::AlreadyClaimed {
                id: item.id,
                owner: holder.to_string(),
            },
            (true, _) => TeamError::Assigned {
                id: item.id,
                owner: holder.to_string(),
                by: by.to_string(),
            },
            _ => TeamError::NotOwner {
                id: item.id,
                owner: holder.to_string(),
            },
        });
    }
    match &update.owner {
        Some(to) if to != by && item.owner.is_none() => Err(TeamError::OwnerChange {
            id: item.id,
            by: by.to_string(),
            to: to.to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::team::todos::NewTodo;
    use crate::team::{MemberName, Team, TeamError, TodoId, TodoStatus, TodoUpdate};

    use crate::team::test_team::{name, team};

    fn add(team: &Team, subject: &str) -> TodoId {
        let new = NewTodo {
            subject: subject.into(),
            ..NewTodo::default()
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
    fn only_the_lead_or_the_current_owner_changes_the_owner() {
        let (_root, team) = team();
        let id = add(&team, "a");
        let assign = |to: &str| TodoUpdate {
            owner: Some(name(to)),
            ..TodoUpdate::default()
        };
        // The lead assigns item 1 to bob (still pending).
        team.update_todo(&MemberName::lead(), id, assign("bob"))
            .unwrap();
        // alice cannot claim it, reassign it, or change it otherwise.
        let err = team
            .update_todo(&name("alice"), id, set(TodoStatus::InProgress))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "item 1 is assigned to bob: only the lead or the current owner (bob) may change the owner of item 1, so alice cannot claim it"
        );
        for update in [assign("alice"), assign("bob"), set(TodoStatus::Completed)] {
            let err = team.update_todo(&name("alice"), id, update).unwrap_err();
            assert!(matches!(err, TeamError::NotOwner { .. }), "{err}");
            assert!(err.to_string().contains("only bob or the lead"), "{err}");
        }
        assert_eq!(team.get_todo(id).unwrap().owner, Some(name("bob")));
        assert_eq!(team.get_todo(id).unwrap().status, TodoStatus::Pending);
        // An unowned item: a teammate may take it for itself, not give it to another.
        let free = add(&team, "b");
        let err = team
            .update_todo(&name("alice"), free, assign("bob"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "only the lead or the current owner may change the owner of item 2; it has none, so alice may claim it for itself but not assign it to bob"
        );
        assert_eq!(team.get_todo(free).unwrap().owner, None);
        team.update_todo(&name("alice"), free, assign("alice"))
            .unwrap();
        // The current owner may hand it on; bob then owns it.
        let item = team
            .update_todo(&name("alice"), free, assign("bob"))
            .unwrap();
        assert_eq!(item.owner, Some(name("bob")));
        // bob may claim what was assigned to him; the lead may reassign it.
        team.update_todo(&name("bob"), id, set(TodoStatus::InProgress))
            .unwrap();
        let item = team
            .update_todo(&MemberName::lead(), id, assign("alice"))
            .unwrap();
        assert_eq!(item.owner, Some(name("alice")));
    }
}
