//! Joining the configured worker nodes for a lead's session: `--workers`, `--cookie-file`
//! and the TLS flags, else `workers`, `workerCookieFile` and `workerTls` in
//! `~/.crew/settings.json`. The session is handed a [`Cluster`] as its
//! `session::build::JoinWorkers`, so it reaches the workers only through the
//! `agent::host::Workers` this returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::config::{ConfigError, LeadTls, TlsSettings, join_config, read_cookie, shipped_rules};
use super::pool::{LinkOptions, Pool};
use super::snapshot;
use crate::agent::host::Workers;
use crate::session::build::{JoinRequest, JoinWorkers};

/// The cluster flags of a lead: each `None` (or empty) falls back to the user's settings.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// `--workers host:port,…`.
    pub workers: Option<String>,
    /// `--cookie-file`.
    pub cookie_file: Option<PathBuf>,
    /// `--worker-ca/--worker-cert/--worker-key`.
    pub tls: TlsSettings,
}

impl JoinWorkers for Cluster {
    fn join<'a>(
        &'a self,
        request: JoinRequest<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Option<Arc<dyn Workers>>>> {
        Box::pin(async move {
            // A script path is made absolute: the worker runs elsewhere.
            let model = request
                .model
                .map(str::to_string)
                .or_else(|| request.policy.model.clone())
                .map(|m| match m.strip_prefix("script:") {
                    Some(path) => match std::fs::canonicalize(path) {
                        Ok(abs) => format!("script:{}", abs.display()),
                        Err(_) => m,
                    },
                    None => m,
                });
            let snapshot = snapshot::dir(request.project_root).map(|d| snapshot::own_file(&d));
            let rules = shipped_rules(request.policy);
            let pool = join(self, request.home, rules, model, snapshot).await?;
            Ok(pool.map(|pool| pool as Arc<dyn Workers>))
        })
    }
}

/// Joins the workers `cluster` (or the settings under `home`) names, shipping `rules` and
/// `model` with each remote run; `None` when no workers are configured. With `snapshot`,
/// the lead keeps its view of the workers in that file for `crew workers list`.
pub async fn join(
    cluster: &Cluster,
    home: Option<&Path>,
    rules: Vec<super::protocol::RuleWire>,
    model: Option<String>,
    snapshot: Option<PathBuf>,
) -> anyhow::Result<Option<Arc<Pool>>> {
    let cfg = join_config(
        cluster.workers.as_deref(),
        cluster.cookie_file.as_deref(),
        &cluster.tls,
        home,
    )?;
    if cfg.workers.is_empty() {
        return Ok(None);
    }
    let Some(file) = cfg.cookie_file else {
        return Err(ConfigError::NoCookie(cfg.workers.join(",")).into());
    };
    let cookie = read_cookie(&file)?;
    let tls = cfg.tls.as_ref().map(LeadTls::connector).transpose()?;
    let link = LinkOptions { tls, snapshot };
    Ok(Some(
        Pool::join(&cfg.workers, cookie, rules, model, link).await?,
    ))
}
