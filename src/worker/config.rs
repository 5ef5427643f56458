//! What a lead needs to join workers, and what both sides read from disk: the cookie
//! (from a file, never the command line, refused when others may read it), the worker
//! addresses (`--workers`, else `workers` in the user's `~/.crew/settings.json`), and
//! the rules shipped to workers.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::protocol::RuleWire;
use super::tls::Named;
use crate::permission::Policy;

/// Why the cluster configuration could not be read; names the file or field.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The cookie file could not be read.
    #[error("cookie file {path}: {message}")]
    Cookie {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The user's settings are malformed.
    #[error("{path}: field `{field}`: {message}")]
    Settings {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Workers were named without a cookie.
    #[error(
        "workers are configured ({0}) but no cookie file: pass --cookie-file FILE or set `workerCookieFile` in ~/.crew/settings.json"
    )]
    NoCookie(String),
}

/// Reads the cookie: the file's first line, trimmed. Refused when empty, or when the
/// file's mode lets the group or others read it (`chmod 600 FILE`).
pub(crate) fn read_cookie(path: &Path) -> Result<String, ConfigError> {
    let err = |message: String| ConfigError::Cookie {
        path: path.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(err(format!(
                "readable by others (mode {:o}); run `chmod 600 {}`",
                meta.permissions().mode() & 0o777,
                path.display()
            )));
        }
    }
    if meta.len() > 4096 {
        return Err(err("larger than 4 KiB; a cookie is one line".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let cookie = text.lines().next().unwrap_or("").trim().to_string();
    if cookie.len() < 16 {
        return Err(err(
            "the cookie must be at least 16 characters (e.g. `openssl rand -hex 32 > FILE`)".into(),
        ));
    }
    Ok(cookie)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UserSettings {
    #[serde(default)]
    workers: Option<serde_json::Value>,
    #[serde(default)]
    worker_cookie_file: Option<PathBuf>,
    #[serde(default)]
    worker_tls: Option<TlsSettings>,
}

/// `workerTls` in the user's settings: the CA that signs the workers' certificates, and
/// a client certificate and key for workers that demand mutual TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlsSettings {
    /// `workerTls.ca` / `--worker-ca`.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// `workerTls.cert` / `--worker-cert`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// `workerTls.key` / `--worker-key`.
    #[serde(default)]
    pub key: Option<PathBuf>,
}

/// The lead's TLS files, each named with the flag or setting it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeadTls {
    /// The CA the workers' certificates are checked against.
    pub ca: Named,
    /// A client certificate and its key (mutual TLS).
    pub client: Option<(Named, Named)>,
}

impl LeadTls {
    /// The connector for these files.
    pub(crate) fn connector(&self) -> Result<tokio_rustls::TlsConnector, super::tls::TlsError> {
        super::tls::connector(&self.ca, self.client.as_ref().map(|(c, k)| (c, k)))
    }
}

/// Why the lead's TLS files do not make a whole: TLS is all or nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LeadTlsError {
    /// A client certificate without its key (the flag or setting that gave it).
    #[error("{0} is given without a key (--worker-key or workerTls.key)")]
    CertWithoutKey(String),
    /// A client key without its certificate (the flag or setting that gave it).
    #[error("{0} is given without a certificate (--worker-cert or workerTls.cert)")]
    KeyWithoutCert(String),
    /// A client certificate without a CA to check the workers with.
    #[error(
        "a client certificate is given without --worker-ca: the lead must verify the workers' certificates too"
    )]
    CertWithoutCa,
}

/// Merges `--worker-ca/--worker-cert/--worker-key` (each wins over its setting) with
/// `workerTls`; `None` when no CA is given. A client certificate without a key (or the
/// reverse), or without a CA, is an error: TLS is all or nothing.
pub(crate) fn lead_tls(
    cli: &TlsSettings,
    settings: &TlsSettings,
) -> Result<Option<LeadTls>, LeadTlsError> {
    let pick = |c: &Option<PathBuf>, s: &Option<PathBuf>, flag: &str, field: &str| {
        c.as_ref()
            .map(|p| Named::new(flag, p))
            .or_else(|| s.as_ref().map(|p| Named::new(field, p)))
    };
    let ca = pick(&cli.ca, &settings.ca, "--worker-ca", "workerTls.ca");
    let cert = pick(&cli.cert, &settings.cert, "--worker-cert", "workerTls.cert");
    let key = pick(&cli.key, &settings.key, "--worker-key", "workerTls.key");
    let client = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        (Some(c), None) => return Err(LeadTlsError::CertWithoutKey(c.flag)),
        (None, Some(k)) => return Err(LeadTlsError::KeyWithoutCert(k.flag)),
    };
    match (ca, client) {
        (Some(ca), client) => Ok(Some(LeadTls { ca, client })),
        (None, None) => Ok(None),
        (None, Some(_)) => Err(LeadTlsError::CertWithoutCa),
    }
}

/// The workers to join and the cookie file, from the command line or the user's settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct JoinConfig {
    /// `host:port` of each worker.
    pub workers: Vec<String>,
    /// The cookie file.
    pub cookie_file: Option<PathBuf>,
    /// TLS to the workers, when a CA is configured.
    pub tls: Option<LeadTls>,
}

