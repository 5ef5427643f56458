//! `crew worker` (run a worker node, over TLS with `--tls-cert/--tls-key`) and `crew
//! workers list` (nodes, slots in use, tasks per node: from the running lead's snapshot,
//! else by connecting to the workers), and the cluster flags a session joins its workers
//! with (`worker::join`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::worker::config::{TlsSettings, read_cookie};
use crate::worker::join::{Cluster, join};
use crate::worker::node_actor::{WorkerConfig, start};
use crate::worker::snapshot::{self, NodeView};
use crate::worker::tls::Named;

/// `crew worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Where to listen. Loopback by default; to serve other machines, also give
    /// `--tls-cert/--tls-key` (see docs/cluster.md, "Transport security: TLS").
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7400")]
    pub listen: SocketAddr,
    /// Serve TLS only, with this certificate chain (PEM); plaintext leads are refused.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The key of `--tls-cert` (PEM; refused if others may read it: `chmod 600`).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: accept only leads whose client certificate this CA (PEM) signed.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_ca: Option<PathBuf>,
    /// Subagents that may run at once.
    #[arg(long, default_value_t = 4)]
    pub slots: u32,
    /// Where task checkouts live (default: ~/.crew/worker).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// The node's name (default: `worker-PORT`).
    #[arg(long)]
    pub name: Option<String>,
    /// Seconds an orphaned task's worktree is kept after its lead went away (its branch
    /// is kept on the worker regardless).
    #[arg(long, default_value_t = 3600)]
    pub orphan_timeout: u64,
}

/// `crew workers …`.
#[derive(Debug, Subcommand)]
pub enum WorkersCmd {
    /// Each worker's node, slots in use and tasks.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
        /// Connect to the workers directly even when a lead is running.
        #[arg(long)]
        probe: bool,
    },
}

/// The cluster flags every subcommand sees.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClusterFlags<'a> {
    /// `--workers`.
    pub workers: Option<&'a str>,
    /// `--cookie-file`.
    pub cookie_file: Option<&'a Path>,
    /// `--worker-ca/--worker-cert/--worker-key`.
    pub tls: &'a TlsSettings,
}

impl ClusterFlags<'_> {
    /// The flags as the session's worker joiner holds them.
    pub(crate) fn owned(&self) -> Cluster {
        Cluster {
            workers: self.workers.map(str::to_string),
            cookie_file: self.cookie_file.map(Path::to_path_buf),
            tls: self.tls.clone(),
        }
    }
}

/// The lead's TLS flags.
pub(crate) fn tls_flags(cli: &super::Cli) -> TlsSettings {
    TlsSettings {
        ca: cli.worker_ca.clone(),
        cert: cli.worker_cert.clone(),
        key: cli.worker_key.clone(),
    }
}

/// Runs a worker node until Ctrl-C or SIGTERM.
pub(crate) async fn serve(args: WorkerArgs, cookie_file: Option<&Path>) -> anyhow::Result<i32> {
    let Some(cookie_file) = cookie_file else {
        bail!(
            "crew worker needs --cookie-file FILE (the cookie is never taken from the command line)"
        );
    };
    let cookie = read_cookie(cookie_file)?;
    if args.slots == 0 {
        bail!("--slots must be at least 1");
    }
    let workdir = match args.workdir {
        Some(d) => d,
        None => crate::store::home_dir()
            .map(|h| h.join(".crew").join("worker"))
            .context("--workdir not given and no home directory")?,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::worker::tls::acceptor(
            &Named::new("--tls-cert", cert),
            &Named::new("--tls-key", key),
            args.tls_ca
                .as_ref()
                .map(|ca| Named::new("--tls-ca", ca))
                .as_ref(),
        )?),
        _ => None,
    };
    if tls.is_none() && !args.listen.ip().is_loopback() {
        eprintln!(
            "crew worker: warning: {} is not loopback and the transport is not encrypted; give --tls-cert and --tls-key (docs/cluster.md, \"Transport security: TLS\")",
            args.listen
        );
    }
    let mode = match (&tls, &args.tls_ca) {
        (None, _) => "plaintext",
        (Some(_), None) => "TLS only",
        (Some(_), Some(_)) => "mutual TLS only",
    };
    let name = args
        .name
        .unwrap_or_else(|| format!("worker-{}", args.listen.port()));
    let handle = start(WorkerConfig {
        listen: args.listen,
        cookie,
        name: name.clone(),
        slots: args.slots,
        workdir: workdir.clone(),
        orphan_timeout: Duration::from_secs(args.orphan_timeout),
        tls,
    })
    .await
    .map_err(anyhow::Error::msg)?;
    eprintln!(
        "crew worker {name} listening on {} ({mode}, {} slots, workdir {})",
        args.listen,
        args.slots,
        workdir.display()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    handle.worker.stop(None);
    handle.server.stop(None);
    Ok(0)
}

