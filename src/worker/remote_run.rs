//! One subagent run on a worker node: check the lead's commit out from its bundle, start
//! its session ([`super::session`]: this node's own permission engine, gate and executor,
//! the lead's rules and nothing wider, commands under Landlock confined to the task's
//! worktree) under dontAsk — or, when the lead is in auto, in auto with every Ask sent to
//! the lead ([`super::remote_ask`]), whose classifier judges it as it judges a local
//! subagent's — run the agent there with its events streamed to the lead, then commit
//! what it left and bundle the branch for the lead. Also the checks on what a spawn names,
//! before anything touches the disk.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::bundle::TaskCopy;
use super::protocol::{RemoteResult, RemoteSpawn, RemoteStatus, ToLead};
use super::remote_ask::{AskRelay, Report};
use super::session::{self, Setup};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::permission::PermissionMode;

/// Whether `id` is safe as a directory name (task ids come from the network).
pub(crate) fn valid_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// What is wrong with a spawn a lead sent (the names come from the network).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadSpawn {
    /// The task id cannot be a directory name.
    #[error("invalid task id `{0}`")]
    TaskId(String),
    /// The base commit is not a full hex object id.
    #[error("invalid base commit `{0}`")]
    BaseCommit(String),
    /// The branch is not the task's own `crew/<task>/…`.
    #[error("invalid branch `{branch}` (expected crew/{task_id}/…)")]
    Branch {
        /// The branch sent.
        branch: String,
        /// The task id.
        task_id: String,
    },
    /// A mode other than dontAsk or auto.
    #[error("invalid permission mode `{0}` for a remote subagent (expected dontAsk or auto)")]
    Mode(&'static str),
}

/// Checks what a spawn names before anything touches the disk.
pub(crate) fn check_spawn(spawn: &RemoteSpawn) -> Result<(), BadSpawn> {
    if !valid_task_id(&spawn.task_id) {
        return Err(BadSpawn::TaskId(spawn.task_id.clone()));
    }
    let hex =
        |s: &str| (s.len() == 40 || s.len() == 64) && s.chars().all(|c| c.is_ascii_hexdigit());
    if !hex(&spawn.base_commit) {
        return Err(BadSpawn::BaseCommit(spawn.base_commit.clone()));
    }
    let own = format!("crew/{}/", spawn.task_id);
    let ok_branch = spawn.branch.starts_with(&own)
        && spawn.branch.len() > own.len()
        && !spawn.branch.contains("..")
        && spawn
            .branch
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if !ok_branch {
        return Err(BadSpawn::Branch {
            branch: spawn.branch.clone(),
            task_id: spawn.task_id.clone(),
        });
    }
    // A subagent runs unattended (dontAsk) or with the lead's classifier (auto), never
    // in a mode that would let it write or run without either.
    if !matches!(spawn.mode, PermissionMode::DontAsk | PermissionMode::Auto) {
        return Err(BadSpawn::Mode(spawn.mode.as_str()));
    }
    Ok(())
}

