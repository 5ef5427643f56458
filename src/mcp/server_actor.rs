//! One actor per configured MCP server. It connects (in a spawned task, so the session's
//! other servers never wait on it), lists the server's tools into the registry's dynamic
//! section, refreshes them on `tools/list_changed`, restarts a crashed stdio server with
//! backoff, and shuts the server down cleanly (its whole process group) at session end.
//!
//! Calls do not pass through the actor: a tool asks it for the connection's peer and
//! calls the server directly, so slow calls run concurrently. A server that is down
//! answers at once with the reason (no hang); one that is starting answers when the
//! handshake ends, within the connect timeout.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rmcp::RoleClient;
use rmcp::service::Peer;
use tokio::sync::oneshot;

use super::config::ServerConfig;
use super::connect::{ConnectError, Connection, Handler, RefreshError, Service, connect};
use super::tool::McpTool;
use crate::events::{EventBus, EventKind};
use crate::sandbox::process::{GroupChild, KILL_GRACE, terminate_group};
use crate::tools::registry::DynamicTools;
use crate::tools::{Safety, Tool};

/// The first restart waits this long; each further one twice as long.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Consecutive failed restarts after which the server is given up.
const MAX_RESTARTS: u32 = 8;
/// A connection that lived this long resets the backoff.
const STABLE_AFTER: Duration = Duration::from_secs(10);

/// A server's state, as `crew mcp list` and the `/mcp` view show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The handshake is under way.
    Connecting,
    /// Connected; its tools (registry names and safety) are registered.
    Connected {
        /// `(registry name, safety)` of each tool.
        tools: Vec<(String, Safety)>,
    },
    /// It stopped; a restart is scheduled.
    Restarting {
        /// Why it stopped.
        reason: String,
    },
    /// Not running, and not coming back this session.
    Failed {
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Connecting => f.write_str("connecting"),
            Status::Connected { .. } => f.write_str("connected"),
            Status::Restarting { reason } => write!(f, "restarting: {reason}"),
            Status::Failed { reason } => write!(f, "failed: {reason}"),
        }
    }
}

/// Why a server's tools cannot be called now; its text is the tool's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// It stopped and a restart is scheduled.
    #[error(
        "MCP server `{name}` is not running ({reason}); it is being restarted, try again shortly"
    )]
    Restarting {
        /// The server's name.
        name: String,
        /// Why it stopped.
        reason: String,
    },
    /// It stopped and will not be restarted (too many restarts, or a failure that a
    /// restart cannot mend).
    #[error("MCP server `{name}` is not available: {reason}")]
    GaveUp {
        /// The server's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Its HTTP connection closed just now; it is reconnecting.
    #[error("MCP server `{name}`: the connection closed; reconnecting")]
    Reconnecting {
        /// The server's name.
        name: String,
    },
    /// Not connected (yet).
    #[error("MCP server `{name}` is not connected")]
    NotConnected {
        /// The server's name.
        name: String,
    },
}

/// Messages of a server's actor.
pub enum McpMsg {
    /// The peer to call tools on, or why the server cannot be called now.
    Peer(RpcReplyPort<Result<Peer<RoleClient>, Unavailable>>),
    /// The status once the current connection attempt has ended.
    Ready(RpcReplyPort<Status>),
    /// The status now.
    Status(RpcReplyPort<Status>),
    /// A connection attempt ended (internal).
    Connected {
        /// Which attempt.
        generation: u64,
        /// The connection and its tools, or why it failed.
        result: Box<Result<(Connection, Vec<rmcp::model::Tool>), ConnectError>>,
    },
    /// The stdio server's process exited (internal).
    Exited {
        /// Which connection.
        generation: u64,
        /// How it ended.
        reason: String,
    },
    /// Time to restart (internal).
    Restart {
        /// The connection that died.
        generation: u64,
    },
    /// The server said its tools changed (internal, from the client handler).
    ToolsChanged {
        /// Which connection.
        generation: u64,
    },
    /// A refreshed tool list (internal).
    ToolsListed {
        /// Which connection.
        generation: u64,
        /// The tools, or why listing failed.
        result: Result<Vec<rmcp::model::Tool>, RefreshError>,
    },
    /// Close the connection, end the process group, drop the tools, then stop.
    Shutdown(RpcReplyPort<()>),
}

// Local-only: never sent across nodes (the `cluster` feature of ractor requires the impl).
impl ractor::Message for McpMsg {}

/// The actor (configuration only).
pub struct McpServer;

