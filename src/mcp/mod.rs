//! The Model Context Protocol, on the official SDK (`rmcp`). The client side: which
//! servers are configured (`config`), one actor per server that connects, restarts and
//! shuts it down (`server_actor`, `connect`), and each server tool as a crew tool in the
//! registry's dynamic section (`tool`, `names`). [`McpClients`] starts a session's servers
//! together and stops them together. The server side, `crew mcp serve`, is the front end `mcp_serve`.

pub mod config;
pub(crate) mod config_edit;
pub(crate) mod connect;
pub(crate) mod names;
pub mod server_actor;
pub(crate) mod tool;

use std::path::PathBuf;
use std::time::Duration;

use ractor::{Actor, ActorRef};

use crate::events::EventBus;
use crate::tools::registry::DynamicTools;
use config::ServerConfig;
use server_actor::{McpMsg, McpServer, McpServerArgs, Status};

/// How long a server may take to start (handshake and first tool listing) by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A session's MCP servers, each run by its actor.
#[derive(Default)]
pub struct McpClients {
    servers: Vec<(ServerConfig, ActorRef<McpMsg>)>,
}

impl McpClients {
    /// Starts an actor per server, all at once, and waits until each has connected or
    /// failed (each within `timeout`; one slow or failing server never holds up the
    /// others beyond that). Returns the clients and each server's status; failures are
    /// also published on `events`.
    pub async fn start(
        servers: Vec<ServerConfig>,
        tools: DynamicTools,
        events: Option<EventBus>,
        cwd: PathBuf,
        timeout: Duration,
    ) -> (Self, Vec<(ServerConfig, Status)>) {
        let mut started = Vec::new();
        let mut statuses = Vec::new();
        for config in servers {
            let args = McpServerArgs {
                config: config.clone(),
                tools: tools.clone(),
                events: events.clone(),
                cwd: cwd.clone(),
                connect_timeout: timeout,
            };
            match Actor::spawn(None, McpServer, args).await {
                Ok((actor, _)) => started.push((config, actor)),
                Err(e) => statuses.push((
                    config,
                    Status::Failed {
                        reason: format!("its actor could not start: {e}"),
                    },
                )),
            }
        }
        // A little beyond the actor's own timeout, which answers `Ready` itself.
        let bound = timeout + Duration::from_secs(5);
        let ready = futures::future::join_all(started.iter().map(|(_, actor)| async move {
            match actor.call(McpMsg::Ready, Some(bound)).await {
                Ok(ractor::rpc::CallResult::Success(status)) => status,
                _ => Status::Failed {
                    reason: format!("it did not start within {}s", timeout.as_secs()),
                },
            }
        }))
        .await;
        statuses.extend(started.iter().map(|(c, _)| c.clone()).zip(ready));
        (Self { servers: started }, statuses)
    }

    /// Whether no server runs.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Each server's status now.
    pub async fn statuses(&self) -> Vec<(ServerConfig, Status)> {
        let all = futures::future::join_all(self.servers.iter().map(|(c, actor)| async move {
            let status = match actor
                .call(McpMsg::Status, Some(Duration::from_secs(5)))
                .await
            {
                Ok(ractor::rpc::CallResult::Success(status)) => status,
                _ => Status::Failed {
                    reason: "its actor is not answering".into(),
                },
            };
            (c.clone(), status)
        }));
        all.await
    }

    /// Shuts every server down (concurrently) and waits until each process group is gone.
    pub async fn shutdown(self) {
        futures::future::join_all(self.servers.iter().map(|(_, actor)| async move {
            // Closing stdin, then SIGTERM and SIGKILL, fit well inside this bound.
            let _ = actor
                .call(McpMsg::Shutdown, Some(Duration::from_secs(15)))
                .await;
        }))
        .await;
    }
}