/// `crew workers list`: the running lead's view (its newest live snapshot for this
/// project), else a direct probe of the configured workers, with a note saying so.
pub(crate) async fn run(
    cmd: WorkersCmd,
    cwd: &Path,
    cluster: ClusterFlags<'_>,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    let WorkersCmd::List { json, probe } = cmd;
    let live = match snapshot::dir(&crate::store::project_root(cwd)) {
        Some(dir) if !probe => snapshot::newest_live(&dir),
        _ => None,
    };
    let list: Vec<NodeView> = match &live {
        Some(snap) => {
            if !json {
                writeln!(
                    out,
                    "from the running lead {} (pid {}):",
                    snap.lead.escape_debug(),
                    snap.pid
                )?;
            }
            snap.workers.clone()
        }
        None => {
            // Said only to people who did not ask for the probe themselves.
            let note = if json || probe {
                ProbeNote::Skip
            } else {
                ProbeNote::Say
            };
            probe_workers(cluster, note, out).await?
        }
    };
    if json {
        let items: Vec<_> = list
            .iter()
            .map(|w| {
                serde_json::json!({
                    "node": w.node, "slots": w.slots, "in_use": w.tasks.len(),
                    "tasks": w.tasks, "kept": w.kept, "alive": w.alive,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "source": if live.is_some() { "lead" } else { "probe" },
            "lead_pid": live.as_ref().map(|s| s.pid),
            "workers": items,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(0);
    }
    // Names come from other machines: no control characters reach the terminal.
    let printable = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect()
    };
    let dash = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            printable(&v.join(", "))
        }
    };
    for w in &list {
        writeln!(
            out,
            "{}{}  {}/{} slots in use  tasks: {}  kept: {}",
            printable(&w.node),
            if w.alive { "" } else { " (lost)" },
            w.tasks.len(),
            w.slots,
            dash(&w.tasks),
            dash(&w.kept),
        )?;
    }
    Ok(0)
}

/// Whether a listing from a direct probe of the workers says so first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProbeNote {
    /// It says that no lead runs here and the workers were asked directly.
    Say,
    /// It does not (JSON, or `--probe` asked for it).
    Skip,
}

/// Connects to the configured workers and asks each for its status.
async fn probe_workers(
    cluster: ClusterFlags<'_>,
    note: ProbeNote,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<Vec<NodeView>> {
    let home = crate::store::home_dir();
    let Some(pool) = join(&cluster.owned(), home.as_deref(), Vec::new(), None, None).await? else {
        bail!(
            "no lead is running here and no workers are configured: pass --workers HOST:PORT,… or set `workers` in ~/.crew/settings.json"
        );
    };
    if note == ProbeNote::Say {
        writeln!(
            out,
            "no running lead for this project; asked the workers directly:"
        )?;
    }
    Ok(pool
        .list()
        .await
        .into_iter()
        .map(|w| NodeView {
            node: w.node,
            slots: w.slots,
            tasks: w.running,
            kept: w.kept,
            alive: true,
        })
        .collect())
}
