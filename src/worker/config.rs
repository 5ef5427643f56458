//! What a lead needs to join workers, and what both sides read from disk: the cookie
//! (from a file, never the command line, refused when others may read it), the worker
//! addresses (`--workers`, else `workers` in the user's `~/.crew/settings.json`), and
//! the rules shipped to workers.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::protocol::RuleWire;
use crate::permission::Policy;

/// Why the cluster configuration could not be read; names the file or field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
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
pub fn read_cookie(path: &Path) -> Result<String, ConfigError> {
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
}

/// The workers to join and the cookie file, from the command line or the user's settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JoinConfig {
    /// `host:port` of each worker.
    pub workers: Vec<String>,
    /// The cookie file.
    pub cookie_file: Option<PathBuf>,
}

/// Splits `a:1,b:2` into addresses.
pub fn split_workers(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `--workers`/`--cookie-file` when given, else `workers`/`workerCookieFile` from
/// `~/.crew/settings.json` (`home`).
pub fn join_config(
    workers: Option<&str>,
    cookie_file: Option<&Path>,
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
    Ok(JoinConfig {
        workers: workers.map(split_workers).unwrap_or(from_settings),
        cookie_file: cookie_file
            .map(Path::to_path_buf)
            .or(user.worker_cookie_file),
    })
}

/// The lead's rules as shipped to workers (every layer; the worker adds none).
pub fn shipped_rules(policy: &Policy) -> Vec<RuleWire> {
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
        let c = join_config(None, None, Some(home.path())).unwrap();
        assert_eq!(c.workers, vec!["a:1", "b:2"]);
        assert_eq!(c.cookie_file, Some(PathBuf::from("/c")));
        let c = join_config(Some("x:9, y:8"), Some(Path::new("/d")), Some(home.path())).unwrap();
        assert_eq!(c.workers, vec!["x:9", "y:8"]);
        assert_eq!(c.cookie_file, Some(PathBuf::from("/d")));
        std::fs::write(
            home.path().join(".crew/settings.json"),
            r#"{"workers":[1]}"#,
        )
        .unwrap();
        let e = join_config(None, None, Some(home.path()))
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
}
