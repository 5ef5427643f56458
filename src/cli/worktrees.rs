//! `crew worktrees list|diff|merge|discard`: review the worktrees that subagents left,
//! from any terminal, during or after a run.

use std::io::Write;
use std::path::Path;

use super::Print;
use crate::worktree::{Manager, MergeStyle, WorktreeError};

/// The `crew worktrees` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum WorktreesCmd {
    /// List the worktrees: id, branch, state (clean, dirty, ahead N), path.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a worktree's unified diff against its base, uncommitted changes included.
    Diff {
        /// The task id.
        id: String,
    },
    /// Merge a worktree's branch into the current branch, then remove the worktree.
    Merge {
        /// The task id.
        id: String,
        /// Squash its commits into one.
        #[arg(long)]
        squash: bool,
    },
    /// Make a workspace an ordinary checkout at its path, for an editor or a shell
    /// outside crew (a workspace is an overlay that only crew's programs see).
    Open {
        /// The task id.
        id: String,
    },
    /// Delete a worktree and its branch, with whatever they hold.
    Discard {
        /// The task id.
        id: String,
    },
}

/// Runs a `crew worktrees` subcommand for the repository containing `cwd`, with worktrees
/// under `~/.crew/worktrees`. Returns the exit code: 0 done, 1 refused (conflict, dirty,
/// nothing to merge, unknown id); other failures are errors.
pub(crate) fn run(cmd: WorktreesCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    run_in(cmd, cwd, None, out)
}

/// [`run`] with the worktrees folder given (`None` for `~/.crew/worktrees`).
pub(crate) fn run_in(
    cmd: WorktreesCmd,
    cwd: &Path,
    base_dir: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let manager = Manager::open(cwd, base_dir)?;
    let result = match cmd {
        WorktreesCmd::List { json } => list(&manager, Print::json_if(json), out),
        WorktreesCmd::Diff { id } => manager
            .diff(&id)
            .map(|text| out.write_all(text.as_bytes()).map_err(Into::into)),
        WorktreesCmd::Merge { id, squash } => manager
            .merge(
                &id,
                if squash {
                    MergeStyle::Squash
                } else {
                    MergeStyle::Merge
                },
            )
            .map(|m| {
                let how = if m.squash {
                    "squashed into"
                } else {
                    "merged into"
                };
                writeln!(
                    out,
                    "{id} {how} {} as {} ({} file(s)); worktree and branch removed",
                    m.into,
                    &m.commit[..m.commit.len().min(12)],
                    m.files.len()
                )
                .map_err(Into::into)
            }),
        WorktreesCmd::Open { id } => manager.materialize(&id).map(|path| {
            writeln!(out, "{id} is an ordinary checkout at {}", path.display()).map_err(Into::into)
        }),
        WorktreesCmd::Discard { id } => manager.discard(&id).map(|s| {
            let held = s.map_or_else(
                || "its directory was already gone".into(),
                |s| format!("it was {}", s.state_label()),
            );
            writeln!(out, "{id} discarded ({held})").map_err(Into::into)
        }),
    };
    match result {
        Ok(written) => {
            written?;
            Ok(0)
        }
        Err(
            e @ (WorktreeError::Conflict { .. }
            | WorktreeError::MainCheckoutDirty { .. }
            | WorktreeError::NothingToMerge { .. }
            | WorktreeError::HeadMoved { .. }
            | WorktreeError::NotFound { .. }
            | WorktreeError::Missing { .. }
            | WorktreeError::DetachedHead { .. }
            | WorktreeError::StillActive { .. }),
        ) => {
            writeln!(out, "crew worktrees: {e}")?;
            Ok(1)
        }
        Err(e) => Err(e.into()),
    }
}

fn list(
    manager: &Manager,
    print: Print,
    out: &mut dyn Write,
) -> Result<anyhow::Result<()>, WorktreeError> {
    let items = manager.list()?;
    Ok((|| {
        if print == Print::Json {
            let rows: Vec<serde_json::Value> = items
                .iter()
                .map(|l| {
                    let mut v = serde_json::to_value(l).unwrap_or_default();
                    v["state"] = l.state_label().into();
                    v
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            return Ok(());
        }
        if items.is_empty() {
            writeln!(out, "no worktrees")?;
            return Ok(());
        }
        let w_id = items.iter().map(|l| l.id.len()).max().unwrap_or(2).max(2);
        let w_br = items
            .iter()
            .map(|l| l.branch.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let w_st = items
            .iter()
            .map(|l| l.state_label().len())
            .max()
            .unwrap_or(5)
            .max(5);
        writeln!(
            out,
            "{:w_id$}  {:w_br$}  {:w_st$}  PATH",
            "ID", "BRANCH", "STATE"
        )?;
        for l in &items {
            writeln!(
                out,
                "{:w_id$}  {:w_br$}  {:w_st$}  {}",
                l.id,
                l.branch,
                l.state_label(),
                l.path.display()
            )?;
        }
        Ok(())
    })())
}
