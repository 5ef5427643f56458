//! The team's shared work list as tools: `todo_add`, `todo_update`, `todo_get`, `todo_list`
//! (Claude Code's `TaskCreate`, `TaskUpdate`, `TaskGet`, `TaskList` are aliases; our
//! background-task tools keep their `task_*` names).
//!
//! They act only on the caller's own team, through [`ToolContext::team`]: no files, no
//! processes. So, like the task tools, reads are `Read` and changes are task `Control` for the
//! permission engine, and they are control-plane (System) tools every agent sees. An agent
//! outside a team is told so. The rules (blockers, atomic claims, who may change what) live in
//! the storage core, `crate::team::todos`.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, field, schema};
use crate::permission::{Category, PermissionSpec, TargetSpec};
use crate::team::{
    MemberName, NewTodo, TeamError, TeamHandle, TodoId, TodoItem, TodoStatus, TodoUpdate,
    open_blockers,
};

/// The four work-list tools, in the order the model sees them.
pub(crate) fn todo_tools() -> Vec<std::sync::Arc<dyn Tool>> {
    vec![
        std::sync::Arc::new(TodoAdd::new()),
        std::sync::Arc::new(TodoUpdateTool::new()),
        std::sync::Arc::new(TodoGet::new()),
        std::sync::Arc::new(TodoList::new()),
    ]
}

fn def(
    name: &str,
    alias: &str,
    description: &str,
    input_schema: Value,
    safety: Safety,
) -> Definition {
    let category = match safety {
        Safety::ReadOnly => Category::Read,
        Safety::SideEffect => Category::Control,
    };
    Definition {
        name: name.into(),
        aliases: vec![alias.into()],
        description: description.into(),
        input_schema,
        safety,
        system: true,
        timeout: None,
        permission: Some(PermissionSpec::new(category, [], TargetSpec::None)),
    }
}

fn id_schema() -> Value {
    json!({"type": ["string", "integer"], "description": "An item id: \"1\", \"2\", …"})
}

fn team(ctx: &ToolContext) -> Result<&TeamHandle, ToolError> {
    ctx.team.as_ref().ok_or_else(|| {
        ToolError::Failed(
            "this agent is not part of a team, so it has no shared work list; only the lead and its named teammates can use the todo_* tools".into(),
        )
    })
}

fn failed(e: TeamError) -> ToolError {
    match e {
        TeamError::UnknownTodo { .. } | TeamError::Empty { .. } => {
            ToolError::InvalidInput(e.to_string())
        }
        other => ToolError::Failed(other.to_string()),
    }
}

/// Reads an id given as `id` (or Claude Code's `taskId`).
fn id_arg(input: &Value) -> Result<TodoId, ToolError> {
    let raw: Value = field(input, "id")?
        .or(field(input, "taskId")?)
        .ok_or_else(|| ToolError::InvalidInput("missing required argument `id`".into()))?;
    serde_json::from_value(raw).map_err(|e| ToolError::InvalidInput(format!("argument `id`: {e}")))
}

/// A list of ids from `name` (strings or numbers).
fn ids_arg(input: &Value, name: &str) -> Result<Vec<TodoId>, ToolError> {
    Ok(field::<Vec<TodoId>>(input, name)?.unwrap_or_default())
}

fn ids(list: &[TodoId]) -> String {
    list.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line for `todo_list`: `#2 [pending] subject — owner bob — blocked by #1`.
fn line(items: &std::collections::BTreeMap<TodoId, TodoItem>, item: &TodoItem) -> String {
    let mut out = format!("#{} [{}] {}", item.id, item.status, item.subject);
    if let Some(owner) = &item.owner {
        out.push_str(&format!(" — owner {owner}"));
    }
    let open = open_blockers(items, item);
    if item.status.is_open() && !open.is_empty() {
        out.push_str(&format!(" — blocked by {}", ids(&open)));
    }
    out
}

/// `todo_add`.
pub(crate) struct TodoAdd(Definition);

impl TodoAdd {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "todo_add",
            "TaskCreate",
            "Add an item to the team's shared work list; returns its id. Use blocked_by to say which items must be completed first (a blocked item cannot be claimed).",
            schema::object(
                &[
                    ("subject", json!({"type": "string", "minLength": 1})),
                    ("description", json!({"type": "string"})),
                    ("blocked_by", json!({"type": "array", "items": id_schema()})),
                ],
                &["subject"],
            ),
            Safety::SideEffect,
        ))
    }
}

impl Default for TodoAdd {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TodoAdd {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let handle = team(&ctx)?;
        let new = NewTodo {
            subject: field(&input, "subject")?.unwrap_or_default(),
            description: field(&input, "description")?,
            blocked_by: ids_arg(&input, "blocked_by")?,
        };
        let item = handle.add_todo(new).await.map_err(failed)?;
        let mut out = format!("Added item #{}: {}", item.id, item.subject);
        if !item.blocked_by.is_empty() {
            out.push_str(&format!(" (blocked by {})", ids(&item.blocked_by)));
        }
        Ok(out)
    }
}

