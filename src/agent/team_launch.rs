//! Starting a teammate: the lead's `agent {name}` call checks the request (a free, valid
//! name; a known definition; the same placement rules as subagents), gives the teammate
//! its own worktree, adds it to the roster, and has the team actor spawn its `Teammate`
//! actor linked under itself (so a crash is seen there). Teammates cannot start
//! teammates; they share the lead's permission mode unless their definition narrows it.
//! `crew --continue` restarts the teammates of the resumed session through the same path
//! ([`relaunch`]), in their existing worktrees, with their restored conversations.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::definition::AgentDefinition;
use super::delegate::SpawnRequest;
use super::mode::AgentMode;
use super::runner::{AgentSpec, RunPlace, RunRequest};
use super::subagent_actor::{SubagentEnv, WorkspaceError, Workspaces};
use super::subagent_spec::subagent_model;
pub(crate) use super::team_link::TeamLink;
use super::team_link::{TeamLinkError, new_ids, roster_entry};
use super::teammate_actor::{Restored, Teammate, TeammateArgs};
use crate::permission::delegation::{Isolation, Placement};
use crate::permission::{PermissionMode, SharedMode};
use crate::protocol::Message;
use crate::team::restore::RestoredMember;
use crate::team::{MemberName, PlanStage};
use crate::tools::CommandSandbox;
use crate::tools::delegate::DelegateError;

/// Starts teammate `req.name` for the lead: checks, worktree, roster, actor. Returns its
/// agent id. `mode` is the lead's permission mode: a teammate in the lead's checkout shares
/// it (a switch applies to the teammate too); one in its own worktree works unattended
/// there, as subagents do. Either way its definition may narrow the mode, never widen it.
pub(crate) async fn launch(
    env: &SubagentEnv,
    team: &TeamLink,
    req: SpawnRequest,
    mode: SharedMode,
) -> Result<String, DelegateError> {
    let raw = req.name.clone().unwrap_or_default();
    let name = MemberName::teammate(&raw).map_err(|e| DelegateError::Refused(e.to_string()))?;
    let def = env
        .catalog
        .get(&req.subagent_type)
        .cloned()
        .ok_or_else(|| {
            DelegateError::Refused(format!(
                "unknown subagent_type `{}`; available: {}",
                req.subagent_type,
                env.catalog.names().join(", ")
            ))
        })?;
    let storage = team.storage.clone();
    let taken = name.clone();
    let exists = tokio::task::spawn_blocking(move || storage.roster())
        .await
        .map_err(|e| DelegateError::Failed(e.to_string()))?
        .map_err(|e| DelegateError::Failed(e.to_string()))?
        .member(&taken)
        .is_some();
    if exists {
        return Err(DelegateError::Refused(format!(
            "a teammate called {name} already exists: message it with send_message instead"
        )));
    }
    // `placement: remote` (or local slots full, with workers): on a worker node.
    // Full local slots send a teammate to a worker as they would a worktree subagent.
    if let Some(workers) = super::host::choose(env, &def, Isolation::Worktree)? {
        let mode = narrowed(mode, def.permission_mode.as_deref()).get();
        return workers
            .launch_teammate(env, team, req, &def, mode, name)
            .await;
    }
    let placement =
        super::delegate::placement(&req, &def, &env.runner.pipeline.registry, env.worktrees())
            .map_err(|e| DelegateError::Refused(e.to_string()))?;
    let (agent_id, work_id) = new_ids(&def, &name);
    let (cwd, note, workspace) = match (&env.workspaces, placement) {
        (Some(ws), Placement::Worktree) => {
            let root = ws
                .create(&work_id, &req.description)
                .await
                .map_err(|e| DelegateError::Failed(e.to_string()))?;
            let rel = env
                .main_cwd
                .strip_prefix(ws.repo_root())
                .unwrap_or(Path::new(""));
            let note = worktree_note(&root, ws.repo_root());
            (root.join(rel), note, Some((ws.clone(), work_id.clone())))
        }
        _ => (env.main_cwd.clone(), String::new(), None),
    };
    let worktree_root = workspace.as_ref().map(|_| cwd.clone());
    let mut member = roster_entry(&name, &agent_id, &def, worktree_root.clone(), &req);
    member.plan = req.plan_first.then_some(PlanStage::Drafting);
    if let Err(e) = team.add_member(member).await {
        if let Some((ws, id)) = &workspace {
            let _ = ws.finish(id).await;
        }
        return Err(DelegateError::Failed(e.to_string()));
    }
    let first = RunRequest {
        mode: if req.plan_first {
            AgentMode::Plan
        } else {
            AgentMode::Chat
        },
        task: req.prompt.clone(),
        plan: None,
    };
    let start = Start {
        name,
        agent_id: agent_id.clone(),
        model: req.model.clone(),
        cwd,
        note,
        worktree_root,
        workspace,
        first: Some(first),
        restored: None,
        conversation: Vec::new(),
    };
    start_actor(env, team, &def, mode, start)
        .await
        .map_err(|e| DelegateError::Failed(e.to_string()))?;
    Ok(agent_id)
}

