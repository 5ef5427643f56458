//! The command line: argument definitions (clap) and dispatch to the headless runner and
//! the subcommands.

pub mod model;
pub mod output;
pub mod run;
pub mod worktrees;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// crewmaster: a multi-agent coding orchestrator.
#[derive(Debug, Parser)]
#[command(name = "crew", version, about, long_about = None)]
pub struct Cli {
    /// Run one task headless and exit (print mode).
    #[arg(short = 'p', long = "print", value_name = "TASK")]
    pub print: Option<String>,

    /// Agent mode: chat, plan (read-only investigation) or do (carry out --plan-file).
    #[arg(long, default_value = "chat", value_parser = ["chat", "plan", "do"])]
    pub mode: String,

    /// The approved plan for `--mode do`.
    #[arg(long, value_name = "FILE")]
    pub plan_file: Option<PathBuf>,

    /// Permission mode: strict, default, acceptEdits, bypassPermissions or dontAsk.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,

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

    /// Output format for `-p`.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

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
    /// One JSON event per line, then a result line.
    StreamJson,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Review the worktrees subagents left: list, diff, merge, discard.
    Worktrees {
        /// What to do.
        #[command(subcommand)]
        cmd: worktrees::WorktreesCmd,
    },
}

/// Parses the arguments and runs; returns the process exit code.
pub async fn main() -> i32 {
    let cli = Cli::parse();
    if let Some(Command::Worktrees { cmd }) = cli.command {
        let cwd = match cli.cwd.clone().map_or_else(std::env::current_dir, Ok) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("crew: cannot read the current directory: {e}");
                return 2;
            }
        };
        return match worktrees::run(cmd, &cwd, &mut std::io::stdout()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("crew: {e:#}");
                2
            }
        };
    }
    match cli.print.clone() {
        Some(task) => match run::headless(cli, task).await {
            Ok(code) => code,
            Err(e) => {
                eprintln!("crew: {e:#}");
                2
            }
        },
        None => {
            eprintln!(
                "crew: the interactive terminal UI is not available yet; run a task headless with `crew -p \"TASK\"` (see `crew --help`)"
            );
            2
        }
    }
}
