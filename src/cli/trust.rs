//! `crew trust [DIR] | --list | --revoke DIR`: manage the folders whose shared project
//! settings (`.crew/settings.json`) take effect (see `permission::trust`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::permission::trust::{Granted, Revoked, TrustStore};

/// Arguments of `crew trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The folder to trust (default: the current folder); a folder inside a project
    /// trusts the project's root.
    #[arg(value_name = "DIR", conflicts_with_all = ["list", "revoke"])]
    pub dir: Option<PathBuf>,
    /// List the trusted folders.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Stop trusting DIR.
    #[arg(long, value_name = "DIR")]
    pub revoke: Option<PathBuf>,
}

/// Runs `crew trust` from `cwd`; returns the exit code.
pub fn run(args: TrustArgs, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let store =
        TrustStore::user().context("cannot find the home directory for ~/.crew (set HOME)")?;
    if args.list {
        let dirs = store.list()?;
        if dirs.is_empty() {
            writeln!(out, "no trusted folders ({})", store.path().display())?;
        }
        for d in dirs {
            writeln!(out, "{}", d.display())?;
        }
        return Ok(0);
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
            "trusted: {} — its .crew/settings.json (allow rules, defaultMode, worktree.setup) now takes effect; undo with `crew trust --revoke {}`",
            d.display(),
            d.display()
        )?,
        Granted::AlreadyCovered(by) => writeln!(out, "already trusted (through {})", by.display())?,
    }
    Ok(0)
}