/// Why a teammate of a resumed session was not restarted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RelaunchError {
    /// Its agent type is no longer defined.
    #[error(
        "teammate {name} was not restarted: its definition `{agent_type}` is no longer available"
    )]
    NoDefinition {
        /// The teammate.
        name: MemberName,
        /// The agent type the roster names.
        agent_type: String,
    },
    /// Its worktree is gone (and cannot be made again under its id).
    #[error("teammate {name} was not restarted: its worktree {} is gone", .dir.display())]
    WorktreeGone {
        /// The teammate.
        name: MemberName,
        /// The worktree the roster names.
        dir: PathBuf,
    },
    /// Its worktree is gone and making it again failed.
    #[error(
        "teammate {name} was not restarted: its worktree {} is gone and could not be made again: {reason}",
        .dir.display()
    )]
    WorktreeNotMade {
        /// The teammate.
        name: MemberName,
        /// The worktree the roster names.
        dir: PathBuf,
        /// Why it could not be made.
        reason: WorkspaceError,
    },
    /// The team did not start its actor.
    #[error(transparent)]
    Start(#[from] TeamLinkError),
}

/// Restarts a teammate of a resumed session (`crew --continue`) holding its restored
/// conversation, in the worktree the roster names: a worktree removed as clean when the
/// session ended is made again under the same id, so on the same branch. Its inbox was
/// acknowledged up to what that conversation holds, so unread mail wakes it; one cut off
/// mid-turn carries on at once. It keeps the model its spawn request named and, for a
/// `plan_first` teammate not yet approved, Plan mode (with the plan it awaits an answer on).
/// A teammate whose definition is gone, or whose worktree can be neither found nor made,
/// is not restarted: the error says why.
pub(crate) async fn relaunch(
    env: &SubagentEnv,
    team: &TeamLink,
    restored: RestoredMember,
    mode: SharedMode,
) -> Result<(), RelaunchError> {
    let member = restored.member;
    let name = member.name.clone();
    let def = env
        .catalog
        .get(&member.agent_type)
        .cloned()
        .ok_or_else(|| RelaunchError::NoDefinition {
            name: name.clone(),
            agent_type: member.agent_type.clone(),
        })?;
    let gone = |dir: &Path| RelaunchError::WorktreeGone {
        name: name.clone(),
        dir: dir.to_path_buf(),
    };
    let (cwd, note, workspace) = match (&member.worktree, &env.workspaces) {
        (Some(dir), Some(ws)) => {
            let rel = env
                .main_cwd
                .strip_prefix(ws.repo_root())
                .unwrap_or(Path::new(""));
            let root = dir
                .ancestors()
                .nth(rel.components().count())
                .unwrap_or(dir)
                .to_path_buf();
            // Worktrees are made as `<base>/<work id>`, the id starting with the name.
            let id = root
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|id| id.starts_with(&format!("{name}-")))
                .map(str::to_string);
            let (dir, root) = match &id {
                _ if dir.is_dir() => (dir.clone(), root),
                Some(id) => {
                    let made = ws.create(id, &member.description).await.map_err(|reason| {
                        RelaunchError::WorktreeNotMade {
                            name: name.clone(),
                            dir: dir.clone(),
                            reason,
                        }
                    })?;
                    (made.join(rel), made)
                }
                None => return Err(gone(dir)),
            };
            if Some(&dir) != member.worktree.as_ref() {
                let (storage, who, at) = (team.storage.clone(), name.clone(), dir.clone());
                let moved = tokio::task::spawn_blocking(move || {
                    storage.update_member(&who, |m| m.worktree = Some(at))
                })
                .await;
                if !matches!(moved, Ok(Ok(_))) {
                    tracing::warn!("teammate {name}'s new worktree could not be recorded");
                }
            }
            let note = worktree_note(&root, ws.repo_root());
            (dir, note, id.map(|id| (ws.clone(), id)))
        }
        (Some(dir), None) if !dir.is_dir() => return Err(gone(dir)),
        (Some(dir), None) => (dir.clone(), String::new(), None),
        (None, _) => (env.main_cwd.clone(), String::new(), None),
    };
    let start = Start {
        name,
        agent_id: member.agent_id.clone(),
        model: member.model.clone(),
        worktree_root: Some(cwd.clone()).filter(|_| member.worktree.is_some()),
        cwd,
        note,
        workspace,
        first: None,
        restored: Some(Restored {
            plan: member.plan.clone(),
            interrupted: restored.interrupted,
        }),
        conversation: restored.conversation,
    };
    Ok(start_actor(env, team, &def, mode, start).await?)
}

