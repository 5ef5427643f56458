//! Which MCP servers a session uses, in Claude Code's `mcpServers` format:
//!
//! ```json
//! { "mcpServers": {
//!     "fs":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!              "env": { "DEBUG": "${DEBUG:-0}" } },
//!     "api": { "type": "http", "url": "https://example.com/mcp",
//!              "headers": { "Authorization": "Bearer ${API_TOKEN}" } } } }
//! ```
//!
//! Sources, highest precedence first (a name defined twice keeps the first): each
//! `--mcp-config FILE`; `.crew/settings.local.json`; the project's `.mcp.json` and
//! `.crew/settings.json` (shared with everyone who clones the repository, so they are read
//! only in a folder the user trusted — elsewhere each server is named in a warning and not
//! started); the user's `~/.crew/settings.json`. `${VAR}` and `${VAR:-default}` are expanded
//! in `command`, `args`, `env`, `url` and `headers`. A bad entry is an error naming the
//! file, the server and the field; the other servers still load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where a server's entry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `--mcp-config FILE`.
    Flag,
    /// `.crew/settings.local.json` (this user, this project).
    Local,
    /// `.mcp.json` or `.crew/settings.json` (shared with the repository).
    Project,
    /// `~/.crew/settings.json` (this user, every project).
    User,
}

impl Scope {
    /// The name shown by `crew mcp list`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Flag => "flag",
            Scope::Local => "local",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name (the `<server>` of `mcp__<server>__<tool>`, before normalisation).
    pub name: String,
    /// How to reach it, variables expanded.
    pub transport: Transport,
    /// Where it was configured.
    pub scope: Scope,
    /// The file it came from.
    pub file: PathBuf,
}

/// An entry (or a whole file) that could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {}{}", file.display(), server.as_deref().map(|s| format!("mcpServers.{s}{}: ", field.as_deref().map(|f| format!(".{f}")).unwrap_or_default())).unwrap_or_default(), message)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The server's name, when the error is in one entry.
    pub server: Option<String>,
    /// The field, when one field is wrong.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

/// The servers found, the entries that could not be used, and warnings (servers in an
/// untrusted folder's shared files).
#[derive(Debug, Default)]
pub struct McpConfig {
    /// Usable servers, highest precedence first.
    pub servers: Vec<ServerConfig>,
    /// Broken files and entries.
    pub errors: Vec<ConfigError>,
    /// Servers that were found but not used, and why.
    pub warnings: Vec<String>,
}

/// The files read, highest precedence first, with their scope and whether they are shared
/// with the repository (and so need the folder's trust).
pub fn files(project_root: &Path, home: Option<&Path>, flags: &[PathBuf]) -> Vec<(Scope, PathBuf)> {
    let mut out: Vec<(Scope, PathBuf)> = flags.iter().map(|f| (Scope::Flag, f.clone())).collect();
    out.push((Scope::Local, project_root.join(".crew/settings.local.json")));
    out.push((Scope::Project, project_root.join(".mcp.json")));
    out.push((Scope::Project, project_root.join(".crew/settings.json")));
    if let Some(h) = home {
        out.push((Scope::User, h.join(".crew/settings.json")));
    }
    out
}

/// Loads every source for the project at `project_root`; `env` looks variables up (the
/// process environment outside tests). Trust comes from `home`'s trust list: no home, or
/// an unreadable list, means not trusted.
pub fn load(
    project_root: &Path,
    home: Option<&Path>,
    flags: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
) -> McpConfig {
    let trusted = home.is_some_and(|h| {
        crate::trust::TrustStore::for_home(h)
            .is_trusted(project_root)
            .unwrap_or(false)
    });
    let mut config = McpConfig::default();
    for (scope, file) in files(project_root, home, flags) {
        let entries = match read_entries(&file, scope) {
            Ok(Some(entries)) => entries,
            Ok(None) => continue,
            Err(e) => {
                config.errors.push(e);
                continue;
            }
        };
        if scope == Scope::Project && !trusted && !entries.is_empty() {
            let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
            config.warnings.push(format!(
                "this folder is not trusted, so the MCP servers in {} were not started: {}. If you trust this repository, run `crew trust {}`",
                file.display(),
                names.join(", "),
                project_root.display()
            ));
            continue;
        }
        for (name, entry) in entries {
            if config.servers.iter().any(|s| s.name == name) {
                continue;
            }
            match parse_entry(&file, &name, &entry, env) {
                Ok(transport) => config.servers.push(ServerConfig {
                    name,
                    transport,
                    scope,
                    file: file.clone(),
                }),
                Err(e) => config.errors.push(e),
            }
        }
    }
    config
}

