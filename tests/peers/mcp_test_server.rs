//! An MCP server for crew's tests, written with rmcp's server side. Stdio by default;
//! `--http ADDR` serves streamable HTTP at `http://ADDR/mcp` (and prints the bound address
//! on stdout, so `127.0.0.1:0` works).
//!
//! Tools:
//! - `read_note {name}` (readOnlyHint): returns `note <name>: the answer is 42`.
//! - `picture` (readOnlyHint): text, an image, and an embedded resource.
//! - `fail` (readOnlyHint): an `isError` result.
//! - `write_note {text}`, `danger`: write tools; each creates `<marker-dir>/<tool>.called`
//!   so tests can prove it never ran.
//! - `write_file {path, text}`: a write tool that writes `text` to `path` (any path: the
//!   attack an unattended mode must refuse).
//! - `env {name}` (readOnlyHint): `NAME=value`, or `NAME is unset`.
//! - `echo {text}` (readOnlyHint): returns `text` as given.
//! - `add_tool`: adds the read-only tool `extra` and sends `tools/list_changed`.
//! - `crash`: the process exits at once (status 3) without answering.
//!
//! Options: `--marker-dir DIR` (default: the working directory), `--pid-log FILE` (a line
//! with the pid is appended once a client has initialized), `--grandchild` (starts a
//! `sleep` in the server's process group, to prove the whole group is ended).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a test peer: it fails loudly and prints the address it serves"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct TestServer {
    marker_dir: PathBuf,
    pid_log: Option<PathBuf>,
    extra: Arc<AtomicBool>,
}

fn tool(name: &'static str, description: &'static str, schema: Value, read_only: bool) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("schemas here are literal objects")
    };
    Tool::new(name, description, schema)
        .with_annotations(ToolAnnotations::new().read_only(read_only))
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(
                "read_note",
                "Read a note by name.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                true,
            ),
            tool("picture", "A picture and a resource.", no_args(), true),
            tool("fail", "Always fails.", no_args(), true),
            tool(
                "write_note",
                "Write a note.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
                false,
            ),
            tool("danger", "Does something dangerous.", no_args(), false),
            tool(
                "write_file",
                "Write text to a file.",
                json!({"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path", "text"]}),
                false,
            ),
            tool(
                "env",
                "One variable of the server's environment.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                true,
            ),
            tool(
                "echo",
                "Returns the text.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                true,
            ),
            tool("add_tool", "Adds the tool `extra`.", no_args(), false),
            tool("crash", "Exits the server at once.", no_args(), false),
        ];
        if self.extra.load(Ordering::SeqCst) {
            tools.push(tool("extra", "A tool added at run time.", no_args(), true));
        }
        tools
    }

    fn mark(&self, name: &str) -> Result<(), ErrorData> {
        std::fs::write(self.marker_dir.join(format!("{name}.called")), name)
            .map_err(|e| ErrorData::internal_error(format!("cannot write the marker: {e}"), None))
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        if let Some(log) = &self.pid_log {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = writeln!(f, "{}", std::process::id());
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = |s: String| Ok(CallToolResult::success(vec![ContentBlock::text(s)]).into());
        match request.name.as_ref() {
            "read_note" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("?");
                text(format!("note {name}: the answer is 42"))
            }
            "picture" => Ok(CallToolResult::success(vec![
                ContentBlock::text("a picture follows"),
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::embedded_text("file:///notes/a.txt", "resource body"),
            ])
            .into()),
            "fail" => {
                Ok(CallToolResult::error(vec![ContentBlock::text("deliberate failure")]).into())
            }
            "write_file" => {
                let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
                let body = args.get("text").and_then(Value::as_str).unwrap_or_default();
                let path = PathBuf::from(path);
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                std::fs::write(&path, body).map_err(|e| {
                    ErrorData::internal_error(format!("cannot write {}: {e}", path.display()), None)
                })?;
                text(format!("wrote {}", path.display()))
            }
            "env" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                text(match std::env::var(name) {
                    Ok(v) => format!("{name}={v}"),
                    Err(_) => format!("{name} is unset"),
                })
            }
            "echo" => text(
                args.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            "extra" if self.extra.load(Ordering::SeqCst) => text("extra tool ran".into()),
            name @ ("write_note" | "danger") => {
                self.mark(name)?;
                text(format!("{name} done"))
            }
            "add_tool" => {
                self.extra.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text("added `extra`".into())
            }
            "crash" => std::process::exit(3),
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            )),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut http = None;
    let mut marker_dir = std::env::current_dir()?;
    let mut pid_log = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--http" => http = args.next(),
            "--marker-dir" => marker_dir = args.next().map(PathBuf::from).unwrap_or(marker_dir),
            "--pid-log" => pid_log = args.next().map(PathBuf::from),
            // A grandchild in the server's process group, which must die with it.
            "--grandchild" => {
                std::process::Command::new("sleep").arg("1000").spawn()?;
            }
            other => anyhow::bail!("unknown argument `{other}`"),
        }
    }
    let server = TestServer {
        marker_dir,
        pid_log,
        extra: Arc::new(AtomicBool::new(false)),
    };
    match http {
        None => {
            let running = server.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
        }
        Some(addr) => {
            use rmcp::transport::streamable_http_server::{
                StreamableHttpServerConfig, StreamableHttpService,
                session::local::LocalSessionManager,
            };
            let service: StreamableHttpService<TestServer, LocalSessionManager> =
                StreamableHttpService::new(
                    move || Ok(server.clone()),
                    Default::default(),
                    StreamableHttpServerConfig::default(),
                );
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            println!("{}", listener.local_addr()?);
            axum::serve(listener, router).await?;
        }
    }
    Ok(())
}
