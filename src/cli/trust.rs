//! `crew trust [DIR] | --list | --diff [DIR] | --revoke DIR`: manage the folders whose
//! shared project configuration (settings, hooks, MCP servers, agent definitions) takes
//! effect, pinned to its content (see `crate::trust`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::trust::{Granted, Revoked, TrustState, TrustStore};

/// Arguments of `crew trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The folder to trust (default: the current folder); a folder inside a project
    /// trusts the project's root.
    #[arg(value_name = "DIR", conflicts_with_all = ["list", "revoke"])]
    pub dir: Option<PathBuf>,
    /// List the trusted folders, each as trusted, changed since trust, or missing.
    #[arg(long, conflicts_with_all = ["revoke", "diff"])]
    pub list: bool,
    /// Show what changed in a folder's executable configuration since it was trusted
    /// (default: the current folder's project).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".", conflicts_with = "revoke")]
    pub diff: Option<PathBuf>,
    /// Stop trusting DIR.
    #[arg(long, value_name = "DIR")]
    pub revoke: Option<PathBuf>,
}

/// Runs `crew trust` from `cwd`; returns the exit code.
pub(crate) fn run(args: TrustArgs, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let store =
        TrustStore::user().context("cannot find the home directory for ~/.crew (set HOME)")?;
    if args.list {
        let entries = store.entries()?;
        if entries.is_empty() {
            writeln!(out, "no trusted folders ({})", store.path().display())?;
        }
        for (dir, state) in entries {
            let what = match state {
                None => "missing (the folder no longer exists)".to_string(),
                Some(TrustState::Trusted(_)) => "trusted".to_string(),
                Some(TrustState::Changed { changes, .. }) => format!(
                    "changed since trust ({} file(s)): review with `crew trust --diff {d}`, then `crew trust {d}`",
                    changes.len(),
                    d = dir.display()
                ),
                Some(TrustState::Unpinned(_)) => {
                    "changed since trust (trusted before crew pinned content): review it and run `crew trust DIR` to pin it".to_string()
                }
                Some(TrustState::NotTrusted) => "not trusted".to_string(),
            };
            writeln!(out, "{}\t{what}", dir.display())?;
        }
        return Ok(0);
    }
    if let Some(dir) = args.diff {
        let dir = crate::store::project_root(&cwd.join(dir));
        let Some((entry, changes)) = store.diff(&dir)? else {
            writeln!(
                out,
                "{} is not trusted; `crew trust {0}` trusts it",
                dir.display()
            )?;
            return Ok(1);
        };
        if changes.is_empty() && store.is_trusted(&dir)? {
            writeln!(
                out,
                "{}: nothing changed since trust (entry {})",
                dir.display(),
                entry.display()
            )?;
            return Ok(0);
        }
        writeln!(
            out,
            "{}: executable configuration changed since trust (entry {}):",
            dir.display(),
            entry.display()
        )?;
        for c in &changes {
            writeln!(out, "  {c}")?;
        }
        if changes.is_empty() {
            writeln!(out, "  (the entry was made before crew pinned content)")?;
        }
        writeln!(
            out,
            "review them (`git diff` shows tracked files' changes), then run `crew trust {}` to trust this content",
            dir.display()
        )?;
        return Ok(1);
    }
    if let Some(dir) = args.revoke {
        let dir = cwd.join(dir);
        return Ok(match store.revoke(&dir)? {
            Revoked::Removed(d) => {
                writeln!(
                    out,
                    "no longer trusted: {} (its shared settings are ignored from the next session)",
                    d.display()
                )?;
                0
            }
            Revoked::CoveredBy(by) => {
                writeln!(
                    out,
                    "{} has no entry of its own; it is trusted through {}: revoke that instead",
                    dir.display(),
                    by.display()
                )?;
                1
            }
            Revoked::NotTrusted(d) => {
                writeln!(out, "{} was not trusted", d.display())?;
                1
            }
        });
    }
    // A folder inside a project stands for the project: its root's settings are the ones
    // that take effect.
    let given = args.dir.map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d));
    let dir = crate::store::project_root(
        &std::fs::canonicalize(&given)
            .with_context(|| format!("cannot trust {}: no such directory", given.display()))?,
    );
    match store.trust(&dir)? {
        Granted::Added(d) => writeln!(
            out,
            "trusted: {} — its .crew/settings.json (allow rules, defaultMode, worktree.setup), hooks and MCP servers now take effect, pinned to their current content; undo with `crew trust --revoke {}`",
            d.display(),
            d.display()
        )?,
        Granted::Repinned(d) => writeln!(
            out,
            "trusted again: {} — its current hooks, MCP servers, allow rules and agent definitions are pinned and take effect from the next session",
            d.display()
        )?,
        Granted::AlreadyCovered(by) => writeln!(out, "already trusted (through {})", by.display())?,
    }
    Ok(0)
}
