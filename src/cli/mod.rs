//! The command line: argument definitions (clap) and dispatch to the headless runner and
//! the subcommands.
#![allow(
    clippy::print_stdout,
    reason = "the command line prints its results (answers, listings, JSON) to stdout"
)]

pub(crate) mod agents;
pub(crate) mod dashboard;
pub(crate) mod extensions;
pub(crate) mod hooks;
pub(crate) mod mcp;
pub mod mcp_serve;
pub(crate) mod memory;
pub(crate) mod output;
pub mod permissions;
pub(crate) mod ps;
pub(crate) mod run;
pub(crate) mod sessions;
pub(crate) mod setup;
pub(crate) mod stream;
pub(crate) mod tasks;
pub(crate) mod team;
pub(crate) mod trust;
pub(crate) mod workers;
pub(crate) mod worktrees;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// crewmaster: a multi-agent coding orchestrator.
#[derive(Debug, Parser)]
#[command(name = "crew", version, about, long_about = None)]
pub struct Cli {
    /// Run one task headless and exit (print mode). Without TASK, or with `-`, the task
    /// is read from standard input (`echo TASK | crew -p`).
    #[arg(
        short = 'p',
        long = "print",
        value_name = "TASK",
        num_args = 0..=1,
        default_missing_value = "-"
    )]
    pub print: Option<String>,

    /// Agent mode: chat, plan (read-only investigation) or do (carry out --plan-file).
    #[arg(long, default_value = "chat", value_parser = ["chat", "plan", "do"])]
    pub mode: String,

    /// The approved plan for `--mode do`.
    #[arg(long, value_name = "FILE")]
    pub plan_file: Option<PathBuf>,

    /// Permission mode: strict, default, acceptEdits, bypassPermissions, dontAsk or auto;
    /// `plan` (Claude Code's) is `--mode plan` in default mode. An unknown mode is an error.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,

    /// Claude Code's spelling of `--permission-mode bypassPermissions`.
    #[arg(long, conflicts_with = "permission_mode")]
    pub dangerously_skip_permissions: bool,

    /// Accepted as Claude Code accepts it; crew's text output shows every tool call and
    /// its outcome on stderr anyway.
    #[arg(long)]
    pub verbose: bool,

    /// Allow rules for this session only, as in Claude Code: `"Bash(git log:*) Edit"`
    /// (separated by spaces or commas; may be given more than once).
    #[arg(
        long = "allowedTools",
        visible_alias = "allowed-tools",
        value_name = "RULES"
    )]
    pub allowed_tools: Vec<String>,

    /// Deny rules for this session only, in the same syntax.
    #[arg(
        long = "disallowedTools",
        visible_alias = "disallowed-tools",
        value_name = "RULES"
    )]
    pub disallowed_tools: Vec<String>,

    /// More directories the agents may read and write in this session besides the working
    /// directory (their files and, in the OS sandbox, their commands), as Claude Code's
    /// `--add-dir`; may be given more than once.
    #[arg(long = "add-dir", value_name = "DIR", num_args = 1..)]
    pub add_dir: Vec<PathBuf>,

    /// Subagent definitions for this session, as Claude Code's `--agents`: a JSON object
    /// from name to `{"description", "prompt", "tools", "model", …}`, above the files'.
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,

    /// The agent definition the lead runs as, as Claude Code's `--agent`: its prompt, its
    /// tools and (without `--model`) its model.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// A Claude Code plugin to load for this run (a directory holding
    /// `.claude-plugin/plugin.json`, with `commands/`, `agents/`, `skills/`,
    /// `hooks/hooks.json`), besides the installed plugins the settings enable; may be
    /// given more than once. Also for `crew agents|skills|commands|hooks list`.
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    pub plugin_dir: Vec<PathBuf>,

    /// The lead's system prompt, instead of crew's.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// Text added at the end of the lead's system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,

    /// Model: anthropic:NAME, openai:NAME or script:PATH (default: from settings or
    /// API keys; with neither, the built-in demo).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// Working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// The most model turns the run may take.
    #[arg(long, default_value_t = 100)]
    pub max_turns: u32,

    /// Output format for `-p`: `text`; `json` and `stream-json` in Claude Code's message
    /// schema (what the Claude Agent SDKs read); `events`, crew's own event stream.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    /// Input format: `text` (the task after `-p`), or `stream-json`: user messages and
    /// the SDK's control requests as JSON lines on standard input, as the Claude Agent
    /// SDKs send them (implies headless; needs `--output-format stream-json`).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,

    /// With `--output-format stream-json`: also stream the model's text as it arrives
    /// (`stream_event` messages), as Claude Code's flag of the same name.
    #[arg(long)]
    pub include_partial_messages: bool,

    /// Where approval questions go in a `--input-format stream-json` session: `stdio`
    /// sends them to the SDK's `can_use_tool` callback (without it they are refused).
    #[arg(long, value_name = "stdio")]
    pub permission_prompt_tool: Option<String>,

    /// Resume the newest session of this project.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Resume the session with this id.
    #[arg(
        short = 'r',
        long,
        value_name = "ID",
        conflicts_with = "continue_session"
    )]
    pub resume: Option<String>,

    /// Start a new session with this id (letters, digits, `-` and `_`) instead of a
    /// random one, so its directory is known in advance.
    #[arg(long, value_name = "ID", conflicts_with_all = ["continue_session", "resume"])]
    pub session_id: Option<String>,

    /// Stop the run cleanly once its cost (cache reads and writes included) passes this
    /// many US dollars (default: the `maxBudgetUsd` setting, else no limit).
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,

    /// Serve a web dashboard of this run alongside it (default address 127.0.0.1:0, a
    /// free port); its URL, token included, is printed (in the TUI, shown). With `-p`,
    /// approval questions wait for an answer there instead of being refused.
    #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub dashboard: Option<std::net::SocketAddr>,

    /// Allow a non-loopback `--dashboard` address (without TLS: anyone who sees the URL
    /// can steer your agents).
    #[arg(long, requires = "dashboard")]
    pub dashboard_allow_remote: bool,

    /// Do not wait for background tasks before exiting a `-p` run.
    #[arg(long)]
    pub no_wait: bool,

    /// How many subagents may run at once, the rest queue (default: the
    /// `maxConcurrentAgents` setting, else 8).
    #[arg(long)]
    pub max_concurrent_agents: Option<usize>,

    /// Also use the MCP servers in FILE (Claude Code's `{"mcpServers": …}` format); may be
    /// given more than once. These win over servers of the same name in settings.
    #[arg(long = "mcp-config", value_name = "FILE", global = true)]
    pub mcp_config: Vec<PathBuf>,

    /// Worker nodes to join (`host:port,…`; default: `workers` in ~/.crew/settings.json).
    #[arg(long, value_name = "HOST:PORT,…", global = true)]
    pub workers: Option<String>,

    /// The cluster cookie's file (default: `workerCookieFile` in ~/.crew/settings.json).
    #[arg(long, value_name = "FILE", global = true)]
    pub cookie_file: Option<PathBuf>,

    /// Connect to the workers over TLS, trusting the CA in FILE (PEM) to sign their
    /// certificates; never plaintext then (default: `workerTls.ca` in ~/.crew/settings.json).
    #[arg(long, value_name = "FILE", global = true)]
    pub worker_ca: Option<PathBuf>,

    /// The lead's client certificate (PEM), for workers started with `--tls-ca` (mutual
    /// TLS; default: `workerTls.cert`).
    #[arg(long, value_name = "FILE", global = true, requires = "worker_key")]
    pub worker_cert: Option<PathBuf>,

    /// The key of `--worker-cert` (PEM, mode 600; default: `workerTls.key`).
    #[arg(long, value_name = "FILE", global = true, requires = "worker_cert")]
    pub worker_key: Option<PathBuf>,

    /// Append every request sent to a `script:` model to FILE as JSON lines (testing).
    #[arg(long, value_name = "FILE", hide = true)]
    pub record_requests: Option<PathBuf>,

    /// A subcommand instead of a task.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Output formats of a headless run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Streamed text on stdout, tool activity on stderr.
    Text,
    /// One JSON object when the run ends.
    Json,
    /// Claude Code's messages, one a line: the init message, each assistant and user
    /// message, then the result.
    StreamJson,
    /// crew's own events, one JSON object a line, then the result.
    Events,
}

