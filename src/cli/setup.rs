//! The command line's flags as a session's [`Options`]: the headless run and the terminal
//! UI both start their session through `session::build::prepare` with these.

use std::sync::Arc;

use super::Cli;
use super::workers::{ClusterFlags, tls_flags};
use crate::session::build::Options;

/// What `cli` asks of the session: its directory, mode, model, limits, the session to
/// resume, MCP config files and the workers to join.
pub(crate) fn options(cli: &Cli) -> Options {
    let tls = tls_flags(cli);
    let cluster = ClusterFlags {
        workers: cli.workers.as_deref(),
        cookie_file: cli.cookie_file.as_deref(),
        tls: &tls,
    };
    Options {
        cwd: cli.cwd.clone(),
        permission_mode: match cli.permission_mode.as_deref() {
            _ if cli.dangerously_skip_permissions => Some("bypassPermissions".into()),
            // Claude Code's `plan` is an agent mode here (see `agent_mode`).
            Some("plan") => None,
            other => other.map(str::to_string),
        },
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
        tool_rules: crate::session::build::ToolRules {
            allow: cli.allowed_tools.clone(),
            deny: cli.disallowed_tools.clone(),
            add_dirs: cli.add_dir.clone(),
        },
        system_prompt: cli.system_prompt.clone(),
        append_system_prompt: cli.append_system_prompt.clone(),
        agents_json: cli.agents.clone(),
        agent: cli.agent.clone(),
        plugin_dirs: cli.plugin_dir.clone(),
    }
}

/// Why the flags name no agent mode to start in.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModeFlagError {
    /// `--permission-mode plan` beside a `--mode` (named) other than chat.
    #[error("--permission-mode plan asks for plan mode; it cannot be combined with --mode {0}")]
    PlanBesideMode(String),
    /// `--mode` names no agent mode: the mode parser's message, which lists them.
    #[error("{0}")]
    UnknownMode(String),
}

/// The agent mode a headless run starts in: `--mode`, or plan for Claude Code's
/// `--permission-mode plan`.
pub(crate) fn agent_mode(cli: &Cli) -> Result<crate::agent::mode::AgentMode, ModeFlagError> {
    match cli.permission_mode.as_deref() {
        Some("plan") if cli.mode == "chat" => Ok(crate::agent::mode::AgentMode::Plan),
        Some("plan") => Err(ModeFlagError::PlanBesideMode(cli.mode.clone())),
        _ => cli.mode.parse().map_err(ModeFlagError::UnknownMode),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn every_session_flag_reaches_the_options() {
        let cli = Cli::try_parse_from([
            "crew",
            "--cwd",
            "/tmp/p",
            "--permission-mode",
            "acceptEdits",
            "--model",
            "script:/tmp/s.json",
            "--max-turns",
            "7",
            "--max-budget-usd",
            "1.5",
            "--max-concurrent-agents",
            "3",
            "--resume",
            "abc",
            "--mcp-config",
            "/tmp/a.json",
            "--mcp-config",
            "/tmp/b.json",
            "--record-requests",
            "/tmp/r.jsonl",
            "--workers",
            "127.0.0.1:9",
            "--plugin-dir",
            "/tmp/kit",
            "--plugin-dir",
            "/tmp/other",
        ])
        .unwrap();
        let o = options(&cli);
        assert_eq!(o.cwd.as_deref(), Some(std::path::Path::new("/tmp/p")));
        assert_eq!(o.permission_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(o.model.as_deref(), Some("script:/tmp/s.json"));
        assert_eq!(o.max_turns, 7);
        assert_eq!(o.max_budget_usd, Some(1.5));
        assert_eq!(o.max_concurrent_agents, Some(3));
        assert_eq!(o.resume.as_deref(), Some("abc"));
        assert!(!o.continue_session && o.session_id.is_none());
        assert_eq!(o.mcp_config.len(), 2);
        assert_eq!(
            o.record_requests.as_deref(),
            Some(std::path::Path::new("/tmp/r.jsonl"))
        );
        assert!(o.workers.is_some());
        assert_eq!(
            o.plugin_dirs,
            [
                std::path::PathBuf::from("/tmp/kit"),
                std::path::PathBuf::from("/tmp/other")
            ]
        );
        let o = options(&Cli::try_parse_from(["crew", "-c"]).unwrap());
        assert!(o.continue_session && o.resume.is_none());
        assert_eq!(o.max_turns, 100);
        let o = options(&Cli::try_parse_from(["crew", "--session-id", "s1"]).unwrap());
        assert_eq!(o.session_id.as_deref(), Some("s1"));
    }
}
