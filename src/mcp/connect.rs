//! Opening one connection to an MCP server over rmcp: a stdio child in its own process
//! group (spawned with our process-group spawner, its pipes handed to rmcp) and with the
//! scrubbed environment commands get plus the variables its `env` names, or a
//! streamable-HTTP client. Also the client handler that turns `tools/list_changed` into a
//! message for the server's actor.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::ActorRef;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use super::config::Transport;
use super::server_actor::McpMsg;
use crate::sandbox::Guard;
use crate::sandbox::process::{GroupChild, ProcessError};
use crate::tools::CommandSandbox;

/// The client side of one connection: forwards the server's notifications to its actor,
/// tagged with the connection's generation so a stale connection cannot touch the registry.
#[derive(Clone)]
pub struct Handler {
    /// The server's actor.
    pub actor: ActorRef<McpMsg>,
    /// Which connection of the actor this is.
    pub generation: u64,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.actor.cast(McpMsg::ToolsChanged {
            generation: self.generation,
        });
    }
}

/// A running connection.
pub(crate) type Service = RunningService<RoleClient, Handler>;

/// A live connection, and the stdio server's process group (none for HTTP).
pub struct Connection {
    /// The rmcp service (its peer calls the server).
    pub service: Service,
    /// The child, for a stdio server.
    pub child: Option<GroupChild>,
    /// For a sandboxed server: restores protected files it changed; [`finish`] it once the
    /// child has ended.
    pub guard: Guard,
}

/// Restores what a sandboxed server changed among the protected files (a warning names
/// each); nothing for a server that ran as the user.
pub(crate) fn finish(guard: &Guard) {
    if let Some(note) = guard.finish() {
        tracing::warn!("an MCP server changed protected files, which were restored: {note}");
    }
}

/// Why a connection to an MCP server could not be opened (or its tools not listed).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The confined command could not be prepared.
    #[error("cannot start `{command}` in the sandbox a project's server runs in: {reason}")]
    Sandbox {
        /// The server's command.
        command: String,
        /// The sandbox's error.
        reason: String,
    },
    /// The program could not be spawned (not installed, not executable).
    #[error(
        "cannot start `{command}`: {reason} (check the server's `command` and that it is installed)"
    )]
    Spawn {
        /// The server's command.
        command: String,
        /// The spawn error.
        reason: std::io::Error,
    },
    /// Starting the process failed after the spawn.
    #[error("cannot start `{command}`: {reason}")]
    Start {
        /// The server's command.
        command: String,
        /// The process error.
        reason: ProcessError,
    },
    /// The child came without the pipes rmcp talks over.
    #[error("the child's stdin/stdout were not piped")]
    NotPiped,
    /// The stdio server answered the handshake with an error.
    #[error("the MCP handshake with `{command}` failed: {reason}{tail}")]
    Handshake {
        /// The server's command.
        command: String,
        /// rmcp's error.
        reason: String,
        /// `; its stderr ended with: …`, or empty.
        tail: String,
    },
    /// The stdio server did not finish the handshake in time.
    #[error("`{command}` did not complete the MCP handshake within {secs}s{tail}")]
    HandshakeTimeout {
        /// The server's command.
        command: String,
        /// The bound, in seconds.
        secs: f32,
        /// `; its stderr ended with: …`, or empty.
        tail: String,
    },
    /// A configured header name is not a valid HTTP header name.
    #[error("header `{name}` is not a valid header name: {reason}")]
    HeaderName {
        /// The header.
        name: String,
        /// Why it is invalid.
        reason: reqwest::header::InvalidHeaderName,
    },
    /// A configured header value is not a valid HTTP header value.
    #[error("header `{name}` has an invalid value: {reason}")]
    HeaderValue {
        /// The header.
        name: String,
        /// Why it is invalid.
        reason: reqwest::header::InvalidHeaderValue,
    },
    /// The HTTP server refused us for want of authorisation.
    #[error(
        "{url} requires authorisation ({reason}); OAuth sign-in is not supported yet: pass a token in the server's `headers`, e.g. \"headers\": {{\"Authorization\": \"Bearer ${{MY_TOKEN}}\"}}"
    )]
    Unauthorised {
        /// The server's URL.
        url: String,
        /// rmcp's error.
        reason: String,
    },
    /// The HTTP connection failed otherwise.
    #[error("cannot connect to {url}: {reason}")]
    Http {
        /// The server's URL.
        url: String,
        /// rmcp's error.
        reason: String,
    },
    /// The HTTP server did not finish the handshake in time.
    #[error("{url} did not complete the MCP handshake within {secs}s")]
    HttpTimeout {
        /// The server's URL.
        url: String,
        /// The bound, in seconds.
        secs: f32,
    },
    /// Connected, but listing the server's tools failed.
    #[error("listing its tools failed: {0}")]
    ListTools(String),
    /// Connected, but the server did not list its tools in time.
    #[error("it did not list its tools in time")]
    ListTimeout,
}

