//! `crew mcp list|get|add|remove`: the configured MCP servers. `list` and `get` connect to
//! each server (all at once, each within the connect timeout) and show its scope, file,
//! transport, status and tools; `add` and `remove` edit a scope's file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::Print;
use crate::mcp::config::{self, Scope, ServerConfig, Transport};
use crate::mcp::config_edit;
use crate::mcp::server_actor::Status;
use crate::mcp::{CONNECT_TIMEOUT, McpClients};
use crate::tools::{Registry, Safety};

/// `crew mcp` subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// Every configured server: scope and file, transport, status, tools.
    List {
        /// One JSON array instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One server's details and tools.
    Get {
        /// The server's name.
        name: String,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Add (or replace) a server: `crew mcp add NAME -- COMMAND ARGS…` for stdio, or
    /// `crew mcp add NAME --transport http URL`.
    Add {
        /// The server's name.
        name: String,
        /// Where to keep it: local (.crew/settings.local.json), project (.mcp.json) or
        /// user (~/.crew/settings.json).
        #[arg(long, value_enum, default_value_t = ScopeArg::Local)]
        scope: ScopeArg,
        /// stdio (a command) or http (a URL); default: http when given one URL.
        #[arg(long, value_enum)]
        transport: Option<TransportArg>,
        /// An environment variable for a stdio server, `K=V` (repeatable).
        #[arg(short = 'e', long = "env", value_name = "K=V")]
        env: Vec<String>,
        /// A request header for an http server, `'K: V'` (repeatable).
        #[arg(short = 'H', long = "header", value_name = "K: V")]
        header: Vec<String>,
        /// The command and its arguments, or the URL.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        target: Vec<String>,
    },
    /// Remove a server (from the first scope that has it, or from `--scope`).
    Remove {
        /// The server's name.
        name: String,
        /// Only this scope.
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Serve crew's own tools and `delegate` to MCP clients (stdio, or streamable HTTP with
    /// `--listen ADDR`), under this side's settings, mode and trust.
    Serve(super::mcp_serve::ServeArgs),
}

/// A scope on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    /// `.crew/settings.local.json`.
    Local,
    /// `.mcp.json`.
    Project,
    /// `~/.crew/settings.json`.
    User,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Self {
        match s {
            ScopeArg::Local => Scope::Local,
            ScopeArg::Project => Scope::Project,
            ScopeArg::User => Scope::User,
        }
    }
}

/// A transport on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// A child process.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// Runs a `crew mcp` subcommand in `cwd`.
pub(crate) async fn run(
    cmd: McpCmd,
    cwd: &Path,
    flags: &[PathBuf],
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let project_root = crate::store::project_root(cwd);
    let home = crate::store::home_dir();
    match cmd {
        McpCmd::Serve(args) => super::mcp_serve::run(args, cwd).await,
        McpCmd::List { json } => {
            let shown = connect_all(&project_root, home.as_deref(), flags, None).await;
            print(out, &shown, Print::json_if(json))?;
            Ok(0)
        }
        McpCmd::Get { name, json } => {
            let shown = connect_all(&project_root, home.as_deref(), flags, Some(&name)).await;
            if shown.servers.is_empty() && shown.errors.is_empty() {
                bail!("no MCP server named `{name}` is configured (see `crew mcp list`)");
            }
            print(out, &shown, Print::json_if(json))?;
            Ok(0)
        }
        McpCmd::Add {
            name,
            scope,
            transport,
            env,
            header,
            target,
        } => {
            let entry = entry(transport, &env, &header, &target)?;
            // Check the entry the way a session will read it (variables left unexpanded).
            config::parse_entry(Path::new("(command line)"), &name, &entry, &|_| {
                Some("x".into())
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            let file = config_edit::file_for(scope.into(), &project_root, home.as_deref())?;
            let replaced = config_edit::add(&file, &name, entry)?;
            let verb = if replaced { "replaced" } else { "added" };
            writeln!(out, "{verb} MCP server `{name}` in {}", file.display())?;
            if Scope::from(scope) == Scope::Project {
                writeln!(
                    out,
                    "note: servers in .mcp.json start only in a trusted folder (`crew trust`)"
                )?;
            }
            Ok(0)
        }
        McpCmd::Remove { name, scope } => {
            let scopes = match scope {
                Some(s) => vec![Scope::from(s)],
                None => vec![Scope::Local, Scope::Project, Scope::User],
            };
            for scope in scopes {
                let Ok(file) = config_edit::file_for(scope, &project_root, home.as_deref()) else {
                    continue;
                };
                if config_edit::remove(&file, &name)? {
                    writeln!(out, "removed MCP server `{name}` from {}", file.display())?;
                    return Ok(0);
                }
            }
            bail!("no MCP server named `{name}` in the chosen scope(s) (see `crew mcp list`)")
        }
    }
}

/// The `mcpServers` entry `crew mcp add` writes.
fn entry(
    transport: Option<TransportArg>,
    env: &[String],
    header: &[String],
    target: &[String],
) -> anyhow::Result<Value> {
    let looks_like_url = target.len() == 1
        && (target[0].starts_with("http://") || target[0].starts_with("https://"));
    let transport = transport.unwrap_or(if looks_like_url {
        TransportArg::Http
    } else {
        TransportArg::Stdio
    });
    match transport {
        TransportArg::Stdio => {
            if !header.is_empty() {
                bail!("--header applies to http servers; a stdio server takes --env K=V");
            }
            let mut vars = serde_json::Map::new();
            for kv in env {
                let (k, v) = kv
                    .split_once('=')
                    .with_context(|| format!("--env `{kv}`: expected K=V"))?;
                vars.insert(k.to_string(), Value::String(v.to_string()));
            }
            let mut e = json!({"command": target[0], "args": &target[1..]});
            if !vars.is_empty() {
                e["env"] = Value::Object(vars);
            }
            Ok(e)
        }
        TransportArg::Http => {
            if !env.is_empty() {
                bail!("--env applies to stdio servers; an http server takes --header 'K: V'");
            }
            let [url] = target else {
                bail!(
                    "an http server takes one URL, got {} arguments",
                    target.len()
                );
            };
            let mut headers = serde_json::Map::new();
            for kv in header {
                let (k, v) = kv
                    .split_once(':')
                    .with_context(|| format!("--header `{kv}`: expected 'K: V'"))?;
                headers.insert(k.trim().to_string(), Value::String(v.trim().to_string()));
            }
            let mut e = json!({"type": "http", "url": url});
            if !headers.is_empty() {
                e["headers"] = Value::Object(headers);
            }
            Ok(e)
        }
    }
}

/// What `list`/`get` show.
struct Shown {
    servers: Vec<(ServerConfig, Status)>,
    errors: Vec<String>,
    warnings: Vec<String>,
}

/// Loads the configuration and connects to every server (or only `only`).
async fn connect_all(
    project_root: &Path,
    home: Option<&Path>,
    flags: &[PathBuf],
    only: Option<&str>,
) -> Shown {
    let loaded = config::load(project_root, home, flags, &|v| std::env::var(v).ok());
    let servers: Vec<ServerConfig> = loaded
        .servers
        .into_iter()
        .filter(|s| only.is_none_or(|n| s.name == n))
        .collect();
    let errors = loaded
        .errors
        .iter()
        .filter(|e| only.is_none_or(|n| e.server.as_deref() == Some(n)))
        .map(|e| e.to_string())
        .collect();
    let registry = Registry::new();
    let (clients, statuses) = McpClients::start(
        servers,
        registry.dynamic_tools(),
        None,
        project_root.to_path_buf(),
        CONNECT_TIMEOUT,
    )
    .await;
    clients.shutdown().await;
    Shown {
        servers: statuses,
        errors,
        warnings: loaded.warnings,
    }
}

fn print(out: &mut dyn Write, shown: &Shown, print: Print) -> anyhow::Result<()> {
    if print == Print::Json {
        let servers: Vec<Value> = shown
            .servers
            .iter()
            .map(|(c, s)| server_json(c, s))
            .collect();
        let v = json!({"servers": servers, "errors": shown.errors, "warnings": shown.warnings});
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if shown.servers.is_empty() && shown.errors.is_empty() {
        writeln!(
            out,
            "no MCP servers configured (add one with `crew mcp add NAME -- COMMAND ARGS…`)"
        )?;
    }
    for (c, status) in &shown.servers {
        writeln!(
            out,
            "{} ({}: {}) {} {} — {status}",
            c.name,
            c.scope.as_str(),
            c.file.display(),
            c.transport.kind(),
            target(&c.transport)
        )?;
        if let Status::Connected { tools } = status {
            for (name, safety) in tools {
                let mark = if *safety == Safety::ReadOnly {
                    " (read-only)"
                } else {
                    ""
                };
                writeln!(out, "  {name}{mark}")?;
            }
        }
    }
    for e in &shown.errors {
        writeln!(out, "error: {e}")?;
    }
    for w in &shown.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

fn target(t: &Transport) -> String {
    match t {
        Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        Transport::Http { url, .. } => url.clone(),
    }
}

fn server_json(c: &ServerConfig, s: &Status) -> Value {
    let (status, reason, tools) = match s {
        Status::Connected { tools } => ("connected", None, tools.clone()),
        Status::Connecting => ("connecting", None, Vec::new()),
        Status::Restarting { reason } | Status::Failed { reason } => {
            ("failed", Some(reason.clone()), Vec::new())
        }
    };
    json!({
        "name": c.name,
        "scope": c.scope.as_str(),
        "file": c.file,
        "transport": c.transport.kind(),
        "target": target(&c.transport),
        "status": status,
        "reason": reason,
        "tools": tools.iter().map(|(n, s)| json!({"name": n, "safety": s.as_str()})).collect::<Vec<_>>(),
    })
}
