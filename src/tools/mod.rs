//! The tool contract: what a tool declares (`Definition`), what it is given when it runs
//! (`ToolContext`), and what it returns. Each tool lives in its own file; the registry
//! holds them in a stable order.

pub(crate) mod agent;
pub(crate) mod background;
pub(crate) mod beneath;
pub(crate) mod cached_read;
pub mod deferred;
pub(crate) mod delegate;
pub mod edit_file;
pub mod find_files;
pub mod read_file;
pub(crate) mod registry;
pub mod rule_names;
pub mod run_command;
pub(crate) mod schema;
pub mod search_code;
pub(crate) mod send_message;
pub(crate) mod skill;
pub(crate) mod task_tools;
pub(crate) mod todo_tools;
pub mod tool_search;
pub(crate) mod walk;
pub mod web_fetch;
pub mod write_file;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::sandbox::{CommandSandbox, NetworkAccess, SandboxProfile};
pub use crew_protocol::tool::{Safety, ToolSpec};
pub use registry::Registry;

use crate::permission::PermissionSpec;

/// The contract a tool publishes: sent to the model (name, description, schema) and
/// used locally (safety, system, timeout, aliases, and the permission spec — the one
/// place that says what the tool is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// The stable name the model calls.
    pub name: String,
    /// Other names that call the tool (Claude Code's, e.g. `Task` for `agent`); the
    /// registry resolves them and rules may use them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// When and why to use the tool, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub input_schema: Value,
    /// Side-effect class.
    pub safety: Safety,
    /// Control-plane tool: passes the AllowedNames filter (never the safety filter).
    pub system: bool,
    /// Per-tool timeout overriding the executor default.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_millis")]
    pub timeout: Option<Duration>,
    /// What the permission engine needs to know (category, rule names, target fields);
    /// `None`: no permission rule covers the tool, and every call asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionSpec>,
}

impl From<&Definition> for ToolSpec {
    fn from(d: &Definition) -> Self {
        Self {
            name: d.name.clone(),
            description: d.description.clone(),
            input_schema: d.input_schema.clone(),
        }
    }
}

/// Everything a tool invocation may rely on besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    /// The calling agent's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// The calling agent's id, for events and logs.
    pub agent_id: String,
    /// Cancelled when the call times out or the turn is cancelled; tools that start
    /// processes kill them when it fires.
    pub cancel: CancellationToken,
    /// OS confinement for commands.
    pub sandbox: CommandSandbox,
    /// Starts subagents on behalf of the calling agent (the `agent` tool).
    pub delegate: Option<std::sync::Arc<dyn delegate::Delegator>>,
    /// The session's task manager (background tasks and the `task_*` tools).
    pub tasks: Option<ractor::ActorRef<crate::tasks::actor::TaskMsg>>,
    /// What `find_files` and `search_code` may show: the session's Read deny rules and
    /// the credential locations (by default, credentials only).
    pub walk: std::sync::Arc<crate::permission::walk::WalkFilter>,
    /// The caller's team and member name (the `todo_*` and message tools); `None`
    /// outside a team.
    pub team: Option<crate::team::TeamHandle>,
    /// The caller's mailbox in its team (`send_message`); `None` outside a team.
    pub mailbox: Option<std::sync::Arc<crate::team::actor::Mailbox>>,
    /// The calling agent as it was when it made this turn's calls, for `agent {fork:
    /// true}` (set by the loop only on turns that call `agent`).
    pub fork: Option<std::sync::Arc<crate::protocol::agent_spec::ForkBase>>,
    /// The tools deferred for the calling agent's run, which `tool_search` searches
    /// (`None`: nothing is deferred).
    pub deferred_tools: Option<std::sync::Arc<[Definition]>>,
    /// A fresh file in the session's `results` directory where a tool may stream an
    /// output too large for the conversation (set by the executor; `None`: no such
    /// directory, so output is only capped).
    pub offload_to: Option<PathBuf>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("agent_id", &self.agent_id)
            .field("sandbox", &self.sandbox)
            .field("delegate", &self.delegate.is_some())
            .field("tasks", &self.tasks.is_some())
            .field("team", &self.team)
            .finish()
    }
}

impl ToolContext {
    /// A context rooted at `cwd` with no sandbox and a fresh cancellation token.
    pub fn new(cwd: impl Into<PathBuf>, agent_id: impl Into<String>) -> Self {
        Self {
            cwd: cwd.into(),
            agent_id: agent_id.into(),
            cancel: CancellationToken::new(),
            sandbox: CommandSandbox::None,
            delegate: None,
            tasks: None,
            mailbox: None,
            walk: std::sync::Arc::new(crate::permission::walk::WalkFilter::credentials_only()),
            team: None,
            fork: None,
            deferred_tools: None,
            offload_to: None,
        }
    }

