//! Delegated work: `delegate {task, agents?, wait?}` starts a crew lead — a full session
//! with its subagents and team, on the serving repository, with the serving side's
//! settings and mode — as a background task of the serving session's task manager. The
//! lead's activity goes to the task's log; `task_status`, `task_output` and `task_stop`
//! read and stop it through the same task manager `crew tasks` uses.

use std::path::PathBuf;
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio_util::sync::CancellationToken;

use super::ServeConfig;
use super::backend::session_options;
use crate::agent::runner::{RunOutcome, RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::permission::PermissionMode;
use crate::session::build::{Options, Prepared};
use crate::tasks::actor::{NewTask, TaskMsg};
use crate::tasks::{TaskKind, TaskRecord, TaskStatus};

/// The owner of delegated tasks in the serving session's task manager.
const OWNER: &str = "mcp";
/// How long a task-manager question may take.
const ASK: Duration = Duration::from_secs(10);
/// The bound on waiting for a delegated lead (a lost reply, not a real limit).
const LONG: Duration = Duration::from_secs(24 * 3600);
/// How long a stopped lead may take to end its run.
const STOP_GRACE: Duration = Duration::from_secs(30);
/// At most this much of a task's log comes back from `task_output`.
const OUTPUT_LIMIT: usize = 64 * 1024;

/// Why a delegation tool call was refused or failed. Its text is the tool's error result,
/// shown to the MCP client.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DelegationError {
    /// `delegate` without a `task` string.
    #[error("`task` is required: a string saying what the crew lead should do")]
    NoTask,
    /// `delegate` with a blank task.
    #[error("`task` is empty: say what the crew lead should do")]
    EmptyTask,
    /// `agents` that is not a list of strings.
    #[error("`agents` must be a list of agent type names")]
    BadAgents,
    /// An agent type this project does not have.
    #[error("`agents`: no agent type `{name}` in this project (known: {})", .known.join(", "))]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The project's agent types.
        known: Vec<String>,
    },
    /// A task call without a `task_id` string.
    #[error("`task_id` is required: the id `delegate` returned")]
    NoTaskId,
    /// The task manager did not answer a request to start a task.
    #[error("the task manager did not answer; nothing was started")]
    NotStarted,
    /// The task manager did not answer a question.
    #[error("the task manager did not answer")]
    NoAnswer,
    /// No task of this server has that id.
    #[error("no delegated task `{0}` on this server")]
    UnknownTask(String),
    /// The wait for a task lost its reply.
    #[error("lost track of task `{0}`")]
    Lost(String),
    /// The task manager refused to stop the task.
    #[error(transparent)]
    Stop(#[from] crate::tasks::actor::StopError),
    /// The task did not stop within the bound.
    #[error("task `{0}` did not stop in time")]
    StopTimeout(String),
}

/// The delegated leads of one server.
pub(crate) struct Delegates {
    tasks: ActorRef<TaskMsg>,
    config: ServeConfig,
    permission: PermissionMode,
    project_root: PathBuf,
}

/// What `delegate` asks for.
#[derive(Debug, Clone)]
pub(crate) struct DelegateRequest {
    /// The task for the lead.
    pub task: String,
    /// Agent types (from this project's catalog) the lead should use.
    pub agents: Vec<String>,
}

impl Delegates {
    /// Delegated leads recorded in `tasks`, run with `config` under `permission`.
    pub(crate) fn new(
        tasks: ActorRef<TaskMsg>,
        config: ServeConfig,
        permission: PermissionMode,
        project_root: PathBuf,
    ) -> Self {
        Self {
            tasks,
            config,
            permission,
            project_root,
        }
    }

    /// Starts a lead on `req` in the background; returns its task record.
    pub(crate) async fn start(&self, req: DelegateRequest) -> Result<TaskRecord, DelegationError> {
        if req.task.trim().is_empty() {
            return Err(DelegationError::EmptyTask);
        }
        let task = self.task_text(&req)?;
        let cancel = CancellationToken::new();
        let new = NewTask {
            kind: TaskKind::Agent,
            description: req.task.chars().take(80).collect(),
            owner: OWNER.into(),
            agent_type: Some("lead".into()),
            command: None,
        };
        let rec = match self
            .tasks
            .call(|r| TaskMsg::Create(new, cancel.clone(), r), Some(ASK))
            .await
        {
            Ok(CallResult::Success(rec)) => rec,
            _ => return Err(DelegationError::NotStarted),
        };
        let run = LeadRun {
            tasks: self.tasks.clone(),
            config: self.config.clone(),
            permission: self.permission,
            id: rec.id.clone(),
            log: rec.output_file.clone(),
        };
        tokio::spawn(run.run(task, cancel));
        Ok(rec)
    }