/// How a subcommand prints what it lists or decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Print {
    /// Lines for people.
    Lines,
    /// JSON for scripts (`--json`).
    Json,
}

impl Print {
    /// [`Print::Json`] when `--json` was given.
    pub(crate) fn json_if(json: bool) -> Self {
        if json { Print::Json } else { Print::Lines }
    }
}

/// Input formats of a headless run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// The task is the argument of `-p` (or standard input, read whole).
    Text,
    /// JSON lines: user messages and control requests (the Claude Agent SDK protocol).
    StreamJson,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Agent definitions.
    Agents {
        /// What to do.
        #[command(subcommand)]
        cmd: agents::AgentsCmd,
    },
    /// Hooks: `list` shows the effective hooks and where each comes from.
    Hooks {
        /// What to do.
        #[command(subcommand)]
        cmd: hooks::HooksCmd,
    },
    /// Permission decisions and rules.
    Permissions {
        /// What to do.
        #[command(subcommand)]
        cmd: permissions::PermissionsCmd,
    },
    /// Recorded sessions of this project.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        cmd: sessions::SessionsCmd,
    },
    /// Review the worktrees subagents left: list, diff, merge, discard.
    Worktrees {
        /// What to do.
        #[command(subcommand)]
        cmd: worktrees::WorktreesCmd,
    },
    /// Background tasks of a session (works from another terminal during a run).
    Tasks {
        /// What to do.
        #[command(subcommand)]
        cmd: tasks::TasksCmd,
    },
    /// A session's agent team: `show` its members and work list, `send` a message to a
    /// member (works from another terminal during a run).
    Team {
        /// What to do.
        #[command(subcommand)]
        cmd: team::TeamCmd,
    },
    /// Skills (`SKILL.md` in .claude/skills, .crew/skills, the user's and plugins').
    Skills {
        /// What to do.
        #[command(subcommand)]
        cmd: extensions::SkillsCmd,
    },
    /// Custom slash commands (.claude/commands, .crew/commands, the user's and plugins').
    Commands {
        /// What to do.
        #[command(subcommand)]
        cmd: extensions::CommandsCmd,
    },
    /// Memory files (CLAUDE.md, AGENTS.md, CREW.md): `show` what an agent here loads and
    /// where each came from.
    Memory {
        /// What to do.
        #[command(subcommand)]
        cmd: memory::MemoryCmd,
    },
    /// MCP servers: `list` and `get` show each server's status and tools; `add` and
    /// `remove` edit the configuration.
    Mcp {
        /// What to do.
        #[command(subcommand)]
        cmd: mcp::McpCmd,
    },
    /// Run a worker node offering subagent slots to leads that share its cookie.
    Worker(workers::WorkerArgs),
    /// Worker nodes: `list` shows each node, its slots in use and its tasks.
    Workers {
        /// What to do.
        #[command(subcommand)]
        cmd: workers::WorkersCmd,
    },
    /// A web dashboard of every live session: agents, transcripts, approvals, worktrees,
    /// team, commands and costs, live; answer approvals and review worktrees from it.
    Dashboard(dashboard::DashboardArgs),
    /// Every live session and, in each, every agent: what it is doing, its worktree and
    /// branch, tokens and cost; its background commands.
    Ps(ps::PsArgs),
    /// Trust a folder, so its shared .crew/settings.json takes effect (allow rules,
    /// defaultMode, worktree.setup); `--list` and `--revoke DIR` manage the list.
    Trust(trust::TrustArgs),
}