/// What a server's actor is built from.
pub struct McpServerArgs {
    /// The server.
    pub config: ServerConfig,
    /// Where its tools go.
    pub tools: DynamicTools,
    /// Where failures and restarts are reported.
    pub events: Option<EventBus>,
    /// A stdio server's working directory.
    pub cwd: PathBuf,
    /// How long a handshake (and the first tool listing) may take.
    pub connect_timeout: Duration,
}

/// A live connection's parts the actor keeps.
struct Live {
    service: Service,
    /// A stdio server's watcher: sending on (or dropping) the sender ends the process
    /// group; the handle finishes once the group is gone.
    watcher: Option<(oneshot::Sender<()>, tokio::task::JoinHandle<()>)>,
    since: Instant,
    tools: Vec<(String, Safety)>,
}

enum Phase {
    Connecting,
    Live(Box<Live>),
    Down { reason: String, retry: bool },
}

/// The actor's state.
pub struct McpServerState {
    args: McpServerArgs,
    generation: u64,
    phase: Phase,
    restarts: u32,
    waiting_peer: Vec<RpcReplyPort<Result<Peer<RoleClient>, Unavailable>>>,
    waiting_ready: Vec<RpcReplyPort<Status>>,
}

impl McpServerState {
    fn status(&self) -> Status {
        match &self.phase {
            Phase::Connecting => Status::Connecting,
            Phase::Live(l) => Status::Connected {
                tools: l.tools.clone(),
            },
            Phase::Down {
                reason,
                retry: true,
            } => Status::Restarting {
                reason: reason.clone(),
            },
            Phase::Down { reason, .. } => Status::Failed {
                reason: reason.clone(),
            },
        }
    }

    fn report(&self, message: String) {
        if let Some(events) = &self.args.events {
            events.publish("mcp", EventKind::Error { message });
        }
    }

    /// Starts connection attempt number `generation + 1` in a spawned task.
    fn start_connect(&mut self, me: &ActorRef<McpMsg>) {
        self.generation += 1;
        self.phase = Phase::Connecting;
        let generation = self.generation;
        let handler = Handler {
            actor: me.clone(),
            generation,
        };
        let transport = self.args.config.transport.clone();
        let cwd = self.args.cwd.clone();
        let sandbox = sandbox_for(&self.args.config, &cwd);
        let timeout = self.args.connect_timeout;
        let me = me.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = match connect(&transport, handler, &cwd, &sandbox, timeout).await {
                Ok(conn) => {
                    let left = timeout
                        .saturating_sub(started.elapsed())
                        .max(Duration::from_secs(1));
                    match tokio::time::timeout(left, conn.service.peer().list_all_tools()).await {
                        Ok(Ok(tools)) => Ok((conn, tools)),
                        Ok(Err(e)) => {
                            close(conn).await;
                            Err(ConnectError::ListTools(e.to_string()))
                        }
                        Err(_) => {
                            close(conn).await;
                            Err(ConnectError::ListTimeout)
                        }
                    }
                }
                Err(e) => Err(e),
            };
            let _ = me.cast(McpMsg::Connected {
                generation,
                result: Box::new(result),
            });
        });
    }

    /// Registers `listed` as the server's tools; returns their names and safety.
    fn register(
        &self,
        me: &ActorRef<McpMsg>,
        listed: Vec<rmcp::model::Tool>,
    ) -> Vec<(String, Safety)> {
        let server = &self.args.config.name;
        let tools: Vec<Arc<dyn Tool>> = listed
            .into_iter()
            .map(|t| Arc::new(McpTool::new(server, t, me.clone())) as Arc<dyn Tool>)
            .collect();
        let shown: Vec<(String, Safety)> = tools
            .iter()
            .map(|t| (t.definition().name.clone(), t.definition().safety))
            .collect();
        let skipped = self.args.tools.set(server, tools);
        if !skipped.is_empty() {
            self.report(format!(
                "MCP server `{server}`: tools not added because their names are taken: {}",
                skipped.join(", ")
            ));
        }
        shown
            .into_iter()
            .filter(|(n, _)| !skipped.contains(n))
            .collect()
    }

    fn answer_waiters(&mut self) {
        let status = self.status();
        let peer = match &self.phase {
            Phase::Live(l) => Ok(l.service.peer().clone()),
            _ => Err(self.unavailable()),
        };
        for port in self.waiting_peer.drain(..) {
            let _ = port.send(peer.clone());
        }
        for port in self.waiting_ready.drain(..) {
            let _ = port.send(status.clone());
        }
    }

    fn unavailable(&self) -> Unavailable {
        let name = self.args.config.name.clone();
        match &self.phase {
            Phase::Down {
                reason,
                retry: true,
            } => Unavailable::Restarting {
                name,
                reason: reason.clone(),
            },
            Phase::Down { reason, .. } => Unavailable::GaveUp {
                name,
                reason: reason.clone(),
            },
            _ => Unavailable::NotConnected { name },
        }
    }

    /// The connection died (or a restart failed): schedule a restart with backoff, or give up.
    fn went_down(&mut self, me: &ActorRef<McpMsg>, reason: String) {
        let name = self.args.config.name.clone();
        if self.restarts >= MAX_RESTARTS {
            self.phase = Phase::Down {
                reason: format!("{reason}; gave up after {MAX_RESTARTS} restarts"),
                retry: false,
            };
            self.report(format!(
                "MCP server `{name}` stopped and was not restarted: {reason}"
            ));
            return;
        }
        let delay = FIRST_BACKOFF
            .saturating_mul(1 << self.restarts.min(16))
            .min(MAX_BACKOFF);
        self.restarts += 1;
        self.report(format!(
            "MCP server `{name}` stopped ({reason}); restarting in {}ms",
            delay.as_millis()
        ));
        self.phase = Phase::Down {
            reason,
            retry: true,
        };
        let generation = self.generation;
        let me = me.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = me.cast(McpMsg::Restart { generation });
        });
    }
}

