//! `crew dashboard`: the web dashboard of every live session of the user, standalone
//! (sessions that start later join it), until Ctrl-C; and the `--dashboard` flags of a
//! run, which serve one for that run's session alongside it.

use std::net::SocketAddr;

use clap::Args;

use crate::dashboard::{Dashboard, Exposure, Listen, Scope};

/// `crew dashboard`'s arguments.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Where to listen (port 0: a free port; the printed URL names the real one).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Allow a non-loopback `--listen` address (without TLS: anyone who sees the URL can
    /// steer your agents).
    #[arg(long)]
    pub allow_remote: bool,
}

/// How far `allow_remote` lets the dashboard listen.
pub(crate) fn exposure(allow_remote: bool) -> Exposure {
    if allow_remote {
        Exposure::Remote
    } else {
        Exposure::LoopbackOnly
    }
}

/// Serves the dashboard until Ctrl-C; its URL goes to `out`, a warning to stderr.
pub(crate) async fn run(args: DashboardArgs, out: &mut impl std::io::Write) -> anyhow::Result<i32> {
    let listen = Listen {
        addr: args.listen,
        exposure: exposure(args.allow_remote),
    };
    let dashboard = Dashboard::start(listen, Scope::Everyone).await?;
    if let Some(w) = dashboard.warning() {
        eprintln!("crew: warning: {w}");
    }
    writeln!(out, "crew dashboard: {}", dashboard.url())?;
    out.flush()?;
    tokio::select! {
        _ = dashboard.serve_forever() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(0)
}
