//! The session a remote run gets on its worker node, subagent or teammate alike: the lead's
//! commit checked out from its bundle, this node's own permission engine, gate and
//! executor — the lead's rules and nothing wider, commands under Landlock confined to the
//! task's worktree, no tool that starts agents or tasks — its events streamed to the lead,
//! and at the end (or at a teammate's idle checkpoint) what it left committed and bundled.
//! What differs between the two runs is said in a [`Setup`]: the permission mode, who
//! answers an Ask, and the tools that replace a built-in (a teammate's `send_message`).

use crate::tools::rule_names::ParseRule;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::bundle::{self, BundleError, TaskCopy};
use super::protocol::{RemoteResult, RemoteSpawn, RemoteStatus, ToLead};
use super::remote_ask::Report;
use crate::agent::runner::AgentSpec;
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::permission::{PermissionMode, Policy, Rule};
use crate::session::{SessionConfig, SessionHandle};
use crate::tools::{CommandSandbox, Registry, Tool, builtin_tools};

/// Tools a remote agent never gets: it cannot start agents or tasks on the worker.
pub(super) const LEAD_ONLY: [&str; 4] = ["agent", "task_list", "task_output", "task_stop"];

/// How one remote run's session differs from another's.
pub(super) struct Setup<'a> {
    /// What the lead sent.
    pub run: &'a RemoteSpawn,
    /// The task's checkout on this node.
    pub copy: &'a TaskCopy,
    /// This node's name (for the agent's system prompt).
    pub node: &'a str,
    /// Where its events go.
    pub report: Report,
    /// Its permission mode (and the policy's default mode).
    pub mode: PermissionMode,
    /// Who answers its Asks.
    pub approver: ApproverPolicy,
    /// Tools that take the place of the built-in of the same name.
    pub replace: Vec<Arc<dyn Tool>>,
}

/// A remote run's session, with the task that streams its events to the lead.
pub(super) struct WorkerSession {
    /// The session.
    pub handle: SessionHandle,
    events: EventBus,
    forward: JoinHandle<()>,
}

impl WorkerSession {
    /// Stops the session and waits until its last event is on its way to the lead.
    pub(super) async fn close(self) {
        self.handle.shutdown().await;
        self.events.close();
        let _ = self.forward.await;
    }
}

/// Why a task's session could not be set up on this worker (the run's failed result).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// The task's worktree cannot be resolved.
    #[error("{}: {reason}", .path.display())]
    Worktree {
        /// The worktree.
        path: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// A rule the lead sent does not parse on this node (skipping it could drop a deny).
    #[error("the lead's rule `{text}` does not parse here: {reason}")]
    Rule {
        /// The rule as sent.
        text: String,
        /// The parser's message.
        reason: String,
    },
    /// The model the lead named is not usable here (with its causes).
    #[error("the worker cannot use model `{model}`: {reason}")]
    Model {
        /// The model.
        model: String,
        /// Why, with its causes.
        reason: String,
    },
    /// The worker's tool set is inconsistent.
    #[error("the worker's tools: {0}")]
    Tools(String),
    /// The session did not build.
    #[error("{0}")]
    Build(String),
}

