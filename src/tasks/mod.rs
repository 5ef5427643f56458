//! Background tasks: what a task is (a background subagent or command), its status and
//! record, and how the records are persisted so `crew tasks …` can read them from
//! another terminal. The `TaskManager` actor (`actor.rs`) owns the live state.

pub mod actor;
pub(crate) mod front_actor;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::protocol::Usage;

/// What runs in a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A subagent.
    Agent,
    /// A shell command.
    Command,
}

/// A task's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for a slot.
    Pending,
    /// Running.
    Running,
    /// Finished successfully.
    Completed,
    /// Finished with an error (or crashed).
    Failed,
    /// Stopped by a user or the lead.
    Cancelled,
    /// A subagent hit its turn limit.
    MaxTurns,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskStatus::Pending | TaskStatus::Running)
    }

    /// The status name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::MaxTurns => "max_turns",
        }
    }
}

/// Everything known about a task; persisted as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Short unique id (`t1a2b3c`).
    pub id: String,
    /// Agent or command.
    pub kind: TaskKind,
    /// What it is for, in a few words.
    pub description: String,
    /// Its state.
    pub status: TaskStatus,
    /// The agent that started it.
    pub owner: String,
    /// The subagent type, for agent tasks.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// The command, for command tasks.
    #[serde(default)]
    pub command: Option<String>,
    /// Unix milliseconds when it was created.
    pub created_ms: u64,
    /// Unix milliseconds when it started running.
    #[serde(default)]
    pub started_ms: Option<u64>,
    /// Unix milliseconds when it ended.
    #[serde(default)]
    pub ended_ms: Option<u64>,
    /// Tool calls made so far (agents).
    #[serde(default)]
    pub tool_calls: u32,
    /// Token usage so far (agents).
    #[serde(default)]
    pub usage: Usage,
    /// The latest thing it did, for monitors.
    #[serde(default)]
    pub last_activity: String,
    /// The output log.
    pub output_file: PathBuf,
    /// The final answer, exit status or failure reason.
    #[serde(default)]
    pub result: Option<String>,
    /// The worktree it works in, if any.
    #[serde(default)]
    pub worktree: Option<PathBuf>,
    /// The process group of a command task (for stopping it from another process).
    #[serde(default)]
    pub pgid: Option<i32>,
    /// The crew process that runs it.
    pub host_pid: u32,
    /// The worker node it runs on (`None`: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A new short task id.
pub fn new_task_id() -> String {
    let u = uuid::Uuid::new_v4().simple().to_string();
    format!("t{}", &u[..7])
}

/// The records file of a session directory.
pub fn records_path(session_dir: &Path) -> PathBuf {
    session_dir.join("tasks.json")
}

/// The log file of a task.
pub fn log_path(session_dir: &Path, id: &str) -> PathBuf {
    session_dir.join("tasks").join(format!("{id}.log"))
}

/// The file whose existence asks the running process to stop a task.
pub fn stop_request_path(session_dir: &Path, id: &str) -> PathBuf {
    session_dir.join("tasks").join(format!("{id}.stop"))
}

/// Why task records could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid task JSON.
    #[error("{path} is not a valid task list (line {line}, column {column}): {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line.
        line: usize,
        /// Column.
        column: usize,
        /// The parser's message.
        message: String,
    },
}

/// Reads a session's task records (an absent file is an empty list).
pub fn load_records(session_dir: &Path) -> Result<Vec<TaskRecord>, RecordsError> {
    let path = records_path(session_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(RecordsError::Read { path, source }),
    };
    serde_json::from_str(&text).map_err(|e| RecordsError::Parse {
        path,
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// Writes a session's task records atomically (a crash leaves the old list or the new
/// one); the `fdatasync` is left to group commit (`store::behind`), so a task's change
/// never waits for the disk.
pub fn save_records(session_dir: &Path, records: &[TaskRecord]) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(records).map_err(std::io::Error::other)?;
    crate::store::behind::write_replace(
        &records_path(session_dir),
        &json,
        crate::store::behind::Flush::Behind,
    )
}

/// Whether a process with this pid is alive.
pub fn process_alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

/// The notice an agent receives when one of its background tasks ends. Everything in it
/// but the id and status comes from the task, so it is escaped (`crate::envelope`).
pub fn notification_text(rec: &TaskRecord) -> String {
    let what = crate::envelope::body(&match (&rec.kind, &rec.agent_type, &rec.command) {
        (TaskKind::Agent, Some(t), _) => format!("subagent `{t}`"),
        (TaskKind::Command, _, Some(c)) => format!("command `{c}`"),
        (TaskKind::Agent, None, _) => "subagent".to_string(),
        (TaskKind::Command, _, None) => "command".to_string(),
    });
    format!(
        "<task-notification>\nBackground task {} ({what}: {}) ended with status {}.\nOutput log: {}\nResult:\n{}\n</task-notification>",
        rec.id,
        crate::envelope::body(&rec.description),
        rec.status.as_str(),
        crate::envelope::body(&rec.output_file.display().to_string()),
        crate::envelope::body(rec.result.as_deref().unwrap_or("(none)"))
    )
}