/// Why listing a live server's tools again (after `tools/list_changed`) failed.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The server answered with an error (rmcp's message).
    #[error("{0}")]
    Failed(String),
    /// The server did not answer in time.
    #[error("timed out")]
    TimedOut,
}

/// The stdio server's command: as the user (`CommandSandbox::None`: the program itself,
/// in a process group of its own that dies with crew), or confined like an agent's
/// command (`bash -c 'exec PROGRAM ARGS…'` through the command spawner: the scrubbed
/// environment, its own session, the mount and PID namespaces and Landlock). Either way
/// the scrubbed environment: no provider keys, nothing that looks like a secret.
fn stdio_command(
    command: &str,
    args: &[String],
    cwd: &Path,
    sandbox: &CommandSandbox,
) -> Result<(tokio::process::Command, Guard), ConnectError> {
    if matches!(sandbox, CommandSandbox::None) {
        let mut cmd = tokio::process::Command::new(command);
        for name in crate::sandbox::env::withheld() {
            cmd.env_remove(name);
        }
        cmd.args(args).current_dir(cwd).process_group(0);
        // The server dies with crew, even if crew is killed with SIGKILL.
        crate::sandbox::process::guard_command(&mut cmd);
        return Ok((cmd, Guard::none()));
    }
    let line = std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ");
    let shell = crate::sandbox::process::shell_command(&format!("exec {line}"), cwd, sandbox)
        .map_err(|e| ConnectError::Sandbox {
            command: command.to_string(),
            reason: e.to_string(),
        })?;
    Ok((shell.cmd, shell.guard))
}

/// `word` quoted for bash (single quotes; a quote inside becomes `'\''`).
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Connects to `transport` within `timeout`. A stdio server runs in `cwd`, in a process
/// group of its own, confined by `sandbox` (a project's server) or not (the user's own);
/// if the handshake fails the group is killed before returning.
pub(crate) async fn connect(
    transport: &Transport,
    handler: Handler,
    cwd: &Path,
    sandbox: &CommandSandbox,
    timeout: Duration,
) -> Result<Connection, ConnectError> {
    match transport {
        Transport::Stdio { command, args, env } => {
            let (mut cmd, guard) = stdio_command(command, args, cwd, sandbox)?;
            cmd.envs(env)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                // Read (not inherited: it would interleave with our output); its tail
                // explains a failed start.
                .stderr(std::process::Stdio::piped());
            let mut child = GroupChild::spawn(&mut cmd, cwd).map_err(|e| match e {
                ProcessError::Spawn { source, .. } => ConnectError::Spawn {
                    command: command.clone(),
                    reason: source,
                },
                other => ConnectError::Start {
                    command: command.clone(),
                    reason: other,
                },
            })?;
            let stdin = child.child_mut().stdin.take();
            let stdout = child.child_mut().stdout.take();
            let stderr_tail = child.child_mut().stderr.take().map(keep_tail);
            let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
                child.terminate().await;
                finish(&guard);
                return Err(ConnectError::NotPiped);
            };
            match tokio::time::timeout(timeout, handler.serve((stdout, stdin))).await {
                Ok(Ok(service)) => Ok(Connection {
                    service,
                    child: Some(child),
                    guard,
                }),
                Ok(Err(e)) => {
                    child.terminate().await;
                    finish(&guard);
                    Err(ConnectError::Handshake {
                        command: command.clone(),
                        reason: e.to_string(),
                        tail: tail_note(stderr_tail).await,
                    })
                }
                Err(_) => {
                    child.terminate().await;
                    finish(&guard);
                    Err(ConnectError::HandshakeTimeout {
                        command: command.clone(),
                        secs: timeout.as_secs_f32(),
                        tail: tail_note(stderr_tail).await,
                    })
                }
            }
        }
        Transport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let mut custom = HashMap::new();
            for (k, v) in headers {
                if k.eq_ignore_ascii_case("authorization")
                    && let Some(token) = v.strip_prefix("Bearer ")
                {
                    config = config.auth_header(token);
                    continue;
                }
                let name =
                    reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|reason| {
                        ConnectError::HeaderName {
                            name: k.clone(),
                            reason,
                        }
                    })?;
                let value = reqwest::header::HeaderValue::from_str(v).map_err(|reason| {
                    ConnectError::HeaderValue {
                        name: k.clone(),
                        reason,
                    }
                })?;
                custom.insert(name, value);
            }
            let config = config.custom_headers(custom);
            let transport = StreamableHttpClientTransport::from_config(config);
            match tokio::time::timeout(timeout, handler.serve(transport)).await {
                Ok(Ok(service)) => Ok(Connection {
                    service,
                    child: None,
                    guard: Guard::none(),
                }),
                Ok(Err(e)) => Err(http_failure(url, &e.to_string())),
                Err(_) => Err(ConnectError::HttpTimeout {
                    url: url.clone(),
                    secs: timeout.as_secs_f32(),
                }),
            }
        }
    }
}

