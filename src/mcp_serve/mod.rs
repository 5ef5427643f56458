//! `crew mcp serve`: crew as an MCP server, over stdio or streamable HTTP.
//!
//! A client sees crew's own tools (`read_file`, `write_file`, `run_command`, …) and four
//! tools of its own: `delegate` (a whole crew lead with its team on this repository) and
//! `task_status` / `task_output` / `task_stop` to follow that work. Every crew tool call
//! runs as a call of the serving session's lead, through the same path a model's call
//! takes (`Pipeline::dispatch`: hooks → permission engine → approver → gate → executor),
//! with the serving side's settings, permission mode, Agent Mode and folder trust. There
//! is nobody to approve an Ask, so Asks are refused (the headless policy). The client
//! chooses only the tool and its arguments: the call id, the caller, the mode and the
//! working directory are the server's, and `_meta` or client capabilities are ignored.
//!
//! Over HTTP a request needs the server's bearer token, the bound address as its Host and
//! no foreign Origin (`auth`); stdio serves the one process that started it.
//!
//! Modules: `auth` (the HTTP listener's credential and Host/Origin checks), `backend` (the serving session and the crew tools), `delegate` (delegated
//! leads as background tasks), `handler` (the rmcp `ServerHandler`), `transport` (stdio
//! and HTTP).

pub(crate) mod auth;
pub(crate) mod backend;
pub(crate) mod delegate;
pub(crate) mod handler;
pub(crate) mod transport;

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::mode::AgentMode;
use crate::permission::PermissionMode;
use crate::session::build::JoinWorkers;

pub(crate) use backend::Backend;
pub(crate) use handler::CrewServer;

/// What `crew mcp serve` runs with: all of it chosen by the serving side.
#[derive(Clone)]
pub(crate) struct ServeConfig {
    /// The project directory the tools and delegated leads work in.
    pub cwd: PathBuf,
    /// The Agent Mode and permission mode of every call.
    pub mode: ServeMode,
    /// The model of delegated leads (`None`: the settings' model, else the default).
    pub model: Option<String>,
    /// The most model turns a delegated lead may take.
    pub max_turns: u32,
    /// Who joins the worker nodes for the serving session and each delegated lead
    /// (`None`: no remote subagents).
    pub workers: Option<Arc<dyn JoinWorkers>>,
}

/// The serving side's mode: `plan` (read-only Agent Mode under the settings' permission
/// mode) or a permission mode name (Chat, under that mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServeMode {
    /// Chat or Plan.
    pub agent: AgentMode,
    /// `None`: the settings' `defaultMode`.
    pub permission: Option<PermissionMode>,
}

/// A `--mode` that is neither `plan` nor a permission mode.
#[derive(Debug, thiserror::Error)]
#[error("--mode {name}: {reason}, or plan")]
pub(crate) struct UnknownServeMode {
    /// The name given.
    pub name: String,
    /// Why it is not a permission mode.
    pub reason: crate::protocol::permission_mode::UnknownMode,
}

impl ServeMode {
    /// Parses `--mode`; `None` is the settings' `defaultMode` in Chat. An unknown name is
    /// an error (the server does not start with a guessed mode).
    pub(crate) fn parse(name: Option<&str>) -> Result<Self, UnknownServeMode> {
        let Some(name) = name else {
            return Ok(Self {
                agent: AgentMode::Chat,
                permission: None,
            });
        };
        if name == "plan" {
            return Ok(Self {
                agent: AgentMode::Plan,
                permission: None,
            });
        }
        match name.parse::<PermissionMode>() {
            Ok(mode) => Ok(Self {
                agent: AgentMode::Chat,
                permission: Some(mode),
            }),
            Err(e) => Err(UnknownServeMode {
                name: name.to_string(),
                reason: e,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_unknown_names_are_refused() {
        let plan = ServeMode::parse(Some("plan")).unwrap();
        assert_eq!((plan.agent, plan.permission), (AgentMode::Plan, None));
        let accept = ServeMode::parse(Some("acceptEdits")).unwrap();
        assert_eq!(accept.permission, Some(PermissionMode::AcceptEdits));
        assert_eq!(ServeMode::parse(None).unwrap().permission, None);
        let err = ServeMode::parse(Some("yolo")).unwrap_err().to_string();
        assert!(err.contains("--mode yolo"), "{err}");
    }
}
