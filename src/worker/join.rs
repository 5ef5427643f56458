//! Joining the configured worker nodes for a lead's session: `--workers`, `--cookie-file`
//! and the TLS flags, else `workers`, `workerCookieFile` and `workerTls` in
//! `~/.crew/settings.json`. The session is handed a [`Cluster`] as its
//! `session::build::JoinWorkers`, so it reaches the workers only through the
//! `agent::host::Workers` this returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::config::{ConfigError, LeadTls, TlsSettings, join_config, read_cookie, shipped_rules};
use super::pool_actor::{LinkOptions, Pool};
use super::snapshot;
use crate::agent::host::Workers;
use crate::session::build::{JoinRequest, JoinWorkers};

/// The cluster flags of a lead: each `None` (or empty) falls back to the user's settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cluster {
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
pub(crate) async fn join(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Policy;

    fn request<'a>(policy: &'a Policy, root: &'a Path, home: &'a Path) -> JoinRequest<'a> {
        JoinRequest {
            model: None,
            policy,
            project_root: root,
            home: Some(home),
        }
    }

    #[tokio::test]
    async fn no_workers_in_the_flags_or_the_settings_joins_nothing() {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let policy = Policy::default();
        let joined = Cluster::default()
            .join(request(&policy, root.path(), home.path()))
            .await
            .unwrap();
        assert!(joined.is_none());
    }

    #[tokio::test]
    async fn workers_without_a_cookie_stop_the_session_naming_the_flag_and_the_setting() {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let policy = Policy::default();
        let cluster = Cluster {
            workers: Some("127.0.0.1:9".into()),
            ..Cluster::default()
        };
        let Err(e) = cluster
            .join(request(&policy, root.path(), home.path()))
            .await
        else {
            panic!("workers without a cookie were joined");
        };
        let text = format!("{e:#}");
        assert!(text.contains("127.0.0.1:9"), "{text}");
        assert!(text.contains("--cookie-file"), "{text}");
        assert!(text.contains("workerCookieFile"), "{text}");
    }

    #[tokio::test]
    async fn the_settings_workers_are_used_when_no_flag_names_any() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".crew")).unwrap();
        std::fs::write(
            home.path().join(".crew/settings.json"),
            r#"{"workers": ["127.0.0.1:9"]}"#,
        )
        .unwrap();
        let root = tempfile::tempdir().unwrap();
        let policy = Policy::default();
        let Err(e) = Cluster::default()
            .join(request(&policy, root.path(), home.path()))
            .await
        else {
            panic!("the settings' workers were joined without a cookie");
        };
        assert!(format!("{e:#}").contains("127.0.0.1:9"), "{e:#}");
    }
}