/// Starts the session `setup` describes in the task's worktree.
pub(super) async fn start(setup: Setup<'_>) -> Result<WorkerSession, SessionError> {
    let run = setup.run;
    let root = setup
        .copy
        .worktree
        .canonicalize()
        .map_err(|reason| SessionError::Worktree {
            path: setup.copy.worktree.clone(),
            reason,
        })?;
    let home = crate::store::home_dir();
    let mut policy = policy(run, &root, home.as_deref())?;
    policy.default_mode = setup.mode;
    let chosen = crate::session::model::choose(Some(&run.agent.model), None).map_err(|e| {
        SessionError::Model {
            model: run.agent.model.clone(),
            reason: format!("{e:#}"),
        }
    })?;
    let replaced: HashSet<String> = setup
        .replace
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    let mut tools: Vec<Arc<dyn Tool>> = builtin_tools()
        .into_iter()
        .filter(|t| !replaced.contains(&t.definition().name))
        .collect();
    tools.extend(setup.replace);
    let registry = Registry::with_tools(tools).map_err(|e| SessionError::Tools(e.to_string()))?;
    let mut allowed: HashSet<String> = match &run.agent.allowed_tools {
        Some(list) => list.iter().cloned().collect(),
        None => registry.definitions().map(|d| d.name.clone()).collect(),
    };
    for name in LEAD_ONLY {
        allowed.remove(name);
    }
    let mut writable_roots = vec![root.clone()];
    writable_roots.extend(crate::sandbox::landlock::git_writable_dirs(&root));
    let events = EventBus::new();
    let mut rx = events.subscribe();
    let forward = {
        let (report, task_id) = (setup.report, run.task_id.clone());
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                report(ToLead::Event {
                    task_id: task_id.clone(),
                    event,
                });
            }
        })
    };
    let note = format!(
        "\n\nYou work in your own git worktree at {} on worker {}. You cannot write outside it.",
        root.display(),
        setup.node
    );
    let handle = SessionHandle::start(
        SessionConfig::builder(
            root.clone(),
            chosen.provider,
            AgentSpec {
                id: run.agent.id.clone(),
                model: chosen.model,
                system_prompt: format!("{}{note}", run.agent.system_prompt),
                allowed_tools: Some(allowed),
                max_turns: run.agent.max_turns,
                max_tokens: run.agent.max_tokens,
            },
            Arc::new(registry),
        )
        .permission_mode(setup.mode)
        .policy(policy)
        .approver(setup.approver)
        .sandbox(CommandSandbox::landlock(writable_roots))
        .events(events.clone())
        .build(),
    )
    .await
    .map_err(|e| SessionError::Build(e.to_string()))?;
    Ok(WorkerSession {
        handle,
        events,
        forward,
    })
}

/// The worker's policy for one task: the lead's rules (a rule that does not parse
/// refuses the task: skipping it could drop a deny), rooted at the task's worktree.
pub(super) fn policy(
    spawn: &RemoteSpawn,
    root: &Path,
    home: Option<&Path>,
) -> Result<Policy, SessionError> {
    let mut rules = Vec::with_capacity(spawn.rules.len());
    for r in &spawn.rules {
        let rule = Rule::parse(&r.text, r.kind, r.layer, home).map_err(|e| SessionError::Rule {
            text: r.text.clone(),
            reason: e.to_string(),
        })?;
        rules.push(rule);
    }
    Ok(Policy {
        project_root: Some(root.to_path_buf()),
        home: home.map(Path::to_path_buf),
        rules,
        default_mode: PermissionMode::DontAsk,
        ..Policy::default()
    })
}

/// Checks the lead's commit out into `dir`. `Err`: the run's failed result, saying why.
pub(super) async fn check_out(
    run: &RemoteSpawn,
    dir: PathBuf,
    node: &str,
) -> Result<TaskCopy, RemoteResult> {
    let copy = TaskCopy::at(dir);
    match bundle::checkout(&run.bundle, &copy, &run.branch, &run.base_commit).await {
        Ok(()) => Ok(copy),
        Err(e) => Err(RemoteResult::failed(
            &run.task_id,
            node,
            format!("the worker could not check the commit out: {e}"),
        )),
    }
}

/// Commits whatever the agent left as one commit on its branch (so nothing is lost) and
/// bundles `base..branch`; `None` when the branch holds nothing new.
pub(super) async fn checkpoint(
    run: &RemoteSpawn,
    copy: &TaskCopy,
    message: &str,
) -> Result<Option<(String, Vec<u8>)>, BundleError> {
    bundle::commit_all(&copy.worktree, message).await?;
    bundle::since(&copy.repo, &run.branch, &run.base_commit).await
}

/// Puts the final checkpoint into `result`: the branch's head and bundle, or, when it
/// could not be bundled, a failure that says so after the run's own result.
pub(super) fn hand_back(
    result: &mut RemoteResult,
    shipped: Result<Option<(String, Vec<u8>)>, BundleError>,
) {
    match shipped {
        Ok(Some((head, bytes))) => {
            result.head = Some(head);
            result.bundle = bytes;
        }
        Ok(None) => {}
        Err(e) => {
            result.status = RemoteStatus::Failed;
            result.result = format!(
                "{}\n\n[worker] the branch could not be bundled: {e}",
                result.result
            );
        }
    }
}