/// `todo_update`.
pub(crate) struct TodoUpdateTool(Definition);

impl TodoUpdateTool {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "todo_update",
            "TaskUpdate",
            "Change a work-list item. status in_progress claims it for you (refused while it is blocked or somebody else holds it); completed unblocks the items waiting for it; pending releases it; deleted drops it. owner assigns it (the lead may reassign anyone's item). add_blocked_by adds items it must wait for.",
            schema::object(
                &[
                    ("id", id_schema()),
                    ("taskId", id_schema()),
                    (
                        "status",
                        json!({"type": "string", "enum": ["pending", "in_progress", "completed", "deleted"]}),
                    ),
                    ("owner", json!({"type": "string"})),
                    (
                        "add_blocked_by",
                        json!({"type": "array", "items": id_schema()}),
                    ),
                    (
                        "addBlockedBy",
                        json!({"type": "array", "items": id_schema()}),
                    ),
                ],
                &[],
            ),
            Safety::SideEffect,
        ))
    }
}

impl Default for TodoUpdateTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TodoUpdateTool {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let handle = team(&ctx)?;
        let id = id_arg(&input)?;
        let mut add_blocked_by = ids_arg(&input, "add_blocked_by")?;
        add_blocked_by.extend(ids_arg(&input, "addBlockedBy")?);
        let owner = match field::<String>(&input, "owner")? {
            Some(name) => Some(
                MemberName::parse(name.trim())
                    .map_err(|e| ToolError::InvalidInput(format!("argument `owner`: {e}")))?,
            ),
            None => None,
        };
        let update = TodoUpdate {
            status: field(&input, "status")?,
            owner,
            add_blocked_by,
        };
        if update == TodoUpdate::default() {
            return Err(ToolError::InvalidInput(
                "nothing to change: give status, owner or add_blocked_by".into(),
            ));
        }
        let item = handle.update_todo(id, update).await.map_err(failed)?;
        let mut out = format!("Item #{} is {}", item.id, item.status);
        if let Some(owner) = &item.owner {
            out.push_str(&format!(", owner {owner}"));
        }
        out.push('.');
        if item.status == TodoStatus::Completed {
            let items = handle.list_todos().await.map_err(failed)?;
            let freed: Vec<TodoId> = items
                .values()
                .filter(|i| i.status == TodoStatus::Pending && i.blocked_by.contains(&item.id))
                .filter(|i| open_blockers(&items, i).is_empty())
                .map(|i| i.id)
                .collect();
            if !freed.is_empty() {
                out.push_str(&format!(" Now unblocked: {}.", ids(&freed)));
            }
        }
        Ok(out)
    }
}

/// `todo_get`.
pub(crate) struct TodoGet(Definition);

impl TodoGet {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "todo_get",
            "TaskGet",
            "Show one work-list item: subject, description, status, owner and what blocks it.",
            schema::object(&[("id", id_schema()), ("taskId", id_schema())], &[]),
            Safety::ReadOnly,
        ))
    }
}

impl Default for TodoGet {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TodoGet {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let handle = team(&ctx)?;
        let id = id_arg(&input)?;
        let items = handle.list_todos().await.map_err(failed)?;
        let item = items.get(&id).ok_or_else(|| {
            failed(TeamError::UnknownTodo {
                field: "id",
                id: id.to_string(),
            })
        })?;
        let mut out = format!(
            "#{} {}\nstatus: {}\nowner: {}\ncreated by: {}",
            item.id,
            item.subject,
            item.status,
            item.owner.as_ref().map_or("none", |o| o.as_str()),
            item.created_by
        );
        if !item.blocked_by.is_empty() {
            let open = open_blockers(&items, item);
            out.push_str(&format!("\nblocked by: {}", ids(&item.blocked_by)));
            if open.is_empty() {
                out.push_str(" (all finished)");
            } else {
                out.push_str(&format!(" (still open: {})", ids(&open)));
            }
        }
        if let Some(d) = &item.description {
            out.push_str(&format!("\n\n{d}"));
        }
        Ok(out)
    }
}

/// `todo_list`.
pub(crate) struct TodoList(Definition);

impl TodoList {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "todo_list",
            "TaskList",
            "List the team's work list: each item's id, status, subject, owner and open blockers (deleted items are left out).",
            schema::object(&[], &[]),
            Safety::ReadOnly,
        ))
    }
}

impl Default for TodoList {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TodoList {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, _input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let items = team(&ctx)?.list_todos().await.map_err(failed)?;
        let lines: Vec<String> = items
            .values()
            .filter(|i| i.status != TodoStatus::Deleted)
            .map(|i| line(&items, i))
            .collect();
        if lines.is_empty() {
            return Ok("The work list is empty.".into());
        }
        Ok(lines.join("\n"))
    }
}
