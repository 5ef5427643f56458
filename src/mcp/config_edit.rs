//! Writing `mcpServers` entries for `crew mcp add` and `crew mcp remove`: the file of a
//! scope is read as JSON, the one entry changed, and the file written atomically; every
//! other key in it is kept as it was.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::config::Scope;

/// Why a configuration file could not be changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a JSON object (or its `mcpServers` is not one).
    #[error("{path}: {message}; fix the file by hand first")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The scope needs a home directory and there is none.
    #[error("cannot find the home directory for ~/.crew/settings.json (set HOME)")]
    NoHome,
}

/// The file `scope` is written to: local `.crew/settings.local.json`, project `.mcp.json`
/// (Claude Code's shared file), user `~/.crew/settings.json`.
pub(crate) fn file_for(
    scope: Scope,
    project_root: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, EditError> {
    Ok(match scope {
        Scope::Local | Scope::Flag => project_root.join(".crew/settings.local.json"),
        Scope::Project => project_root.join(".mcp.json"),
        Scope::User => home.ok_or(EditError::NoHome)?.join(".crew/settings.json"),
    })
}

fn read(path: &Path) -> Result<Map<String, Value>, EditError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(source) => {
            return Err(EditError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(EditError::Malformed {
            path: path.to_path_buf(),
            message: "not a JSON object".into(),
        }),
        Err(e) => Err(EditError::Malformed {
            path: path.to_path_buf(),
            message: format!("not valid JSON: {e}"),
        }),
    }
}

fn write(path: &Path, map: Map<String, Value>) -> Result<(), EditError> {
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    crate::store::write_atomic(path, text.as_bytes()).map_err(|source| EditError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn servers<'a>(
    path: &Path,
    map: &'a mut Map<String, Value>,
) -> Result<&'a mut Map<String, Value>, EditError> {
    match map
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        Value::Object(m) => Ok(m),
        _ => Err(EditError::Malformed {
            path: path.to_path_buf(),
            message: "`mcpServers` is not an object".into(),
        }),
    }
}

/// Sets server `name` in `path` to `entry`; returns whether it replaced one.
pub(crate) fn add(path: &Path, name: &str, entry: Value) -> Result<bool, EditError> {
    let mut map = read(path)?;
    let replaced = servers(path, &mut map)?
        .insert(name.to_string(), entry)
        .is_some();
    write(path, map)?;
    Ok(replaced)
}

/// Removes server `name` from `path`; returns whether it was there.
pub(crate) fn remove(path: &Path, name: &str) -> Result<bool, EditError> {
    if !path.exists() {
        return Ok(false);
    }
    let mut map = read(path)?;
    let removed = servers(path, &mut map)?.remove(name).is_some();
    if removed {
        write(path, map)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_remove_keep_other_keys() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(".crew/settings.local.json");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, r#"{"permissions": {"allow": ["Read"]}}"#).unwrap();
        assert!(!add(&f, "t", serde_json::json!({"command": "x"})).unwrap());
        assert!(add(&f, "t", serde_json::json!({"command": "y"})).unwrap());
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(v["permissions"]["allow"][0], "Read");
        assert_eq!(v["mcpServers"]["t"]["command"], "y");
        assert!(remove(&f, "t").unwrap());
        assert!(!remove(&f, "t").unwrap());
        std::fs::write(&f, "[1]").unwrap();
        assert!(
            add(&f, "t", Value::Null)
                .unwrap_err()
                .to_string()
                .contains("not a JSON object")
        );
    }
}