    /// Resolves a path argument against the agent's cwd (no symlink resolution: the
    /// permission engine has already decided on the real location).
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }
}

/// Why a tool failed; the executor turns it into an error result with a code.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments were well-formed JSON but unusable (names the field).
    #[error("{0}")]
    InvalidInput(String),
    /// The tool ran and failed; the message says why and what to do.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// The error code the model sees.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::InvalidInput(_) => "invalid_arguments",
            ToolError::Failed(_) => "failed",
        }
    }
}

/// A tool implementation.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The tool's contract.
    fn definition(&self) -> &Definition;

    /// The tool as `Any`, for the few callers that need its concrete type (the loop reads
    /// `tool_search`'s deferral threshold); `None` by default.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// Whether the tool streams an output that may be too large for the conversation to
    /// a file as it comes (`ToolContext::offload_to`); false by default, so the executor
    /// finds no fresh file name for the others.
    fn streams_output(&self) -> bool {
        false
    }

    /// Runs the tool on arguments that already passed schema validation.
    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError>;
}

/// Reads an optional field as `T`, naming the field when it has the wrong shape.
pub fn field<T: serde::de::DeserializeOwned>(
    input: &Value,
    name: &str,
) -> Result<Option<T>, ToolError> {
    match input.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| ToolError::InvalidInput(format!("argument `{name}`: {e}"))),
    }
}

/// Reads a required field as `T`, naming the field when it is missing or malformed.
pub fn required<T: serde::de::DeserializeOwned>(input: &Value, name: &str) -> Result<T, ToolError> {
    field(input, name)?
        .ok_or_else(|| ToolError::InvalidInput(format!("missing required argument `{name}`")))
}

/// Serialises an optional duration as milliseconds.
mod opt_millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// The built-in tools, in the order the model sees them.
pub fn builtin_tools() -> Vec<std::sync::Arc<dyn Tool>> {
    vec![
        std::sync::Arc::new(read_file::ReadFile::new()),
        std::sync::Arc::new(write_file::WriteFile::new()),
        std::sync::Arc::new(edit_file::EditFile::new()),
        std::sync::Arc::new(find_files::FindFiles::new()),
        std::sync::Arc::new(search_code::SearchCode::new()),
        std::sync::Arc::new(run_command::RunCommand::new()),
        std::sync::Arc::new(web_fetch::WebFetch::new()),
    ]
}

/// The orchestration tools: `agent` (described with these agent types, name and
/// description: `agent::catalog::Catalog::agent_types`), the background-task tools and the
/// team's work-list tools.
pub fn orchestration_tools(agent_types: &[(String, String)]) -> Vec<std::sync::Arc<dyn Tool>> {
    let tools: Vec<std::sync::Arc<dyn Tool>> = vec![
        std::sync::Arc::new(agent::AgentTool::new(agent_types)),
        std::sync::Arc::new(task_tools::TaskList::new()),
        std::sync::Arc::new(task_tools::TaskOutput::new()),
        std::sync::Arc::new(task_tools::TaskStop::new()),
        std::sync::Arc::new(send_message::SendMessage::new()),
    ];
    tools.into_iter().chain(todo_tools::todo_tools()).collect()
}

/// The definitions of every built-in tool (file, command and orchestration tools), built
/// once. For code that judges calls without a session's registry (`crew permissions
/// check`, tests, benchmarks).
fn builtin_definitions() -> &'static [Definition] {
    static DEFS: std::sync::LazyLock<Vec<Definition>> = std::sync::LazyLock::new(|| {
        // Names, aliases and permission specs are what these serve; the `agent` tool's
        // list of types belongs to a session's catalog.
        builtin_tools()
            .into_iter()
            .chain(orchestration_tools(&[]))
            .map(|t| t.definition().clone())
            .chain([skill::definition()])
            .collect()
    });
    &DEFS
}

/// The definition of the built-in tool called (or aliased) `name`.
pub fn builtin_definition(name: &str) -> Option<&'static Definition> {
    builtin_definitions()
        .iter()
        .find(|d| d.name == name || d.aliases.iter().any(|a| a == name))
}

/// The built-in tool whose own rule name is `rule` (`Read` → `read_file`).
pub fn builtin_tool_for_rule(rule: crate::permission::RuleName) -> Option<&'static Definition> {
    builtin_definitions().iter().find(|d| {
        d.permission
            .as_ref()
            .and_then(PermissionSpec::own_rule_name)
            == Some(rule)
    })
}

/// The permission spec of the built-in tool called (or aliased) `name`, read from its
/// definition; an `mcp__server__tool` name gets the MCP spec.
pub fn builtin_permission(name: &str) -> Option<PermissionSpec> {
    if name.starts_with("mcp__") && name.len() > 5 {
        return Some(PermissionSpec::mcp());
    }
    builtin_definition(name).and_then(|d| d.permission.clone())
}
