//! `crew worker` (run a worker node) and `crew workers list` (nodes, slots in use, tasks
//! per node), and joining the configured workers for a session.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::permission::Policy;
use crate::worker::config::{ConfigError, join_config, read_cookie, shipped_rules};
use crate::worker::node::{WorkerConfig, start};
use crate::worker::pool::Pool;

/// `crew worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Where to listen. Loopback by default: crew does not encrypt the cluster
    /// transport yet, so reach other machines over a private network or an SSH tunnel
    /// (see README, "Running on several machines").
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7400")]
    pub listen: SocketAddr,
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
    },
}

/// Runs a worker node until Ctrl-C or SIGTERM.
pub async fn serve(args: WorkerArgs, cookie_file: Option<&Path>) -> anyhow::Result<i32> {
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
    if !args.listen.ip().is_loopback() {
        eprintln!(
            "crew worker: warning: {} is not loopback and the cluster transport is not encrypted; use a private network or an SSH tunnel",
            args.listen
        );
    }
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
    })
    .await
    .map_err(anyhow::Error::msg)?;
    eprintln!(
        "crew worker {name} listening on {} ({} slots, workdir {})",
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

/// `crew workers list`.
pub async fn run(
    cmd: WorkersCmd,
    workers: Option<&str>,
    cookie_file: Option<&Path>,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    let WorkersCmd::List { json } = cmd;
    let home = crate::store::home_dir();
    let Some(pool) = join(workers, cookie_file, home.as_deref(), Vec::new(), None).await? else {
        bail!(
            "no workers configured: pass --workers HOST:PORT,… or set `workers` in ~/.crew/settings.json"
        );
    };
    let list = pool.list().await;
    if json {
        let items: Vec<_> = list
            .iter()
            .map(|w| {
                serde_json::json!({
                    "node": w.node, "slots": w.slots, "in_use": w.running.len(),
                    "tasks": w.running, "kept": w.kept,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
        return Ok(0);
    }
    for w in &list {
        writeln!(
            out,
            "{}  {}/{} slots in use  tasks: {}  kept: {}",
            w.node,
            w.running.len(),
            w.slots,
            if w.running.is_empty() {
                "-".to_string()
            } else {
                w.running.join(", ")
            },
            if w.kept.is_empty() {
                "-".to_string()
            } else {
                w.kept.join(", ")
            },
        )?;
    }
    Ok(0)
}

/// Joins the workers configured for this session, if any (`--workers`, settings).
pub async fn join_from_cli(
    cli: &super::Cli,
    home: Option<&Path>,
    policy: &Policy,
) -> anyhow::Result<Option<Arc<Pool>>> {
    // A script path is made absolute: the worker runs elsewhere.
    let model = cli.model.clone().or_else(|| policy.model.clone()).map(|m| {
        match m.strip_prefix("script:") {
            Some(path) => match std::fs::canonicalize(path) {
                Ok(abs) => format!("script:{}", abs.display()),
                Err(_) => m,
            },
            None => m,
        }
    });
    join(
        cli.workers.as_deref(),
        cli.cookie_file.as_deref(),
        home,
        shipped_rules(policy),
        model,
    )
    .await
}

async fn join(
    workers: Option<&str>,
    cookie_file: Option<&Path>,
    home: Option<&Path>,
    rules: Vec<crate::worker::protocol::RuleWire>,
    model: Option<String>,
) -> anyhow::Result<Option<Arc<Pool>>> {
    let cfg = join_config(workers, cookie_file, home)?;
    if cfg.workers.is_empty() {
        return Ok(None);
    }
    let Some(file) = cfg.cookie_file else {
        return Err(ConfigError::NoCookie(cfg.workers.join(",")).into());
    };
    let cookie = read_cookie(&file)?;
    Ok(Some(Pool::join(&cfg.workers, cookie, rules, model).await?))
}