/// The `mcpServers` entries of `file`, in file order; `None` when the file (or the key)
/// is absent and that is fine: anywhere but a file a flag (`scope`) named.
fn read_entries(file: &Path, scope: Scope) -> Result<Option<Vec<(String, Value)>>, ConfigError> {
    let err = |message: String| ConfigError {
        file: file.to_path_buf(),
        server: None,
        field: None,
        message,
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && scope != Scope::Flag => {
            return Ok(None);
        }
        Err(e) => return Err(err(format!("cannot read the file: {e}"))),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        err(format!(
            "not valid JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    match value.get("mcpServers") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        )),
        Some(_) => Err(err(
            "`mcpServers` must be an object of server entries".into()
        )),
    }
}

/// One entry's transport, variables expanded.
pub fn parse_entry(
    file: &Path,
    name: &str,
    entry: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Transport, ConfigError> {
    let err = |field: Option<&str>, message: String| ConfigError {
        file: file.to_path_buf(),
        server: Some(name.to_string()),
        field: field.map(str::to_string),
        message,
    };
    if name.is_empty() {
        return Err(err(None, "a server needs a non-empty name".into()));
    }
    let Some(obj) = entry.as_object() else {
        return Err(err(
            None,
            "the entry must be an object with `command` or `url`".into(),
        ));
    };
    let string = |field: &str| -> Result<Option<String>, ConfigError> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env)
                .map(Some)
                .map_err(|m| err(Some(field), m.to_string())),
            Some(_) => Err(err(Some(field), "must be a string".into())),
        }
    };
    let map = |field: &str| -> Result<BTreeMap<String, String>, ConfigError> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    let field = format!("{field}.{k}");
                    match v {
                        Value::String(s) => expand(s, env)
                            .map(|s| (k.clone(), s))
                            .map_err(|m| err(Some(&field), m.to_string())),
                        _ => Err(err(Some(&field), "must be a string".into())),
                    }
                })
                .collect(),
            Some(_) => Err(err(Some(field), "must be an object of strings".into())),
        }
    };
    let kind = string("type")?;
    let kind = kind.as_deref().unwrap_or(if obj.contains_key("url") {
        "http"
    } else {
        "stdio"
    });
    match kind {
        "stdio" => {
            let command = string("command")?
                .filter(|c| !c.is_empty())
                .ok_or_else(|| err(Some("command"), "a stdio server needs a `command` (or set `type` to `http` with a `url`)".into()))?;
            let args = match obj.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::String(s) => expand(s, env).map_err(|m| err(Some(&format!("args[{i}]")), m.to_string())),
                        _ => Err(err(Some(&format!("args[{i}]")), "must be a string".into())),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(err(Some("args"), "must be an array of strings".into())),
            };
            Ok(Transport::Stdio {
                command,
                args,
                env: map("env")?,
            })
        }
        "http" | "streamable-http" | "streamableHttp" => {
            let url = string("url")?
                .ok_or_else(|| err(Some("url"), "an http server needs a `url`".into()))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(Some("url"), format!("`{url}` is not an http:// or https:// URL")));
            }
            Ok(Transport::Http {
                url,
                headers: map("headers")?,
            })
        }
        "sse" => Err(err(
            Some("type"),
            "the legacy SSE transport is not supported; most servers also serve streamable HTTP: set `type` to `http` and point `url` at that endpoint".into(),
        )),
        other => Err(err(
            Some("type"),
            format!("unknown transport `{other}` (expected `stdio` or `http`)"),
        )),
    }
}

/// Why `${…}` in a server's configuration could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// `${` with no `}` after it (the whole text).
    #[error("`${{` without a closing `}}` in `{0}`")]
    Unclosed(String),
    /// What is inside `${…}` is not a variable name.
    #[error("`${{{0}}}` is not a variable name")]
    NotAName(String),
    /// The variable is unset and there is no default.
    #[error("environment variable `{0}` is not set; set it or write `${{{0}:-default}}`")]
    Unset(String),
}