/// Splits `a:1,b:2` into addresses.
pub(crate) fn split_workers(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `--workers`/`--cookie-file` when given, else `workers`/`workerCookieFile` from
/// `~/.crew/settings.json` (`home`).
pub(crate) fn join_config(
    workers: Option<&str>,
    cookie_file: Option<&Path>,
    tls: &TlsSettings,
    home: Option<&Path>,
) -> Result<JoinConfig, ConfigError> {
    let path = home.map(|h| h.join(".crew").join("settings.json"));
    let user: UserSettings = match path.as_ref().map(std::fs::read_to_string) {
        Some(Ok(text)) => serde_json::from_str(&text).map_err(|e| ConfigError::Settings {
            path: path.clone().unwrap_or_default(),
            field: "workers",
            message: e.to_string(),
        })?,
        _ => UserSettings::default(),
    };
    let from_settings = match user.workers {
        None => Vec::new(),
        Some(serde_json::Value::String(s)) => split_workers(&s),
        Some(serde_json::Value::Array(items)) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    serde_json::Value::String(s) => out.push(s),
                    other => {
                        return Err(ConfigError::Settings {
                            path: path.clone().unwrap_or_default(),
                            field: "workers",
                            message: format!("`{other}` is not a \"host:port\" string"),
                        });
                    }
                }
            }
            out
        }
        Some(other) => {
            return Err(ConfigError::Settings {
                path: path.unwrap_or_default(),
                field: "workers",
                message: format!("`{other}` is not a list of \"host:port\" strings"),
            });
        }
    };
    let tls =
        lead_tls(tls, &user.worker_tls.unwrap_or_default()).map_err(|e| ConfigError::Settings {
            path: path.clone().unwrap_or_default(),
            field: "workerTls",
            message: e.to_string(),
        })?;
    Ok(JoinConfig {
        tls,
        workers: workers.map(split_workers).unwrap_or(from_settings),
        cookie_file: cookie_file
            .map(Path::to_path_buf)
            .or(user.worker_cookie_file),
    })
}

/// The lead's rules as shipped to workers (every layer; the worker adds none).
pub(crate) fn shipped_rules(policy: &Policy) -> Vec<RuleWire> {
    policy
        .rules
        .iter()
        .map(|r| RuleWire {
            text: r.text.clone(),
            kind: r.kind,
            layer: r.layer,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_over_settings() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".crew")).unwrap();
        std::fs::write(
            home.path().join(".crew/settings.json"),
            r#"{"workers":["a:1","b:2"],"workerCookieFile":"/c","permissions":{}}"#,
        )
        .unwrap();
        let none = TlsSettings::default();
        let c = join_config(None, None, &none, Some(home.path())).unwrap();
        assert_eq!(c.workers, vec!["a:1", "b:2"]);
        assert_eq!(c.cookie_file, Some(PathBuf::from("/c")));
        let c = join_config(
            Some("x:9, y:8"),
            Some(Path::new("/d")),
            &none,
            Some(home.path()),
        )
        .unwrap();
        assert_eq!(c.workers, vec!["x:9", "y:8"]);
        assert_eq!(c.cookie_file, Some(PathBuf::from("/d")));
        std::fs::write(
            home.path().join(".crew/settings.json"),
            r#"{"workers":[1]}"#,
        )
        .unwrap();
        let e = join_config(None, None, &none, Some(home.path()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("workers") && e.contains("settings.json"), "{e}");
    }

    #[test]
    fn a_cookie_others_can_read_or_too_short_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("cookie");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            read_cookie(&f)
                .unwrap_err()
                .to_string()
                .contains("chmod 600")
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_cookie(&f).unwrap(), "0123456789abcdef0123");
        std::fs::write(&f, "short\n").unwrap();
        assert!(read_cookie(&f).is_err());
    }

    #[test]
    fn tls_flags_win_over_settings_and_half_a_client_pair_is_refused() {
        let p = |s: &str| Some(PathBuf::from(s));
        let settings = TlsSettings {
            ca: p("/s/ca.pem"),
            cert: p("/s/c.pem"),
            key: p("/s/k.pem"),
        };
        let cli = TlsSettings {
            ca: p("/c/ca.pem"),
            ..Default::default()
        };
        let t = lead_tls(&cli, &settings).unwrap().unwrap();
        assert_eq!(t.ca, Named::new("--worker-ca", "/c/ca.pem"));
        let (cert, key) = t.client.unwrap();
        assert_eq!(cert, Named::new("workerTls.cert", "/s/c.pem"));
        assert_eq!(key.flag, "workerTls.key");
        assert_eq!(
            lead_tls(&TlsSettings::default(), &TlsSettings::default()),
            Ok(None)
        );
        let half = TlsSettings {
            ca: p("/ca"),
            cert: p("/c"),
            key: None,
        };
        let e = lead_tls(&half, &TlsSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--worker-cert") && e.contains("without a key"),
            "{e}"
        );
        let no_ca = TlsSettings {
            ca: None,
            cert: p("/c"),
            key: p("/k"),
        };
        assert!(
            lead_tls(&no_ca, &TlsSettings::default())
                .unwrap_err()
                .to_string()
                .contains("--worker-ca")
        );
    }
}