    /// The record of a delegated task; an id of anything else is unknown.
    pub(crate) async fn get(&self, id: &str) -> Result<TaskRecord, DelegationError> {
        let rec = match self
            .tasks
            .call(|r| TaskMsg::Get(id.to_string(), r), Some(ASK))
            .await
        {
            Ok(CallResult::Success(rec)) => rec,
            _ => return Err(DelegationError::NoAnswer),
        };
        rec.filter(|r| r.owner == OWNER)
            .ok_or_else(|| DelegationError::UnknownTask(id.to_string()))
    }

    /// Waits until the task has ended; its final record.
    pub(crate) async fn wait(&self, id: &str) -> Result<TaskRecord, DelegationError> {
        self.get(id).await?;
        match self
            .tasks
            .call(|r| TaskMsg::Wait(id.to_string(), r), Some(LONG))
            .await
        {
            Ok(CallResult::Success(Some(rec))) => Ok(rec),
            _ => Err(DelegationError::Lost(id.to_string())),
        }
    }

    /// Stops the task (cancelling its lead's run); its final record.
    pub(crate) async fn stop(&self, id: &str) -> Result<TaskRecord, DelegationError> {
        self.get(id).await?;
        match self
            .tasks
            .call(
                |r| TaskMsg::Stop(id.to_string(), r),
                Some(Duration::from_secs(120)),
            )
            .await
        {
            Ok(CallResult::Success(result)) => Ok(result?),
            _ => Err(DelegationError::StopTimeout(id.to_string())),
        }
    }

    /// The task's log (the last [`OUTPUT_LIMIT`] bytes).
    pub(crate) async fn output(&self, rec: &TaskRecord) -> String {
        let text = tokio::fs::read(&rec.output_file).await.unwrap_or_default();
        let start = text.len().saturating_sub(OUTPUT_LIMIT);
        String::from_utf8_lossy(&text[start..]).into_owned()
    }

    /// Stops every delegated lead still running (server shutdown).
    pub(crate) async fn stop_all(&self) {
        let _ = self.tasks.cast(TaskMsg::StopAll);
        for _ in 0..100 {
            match self.tasks.call(TaskMsg::HasActiveAny, Some(ASK)).await {
                Ok(CallResult::Success(true)) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                _ => break,
            }
        }
    }

    /// The lead's task, naming the agent types asked for (each must exist here).
    fn task_text(&self, req: &DelegateRequest) -> Result<String, DelegationError> {
        if req.agents.is_empty() {
            return Ok(req.task.clone());
        }
        let home = crate::store::home_dir();
        let mut catalog = crate::agent::catalog::Catalog::load(&self.project_root, home.as_deref());
        // The installed plugins' agents, as the delegated session has them (no
        // `--plugin-dir` here, so loading cannot fail).
        if let Ok(plugins) = crate::plugins::Plugins::load(&self.project_root, home.as_deref(), &[])
        {
            catalog.add_plugins(&plugins);
        }
        if let Some(bad) = req.agents.iter().find(|a| catalog.get(a).is_none()) {
            return Err(DelegationError::UnknownAgent {
                name: bad.clone(),
                known: catalog.names().into_iter().map(str::to_string).collect(),
            });
        }
        Ok(format!(
            "{}\n\nUse these agent types for the work: {}.",
            req.task,
            req.agents.join(", ")
        ))
    }
}

/// One delegated lead's run.
struct LeadRun {
    tasks: ActorRef<TaskMsg>,
    config: ServeConfig,
    permission: PermissionMode,
    id: String,
    log: PathBuf,
}

impl LeadRun {
    /// Prepares the lead's session, runs the task until the team is quiet (or the task is
    /// stopped), closes the session and records the end.
    async fn run(self, task: String, cancel: CancellationToken) {
        let (status, result) = match self.session_run(task, &cancel).await {
            Ok(outcome) => (status_of(&outcome), outcome.result),
            Err(e) => (TaskStatus::Failed, format!("{e:#}")),
        };
        let status = if cancel.is_cancelled() {
            TaskStatus::Cancelled
        } else {
            status
        };
        let _ = self.tasks.cast(TaskMsg::Finish {
            id: self.id,
            status,
            result,
        });
    }