/// Why a subagent's run on this node ended without an outcome: the text of its `Failed`
/// result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    /// Its session could not be set up on this node.
    #[error(transparent)]
    Setup(#[from] session::SessionError),
    /// Its session did not run the task (the lead refused it or is gone).
    #[error(transparent)]
    Run(#[from] crate::session::SessionError),
}

/// Runs `spawn` in `dir`; events and the start go to `report` as they happen, and in auto
/// its Asks go to the lead through `asks`. Never fails: a failure is a `Failed` result
/// with the reason.
pub(crate) async fn run(
    spawn: RemoteSpawn,
    dir: PathBuf,
    node: String,
    cancel: CancellationToken,
    report: Report,
    asks: Arc<AskRelay>,
) -> RemoteResult {
    let ms = |t: Instant| t.elapsed().as_millis() as u64;
    let t = Instant::now();
    let copy = match session::check_out(&spawn, dir, &node).await {
        Ok(copy) => copy,
        Err(failed) => return failed,
    };
    let mut result = RemoteResult::failed(&spawn.task_id, &node, String::new());
    result.phases.checkout_ms = ms(t);
    let t = Instant::now();
    report(ToLead::Started {
        task_id: spawn.task_id.clone(),
        node: node.clone(),
    });
    let ran = agent(&spawn, &copy, &node, cancel, report, &asks).await;
    asks.deny_all("the subagent's run ended");
    match ran {
        Ok(done) => {
            result.status = done.0;
            result.result = done.1;
            result.usage = done.2;
            result.tool_calls = done.3;
        }
        Err(e) => result.result = e.to_string(),
    }
    result.phases.run_ms = ms(t);
    let t = Instant::now();
    let message = format!("crew: work of task {} on {node}", spawn.task_id);
    session::hand_back(
        &mut result,
        session::checkpoint(&spawn, &copy, &message).await,
    );
    result.phases.bundle_ms = ms(t);
    result
}

type Done = (RemoteStatus, String, crate::protocol::Usage, u32);

/// The agent's run in its own session on this node, under dontAsk or auto.
async fn agent(
    spawn: &RemoteSpawn,
    copy: &TaskCopy,
    node: &str,
    cancel: CancellationToken,
    report: Report,
    asks: &Arc<AskRelay>,
) -> Result<Done, AgentError> {
    let (mode, approver) = match spawn.mode {
        // Auto: this node has no classifier, so what the mode would ask goes to the lead,
        // which judges it with its own (or asks its human); an unreachable lead denies.
        PermissionMode::Auto => {
            let (questions_tx, questions) = tokio::sync::mpsc::unbounded_channel();
            asks.serve(questions);
            (PermissionMode::Auto, ApproverPolicy::Forward(questions_tx))
        }
        // Under dontAsk no Ask reaches an approver: an explicit ask rule or a dangerous
        // command is refused, as for a local subagent.
        _ => (PermissionMode::DontAsk, ApproverPolicy::Headless),
    };
    let session = session::start(Setup {
        run: spawn,
        copy,
        node,
        report,
        mode,
        approver,
        replace: Vec::new(),
    })
    .await?;
    let lead = session.handle.lead().clone();
    let stopper = tokio::spawn(async move {
        cancel.cancelled().await;
        let _ = lead.cast(crate::agent::lead_actor::LeadMsg::Cancel);
    });
    let outcome = session
        .handle
        .run(RunRequest {
            mode: AgentMode::Chat,
            task: spawn.prompt.clone(),
            plan: None,
        })
        .await;
    stopper.abort();
    session.close().await;
    let outcome = outcome?;
    let status = match outcome.status {
        RunStatus::Completed => RemoteStatus::Completed,
        RunStatus::MaxTurns => RemoteStatus::MaxTurns,
        // Recorded like a local subagent stopped by the budget.
        RunStatus::Cancelled | RunStatus::BudgetExhausted => RemoteStatus::Cancelled,
        RunStatus::Failed => RemoteStatus::Failed,
    };
    Ok((status, outcome.result, outcome.usage, outcome.tool_calls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::protocol::AgentWire;
    use crate::worker::session::policy;
    use std::path::Path;

    fn spawn() -> RemoteSpawn {
        RemoteSpawn {
            task_id: "t1234567".into(),
            lead: "g".into(),
            description: "d".into(),
            prompt: "p".into(),
            agent: AgentWire {
                id: "a/t1234567".into(),
                model: "script:x".into(),
                system_prompt: String::new(),
                allowed_tools: None,
                max_turns: 3,
                max_tokens: 100,
            },
            rules: vec![],
            base_commit: "a".repeat(40),
            branch: "crew/t1234567/slug".into(),
            mode: crate::permission::PermissionMode::DontAsk,
            bundle: vec![],
        }
    }

    #[test]
    fn hostile_names_are_refused_before_the_disk() {
        assert!(check_spawn(&spawn()).is_ok());
        for (id, branch, base) in [
            ("../x", "crew/../x/y", "a".repeat(40)),
            ("t1", "crew/t2/y", "a".repeat(40)),
            ("t1", "crew/t1/y", "zz".into()),
            ("t1", "main", "a".repeat(40)),
            ("t1", "crew/t1/a..b", "a".repeat(40)),
            ("", "crew//y", "a".repeat(40)),
        ] {
            let mut s = spawn();
            s.task_id = id.into();
            s.branch = branch.into();
            s.base_commit = base;
            assert!(check_spawn(&s).is_err(), "{id} {}", s.branch);
        }
    }

    #[test]
    fn a_remote_subagent_runs_only_under_dontask_or_auto() {
        for (mode, ok) in [
            (PermissionMode::DontAsk, true),
            (PermissionMode::Auto, true),
            (PermissionMode::Default, false),
            (PermissionMode::AcceptEdits, false),
            (PermissionMode::BypassPermissions, false),
            (PermissionMode::Strict, false),
        ] {
            let mut s = spawn();
            s.mode = mode;
            assert_eq!(check_spawn(&s).is_ok(), ok, "{mode:?}");
        }
    }

    #[test]
    fn a_rule_the_worker_cannot_parse_refuses_the_task() {
        let mut s = spawn();
        s.rules.push(crate::worker::protocol::RuleWire {
            text: "Bash(unclosed".into(),
            kind: crate::permission::Verdict::Deny,
            layer: crate::permission::Layer::User,
        });
        assert!(policy(&s, Path::new("/tmp"), None).is_err());
    }
}
