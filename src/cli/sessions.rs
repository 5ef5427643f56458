//! `crew sessions list`: the recorded sessions of this project, newest first, with the
//! id to pass to `--resume`, and which of them a crew process is running now.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

/// `crew sessions …`
#[derive(Debug, Subcommand)]
pub enum SessionsCmd {
    /// List this project's sessions, newest first.
    List,
}

/// Runs a sessions subcommand; returns the exit code.
pub(crate) fn run(cmd: SessionsCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let SessionsCmd::List = cmd;
    let root = crate::store::project_root(cwd);
    let (_, notice) = crate::store::open_project(&root)?;
    if let Some(notice) = notice {
        writeln!(out, "note: {notice}")?;
    }
    let sessions = crate::session::recent::recent(&root);
    if sessions.is_empty() {
        writeln!(out, "no sessions for {} yet", root.display())?;
    }
    for s in sessions {
        match s.live_pid {
            Some(pid) => writeln!(
                out,
                "{}  {:>8}  {}  [live, pid {pid}]",
                s.id, s.age, s.title
            )?,
            None => writeln!(out, "{}  {:>8}  {}", s.id, s.age, s.title)?,
        }
    }
    Ok(0)
}
