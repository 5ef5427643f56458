//! `/mcp`: the session's MCP servers — where each is configured, how it is reached, its
//! status, and its tools (read-only ones marked) — as one notice in the transcript. Names
//! and statuses come from the servers, so each passes the sanitizer as one line.

use crate::mcp::config::ServerConfig;
use crate::mcp::server_actor::Status;
use crate::sanitize::clean_line;
use crate::tools::Safety;

/// The `/mcp` text for the servers' current statuses.
pub(crate) fn render(servers: &[(ServerConfig, Status)]) -> String {
    if servers.is_empty() {
        return "No MCP servers in this session. Add one with `crew mcp add NAME -- COMMAND …` \
                or a project `.mcp.json`; `crew mcp list` shows them all."
            .into();
    }
    let mut out = format!("MCP servers ({}):", servers.len());
    for (config, status) in servers {
        out.push_str(&format!(
            "\n  {}  {}  {} ({})",
            clean_line(&config.name),
            clean_line(&status_line(status)),
            config.transport.kind(),
            config.scope.as_str()
        ));
        if let Status::Connected { tools } = status {
            if tools.is_empty() {
                out.push_str("\n    no tools");
            }
            for (name, safety) in tools {
                let mark = match safety {
                    Safety::ReadOnly => " (read-only)",
                    Safety::SideEffect => "",
                };
                out.push_str(&format!("\n    {}{mark}", clean_line(name)));
            }
        }
    }
    out.push_str("\nRules name them `mcp__<server>` or `mcp__<server>__<tool>`.");
    out
}

fn status_line(status: &Status) -> String {
    match status {
        Status::Connected { tools } => format!("connected, {} tool(s)", tools.len()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::{Scope, Transport};

    fn server(name: &str) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport: Transport::Stdio {
                command: "srv".into(),
                args: Vec::new(),
                env: Default::default(),
            },
            scope: Scope::Project,
            file: ".mcp.json".into(),
        }
    }

    #[test]
    fn lists_each_server_with_status_and_tools() {
        let text = render(&[
            (
                server("time"),
                Status::Connected {
                    tools: vec![
                        ("mcp__time__get_current_time".into(), Safety::ReadOnly),
                        ("mcp__time__convert_time".into(), Safety::SideEffect),
                    ],
                },
            ),
            (
                server("gone"),
                Status::Failed {
                    reason: "exited with status 1".into(),
                },
            ),
        ]);
        assert!(text.starts_with("MCP servers (2):"), "{text}");
        assert!(text.contains("time  connected, 2 tool(s)  stdio"), "{text}");
        assert!(text.contains("    mcp__time__get_current_time (read-only)"));
        assert!(text.contains("    mcp__time__convert_time\n"));
        assert!(
            text.contains("gone  failed: exited with status 1"),
            "{text}"
        );
    }

    #[test]
    fn says_how_to_add_a_server_when_there_is_none() {
        assert!(render(&[]).contains("crew mcp add"));
    }
}
