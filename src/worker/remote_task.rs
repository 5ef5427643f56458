//! A subagent placed on a worker, seen from the lead: the task is registered with the
//! lead's task manager like a local one, its worktree and branch are made by the lead's
//! worktree manager like a local one, the commit is shipped as a bundle, the worker's
//! events are republished on the lead's bus (so logs, transcripts and monitors see them),
//! and the branch that comes back is fast-forwarded into that worktree — which the
//! worktree manager then keeps, diffs and merges like any subagent's. A lost worker fails
//! the task with "worker lost" and, if the definition allows, starts it once more on
//! another worker.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bundle;
use super::pool_actor::Pool;
use super::protocol::{AskAnswerWire, RemoteResult, RemoteStatus, TaskNews, ToWorker, WorkerMsg};
use super::remote_judge;
use super::ship;
use crate::agent::definition::AgentDefinition;
use crate::agent::delegate::SpawnRequest;
use crate::agent::lifecycle::{end, finish_worktree, register};
use crate::agent::subagent_actor::SubagentEnv;
use crate::auto_mode::classifier::{Intent, TaskSource};
use crate::events::EventKind;
use crate::permission::{PermissionMode, SharedMode};
use crate::tasks::TaskStatus;
use crate::tasks::actor::TaskMsg;
use crate::tools::delegate::DelegateError;

/// How long a stopped remote task may take to send its work back.
const STOP_GRACE: Duration = Duration::from_secs(120);

/// Registers a task for `request` and starts driving it on a worker; returns the task id.
pub(crate) async fn launch(
    env: &SubagentEnv,
    pool: Arc<Pool>,
    depth: u32,
    request: SpawnRequest,
    def: &AgentDefinition,
    attempt: Attempt,
) -> Result<String, DelegateError> {
    let task = register(env, &request.description, def.name.clone()).await?;
    let cancel = task.cancel;
    let job = Job {
        env: env.clone(),
        pool,
        depth,
        request,
        def: def.clone(),
        task_id: task.id.clone(),
        log: task.log,
        attempt,
    };
    let env = env.clone();
    tokio::spawn(async move {
        let id = job.task_id.clone();
        // A panic in the driver must still end the task.
        if let Err(e) = tokio::spawn(boxed_drive(job, cancel)).await {
            let reason = format!("the remote task's driver crashed: {e}");
            end(&env, id, TaskStatus::Failed, reason);
        }
    });
    Ok(task.id)
}

/// Which try of a piece of work this is.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attempt {
    /// Nodes that already lost it.
    pub lost_on: Vec<String>,
}

struct Job {
    env: SubagentEnv,
    pool: Arc<Pool>,
    depth: u32,
    request: SpawnRequest,
    def: AgentDefinition,
    task_id: String,
    log: PathBuf,
    attempt: Attempt,
}

enum End {
    Finished(Box<RemoteResult>),
    Refused(String),
    Lost(String),
    Cancelled,
}

/// `drive`, boxed: a lost task's retry launches again from inside `drive`, and the
/// boxed type breaks that cycle for the compiler.
fn boxed_drive(job: Job, cancel: CancellationToken) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(drive(job, cancel))
}

async fn drive(job: Job, cancel: CancellationToken) {
    let (status, result) = match run(&job, cancel).await {
        Ok(done) => done,
        Err(e) => (TaskStatus::Failed, e.to_string()),
    };
    end(&job.env, job.task_id.clone(), status, result);
}