/// What sets a teammate's actor going, new or restored.
struct Start {
    name: MemberName,
    agent_id: String,
    /// The model the spawn request asked for (a definition's own model wins).
    model: Option<String>,
    cwd: PathBuf,
    /// The worktree paragraph of its system prompt.
    note: String,
    /// Its worktree (its only writable root); `None` for `isolation: none`.
    worktree_root: Option<PathBuf>,
    /// The worktree to finish when it ends.
    workspace: Option<(Arc<dyn Workspaces>, String)>,
    first: Option<RunRequest>,
    /// Where a restored teammate was.
    restored: Option<Restored>,
    conversation: Vec<Message>,
}

/// The system prompt paragraph for a teammate in the worktree at `root`.
fn worktree_note(root: &Path, repo_root: &Path) -> String {
    format!(
        "\n\nYou work in your own git worktree at {}. Paths of the main checkout {} map into it: \
use paths inside your worktree. You cannot write outside it.",
        root.display(),
        repo_root.display()
    )
}

/// Builds the teammate's runner and place from its definition and has the team actor
/// spawn its `Teammate` actor linked under itself.
async fn start_actor(
    env: &SubagentEnv,
    team: &TeamLink,
    def: &AgentDefinition,
    mode: SharedMode,
    start: Start,
) -> Result<(), TeamLinkError> {
    let name = start.name;
    let mut runner = env.runner.clone();
    runner.spec = teammate_spec(
        env,
        def,
        &name,
        start.agent_id,
        start.model.as_deref(),
        &start.note,
    );
    let mailbox = team.mailbox(name.clone());
    let writable = match &start.worktree_root {
        Some(root) => {
            let mut roots = vec![root.clone()];
            roots.extend(crate::sandbox::landlock::git_writable_dirs(root));
            roots
        }
        None => vec![start.cwd.clone()],
    };
    // In its own worktree a teammate works as a subagent does there: unattended, confined
    // to it; in the lead's checkout, under the lead's mode.
    let mode = match &start.worktree_root {
        Some(_) => SharedMode::new(super::subagent_spec::unattended(
            env.runner.pipeline.auto.as_deref(),
        )),
        None => mode,
    };
    let place = RunPlace {
        cwd: start.cwd,
        permission_mode: narrowed(mode, def.permission_mode.as_deref()),
        sandbox: CommandSandbox::landlock(writable),
        delegate: None,
        tasks: None,
        walk: env.walk.clone(),
        team: None,
        mail: Some(Arc::new(mailbox.clone())),
    };
    // Its subagents inherit its loop (model, owner of their tasks), not the lead's, and
    // cannot reach the team.
    let mut own = env.clone();
    own.runner = runner.clone();
    own.team = None;
    let args = TeammateArgs {
        runner,
        place,
        mailbox,
        first: start.first,
        restored: start.restored,
        env: own,
        conversation: start.conversation,
        workspace: start.workspace,
        slots: env.slots.clone(),
    };
    team.adopt(&name, Teammate, args).await
}