/// Closes a connection that never went live.
async fn close(conn: Connection) {
    let _ = conn.service.cancel().await;
    if let Some(mut child) = conn.child {
        child.terminate().await;
    }
    super::connect::finish(&conn.guard);
}

/// How a stdio server is confined: a project's server (`.mcp.json`, the project's
/// settings) runs sandboxed in the write profile, like an agent's command, writing only
/// below `cwd` — its command line may be `npx some-package`, which no trust pin can
/// cover; a server from the user's own settings or `--mcp-config` runs as the user.
fn sandbox_for(config: &ServerConfig, cwd: &std::path::Path) -> crate::tools::CommandSandbox {
    match config.scope {
        super::config::Scope::Project => crate::tools::CommandSandbox::Landlock {
            writable_roots: vec![cwd.to_path_buf()],
            profile: crate::tools::SandboxProfile::Write,
        },
        _ => crate::tools::CommandSandbox::None,
    }
}

/// Owns a stdio server's process group: reports its exit to the actor, or ends the group
/// when told to (or when the actor's sender is dropped).
async fn watch(
    mut child: GroupChild,
    guard: crate::sandbox::Guard,
    stop: oneshot::Receiver<()>,
    me: ActorRef<McpMsg>,
    generation: u64,
) {
    let ended = tokio::select! {
        status = child.child_mut().wait() => Err(status),
        _ = stop => Ok(()),
    };
    match ended {
        Err(status) => {
            // The leader is gone; anything it left in its group goes too.
            terminate_group(child.pgid(), KILL_GRACE).await;
            child.disarm();
            super::connect::finish(&guard);
            let reason = match status {
                Ok(s) => format!("its process exited ({s})"),
                Err(e) => format!("waiting for its process failed: {e}"),
            };
            let _ = me.cast(McpMsg::Exited { generation, reason });
        }
        Ok(()) => {
            child.terminate().await;
            super::connect::finish(&guard);
        }
    }
}

