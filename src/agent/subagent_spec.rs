//! How a subagent is configured: the definition it was asked for, its loop re-specified
//! from that definition (tools, model, prompt, turn limit), and what its confined
//! commands may write to commit in its worktree.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::definition::AgentDefinition;
use super::delegate::SpawnRequest;
use super::runner::{AgentSpec, Runner};
use std::sync::Arc;

use super::subagent_actor::{MAX_DEPTH, SubagentEnv, WorkspaceError, Workspaces};
use crate::permission::PermissionMode;
use crate::permission::delegation::{Isolation, Placement};

/// Why a subagent could not be configured or given its working copy.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpecError {
    /// No agent type of that name (it was checked at the spawn; the catalog may differ on
    /// a resume).
    #[error("unknown subagent_type `{0}`")]
    UnknownType(String),
    /// Its worktree could not be made.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

/// The definition a plain subagent was asked for.
pub(super) fn definition<'a>(
    env: &'a SubagentEnv,
    request: &SpawnRequest,
) -> Result<&'a AgentDefinition, SpecError> {
    env.catalog
        .get(&request.subagent_type)
        .ok_or_else(|| SpecError::UnknownType(request.subagent_type.clone()))
}

/// The loop of a plain subagent: the lead's, re-specified from its definition.
pub(crate) fn defined_runner(
    env: &SubagentEnv,
    def: &AgentDefinition,
    request: &SpawnRequest,
    task_id: &str,
    depth: u32,
    worktree_note: &str,
) -> Runner {
    let all_tools: Vec<String> = env
        .runner
        .pipeline
        .registry
        .definitions()
        .map(|d| d.name.clone())
        .collect();
    let mut allowed: HashSet<String> = def
        .allowed_tools(all_tools.iter().cloned())
        .unwrap_or_else(|| all_tools.into_iter().collect());
    if depth >= MAX_DEPTH {
        allowed.remove("agent");
    }
    let skills = env
        .runner
        .pipeline
        .registry
        .skills()
        .prompt_section_for(Some(&allowed));
    let mut runner = env.runner.clone();
    runner.spec = AgentSpec {
        id: format!("{}/{task_id}", def.name),
        model: subagent_model(
            request.model.as_deref().or(def.model.as_deref()),
            &env.runner.spec.model,
        ),
        system_prompt: format!("{}{skills}{worktree_note}", def.prompt),
        allowed_tools: Some(allowed),
        max_turns: def.max_turns.unwrap_or(env.default_max_turns),
        max_tokens: env.runner.spec.max_tokens,
    };
    runner
}

/// The model name a subagent uses with the lead's provider: an explicit name, or the
/// lead's for `inherit` and Claude Code's family aliases (`sonnet`, `opus`, `haiku`),
/// which are not model names an API accepts. A `script:` model replays a file's tool
/// calls, so a definition (possibly from a cloned repository) or the lead's request may
/// pick one only when the lead itself runs on a script (tests); otherwise the lead's
/// model is used.
pub(super) fn subagent_model(asked: Option<&str>, lead: &str) -> String {
    match asked.map(str::trim) {
        None | Some("" | "inherit" | "sonnet" | "opus" | "haiku") => lead.to_string(),
        Some(name) if name.starts_with("script:") && !lead.starts_with("script:") => {
            lead.to_string()
        }
        Some(name) => name.to_string(),
    }
}

/// What a confined command in a linked worktree must write to for `git add` and
/// `git commit`: the worktree's private git dir (index, HEAD), the repository's objects,
/// and the ref and reflog directories of this task's own branch. Not the rest of the
/// common dir: its `hooks/` and `config` would let a subagent plant code that runs later
/// in the user's own checkout, and its `refs/` would let it move the user's branches.
pub(super) fn commit_dirs(worktree: &Path) -> Vec<PathBuf> {
    crate::sandbox::landlock::git_writable_dirs(worktree)
}

/// Where a subagent works: its directory, the note telling it so (for its prompt), and
/// its worktree when it has one.
/// The mode of an agent in its own worktree, where it works unattended and confined:
/// dontAsk, or under a lead in auto mode auto (the classifier judges what dontAsk would
/// allow blindly).
pub(super) fn unattended(auto: Option<&crate::auto_mode::AutoMode>) -> PermissionMode {
    match auto {
        Some(auto) if auto.lead_in_auto() => PermissionMode::Auto,
        _ => PermissionMode::DontAsk,
    }
}

pub(super) async fn working_copy(
    env: &SubagentEnv,
    task_id: &str,
    description: &str,
    placement: Placement,
    isolation: Isolation,
) -> Result<(PathBuf, String, Option<(Arc<dyn Workspaces>, PathBuf)>), SpecError> {
    Ok(match (&env.workspaces, placement) {
        (Some(ws), Placement::Worktree) => {
            let root = ws.create(task_id, description).await?;
            let rel = env
                .main_cwd
                .strip_prefix(ws.repo_root())
                .unwrap_or(Path::new(""));
            let cwd = root.join(rel);
            let note = format!(
                "\n\nYou work in your own git worktree at {}. Paths of the main checkout {} map into it: \
use paths inside your worktree. You cannot write outside it.",
                root.display(),
                ws.repo_root().display()
            );
            (cwd, note, Some((ws.clone(), root)))
        }
        (None, _) if isolation == Isolation::Worktree => (
            env.main_cwd.clone(),
            "\n\nThis project is not a git repository, so you work in the main directory."
                .to_string(),
            None,
        ),
        _ => (env.main_cwd.clone(), String::new(), None),
    })
}

#[cfg(test)]
mod model_tests {
    use super::subagent_model;

    #[test]
    fn a_script_model_is_picked_only_under_a_scripted_lead() {
        assert_eq!(
            subagent_model(Some("script:/r/evil.json"), "claude-x"),
            "claude-x"
        );
        assert_eq!(
            subagent_model(Some("script:s.json"), "script:l.json"),
            "script:s.json"
        );
        assert_eq!(subagent_model(Some("gpt-x"), "claude-x"), "gpt-x");
        assert_eq!(subagent_model(Some("inherit"), "claude-x"), "claude-x");
    }
}
