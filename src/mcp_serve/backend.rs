//! The serving session: one crew session whose lead never runs a model; each crew tool
//! call a client makes is dispatched as a call of that lead (`LeadMsg::Dispatch`), so it
//! takes the lead's whole call path with the serving side's settings, mode and trust.

use std::time::Duration;

use anyhow::Context;
use ractor::rpc::CallResult;
use serde_json::Value;

use super::ServeConfig;
use super::delegate::Delegates;
use crate::agent::lead_actor::LeadMsg;
use crate::approver::actor::ApproverPolicy;
use crate::permission::PermissionMode;
use crate::protocol::{ToolCall, ToolResult};
use crate::session::build::{Options, Prepared, prepare};
use crate::tools::Definition;

/// Extra time beyond a tool's own timeout before a dispatched call counts as lost.
const DISPATCH_MARGIN: Duration = Duration::from_secs(60);

/// The serving session and what a client may call on it.
pub(crate) struct Backend {
    prepared: Prepared,
    config: ServeConfig,
    tools: Vec<Definition>,
    delegates: Delegates,
}

/// What a session of the server is prepared from: the serving side's directory,
/// permission mode, model and workers, nothing from a client.
pub(crate) fn session_options(config: &ServeConfig, permission: Option<PermissionMode>) -> Options {
    Options {
        cwd: Some(config.cwd.clone()),
        permission_mode: permission.map(|mode| mode.as_str().to_string()),
        model: config.model.clone(),
        max_turns: config.max_turns,
        max_budget_usd: None,
        max_concurrent_agents: None,
        resume: None,
        continue_session: false,
        session_id: None,
        mcp_config: Vec::new(),
        record_requests: None,
        workers: config.workers.clone(),
        tool_rules: Default::default(),
        system_prompt: None,
        append_system_prompt: None,
        agents_json: None,
        agent: None,
        plugin_dirs: Vec::new(),
    }
}

impl Backend {
    /// Starts the serving session in `config.cwd`; settings warnings go to `warn`.
    pub(crate) async fn start(
        config: ServeConfig,
        warn: &mut dyn FnMut(String),
    ) -> anyhow::Result<Self> {
        let opts = session_options(&config, config.mode.permission);
        let prepared = prepare(&opts, ApproverPolicy::Headless, warn).await?;
        // The file and command tools; the orchestration tools stay inside crew (a client
        // delegates whole tasks with `delegate`).
        let tools = crate::tools::builtin_tools()
            .iter()
            .map(|t| t.definition().clone())
            .collect();
        let tasks = prepared
            .session
            .tasks()
            .cloned()
            .context("the serving session has no task manager")?;
        let delegates = Delegates::new(
            tasks,
            config.clone(),
            prepared.permission_mode,
            prepared.project_root.clone(),
        );
        Ok(Self {
            prepared,
            config,
            tools,
            delegates,
        })
    }

    /// The crew tools a client may call, in the order a model sees them.
    pub(crate) fn tools(&self) -> &[Definition] {
        &self.tools
    }

    /// The delegated leads.
    pub(crate) fn delegates(&self) -> &Delegates {
        &self.delegates
    }

    /// The permission mode calls run under.
    pub(crate) fn permission_mode(&self) -> PermissionMode {
        self.prepared.permission_mode
    }

    /// Runs one crew tool call from a client as a call of the serving lead. A name that is
    /// not one of [`Backend::tools`] is refused before anything runs.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> ToolResult {
        let id = format!("mcp_{}", uuid::Uuid::new_v4().simple());
        let Some(def) = self.tools.iter().find(|d| d.name == name) else {
            let known: Vec<&str> = self.tools.iter().map(|d| d.name.as_str()).collect();
            return ToolResult::error(
                &id,
                "unknown_tool",
                format!(
                    "no tool `{name}` on this server (tools: {}, delegate, task_status, task_output, task_stop)",
                    known.join(", ")
                ),
            );
        };
        let arguments = Value::Object(arguments.unwrap_or_default()).to_string();
        let call = ToolCall {
            id: id.clone(),
            name: def.name.clone(),
            arguments,
        };
        let timeout = def.timeout.unwrap_or(crate::executor::DEFAULT_TIMEOUT) + DISPATCH_MARGIN;
        let mode = self.config.mode.agent;
        match self
            .prepared
            .session
            .lead()
            .call(
                |reply| LeadMsg::Dispatch { mode, call, reply },
                Some(timeout),
            )
            .await
        {
            Ok(CallResult::Success(result)) => explain(result),
            _ => ToolResult::error(
                &id,
                "failed",
                "the serving session did not answer; the call may not have run",
            ),
        }
    }

    /// Stops delegated leads still running, then the serving session.
    pub(crate) async fn shutdown(self) {
        self.delegates.stop_all().await;
        self.prepared.close().await;
    }
}

/// Adds to a refusal that this server has nobody to approve calls and how to allow them.
fn explain(mut result: ToolResult) -> ToolResult {
    // Only a refused Ask (the headless approver's answer), not a hard deny.
    if result.error_code.as_deref() == Some("permission_denied")
        && result.content.contains("headless mode")
    {
        result.content.push_str(
            "\n(crew mcp serve runs without a human to approve calls: an Ask is refused. \
             The serving side allows more with permission rules in its settings or with `crew mcp serve --mode`.)",
        );
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_served_session_takes_the_servers_directory_mode_and_model_and_nothing_else() {
        let config = ServeConfig {
            cwd: "/srv/repo".into(),
            mode: super::super::ServeMode::parse(Some("plan")).unwrap(),
            model: Some("openai:gpt".into()),
            max_turns: 12,
            workers: None,
        };
        let o = session_options(&config, Some(PermissionMode::AcceptEdits));
        assert_eq!(o.cwd.as_deref(), Some(std::path::Path::new("/srv/repo")));
        // The name `prepare` parses back to the mode it was given.
        let name = o.permission_mode.clone().unwrap();
        assert_eq!(
            PermissionMode::parse_lenient(&name),
            (PermissionMode::AcceptEdits, None)
        );
        assert_eq!(o.model.as_deref(), Some("openai:gpt"));
        assert_eq!(o.max_turns, 12);
        assert!(o.resume.is_none() && !o.continue_session && o.session_id.is_none());
        assert!(o.mcp_config.is_empty() && o.record_requests.is_none());
        assert!(o.max_budget_usd.is_none() && o.max_concurrent_agents.is_none());
        assert!(session_options(&config, None).permission_mode.is_none());
    }
}