/// Expands `${VAR}` and `${VAR:-default}` in `text`. An unset variable without a default
/// is an error naming it (a server started with a half-expanded token fails obscurely).
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Unclosed(text.to_string()));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ExpandError::NotAName(inner.to_string()));
        }
        match (
            env(var).filter(|v| !v.is_empty() || default.is_none()),
            default,
        ) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(ExpandError::Unset(var.to_string()));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${NOPE:-x}/${TOKEN:-y}", &env).unwrap(), "x/s3cret");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("no vars $HOME", &env).unwrap(), "no vars $HOME");
        assert!(
            expand("${NOPE}", &env)
                .unwrap_err()
                .to_string()
                .contains("`NOPE` is not set")
        );
        assert!(expand("${oops", &env).is_err());
        assert!(expand("${a b}", &env).is_err());
    }

    #[test]
    fn entries_parse_stdio_and_http() {
        let f = Path::new("/p/.mcp.json");
        let stdio = parse_entry(
            f,
            "fs",
            &json!({"command": "srv", "args": ["--x", "${TOKEN}"], "env": {"K": "${NOPE:-v}"}}),
            &env,
        )
        .unwrap();
        assert_eq!(
            stdio,
            Transport::Stdio {
                command: "srv".into(),
                args: vec!["--x".into(), "s3cret".into()],
                env: [("K".to_string(), "v".to_string())].into(),
            }
        );
        let http = parse_entry(
            f,
            "api",
            &json!({"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}),
            &env,
        )
        .unwrap();
        assert_eq!(
            http,
            Transport::Http {
                url: "https://h/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer s3cret".to_string())].into(),
            }
        );
    }

    #[test]
    fn bad_entries_name_file_server_and_field() {
        let f = Path::new("/p/.mcp.json");
        let cases = [
            (json!({"args": ["x"]}), "mcpServers.s.command"),
            (json!({"command": "x", "args": [1]}), "mcpServers.s.args[0]"),
            (
                json!({"command": "x", "env": {"A": "${NOPE}"}}),
                "mcpServers.s.env.A",
            ),
            (json!({"type": "http"}), "mcpServers.s.url"),
            (
                json!({"type": "http", "url": "ftp://x"}),
                "mcpServers.s.url",
            ),
            (json!({"type": "carrier-pigeon"}), "mcpServers.s.type"),
            (
                json!({"type": "sse", "url": "http://x"}),
                "mcpServers.s.type",
            ),
            (json!("npx"), "mcpServers.s: "),
        ];
        for (entry, want) in cases {
            let e = parse_entry(f, "s", &entry, &env).unwrap_err().to_string();
            assert!(e.starts_with("/p/.mcp.json: "), "{e}");
            assert!(e.contains(want), "{entry}: {e}");
        }
    }

    #[test]
    fn untrusted_project_servers_are_named_and_skipped() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(proj.path()).unwrap();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"evil": {"command": "rm"}, "other": {"command": "x"}}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".crew")).unwrap();
        std::fs::write(
            root.join(".crew/settings.local.json"),
            r#"{"mcpServers": {"mine": {"command": "ok"}, "broken": {"args": []}}}"#,
        )
        .unwrap();
        let c = load(&root, Some(home.path()), &[], &env);
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mine"]);
        assert_eq!(c.servers[0].scope, Scope::Local);
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("evil, other"), "{}", c.warnings[0]);
        assert_eq!(c.errors.len(), 1);
        assert!(
            c.errors[0]
                .to_string()
                .contains("mcpServers.broken.command")
        );

        crate::trust::TrustStore::for_home(home.path())
            .trust(&root)
            .unwrap();
        let c = load(&root, Some(home.path()), &[], &env);
        let names: Vec<_> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mine", "evil", "other"]);
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn a_missing_flag_file_is_an_error_and_flags_win() {
        let proj = tempfile::tempdir().unwrap();
        let flag = proj.path().join("m.json");
        let c = load(proj.path(), None, std::slice::from_ref(&flag), &env);
        assert!(c.errors[0].to_string().contains("cannot read"));
        std::fs::write(&flag, r#"{"mcpServers": {"a": {"command": "from-flag"}}}"#).unwrap();
        std::fs::create_dir_all(proj.path().join(".crew")).unwrap();
        std::fs::write(
            proj.path().join(".crew/settings.local.json"),
            r#"{"mcpServers": {"a": {"command": "from-local"}}}"#,
        )
        .unwrap();
        let c = load(proj.path(), None, &[flag], &env);
        assert_eq!(c.servers.len(), 1);
        assert_eq!(c.servers[0].scope, Scope::Flag);
    }
}