impl Actor for McpServer {
    type Msg = McpMsg;
    type State = McpServerState;
    type Arguments = McpServerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<McpMsg>,
        args: McpServerArgs,
    ) -> Result<McpServerState, ActorProcessingErr> {
        let mut state = McpServerState {
            args,
            generation: 0,
            phase: Phase::Connecting,
            restarts: 0,
            waiting_peer: Vec::new(),
            waiting_ready: Vec::new(),
        };
        state.start_connect(&myself);
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<McpMsg>,
        msg: McpMsg,
        state: &mut McpServerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            McpMsg::Peer(port) => match &state.phase {
                Phase::Live(l) if !l.service.peer().is_transport_closed() => {
                    let _ = port.send(Ok(l.service.peer().clone()));
                }
                Phase::Live(_) => {
                    // An HTTP server whose connection closed: reconnect, and say so now.
                    let _ = port.send(Err(Unavailable::Reconnecting {
                        name: state.args.config.name.clone(),
                    }));
                    if let Phase::Live(l) = std::mem::replace(&mut state.phase, Phase::Connecting) {
                        let _ = l.service.cancel().await;
                    }
                    state.went_down(&myself, "the connection closed".into());
                }
                Phase::Connecting => state.waiting_peer.push(port),
                Phase::Down { .. } => {
                    let _ = port.send(Err(state.unavailable()));
                }
            },
            McpMsg::Ready(port) => match state.phase {
                Phase::Connecting => state.waiting_ready.push(port),
                _ => {
                    let _ = port.send(state.status());
                }
            },
            McpMsg::Status(port) => {
                let _ = port.send(state.status());
            }
            McpMsg::Connected { generation, result } => {
                if generation != state.generation {
                    if let Ok((conn, _)) = *result {
                        close(conn).await;
                    }
                    return Ok(());
                }
                match *result {
                    Ok((conn, listed)) => {
                        let tools = state.register(&myself, listed);
                        let guard = conn.guard;
                        let watcher = conn.child.map(|child| {
                            let (tx, rx) = oneshot::channel();
                            let handle =
                                tokio::spawn(watch(child, guard, rx, myself.clone(), generation));
                            (tx, handle)
                        });
                        state.phase = Phase::Live(Box::new(Live {
                            service: conn.service,
                            watcher,
                            since: Instant::now(),
                            tools,
                        }));
                    }
                    Err(e) if state.generation == 1 => {
                        let reason = e.to_string();
                        // The first attempt: a configuration problem more often than a
                        // crash, so report it and do not retry.
                        state.report(format!(
                            "MCP server `{}` failed to start: {reason}",
                            state.args.config.name
                        ));
                        state.phase = Phase::Down {
                            reason,
                            retry: false,
                        };
                    }
                    Err(e) => state.went_down(&myself, e.to_string()),
                }
                state.answer_waiters();
            }
            McpMsg::Exited { generation, reason } => {
                // A call may have seen the closed connection first and handled it.
                if generation != state.generation || !matches!(state.phase, Phase::Live(_)) {
                    return Ok(());
                }
                if let Phase::Live(l) = std::mem::replace(&mut state.phase, Phase::Connecting) {
                    if l.since.elapsed() >= STABLE_AFTER {
                        state.restarts = 0;
                    }
                    // Tools stay registered: a call meanwhile gets an error at once.
                    let _ = l.service.cancel().await;
                }
                state.went_down(&myself, reason);
            }
            McpMsg::Restart { generation } => {
                if generation == state.generation
                    && matches!(state.phase, Phase::Down { retry: true, .. })
                {
                    state.start_connect(&myself);
                }
            }
            McpMsg::ToolsChanged { generation } => {
                if generation != state.generation {
                    return Ok(());
                }
                if let Phase::Live(l) = &state.phase {
                    let peer = l.service.peer().clone();
                    let timeout = state.args.connect_timeout;
                    tokio::spawn(async move {
                        let result =
                            match tokio::time::timeout(timeout, peer.list_all_tools()).await {
                                Ok(r) => r.map_err(|e| RefreshError::Failed(e.to_string())),
                                Err(_) => Err(RefreshError::TimedOut),
                            };
                        let _ = myself.cast(McpMsg::ToolsListed { generation, result });
                    });
                }
            }
            McpMsg::ToolsListed { generation, result } => {
                if generation != state.generation || !matches!(state.phase, Phase::Live(_)) {
                    return Ok(());
                }
                match result {
                    Ok(listed) => {
                        let tools = state.register(&myself, listed);
                        if let Phase::Live(l) = &mut state.phase {
                            l.tools = tools;
                        }
                    }
                    Err(e) => state.report(format!(
                        "MCP server `{}`: refreshing its tools failed: {e}",
                        state.args.config.name
                    )),
                }
            }
            McpMsg::Shutdown(port) => {
                state.generation += 1;
                state.args.tools.remove(&state.args.config.name);
                let phase = std::mem::replace(
                    &mut state.phase,
                    Phase::Down {
                        reason: "the session ended".into(),
                        retry: false,
                    },
                );
                if let Phase::Live(l) = phase {
                    // Closing stdin asks a stdio server to exit (the MCP shutdown
                    // sequence); the watcher then ends whatever is left of its group.
                    let _ = l.service.cancel().await;
                    if let Some((stop, handle)) = l.watcher {
                        let _ = stop.send(());
                        let _ = handle.await;
                    }
                }
                state.answer_waiters();
                let _ = port.send(());
                myself.stop(None);
            }
        }
        Ok(())
    }
}