/// What the subcommands read from the global flags.
struct Globals<'a> {
    /// `--cwd`, else the current directory.
    cwd: &'a std::path::Path,
    /// `--mcp-config`.
    mcp_config: &'a [PathBuf],
    /// `--plugin-dir`.
    plugin_dirs: &'a [PathBuf],
}

async fn subcommand(
    cmd: Command,
    globals: Globals<'_>,
    cluster: workers::ClusterFlags<'_>,
) -> anyhow::Result<i32> {
    let mut out = std::io::stdout();
    let Globals {
        cwd,
        mcp_config,
        plugin_dirs,
    } = globals;
    match cmd {
        Command::Mcp { cmd } => mcp::run(cmd, cwd, mcp_config, &mut out).await,
        Command::Agents { cmd } => agents::run(cmd, cwd, plugin_dirs, &mut out),
        Command::Hooks { cmd } => hooks::run(cmd, cwd, plugin_dirs, &mut out),
        Command::Tasks { cmd } => tasks::run(cmd, cwd, &mut out).await,
        Command::Team { cmd } => team::run(cmd, cwd, &mut out),
        Command::Sessions { cmd } => sessions::run(cmd, cwd, &mut out),
        Command::Permissions { cmd } => permissions::run(cmd, &mut out),
        Command::Worktrees { cmd } => worktrees::run(cmd, cwd, &mut out),
        Command::Trust(args) => trust::run(args, cwd, &mut out),
        Command::Ps(args) => ps::run(args, cwd, &mut out).await,
        Command::Dashboard(args) => dashboard::run(args, &mut out).await,
        Command::Worker(args) => workers::serve(args, cluster.cookie_file).await,
        Command::Workers { cmd } => workers::run(cmd, cwd, cluster, &mut out).await,
        Command::Skills { cmd } => extensions::skills(cmd, cwd, plugin_dirs, &mut out),
        Command::Commands { cmd } => extensions::commands(cmd, cwd, plugin_dirs, &mut out),
        Command::Memory { cmd } => memory::run(cmd, cwd, &mut out),
    }
}

