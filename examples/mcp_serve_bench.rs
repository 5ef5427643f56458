//! `crew mcp serve` round trip, measured in one run: an rmcp client calls `read_file` on a
//! small file through `crew mcp serve` over stdio (a child process running exactly the
//! code of `crew mcp serve` — this example re-executes itself as the server — so the
//! call takes the serving lead's whole path: hooks, permission engine, gate, executor),
//! p50 and p99, against two same-process baselines, interleaved:
//! - the `read_file` tool run directly (no MCP, no permission path);
//! - a bare rmcp echo server in this process over an in-memory pipe (MCP framing only).
//!
//! `cargo run --release --example mcp_serve_bench -- [CALLS]` (default 2000).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crewmaster::tools::{Tool, ToolContext};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ContentBlock,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;

/// The in-process baseline: answers every call with its arguments.
#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::default())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = serde_json::Value::Object(request.arguments.unwrap_or_default()).to_string();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

fn read_call() -> CallToolRequestParams {
    serde_json::from_value(json!({"name": "read_file", "arguments": {"path": "small.txt"}}))
        .expect("static request")
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    let (p50, p99) = (pct(&d, 0.5), pct(&d, 0.99));
    println!(
        "{name:<44} p50 {:>9.1} µs   p99 {:>9.1} µs",
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    (p50, p99)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__serve") {
        // The child: exactly `crew mcp serve` (stdio) in the given directory.
        let serve = crewmaster::cli::mcp_serve::ServeArgs {
            listen: None,
            mode: None,
            model: Some(format!("script:{}", args[3])),
            max_turns: 1,
            token_file: None,
        };
        let dir = std::path::PathBuf::from(&args[2]);
        let code = crewmaster::cli::mcp_serve::run(serve, &dir).await?;
        std::process::exit(code);
    }
    let calls: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let root = tempfile::tempdir()?;
    let (project, home) = (root.path().join("project"), root.path().join("home"));
    std::fs::create_dir_all(&project)?;
    std::fs::create_dir_all(&home)?;
    std::fs::write(project.join("small.txt"), "a small file\nof two lines\n")?;
    let script = root.path().join("script.json");
    std::fs::write(&script, r#"{"turns": []}"#)?;

    // crew mcp serve over stdio.
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.arg("__serve")
        .arg(&project)
        .arg(&script)
        .current_dir(&project)
        .env("HOME", &home);
    let crew = ClientConfig::default()
        .serve(TokioChildProcess::new(cmd)?)
        .await?;
    // Baseline: an rmcp echo server in this process.
    let (a, b) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(server) = Echo.serve(b).await {
            let _ = server.waiting().await;
        }
    });
    let echo = ClientConfig::default().serve(a).await?;
    // Baseline: the tool itself.
    let tool = Arc::new(crewmaster::tools::read_file::ReadFile::new());
    let ctx = ToolContext::new(project.canonicalize()?, "bench");

    let first = crew.call_tool(read_call()).await?;
    anyhow::ensure!(first.is_error != Some(true), "read_file failed: {first:?}");
    for _ in 0..50 {
        crew.call_tool(read_call()).await?;
        echo.call_tool(read_call()).await?;
    }
    let (mut t_crew, mut t_echo, mut t_tool) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..calls {
        let t = Instant::now();
        crew.call_tool(read_call()).await?;
        t_crew.push(t.elapsed());
        let t = Instant::now();
        echo.call_tool(read_call()).await?;
        t_echo.push(t.elapsed());
        let t = Instant::now();
        tool.run(json!({"path": "small.txt"}), ctx.clone()).await?;
        t_tool.push(t.elapsed());
    }
    println!("{calls} calls each, interleaved");
    let (c50, c99) = report("crew mcp serve (stdio child) read_file", t_crew);
    let (e50, e99) = report("baseline: rmcp echo server in process", t_echo);
    let (r50, r99) = report("baseline: read_file tool called directly", t_tool);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!(
        "crew/echo: p50 {:.1}x  p99 {:.1}x",
        ratio(c50, e50),
        ratio(c99, e99)
    );
    println!(
        "crew/direct: p50 {:.1}x  p99 {:.1}x",
        ratio(c50, r50),
        ratio(c99, r99)
    );
    crew.cancel().await?;
    echo.cancel().await?;
    Ok(())
}