/// How much of a stdio server's stderr is kept.
const STDERR_TAIL: usize = 2000;

type Tail = (Arc<Mutex<String>>, tokio::task::JoinHandle<()>);

/// Reads `stderr` to its end in the background, keeping the last [`STDERR_TAIL`] bytes.
fn keep_tail(mut stderr: tokio::process::ChildStderr) -> Tail {
    use tokio::io::AsyncReadExt;
    let tail = Arc::new(Mutex::new(String::new()));
    let kept = tail.clone();
    let handle = tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut t = kept.lock().unwrap_or_else(|e| e.into_inner());
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > STDERR_TAIL {
                let cut = t.len() - STDERR_TAIL;
                let cut = (cut..t.len())
                    .find(|&i| t.is_char_boundary(i))
                    .unwrap_or(t.len());
                t.drain(..cut);
            }
        }
    });
    (tail, handle)
}

/// `; its stderr ended with: …` once the (already terminated) server's stderr is read.
async fn tail_note(tail: Option<Tail>) -> String {
    let Some((tail, handle)) = tail else {
        return String::new();
    };
    // The group is gone, so the pipe closes; the bound covers an escaped writer.
    let _ = tokio::time::timeout(Duration::from_secs(1), handle).await;
    let t = tail.lock().unwrap_or_else(|e| e.into_inner());
    let t = t.trim();
    if t.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with: {t}")
    }
}

/// Why an HTTP connection failed; an authorisation failure says how to pass a token.
fn http_failure(url: &str, error: &str) -> ConnectError {
    let lower = error.to_ascii_lowercase();
    let (url, reason) = (url.to_string(), error.to_string());
    if lower.contains("401")
        || lower.contains("403")
        || lower.contains("unauthorized")
        || lower.contains("auth")
    {
        ConnectError::Unauthorised { url, reason }
    } else {
        ConnectError::Http { url, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that answers 401 gets an error that says how to pass a token.
    #[tokio::test]
    async fn an_unauthorised_http_server_says_how_to_pass_a_token() {
        use wiremock::{Mock, MockServer, ResponseTemplate, matchers::any};
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(
                ResponseTemplate::new(401).insert_header("WWW-Authenticate", "Bearer realm=\"x\""),
            )
            .mount(&server)
            .await;
        let (actor, _) = ractor::Actor::spawn(None, Idle, ()).await.unwrap();
        let transport = Transport::Http {
            url: format!("{}/mcp", server.uri()),
            headers: Default::default(),
        };
        let handler = Handler {
            actor,
            generation: 1,
        };
        let dir = tempfile::tempdir().unwrap();
        let e = connect(
            &transport,
            handler,
            dir.path(),
            &CommandSandbox::None,
            Duration::from_secs(10),
        )
        .await
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("requires authorisation"), "{e}");
        assert!(
            e.contains("\"Authorization\": \"Bearer ${MY_TOKEN}\""),
            "{e}"
        );
    }

    /// An actor that ignores its messages, standing in for a server's actor.
    struct Idle;

    impl ractor::Actor for Idle {
        type Msg = McpMsg;
        type State = ();
        type Arguments = ();
        async fn pre_start(
            &self,
            _: ActorRef<McpMsg>,
            _: (),
        ) -> Result<(), ractor::ActorProcessingErr> {
            Ok(())
        }
    }
}