/// Parses the arguments and runs; returns the process exit code.
pub async fn main() -> i32 {
    let mut cli = Cli::parse();
    if let Some(cmd) = cli.command.take() {
        let cwd = match cli
            .cwd
            .clone()
            .map(Ok)
            .unwrap_or_else(std::env::current_dir)
        {
            Ok(cwd) => cwd,
            Err(e) => {
                eprintln!("crew: cannot read the current directory: {e}");
                return 2;
            }
        };
        let tls = workers::tls_flags(&cli);
        let cluster = workers::ClusterFlags {
            workers: cli.workers.as_deref(),
            cookie_file: cli.cookie_file.as_deref(),
            tls: &tls,
        };
        let globals = Globals {
            cwd: &cwd,
            mcp_config: &cli.mcp_config,
            plugin_dirs: &cli.plugin_dir,
        };
        return match subcommand(cmd, globals, cluster).await {
            Ok(code) => code,
            Err(e) => {
                eprintln!("crew: {e:#}");
                2
            }
        };
    }
    if cli.input_format == InputFormat::StreamJson {
        return stream_session(cli).await;
    }
    match cli.print.clone() {
        Some(task) => {
            let ran = match read_task(task) {
                Ok(task) => run::headless(cli, task).await,
                Err(e) => Err(e),
            };
            ran.unwrap_or_else(|e| {
                eprintln!("crew: {e:#}");
                2
            })
        }
        None => interactive(cli).await,
    }
}

/// `--input-format stream-json`: a session driven by JSON lines on standard input.
async fn stream_session(cli: Cli) -> i32 {
    if cli.output_format != OutputFormat::StreamJson {
        eprintln!("crew: --input-format stream-json needs --output-format stream-json");
        return 2;
    }
    if cli.print.as_deref().is_some_and(|t| t != "-") {
        eprintln!(
            "crew: --input-format stream-json reads the prompt from standard input; send it as a user message instead of after -p"
        );
        return 2;
    }
    stream::serve(cli).await.unwrap_or_else(|e| {
        eprintln!("crew: {e:#}");
        2
    })
}

/// The task of `-p`: as given, or read from standard input when it is `-` (or absent).
fn read_task(task: String) -> anyhow::Result<String> {
    use std::io::{IsTerminal, Read};
    if task != "-" {
        return Ok(task);
    }
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        anyhow::bail!("-p: give the task after -p, or pipe it in (`echo TASK | crew -p`)");
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| anyhow::anyhow!("-p: cannot read the task from standard input: {e}"))?;
    let text = text.trim_end().to_string();
    if text.trim().is_empty() {
        anyhow::bail!("-p: standard input held no task; give the task after -p, or pipe it in");
    }
    Ok(text)
}

/// `crew` without `-p`: the terminal UI when both ends are a terminal; otherwise a hint
/// to run headless (a pipe cannot answer approval dialogs).
async fn interactive(cli: Cli) -> i32 {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "crew: not a terminal, so the interactive UI cannot start; run a task headless with `crew -p \"TASK\"` (see `crew --help`)"
        );
        return 2;
    }
    let dashboard = cli.dashboard.map(|addr| crate::dashboard::Listen {
        addr,
        exposure: dashboard::exposure(cli.dashboard_allow_remote),
    });
    match crate::tui::run(setup::options(&cli), dashboard).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("crew: {e:#}");
            2
        }
    }
}
