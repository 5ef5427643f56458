//! The lead's tools for background tasks: `task_list`, `task_output`, `task_stop`.
//! Control-plane (System) tools: they pass an agent's name filter, never the safety one.

use std::time::Duration;

use async_trait::async_trait;
use ractor::rpc::CallResult;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, TargetSpec};
use crate::tasks::actor::TaskMsg;
use crate::tasks::{TaskRecord, now_ms};

/// How much of a task's log `task_output` returns (the end of it).
const OUTPUT_TAIL_BYTES: u64 = 8 * 1024;
/// The longest `task_output` waits when asked to.
const MAX_WAIT: Duration = Duration::from_secs(600);

/// A task tool's definition. Its permission category follows its safety: a read-only
/// tool reads the session's tasks, a side-effecting one (`task_stop`) controls them.
fn def(name: &str, description: &str, input_schema: Value, safety: Safety) -> Definition {
    let category = match safety {
        Safety::ReadOnly => Category::Read,
        Safety::SideEffect => Category::Control,
    };
    Definition {
        name: name.into(),
        aliases: Vec::new(),
        description: description.into(),
        input_schema,
        safety,
        system: true,
        timeout: Some(MAX_WAIT + Duration::from_secs(30)),
        permission: Some(PermissionSpec::new(category, [], TargetSpec::None)),
    }
}

fn manager(ctx: &ToolContext) -> Result<&ractor::ActorRef<TaskMsg>, ToolError> {
    ctx.tasks.as_ref().ok_or_else(|| {
        ToolError::Failed("background tasks are not available in this session".into())
    })
}

async fn ask<T: Send + 'static>(
    ctx: &ToolContext,
    build: impl FnOnce(ractor::RpcReplyPort<T>) -> TaskMsg,
    timeout: Duration,
) -> Result<T, ToolError> {
    match manager(ctx)?.call(build, Some(timeout)).await {
        Ok(CallResult::Success(v)) => Ok(v),
        _ => Err(ToolError::Failed("the task manager did not answer".into())),
    }
}

/// One line describing a task.
pub(crate) fn describe(rec: &TaskRecord) -> String {
    let end = rec.ended_ms.unwrap_or_else(now_ms);
    let elapsed = rec
        .started_ms
        .map(|s| end.saturating_sub(s) / 1000)
        .unwrap_or(0);
    format!(
        "{}  {:<9} {:<7} {:>4}s  {:>3} calls  {:>7} tok  {}{}  — {}",
        rec.id,
        rec.status.as_str(),
        match rec.kind {
            crate::tasks::TaskKind::Agent => "agent",
            crate::tasks::TaskKind::Command => "command",
        },
        elapsed,
        rec.tool_calls,
        rec.usage.input_tokens + rec.usage.output_tokens,
        rec.description,
        rec.node
            .as_ref()
            .map(|n| format!("  [on {n}]"))
            .unwrap_or_default(),
        rec.last_activity
    )
}

/// `task_list`.
pub(crate) struct TaskList(Definition);

impl TaskList {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "task_list",
            "List background tasks (subagents and commands) with status, elapsed time, tool calls, tokens and last activity.",
            schema::object(&[], &[]),
            Safety::ReadOnly,
        ))
    }
}

impl Default for TaskList {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TaskList {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, _input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let records = ask(&ctx, TaskMsg::List, Duration::from_secs(10)).await?;
        if records.is_empty() {
            return Ok("No background tasks.".into());
        }
        Ok(records.iter().map(describe).collect::<Vec<_>>().join("\n"))
    }
}

/// `task_output`.
pub(crate) struct TaskOutput(Definition);

impl TaskOutput {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "task_output",
            "Show a background task's status, the end of its output log, and its result once it has ended. With wait=true, wait (up to timeout_ms, default 120000) for it to end first.",
            schema::object(
                &[
                    ("task_id", json!({"type": "string"})),
                    ("wait", json!({"type": "boolean"})),
                    (
                        "timeout_ms",
                        json!({"type": "integer", "minimum": 1, "maximum": 600000}),
                    ),
                ],
                &["task_id"],
            ),
            Safety::ReadOnly,
        ))
    }
}

impl Default for TaskOutput {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TaskOutput {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let id: String = required(&input, "task_id")?;
        let wait = field::<bool>(&input, "wait")?.unwrap_or(false);
        let timeout = Duration::from_millis(field::<u64>(&input, "timeout_ms")?.unwrap_or(120_000))
            .min(MAX_WAIT);
        let rec = if wait {
            let waited = tokio::select! {
                r = ask(&ctx, |r| TaskMsg::Wait(id.clone(), r), timeout) => r.ok().flatten(),
                _ = ctx.cancel.cancelled() => None,
            };
            match waited {
                Some(rec) => Some(rec),
                None => {
                    ask(
                        &ctx,
                        |r| TaskMsg::Get(id.clone(), r),
                        Duration::from_secs(10),
                    )
                    .await?
                }
            }
        } else {
            ask(
                &ctx,
                |r| TaskMsg::Get(id.clone(), r),
                Duration::from_secs(10),
            )
            .await?
        };
        let rec = rec.ok_or_else(|| {
            ToolError::InvalidInput(format!("no task with id `{id}`; task_list shows the ids"))
        })?;
        let log = tail(&rec.output_file, OUTPUT_TAIL_BYTES);
        let mut out = format!(
            "{}\n\nOutput log ({}):\n{log}",
            describe(&rec),
            rec.output_file.display()
        );
        if let Some(result) = &rec.result {
            out.push_str(&format!("\n\nResult:\n{result}"));
        }
        Ok(out)
    }
}

/// The last `max` bytes of a file (from a line start), or a note if it cannot be read.
fn tail(path: &std::path::Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return "(no output yet)".into();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start))
        .and_then(|_| f.read_to_end(&mut buf))
        .is_err()
    {
        return "(the log could not be read)".into();
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    if start > 0 {
        let from_line = text.find('\n').map(|i| i + 1).unwrap_or(0);
        format!("[… {start} earlier bytes …]\n{}", &text[from_line..])
    } else {
        text
    }
}

/// `task_stop`.
pub(crate) struct TaskStop(Definition);

impl TaskStop {
    /// The tool.
    pub(crate) fn new() -> Self {
        Self(def(
            "task_stop",
            "Stop a background task: cancels a subagent's work or kills a command's whole process group.",
            schema::object(&[("task_id", json!({"type": "string"}))], &["task_id"]),
            Safety::SideEffect,
        ))
    }
}

impl Default for TaskStop {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for TaskStop {
    fn definition(&self) -> &Definition {
        &self.0
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let id: String = required(&input, "task_id")?;
        let rec = ask(
            &ctx,
            |r| TaskMsg::Stop(id.clone(), r),
            Duration::from_secs(60),
        )
        .await?
        .map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        Ok(format!("Task {} is {}.", rec.id, rec.status.as_str()))
    }
}
