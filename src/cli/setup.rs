//! The command line's flags as a session's [`Options`]: the headless run and the terminal
//! UI both start their session through `session::build::prepare` with these.

use std::sync::Arc;

use super::Cli;
use super::workers::{ClusterFlags, tls_flags};
use crate::session::build::Options;

/// What `cli` asks of the session: its directory, mode, model, limits, the session to
/// resume, MCP config files and the workers to join.
pub fn options(cli: &Cli) -> Options {
    let tls = tls_flags(cli);
    let cluster = ClusterFlags {
        workers: cli.workers.as_deref(),
        cookie_file: cli.cookie_file.as_deref(),
        tls: &tls,
    };
    Options {
        cwd: cli.cwd.clone(),
        permission_mode: cli.permission_mode.clone(),
        model: cli.model.clone(),
        max_turns: cli.max_turns,
        max_budget_usd: cli.max_budget_usd,
        max_concurrent_agents: cli.max_concurrent_agents,
        resume: cli.resume.clone(),
        continue_session: cli.continue_session,
        session_id: cli.session_id.clone(),
        mcp_config: cli.mcp_config.clone(),
        record_requests: cli.record_requests.clone(),
        workers: Some(Arc::new(cluster.owned())),
    }
}
