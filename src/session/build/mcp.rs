//! The session's MCP servers: the configured ones (settings, `.mcp.json`, `--mcp-config`)
//! started together, their tools joining the registry.

use crate::events::EventBus;
use crate::tools::Registry;

use super::Options;

/// Starts the configured MCP servers (all at once, each within the connect timeout), their
/// tools joining `registry`'s dynamic section; a server that fails is named in a warning.
pub(super) async fn start_mcp(
    opts: &Options,
    registry: &Registry,
    events: &EventBus,
    cwd: &std::path::Path,
    project_root: &std::path::Path,
    home: Option<&std::path::Path>,
    warn: &mut dyn FnMut(String),
) -> crate::mcp::McpClients {
    let config = crate::mcp::config::load(project_root, home, &opts.mcp_config, &|v| {
        std::env::var(v).ok()
    });
    for w in config.warnings {
        warn(w);
    }
    for e in config.errors {
        warn(format!("MCP server not started: {e}"));
    }
    let (clients, statuses) = crate::mcp::McpClients::start(
        config.servers,
        registry.dynamic_tools(),
        Some(events.clone()),
        cwd.to_path_buf(),
        crate::mcp::CONNECT_TIMEOUT,
    )
    .await;
    for (server, status) in statuses {
        if !matches!(status, crate::mcp::server_actor::Status::Connected { .. }) {
            warn(format!(
                "MCP server `{}` is not available: {status}",
                server.name
            ));
        }
    }
    clients
}
