//! How `crew mcp serve` talks: MCP over stdio (one client, until it closes stdin), or
//! rmcp's streamable-HTTP service mounted at `/mcp` on an axum listener (many clients,
//! until `stop` fires), every request first passing the listener's `auth::Guard`.

use std::sync::Arc;

use anyhow::Context;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::auth::Guard;
use super::{Backend, CrewServer};

/// The path the HTTP service is mounted at.
pub(crate) const HTTP_PATH: &str = "/mcp";

/// Serves one client on this process's stdin/stdout until it disconnects.
pub(crate) async fn stdio(backend: Arc<Backend>) -> anyhow::Result<()> {
    let running = CrewServer::new(backend)
        .serve(rmcp::transport::stdio())
        .await
        .context("the MCP client on stdio did not initialise")?;
    running
        .waiting()
        .await
        .context("the stdio session failed")?;
    Ok(())
}

/// Serves streamable HTTP at `http://ADDR/mcp` on `listener` until `stop` fires; only
/// requests `guard` lets through (the token, this Host, no foreign Origin) reach it.
pub(crate) async fn http(
    backend: Arc<Backend>,
    listener: tokio::net::TcpListener,
    guard: Guard,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    let config = match guard.hosts() {
        Some(hosts) => config.with_allowed_hosts(hosts.to_vec()),
        None => config.disable_allowed_hosts(),
    };
    let service: StreamableHttpService<CrewServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(CrewServer::new(backend.clone())),
            Default::default(),
            config,
        );
    let router =
        axum::Router::new()
            .nest_service(HTTP_PATH, service)
            .layer(axum::middleware::from_fn(move |request, next| {
                guard.clone().check(request, next)
            }));
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { stop.cancelled_owned().await })
        .await
        .context("the HTTP server failed")
}
