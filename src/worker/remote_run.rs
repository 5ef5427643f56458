//! One subagent run on a worker node: check the lead's commit out from its bundle, start
//! a session of this node's own permission engine, gate and executor — dontAsk, the
//! lead's rules and nothing wider, commands under Landlock confined to the task's
//! worktree — run the agent there, stream its events to the lead, then commit what it
//! left and bundle the branch for the lead.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::bundle::{self, TaskCopy};
use super::protocol::{Phases, RemoteResult, RemoteSpawn, RemoteStatus, ToLead};
use crate::agent::mode::AgentMode;
use crate::agent::runner::{AgentSpec, RunRequest, RunStatus};
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::permission::{PermissionMode, Policy, Rule};
use crate::session::{SessionConfig, SessionHandle};
use crate::tools::{CommandSandbox, Registry, builtin_tools};

/// Tools a remote agent never gets: it cannot start agents or tasks on the worker.
pub(super) const LEAD_ONLY: [&str; 4] = ["agent", "task_list", "task_output", "task_stop"];

/// Whether `id` is safe as a directory name (task ids come from the network).
pub fn valid_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Checks what a spawn names before anything touches the disk.
pub fn check_spawn(spawn: &RemoteSpawn) -> Result<(), String> {
    if !valid_task_id(&spawn.task_id) {
        return Err(format!("invalid task id `{}`", spawn.task_id));
    }
    let hex =
        |s: &str| (s.len() == 40 || s.len() == 64) && s.chars().all(|c| c.is_ascii_hexdigit());
    if !hex(&spawn.base_commit) {
        return Err(format!("invalid base commit `{}`", spawn.base_commit));
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
        return Err(format!(
            "invalid branch `{}` (expected crew/{}/…)",
            spawn.branch, spawn.task_id
        ));
    }
    Ok(())
}

/// The worker's policy for one task: the lead's rules (a rule that does not parse
/// refuses the task: skipping it could drop a deny), rooted at the task's worktree.
pub(super) fn policy(
    spawn: &RemoteSpawn,
    root: &Path,
    home: Option<&Path>,
) -> Result<Policy, String> {
    let mut rules = Vec::with_capacity(spawn.rules.len());
    for r in &spawn.rules {
        let rule = Rule::parse(&r.text, r.kind, r.layer, home)
            .map_err(|e| format!("the lead's rule `{}` does not parse here: {e}", r.text))?;
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

/// Runs `spawn` in `dir`; events and the start go to `report` as they happen. Never
/// fails: a failure is a `Failed` result with the reason.
pub async fn run(
    spawn: RemoteSpawn,
    dir: PathBuf,
    node: String,
    cancel: CancellationToken,
    report: Arc<dyn Fn(ToLead) + Send + Sync>,
) -> RemoteResult {
    let mut result = RemoteResult {
        task_id: spawn.task_id.clone(),
        node: node.clone(),
        status: RemoteStatus::Failed,
        result: String::new(),
        usage: Default::default(),
        tool_calls: 0,
        head: None,
        phases: Phases::default(),
        bundle: Vec::new(),
    };
    let ms = |t: std::time::Instant| t.elapsed().as_millis() as u64;
    let copy = TaskCopy::at(dir);
    let t = std::time::Instant::now();
    if let Err(e) = bundle::checkout(&spawn.bundle, &copy, &spawn.branch, &spawn.base_commit).await
    {
        result.result = format!("the worker could not check the commit out: {e}");
        return result;
    }
    result.phases.checkout_ms = ms(t);
    let t = std::time::Instant::now();
    report(ToLead::Started {
        task_id: spawn.task_id.clone(),
        node: node.clone(),
    });
    match agent(&spawn, &copy, &node, cancel, report).await {
        Ok(done) => {
            result.status = done.0;
            result.result = done.1;
            result.usage = done.2;
            result.tool_calls = done.3;
        }
        Err(e) => result.result = e,
    }
    result.phases.run_ms = ms(t);
    let t = std::time::Instant::now();
    // Whatever the agent left becomes one commit on its branch, so nothing is lost.
    let message = format!("crew: work of task {} on {node}", spawn.task_id);
    let shipped = match bundle::commit_all(&copy.worktree, &message).await {
        Ok(_) => bundle::since(&copy.repo, &spawn.branch, &spawn.base_commit).await,
        Err(e) => Err(e),
    };
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
    result.phases.bundle_ms = ms(t);
    result
}

type Done = (RemoteStatus, String, crate::protocol::Usage, u32);

/// The agent's run in its own session on this node.
async fn agent(
    spawn: &RemoteSpawn,
    copy: &TaskCopy,
    node: &str,
    cancel: CancellationToken,
    report: Arc<dyn Fn(ToLead) + Send + Sync>,
) -> Result<Done, String> {
    let root = copy
        .worktree
        .canonicalize()
        .map_err(|e| format!("{}: {e}", copy.worktree.display()))?;
    let home = crate::store::home_dir();
    let policy = policy(spawn, &root, home.as_deref())?;
    let chosen = crate::cli::model::choose(Some(&spawn.agent.model), None)
        .map_err(|e| format!("the worker cannot use model `{}`: {e:#}", spawn.agent.model))?;
    let registry =
        Registry::with_tools(builtin_tools()).map_err(|e| format!("the worker's tools: {e}"))?;
    let mut allowed: HashSet<String> = match &spawn.agent.allowed_tools {
        Some(list) => list.iter().cloned().collect(),
        None => registry.definitions().map(|d| d.name.clone()).collect(),
    };
    for name in LEAD_ONLY {
        allowed.remove(name);
    }
    let mut writable_roots = vec![root.clone()];
    writable_roots.extend(crate::tools::landlock::git_writable_dirs(&root));
    let events = EventBus::new();
    let mut rx = events.subscribe();
    let forward = {
        let (report, task_id) = (report.clone(), spawn.task_id.clone());
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
        "\n\nYou work in your own git worktree at {} on worker {node}. You cannot write outside it.",
        root.display()
    );
    let session = SessionHandle::start(SessionConfig {
        auto: None,
        context: Default::default(),
        cwd: root.clone(),
        permission_mode: PermissionMode::DontAsk,
        policy,
        provider: chosen.provider,
        lead: AgentSpec {
            id: spawn.agent.id.clone(),
            model: chosen.model,
            system_prompt: format!("{}{note}", spawn.agent.system_prompt),
            allowed_tools: Some(allowed),
            max_turns: spawn.agent.max_turns,
            max_tokens: spawn.agent.max_tokens,
        },
        // Under dontAsk no Ask reaches an approver: an explicit ask rule or a dangerous
        // command is refused, as for a local subagent.
        approver: ApproverPolicy::Headless,
        registry: Arc::new(registry),
        sandbox: CommandSandbox::Landlock { writable_roots },
        default_tool_timeout: crate::executor::DEFAULT_TIMEOUT,
        conversation: Vec::new(),
        events: events.clone(),
        orchestration: None,
        hooks: None,
    })
    .await
    .map_err(|e| e.to_string())?;
    let lead = session.lead().clone();
    let stopper = tokio::spawn(async move {
        cancel.cancelled().await;
        let _ = lead.cast(crate::agent::lead::LeadMsg::Cancel);
    });
    let outcome = session
        .run(RunRequest {
            mode: AgentMode::Chat,
            task: spawn.prompt.clone(),
            plan: None,
        })
        .await;
    stopper.abort();
    session.shutdown().await;
    events.close();
    let _ = forward.await;
    let outcome = outcome.map_err(|e| e.to_string())?;
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
