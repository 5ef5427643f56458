//! `agent` (alias `Task`): start a subagent, or with `fork: true` a fork of the caller
//! (see `agent::fork`). In the foreground it waits for the
//! subagent's final answer; in the background it returns the task id at once and the
//! caller is notified when the task ends.

use std::time::Duration;

use async_trait::async_trait;
use ractor::rpc::CallResult;
use serde_json::{Value, json};

use super::delegate::SpawnRequest;
use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};
use crate::tasks::TaskStatus;
use crate::tasks::actor::TaskMsg;

/// The longest a foreground subagent may run before the call gives up.
pub(crate) const FOREGROUND_LIMIT: Duration = Duration::from_secs(2 * 3600);

/// The `agent` tool.
pub(crate) struct AgentTool {
    def: Definition,
}

impl AgentTool {
    /// The tool, describing these agent types (name, description) to the model.
    pub(crate) fn new(agent_types: &[(String, String)]) -> Self {
        let types: Vec<String> = agent_types
            .iter()
            .map(|(name, description)| format!("- {name}: {description}"))
            .collect();
        Self {
            def: Definition {
                name: "agent".into(),
                description: format!(
                    "Delegate a self-contained part of the work to a subagent. Each subagent works in its own git \
worktree (so parallel subagents never collide), cannot ask the user anything, and returns a final report. \
Give it a complete, specific prompt: it does not see this conversation (unless you fork: fork: true). Set run_in_background to start \
several in parallel; you are notified as each finishes, and task_output/task_stop manage them.\n\n\
Agent types (subagent_type):\n{}",
                    types.join("\n")
                ),
                input_schema: schema::object(
                    &[
                        (
                            "description",
                            json!({"type": "string", "description": "A short (3-5 word) description of the task."}),
                        ),
                        (
                            "prompt",
                            json!({"type": "string", "description": "The complete task for the subagent."}),
                        ),
                        (
                            "subagent_type",
                            json!({"type": "string", "description": "Which agent type to use."}),
                        ),
                        (
                            "run_in_background",
                            json!({"type": "boolean", "description": "Return the task id at once instead of waiting."}),
                        ),
                        (
                            "isolation",
                            json!({"type": "string", "enum": ["worktree", "none"], "description": "worktree (default) or none (work in the main checkout): none is refused unless the agent type is read-only (e.g. explore, plan)."}),
                        ),
                        (
                            "model",
                            json!({"type": "string", "description": "Model override for this subagent."}),
                        ),
                        (
                            "name",
                            json!({"type": "string", "description": "Make it a named teammate: it stays alive between assignments, in its own worktree, and you talk to it with send_message {to: name}. You are told when it goes idle; it reports by message."}),
                        ),
                        (
                            "plan_first",
                            json!({"type": "boolean", "description": "For a teammate: it works in Plan mode and sends you its plan (plan_approval_request); it goes on only after you answer plan_approval_response {approve: true}."}),
                        ),
                        (
                            "fork",
                            json!({"type": "boolean", "description": "Fork yourself: the child inherits this whole conversation (no need to repeat context in the prompt), your tools and model, works in its own worktree, and reports back like a subagent. subagent_type is then not needed."}),
                        ),
                    ],
                    &["description", "prompt"],
                ),
                safety: Safety::SideEffect,
                system: false,
                timeout: Some(FOREGROUND_LIMIT + Duration::from_secs(60)),
                aliases: vec!["Task".into()],
                permission: Some(
                    PermissionSpec::new(
                        Category::Exec,
                        [RuleName::Agent],
                        TargetSpec::Agent {
                            field: "subagent_type".into(),
                            default: "general-purpose".into(),
                        },
                    )
                    .requiring(&["prompt"]),
                ),
            },
        }
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let fork: bool = field(&input, "fork")?.unwrap_or(false);
        let fork = if fork {
            if ctx.agent_id.starts_with("fork/") {
                return Err(ToolError::Failed(
                    "a fork cannot start forks; use a subagent_type instead".into(),
                ));
            }
            let Some(base) = ctx.fork.clone() else {
                return Err(ToolError::Failed(
                    "forks are not available in this context".into(),
                ));
            };
            Some(base)
        } else {
            None
        };
        let subagent_type = match &fork {
            Some(_) => crate::protocol::agent_spec::FORK_TYPE.to_string(),
            None => required(&input, "subagent_type")?,
        };
        let request = SpawnRequest {
            description: required(&input, "description")?,
            prompt: required(&input, "prompt")?,
            subagent_type,
            run_in_background: field(&input, "run_in_background")?.unwrap_or(false),
            isolation: field(&input, "isolation")?,
            model: field(&input, "model")?,
            name: field(&input, "name")?,
            plan_first: field(&input, "plan_first")?.unwrap_or(false),
            fork,
        };
        if request.plan_first && request.name.is_none() {
            return Err(ToolError::InvalidInput(
                "`plan_first` is for teammates: give the agent a `name`".into(),
            ));
        }
        let (Some(delegate), Some(tasks)) = (&ctx.delegate, &ctx.tasks) else {
            return Err(ToolError::Failed(
                "subagents are not available in this session".into(),
            ));
        };
        if let Some(name) = request.name.clone() {
            // A teammate lives on: the answer is that it started, not its report.
            let id = delegate
                .spawn(request)
                .await
                .map_err(|e| ToolError::Failed(e.to_string()))?;
            return Ok(format!(
                "Teammate {name} started ({id}). It works on its prompt now and stays available; message it with send_message {{to: \"{name}\"}}. You are told when it goes idle."
            ));
        }
        let background = request.run_in_background;
        let kind = request.subagent_type.clone();
        let id = delegate
            .spawn(request)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        if background {
            return Ok(format!(
                "Started background task {id} (subagent `{kind}`). You will be notified when it ends; \
use task_output to see its progress or task_stop to stop it."
            ));
        }
        let wait = tasks.call(|r| TaskMsg::Wait(id.clone(), r), Some(FOREGROUND_LIMIT));
        let record = tokio::select! {
            r = wait => match r {
                Ok(CallResult::Success(Some(rec))) => rec,
                _ => return Err(ToolError::Failed(format!("lost track of subagent task {id}"))),
            },
            _ = ctx.cancel.cancelled() => {
                let _ = tasks.cast(TaskMsg::Stop(id.clone(), ractor::concurrency::oneshot().0.into()));
                return Err(ToolError::Failed(format!("cancelled; subagent task {id} was stopped")));
            }
        };
        let result = record.result.unwrap_or_default();
        match record.status {
            TaskStatus::Completed => Ok(result),
            TaskStatus::MaxTurns => Ok(format!("(the subagent hit its turn limit)\n{result}")),
            other => Err(ToolError::Failed(format!(
                "subagent task {id} {}: {result}",
                other.as_str()
            ))),
        }
    }
}