    async fn session_run(
        &self,
        task: String,
        cancel: &CancellationToken,
    ) -> anyhow::Result<RunOutcome> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| anyhow::anyhow!("cannot open the task log {}: {e}", self.log.display()))?;
        let err_log = log.try_clone()?;
        let opts = session_options(&self.config, Some(self.permission));
        let (prepared, warnings) = prepare_session(&opts)?;
        let printer = tokio::spawn(crate::session::render::text(
            prepared.events.subscribe(),
            log,
            err_log,
        ));
        let progress = tokio::spawn(report_progress(
            prepared.events.subscribe_where(|e| {
                matches!(e.kind, crate::events::EventKind::ToolCallFinished { .. })
            }),
            self.tasks.clone(),
            self.id.clone(),
        ));
        let _ = self.tasks.cast(TaskMsg::Running {
            id: self.id.clone(),
            pgid: None,
            worktree: None,
        });
        let request = RunRequest {
            mode: self.config.mode.agent,
            task,
            plan: None,
        };
        let outcome = if cancel.is_cancelled() {
            // Stopped while its session was being prepared: nothing to start.
            Ok(stopped())
        } else {
            let session = &prepared.session;
            let run = session.run_until_quiet(request, self.config.max_turns);
            tokio::pin!(run);
            // The run first: its first poll hands the lead its request, so a stop that is
            // already waiting cancels that run. Polled second, a stop would find no run to
            // cancel, and the run would start after it and go on for the whole grace.
            tokio::select! {
                biased;
                outcome = &mut run => outcome,
                () = cancel.cancelled() => {
                    session.cancel();
                    // Between runs (waiting on the team) there is no run to cancel:
                    // closing the session below stops the rest.
                    match tokio::time::timeout(STOP_GRACE, run).await {
                        Ok(outcome) => outcome,
                        Err(_) => Ok(stopped()),
                    }
                }
            }
        };
        prepared.close().await;
        let _ = printer.await;
        let _ = progress.await;
        let mut outcome = outcome?;
        if !warnings.is_empty() {
            outcome.result = format!("{}\n(warnings: {})", outcome.result, warnings.join("; "));
        }
        Ok(outcome)
    }
}

/// Prepares a delegated lead's session. `prepare` reports warnings through a callback
/// that is not `Send`, so it runs to completion on this worker thread (the session's
/// actors still go to the shared runtime); needs the multi-threaded runtime `crew` runs.
fn prepare_session(opts: &Options) -> anyhow::Result<(Prepared, Vec<String>)> {
    let handle = tokio::runtime::Handle::current();
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        anyhow::bail!("delegate needs crew's multi-threaded runtime");
    }
    tokio::task::block_in_place(|| {
        let mut warnings = Vec::new();
        let prepared = handle.block_on(crate::session::build::prepare(
            opts,
            ApproverPolicy::Headless,
            &mut |w| warnings.push(w),
        ))?;
        Ok((prepared, warnings))
    })
}

/// Counts the delegated session's tool calls (the lead's and its team's) into the task's
/// record, with the latest as its activity, until the session's bus closes.
async fn report_progress(
    mut events: tokio::sync::mpsc::UnboundedReceiver<crate::events::Event>,
    tasks: ActorRef<TaskMsg>,
    id: String,
) {
    while let Some(event) = events.recv().await {
        if let crate::events::EventKind::ToolCallFinished { name, summary, .. } = event.kind {
            let _ = tasks.cast(TaskMsg::Activity {
                id: id.clone(),
                tool_calls: 1,
                usage: Default::default(),
                activity: Some(format!("{}: {name} {summary}", event.agent)),
            });
        }
    }
}

/// The outcome of a lead stopped while it was not running a request.
fn stopped() -> RunOutcome {
    RunOutcome {
        result: "stopped by the client".into(),
        status: RunStatus::Cancelled,
        usage: Default::default(),
        turns: 0,
        tool_calls: 0,
    }
}

fn status_of(outcome: &RunOutcome) -> TaskStatus {
    match outcome.status {
        RunStatus::Completed => TaskStatus::Completed,
        RunStatus::MaxTurns => TaskStatus::MaxTurns,
        RunStatus::Cancelled => TaskStatus::Cancelled,
        RunStatus::Failed => TaskStatus::Failed,
        RunStatus::BudgetExhausted => TaskStatus::Cancelled,
    }
}
