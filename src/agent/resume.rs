//! Resuming finished subagents: when a plain subagent (or a fork) ends, its configuration
//! and whole conversation are kept in the session's [`FinishedAgents`]; a message to it
//! (by task id, agent id or agent type) starts it again in the background as a new task,
//! on top of that conversation, with the message as its next user turn. It keeps its
//! agent id, so its transcript goes on in the same file. A resumed subagent is taken out
//! of the store while it runs (it cannot be resumed twice at once) and put back when it
//! ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ractor::{ActorCell, ActorId};

use super::delegate::SpawnRequest;
use super::runner::AgentSpec;
use super::subagent_actor::{SubagentEnv, start};
use crate::protocol::Message;
use crate::tools::delegate::DelegateError;

/// A subagent that ran to its end, as it can be resumed.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// What it was started with (its type, isolation and, for a fork, its parent).
    pub request: SpawnRequest,
    /// Its configuration (id, system prompt, tools, model).
    pub spec: AgentSpec,
    /// Its conversation at its end.
    pub conversation: Vec<Message>,
    /// How deep it runs (the lead is 0).
    pub depth: u32,
    /// The ids of the tasks it ran as, first one first.
    pub tasks: Vec<String>,
}

pub(crate) use crate::tools::delegate::ResumeRequest;

/// The finished subagents of a session, by agent id. Shared by every agent of the session.
#[derive(Debug, Clone, Default)]
pub struct FinishedAgents {
    inner: Arc<Mutex<HashMap<String, Finished>>>,
}

impl FinishedAgents {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Finished>> {
        // Poisoning only means a holder panicked between two whole updates.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `finished` (replacing an earlier record of the same agent).
    pub fn put(&self, finished: Finished) {
        self.lock().insert(finished.spec.id.clone(), finished);
    }

    /// Takes out the subagent `target` names (see [`ResumeRequest::target`]), or says
    /// why there is none.
    pub fn take(&self, target: &str) -> Result<Finished, DelegateError> {
        let mut map = self.lock();
        let key = find(&map, target)?;
        map.remove(&key)
            .ok_or_else(|| DelegateError::Refused(format!("no finished subagent `{target}`")))
    }

    /// The agent ids of the finished subagents, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// The agent id `target` names among `map`'s: a task id of one of its runs, its agent
/// id, or an agent type held by exactly one.
fn find(map: &HashMap<String, Finished>, target: &str) -> Result<String, DelegateError> {
    let target = target.trim();
    if map.contains_key(target) {
        return Ok(target.to_string());
    }
    if let Some((id, _)) = map
        .iter()
        .find(|(_, f)| f.tasks.iter().any(|t| t == target))
    {
        return Ok(id.clone());
    }
    let of_type: Vec<&String> = map
        .iter()
        .filter(|(_, f)| f.request.subagent_type == target)
        .map(|(id, _)| id)
        .collect();
    match of_type.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            let mut known: Vec<&String> = map.keys().collect();
            known.sort();
            Err(DelegateError::Refused(format!(
                "no finished subagent `{target}` (it may still be running); finished: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )))
        }
        many => {
            let mut ids: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
            ids.sort();
            Err(DelegateError::Refused(format!(
                "{} finished subagents are of type `{target}`: name one by its task or agent id ({})",
                ids.len(),
                ids.join(", ")
            )))
        }
    }
}

/// Resumes the finished subagent `req` names under `parent`, as a new background task
/// owned by `parent`'s agent; returns the task id.
pub(crate) async fn resume(
    parent: ActorCell,
    env: &SubagentEnv,
    req: ResumeRequest,
    children: &mut HashMap<ActorId, String>,
) -> Result<String, DelegateError> {
    let finished = env.finished.take(&req.target)?;
    let mut request = finished.request.clone();
    request.prompt = req.message;
    request.run_in_background = true;
    request.description = format!("resume {}", finished.spec.id);
    let agent_type = request.subagent_type.clone();
    let depth = finished.depth;
    let kept = finished.clone();
    let started = start(
        parent,
        env,
        depth,
        request,
        agent_type,
        Some(Box::new(finished)),
        children,
    )
    .await;
    if started.is_err() {
        env.finished.put(kept);
    }
    started
}

/// The resumed run's user turn: the message, and where the subagent now works.
pub(crate) fn resumed_task(message: &str, worktree_note: &str) -> String {
    if worktree_note.is_empty() {
        return message.to_string();
    }
    format!(
        "{message}\n\n(You were resumed after your earlier run ended. Your earlier worktree is not this one.{worktree_note})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(kind: &str, task: &str) -> Finished {
        Finished {
            request: SpawnRequest {
                description: "d".into(),
                prompt: "p".into(),
                subagent_type: kind.into(),
                run_in_background: false,
                isolation: None,
                model: None,
                fork: None,
                name: None,
                plan_first: false,
            },
            spec: AgentSpec {
                id: format!("{kind}/{task}"),
                model: "m".into(),
                system_prompt: "s".into(),
                allowed_tools: None,
                max_turns: 3,
                max_tokens: 10,
            },
            conversation: vec![Message::user_text("p")],
            depth: 1,
            tasks: vec![task.into()],
        }
    }

    #[test]
    fn finds_by_agent_id_task_id_or_unique_type_and_takes_once() {
        let store = FinishedAgents::default();
        store.put(finished("explore", "t1"));
        store.put(finished("writer", "t2"));
        store.put(finished("writer", "t3"));
        assert_eq!(store.take("t1").unwrap().spec.id, "explore/t1");
        // Taken while it runs: not there a second time.
        // Both are the model's to fix: refusals, not failures.
        let err = store.take("explore").unwrap_err();
        assert!(matches!(err, DelegateError::Refused(_)), "{err:?}");
        assert!(
            err.to_string().contains("no finished subagent `explore`"),
            "{err}"
        );
        let err = store.take("writer").unwrap_err();
        assert!(matches!(err, DelegateError::Refused(_)), "{err:?}");
        assert!(err.to_string().contains("writer/t2, writer/t3"), "{err}");
        assert_eq!(store.take("writer/t3").unwrap().tasks, ["t3"]);
        assert_eq!(store.take("writer").unwrap().spec.id, "writer/t2");
        assert!(store.ids().is_empty());
    }
}
