//! `crew mcp serve [--listen ADDR] [--mode MODE] [--model MODEL]`: crew as an MCP server
//! (see `crate::mcp::serve`). Without `--listen` it speaks MCP on stdin/stdout; with it,
//! streamable HTTP at `http://ADDR/mcp`, and prints the bound address on stderr (so
//! `--listen 127.0.0.1:0` can be used).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::mcp::serve::{Backend, ServeConfig, ServeMode, transport};

/// `crew mcp serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8080; port 0 picks one)
    /// instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// `plan` (read-only tools only) or a permission mode (strict, default, acceptEdits,
    /// bypassPermissions, dontAsk, auto), entered through `permission::transition` like
    /// `--permission-mode`; default: the settings' defaultMode.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// The model of delegated crew leads (default: from settings or API keys).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The most model turns a delegated lead may take.
    #[arg(long, default_value_t = 100)]
    pub max_turns: u32,
}

/// Runs the server until the client disconnects (stdio) or Ctrl-C (HTTP).
pub async fn run(args: ServeArgs, cwd: &Path) -> anyhow::Result<i32> {
    let mode = ServeMode::parse(args.mode.as_deref()).map_err(anyhow::Error::msg)?;
    let cwd = std::fs::canonicalize(cwd)
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    let config = ServeConfig {
        cwd,
        mode,
        model: args.model,
        max_turns: args.max_turns,
    };
    let backend = Arc::new(Backend::start(config, &mut |w| eprintln!("crew: {w}")).await?);
    let served = match &args.listen {
        None => transport::stdio(backend.clone()).await,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("--listen {addr}: cannot bind"))?;
            let bound = listener
                .local_addr()
                .context("--listen: no local address")?;
            eprintln!(
                "crew mcp serve: listening on http://{bound}{}",
                transport::HTTP_PATH
            );
            if !bound.ip().is_loopback() {
                eprintln!(
                    "crew mcp serve: WARNING: {bound} is not a loopback address and the server has no authentication; \
                     whoever reaches it can use this project's tools with its permissions"
                );
            }
            let stop = CancellationToken::new();
            let on_signal = stop.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_signal.cancel();
                }
            });
            transport::http(backend.clone(), listener, stop).await
        }
    };
    match Arc::try_unwrap(backend) {
        Ok(backend) => backend.shutdown().await,
        Err(shared) => shared.delegates().stop_all().await,
    }
    served.map(|()| 0)
}