/// Why a remote subagent's task failed before or instead of a run on a worker.
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// There is no repository to make a worktree in and bundle from.
    #[error("placement `remote` needs a git repository (the work travels as a git bundle)")]
    NoRepository,
    /// Its worktree could not be made.
    #[error(transparent)]
    Workspace(#[from] crate::agent::subagent_actor::WorkspaceError),
    /// Its work could not be shipped or placed.
    #[error(transparent)]
    Ship(#[from] ship::ShipError),
    /// The worker refused the spawn.
    #[error("worker {node} refused the task: {reason}")]
    Refused { node: String, reason: String },
}

async fn run(job: &Job, cancel: CancellationToken) -> Result<(TaskStatus, String), RunError> {
    let env = &job.env;
    let Some(ws) = env.workspaces.clone() else {
        return Err(RunError::NoRepository);
    };
    let root = ws.create(&job.task_id, &job.request.description).await?;
    let base = ship::base(&job.pool, ws.repo_root(), &root).await?;
    let branch = base.branch.clone();
    let runner = crate::agent::subagent_spec::defined_runner(
        env,
        &job.def,
        &job.request,
        &job.task_id,
        job.depth,
        "",
    );
    let spec = &runner.spec;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let placed = tokio::select! {
        p = job.pool.place(&job.task_id, job.attempt.lost_on.clone(), tx) => p,
        _ = cancel.cancelled() => {
            job.pool.release(&job.task_id);
            let _ = ws.finish(&job.task_id).await;
            return Ok((TaskStatus::Cancelled, "stopped before a worker was free".into()));
        }
    };
    let (node, worker) = match placed {
        Ok(p) => p,
        Err(e) => {
            let _ = ws.finish(&job.task_id).await;
            return Err(ship::ShipError::from(e).into());
        }
    };
    let _ = env.tasks.cast(TaskMsg::Placed {
        id: job.task_id.clone(),
        node: node.clone(),
    });
    let _ = env.tasks.cast(TaskMsg::Running {
        id: job.task_id.clone(),
        pgid: None,
        worktree: Some(root.clone()),
    });
    let mut spawn = ship::spawn(
        &job.pool,
        &job.task_id,
        &job.request,
        spec,
        &env.runner.spec.model,
        &base,
    );
    // Under a lead in auto, the lead's classifier judges what dontAsk would allow blindly,
    // as for a local subagent: the worker runs it in auto and sends each Ask here.
    let auto = runner
        .pipeline
        .auto
        .as_ref()
        .is_some_and(|a| a.lead_in_auto());
    let mode = SharedMode::new(if auto {
        PermissionMode::Auto
    } else {
        PermissionMode::DontAsk
    });
    spawn.mode = mode.get();
    let intent = Arc::new(Intent::new(&job.request.prompt, TaskSource::Agent, &[]));
    let shipped = base.bundle.len();
    let watcher = crate::agent::monitor::watch_agent(
        &runner.pipeline.events,
        &spec.id,
        &job.task_id,
        job.log.clone(),
        env.tasks.clone(),
    );
    let _ = worker.cast(WorkerMsg::Remote(ToWorker::Spawn(Box::new(spawn))));
    let mut stop_sent = false;
    let end = loop {
        let news = tokio::select! {
            n = rx.recv() => n,
            _ = cancel.cancelled(), if !stop_sent => {
                stop_sent = true;
                let _ = worker.cast(WorkerMsg::Remote(ToWorker::Stop { task_id: job.task_id.clone() }));
                continue;
            }
            _ = tokio::time::sleep(STOP_GRACE), if stop_sent => break End::Cancelled,
        };
        match news {
            Some(TaskNews::Started) => {}
            // Republished as the agent's own, so the log, transcript and monitors see it;
            // a worker cannot speak for any other agent (the lead above all).
            Some(TaskNews::Event(e)) if e.agent == spec.id => {
                runner.pipeline.events.publish(&e.agent, e.kind)
            }
            Some(TaskNews::Event(e)) => {
                tracing::warn!("worker {node} sent an event for {}; dropped", e.agent)
            }
            Some(TaskNews::Finished(r)) => break End::Finished(r),
            Some(TaskNews::Refused(reason)) => break End::Refused(reason),
            Some(TaskNews::Lost(node)) => break End::Lost(node),
            // An auto-mode subagent's Ask: judged here, answered for that call only.
            Some(TaskNews::Ask(ask)) if auto && ask.task_id == job.task_id => {
                let (pipeline, worker, agent) =
                    (runner.pipeline.clone(), worker.clone(), spec.id.clone());
                let (intent, mode, cancel) = (intent.clone(), mode.clone(), cancel.clone());
                let task_id = job.task_id.clone();
                tokio::spawn(async move {
                    let ask_id = ask.ask_id.clone();
                    let answer =
                        remote_judge::answer(&pipeline, *ask, &agent, &intent, &mode, &cancel)
                            .await;
                    let _ = worker.cast(WorkerMsg::Remote(ToWorker::AskAnswer(AskAnswerWire {
                        task_id,
                        ask_id,
                        answer,
                    })));
                });
            }
            // Teammate news for a subagent's task: a subagent has no mailbox, and asks
            // only in auto; none is acted on (an unanswered Ask is denied on the worker
            // when the run ends).
            Some(TaskNews::TeamSend(_) | TaskNews::Idle(_) | TaskNews::Ask(_)) => {
                tracing::warn!(
                    "worker {node} sent teammate news for subagent task {}; dropped",
                    job.task_id
                )
            }
            None => break End::Lost(node.clone()),
        }
    };
    watcher.finish().await;
    job.pool.release(&job.task_id);
    match end {
        End::Finished(r) => {
            let started = std::time::Instant::now();
            let fetched = match &r.head {
                Some(head) => bundle::fetch_into(&root, &r.bundle, &branch, head)
                    .await
                    .err()
                    .map(|e| format!("; the returned branch could not be fetched: {e}")),
                None => None,
            };
            let p = r.phases;
            let note = format!(
                "\n\n[worker {node}] {shipped} bytes shipped to the worker, {} bytes back; \
checkout {} ms, run {} ms, commit+bundle {} ms on the worker, fetch {} ms here{}",
                r.bundle.len(),
                p.checkout_ms,
                p.run_ms,
                p.bundle_ms,
                started.elapsed().as_millis(),
                fetched.unwrap_or_default(),
            );
            let worktree = finish_worktree(ws.as_ref(), &job.task_id).await;
            let _ = worker.cast(WorkerMsg::Remote(ToWorker::Handback {
                task_id: job.task_id.clone(),
            }));
            let status = match r.status {
                RemoteStatus::Completed => TaskStatus::Completed,
                RemoteStatus::MaxTurns => TaskStatus::MaxTurns,
                RemoteStatus::Cancelled => TaskStatus::Cancelled,
                RemoteStatus::Failed => TaskStatus::Failed,
            };
            Ok((status, format!("{}{note}\n\n{worktree}", r.result)))
        }
        End::Refused(reason) => {
            let _ = ws.finish(&job.task_id).await;
            Err(RunError::Refused { node, reason })
        }
        End::Cancelled => {
            let _ = ws.finish(&job.task_id).await;
            Ok((
                TaskStatus::Cancelled,
                format!("stopped; worker {node} did not send its work back in time"),
            ))
        }
        End::Lost(lost) => {
            // Nothing came back from this try; a clean worktree is removed, one holding
            // anything is kept (the worktree manager never deletes work).
            let _ = ws.finish(&job.task_id).await;
            let mut reason = format!("worker lost: {lost} disconnected while the task ran");
            if job.def.reschedule && job.attempt.lost_on.is_empty() {
                let again = Attempt {
                    lost_on: vec![lost.clone()],
                };
                match launch(
                    env,
                    job.pool.clone(),
                    job.depth,
                    job.request.clone(),
                    &job.def,
                    again,
                )
                .await
                {
                    Ok(next) => reason.push_str(&format!("; rescheduled as task {next}")),
                    Err(e) => reason.push_str(&format!("; could not be rescheduled: {e}")),
                }
            }
            runner.pipeline.events.publish(
                "lead",
                EventKind::Error {
                    message: format!("task {}: {reason}", job.task_id),
                },
            );
            Ok((TaskStatus::Failed, reason))
        }
    }
}
