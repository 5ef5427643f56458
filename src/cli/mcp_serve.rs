//! `crew mcp serve [--listen ADDR] [--mode MODE] [--model MODEL]`: crew as an MCP server
//! (see `crate::mcp_serve`). Without `--listen` it speaks MCP on stdin/stdout; with it,
//! streamable HTTP at `http://ADDR/mcp`, and prints the bound address on stderr (so
//! `--listen 127.0.0.1:0` can be used) with the bearer token every request must carry
//! (also written, mode 600, to the token file; removed when the server stops).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::mcp_serve::{Backend, ServeConfig, ServeMode, auth, transport};

/// `crew mcp serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8080; port 0 picks one)
    /// instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// `plan` (read-only tools only) or a permission mode (strict, default, acceptEdits,
    /// bypassPermissions, dontAsk, auto), entered through `agent::transition` like
    /// `--permission-mode`; default: the settings' defaultMode.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// The model of delegated crew leads (default: from settings or API keys).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The most model turns a delegated lead may take.
    #[arg(long, default_value_t = 100)]
    pub max_turns: u32,
    /// With --listen: write the bearer token to this file (mode 600) instead of
    /// `~/.crew/projects/<project>/mcp-serve/<port>.token`.
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub token_file: Option<std::path::PathBuf>,
}

/// Runs the server until the client disconnects (stdio) or Ctrl-C or SIGTERM (HTTP).
pub async fn run(args: ServeArgs, cwd: &Path) -> anyhow::Result<i32> {
    let mode = ServeMode::parse(args.mode.as_deref())?;
    let cwd = std::fs::canonicalize(cwd)
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    let project_root = crate::store::project_root(&cwd);
    let config = ServeConfig {
        cwd,
        mode,
        model: args.model,
        max_turns: args.max_turns,
        // The workers of the user's settings; the command line's cluster flags are not
        // passed to the server's sessions.
        workers: Some(Arc::new(crate::worker::join::Cluster::default())),
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
            let token = auth::new_token();
            let token_file = match &args.token_file {
                Some(path) => path.clone(),
                None => auth::default_token_file(&project_root, bound.port())
                    .context("cannot find the home directory for ~/.crew (set HOME)")?,
            };
            // Listen for Ctrl-C and SIGTERM before telling anyone the address: a signal
            // that arrives once the address is printed must stop the server cleanly
            // (removing the token file), not end it by the signal's default action.
            let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
            let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
            auth::write_token(&token_file, &token)?;
            let _remove = RemoveOnDrop(token_file.clone());
            eprintln!(
                "crew mcp serve: listening on http://{bound}{}",
                transport::HTTP_PATH
            );
            eprintln!(
                "crew mcp serve: every request needs `Authorization: Bearer {token}` (the token is also in {}, mode 600)",
                token_file.display()
            );
            if !bound.ip().is_loopback() {
                eprintln!(
                    "crew mcp serve: WARNING: {bound} is not a loopback address and the token travels unencrypted; \
                     whoever sees it can use this project's tools with its permissions"
                );
            }
            let stop = CancellationToken::new();
            let on_signal = stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
                on_signal.cancel();
            });
            let guard = auth::Guard::new(bound, &token);
            transport::http(backend.clone(), listener, guard, stop).await
        }
    };
    match Arc::try_unwrap(backend) {
        Ok(backend) => backend.shutdown().await,
        Err(shared) => shared.delegates().stop_all().await,
    }
    served.map(|()| 0)
}

/// Removes the token file when the server stops: the token dies with it.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
