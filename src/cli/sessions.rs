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
    let sessions = crate::transcript::list_sessions(&root);
    let live: Vec<(String, u32)> = crate::session::live::registry::live()
        .into_iter()
        .filter(|e| e.project == root)
        .map(|e| (e.session, e.pid))
        .collect();
    if sessions.is_empty() {
        writeln!(out, "no sessions for {} yet", root.display())?;
    }
    for s in sessions {
        let age = s.modified.elapsed().map(|d| d.as_secs()).unwrap_or(0);
        let age = match age {
            a if a < 120 => format!("{a}s ago"),
            a if a < 7200 => format!("{}m ago", a / 60),
            a if a < 172_800 => format!("{}h ago", a / 3600),
            a => format!("{}d ago", a / 86_400),
        };
        match live.iter().find(|(id, _)| *id == s.id) {
            Some((_, pid)) => {
                writeln!(out, "{}  {:>8}  {}  [live, pid {pid}]", s.id, age, s.title)?
            }
            None => writeln!(out, "{}  {:>8}  {}", s.id, age, s.title)?,
        }
    }
    Ok(0)
}