/// A teammate's loop configuration from its definition: its tools (always with
/// `send_message`), model, system prompt (with `note`, the worktree paragraph) and limits.
pub(crate) fn teammate_spec(
    env: &SubagentEnv,
    def: &AgentDefinition,
    name: &MemberName,
    agent_id: String,
    model: Option<&str>,
    note: &str,
) -> AgentSpec {
    let all: Vec<String> = env
        .runner
        .pipeline
        .registry
        .definitions()
        .map(|d| d.name.clone())
        .collect();
    let mut allowed: HashSet<String> = def
        .allowed_tools(all.iter().cloned())
        .unwrap_or_else(|| all.into_iter().collect());
    // A teammate's `agent` calls start plain subagents only (its actor refuses names).
    allowed.insert("send_message".into());
    let skills = env
        .runner
        .pipeline
        .registry
        .skills()
        .prompt_section_for(Some(&allowed));
    AgentSpec {
        id: agent_id,
        model: subagent_model(def.model.as_deref().or(model), &env.runner.spec.model),
        system_prompt: format!(
            "{}{skills}{note}\n\nYou are teammate `{name}` on a team led by `lead`. Messages from the lead and \
other teammates arrive in your conversation marked <team-message from=\"...\">. Report to the lead with \
send_message {{to: \"lead\"}} (it does not see your output otherwise). When you have nothing left to do, \
end your turn: you wait, idle, until a message arrives.",
            def.prompt
        ),
        allowed_tools: Some(allowed),
        max_turns: def.max_turns.unwrap_or(env.default_max_turns),
        max_tokens: env.runner.spec.max_tokens,
    }
}

/// The lead's mode, or the definition's when that is stricter (a definition may narrow the
/// lead's mode, never widen it).
pub(crate) fn narrowed(lead: SharedMode, definition: Option<&str>) -> SharedMode {
    let Some(name) = definition else {
        return lead;
    };
    let (own, _) = PermissionMode::parse_lenient(name);
    if strictness(own) > strictness(lead.get()) {
        SharedMode::new(own)
    } else {
        lead
    }
}

/// Higher is stricter: how much a mode asks before it lets a call through.
fn strictness(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Strict => 3,
        PermissionMode::Default => 2,
        PermissionMode::AcceptEdits | PermissionMode::Auto => 1,
        PermissionMode::BypassPermissions | PermissionMode::DontAsk => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_narrows_the_leads_mode_but_never_widens_it() {
        let lead = SharedMode::new(PermissionMode::AcceptEdits);
        let own = narrowed(lead.clone(), Some("default"));
        assert_eq!(own.get(), PermissionMode::Default);
        lead.set(PermissionMode::BypassPermissions);
        assert_eq!(
            own.get(),
            PermissionMode::Default,
            "a narrowed mode is its own"
        );
        let shared = narrowed(lead.clone(), Some("bypassPermissions"));
        lead.set(PermissionMode::Strict);
        assert_eq!(
            shared.get(),
            PermissionMode::Strict,
            "a wider one follows the lead"
        );
        assert_eq!(narrowed(lead, None).get(), PermissionMode::Strict);
    }
}
