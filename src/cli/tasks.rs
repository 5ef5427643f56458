//! `crew tasks list|logs|stop`: watch and control a session's background tasks from
//! another terminal, during or after a run. Reads the state the running session persists;
//! a stop is a request file the running session honours within a fraction of a second.
//! Without `--session`, every live session of the project is looked at (then the newest
//! finished one): task ids are unique across sessions, so an id finds its session.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::tasks::{
    TaskKind, TaskRecord, TaskStatus, load_records, process_alive, stop_request_path,
};
use crate::tools::task_tools::describe;

/// `crew tasks …`
#[derive(Debug, Subcommand)]
pub enum TasksCmd {
    /// List the tasks of a session (the newest by default).
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
        /// The session id.
        #[arg(long)]
        session: Option<String>,
    },
    /// Print a task's output log.
    Logs {
        /// The task id.
        id: String,
        /// Keep printing as the log grows, until the task ends.
        #[arg(short = 'f', long)]
        follow: bool,
        /// The session id.
        #[arg(long)]
        session: Option<String>,
    },
    /// Stop a running task.
    Stop {
        /// The task id.
        id: String,
        /// The session id.
        #[arg(long)]
        session: Option<String>,
    },
}

fn session_dir(cwd: &Path, session: Option<&str>) -> anyhow::Result<PathBuf> {
    let root = crate::store::project_root(cwd);
    // Adopts this project's old-layout directory, as a session start would.
    let _ = crate::store::open_project(&root)?;
    match session {
        Some(id) => {
            if !crate::store::valid_session_id(id) {
                bail!("--session `{id}`: a session id is 1 to 64 letters, digits, `-` or `_`");
            }
            let dir = crate::store::session_dir(&root, id)
                .context("cannot find the home directory (set HOME)")?;
            let owned =
                crate::store::project_dir(&root).is_some_and(|p| crate::store::owned_by(&p, &root));
            if !owned || !dir.is_dir() {
                bail!("--session {id}: no such session for {}", root.display());
            }
            Ok(dir)
        }
        None => crate::store::newest_session(&root)
            .map(|(_, dir)| dir)
            .with_context(|| format!("no sessions with tasks for {} yet", root.display())),
    }
}

/// The sessions to look in: the one `--session` names; else every live session of the
/// project (oldest first), then the newest session if it is not among them.
fn session_dirs(cwd: &Path, session: Option<&str>) -> anyhow::Result<Vec<PathBuf>> {
    if session.is_some() {
        return Ok(vec![session_dir(cwd, session)?]);
    }
    let root = crate::store::project_root(cwd);
    let mut dirs: Vec<PathBuf> = crate::session::live::registry::live()
        .into_iter()
        .filter(|e| e.project == root)
        .map(|e| e.session_dir)
        .collect();
    match session_dir(cwd, None) {
        Ok(newest) if !dirs.contains(&newest) => dirs.push(newest),
        Ok(_) => {}
        Err(e) if dirs.is_empty() => return Err(e),
        Err(_) => {}
    }
    Ok(dirs)
}

/// The session holding task `id`, among `dirs`, and its record.
fn find_in(dirs: &[PathBuf], id: &str) -> anyhow::Result<(PathBuf, TaskRecord)> {
    for dir in dirs {
        if let Some(rec) = load_records(dir)?.into_iter().find(|r| r.id == id) {
            return Ok((dir.clone(), rec));
        }
    }
    let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    bail!(
        "no task `{id}` in {}; `crew tasks list` shows the ids",
        searched.join(", ")
    )
}

fn find(dir: &Path, id: &str) -> anyhow::Result<TaskRecord> {
    load_records(dir)?
        .into_iter()
        .find(|r| r.id == id)
        .with_context(|| {
            format!(
                "no task `{id}` in {}; `crew tasks list` shows the ids",
                dir.display()
            )
        })
}

/// Runs a tasks subcommand; returns the exit code.
pub(crate) async fn run(
    cmd: TasksCmd,
    cwd: &Path,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<i32> {
    match cmd {
        TasksCmd::List { json, session } => {
            let dirs = session_dirs(cwd, session.as_deref())?;
            let mut all = Vec::new();
            for dir in &dirs {
                let records = load_records(dir)?;
                // Each agent task's spending, from the session's ledger.
                let ledger = crate::agent::ledger::Ledger::load(dir);
                let cost =
                    |r: &TaskRecord| ledger.for_task(&r.id).filter(|_| r.kind == TaskKind::Agent);
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
                if json {
                    let mut list = serde_json::to_value(&records)?;
                    for (v, r) in list.as_array_mut().into_iter().flatten().zip(&records) {
                        v["cost_usd"] = serde_json::json!(cost(r).map(|a| a.cost_usd));
                        v["session"] = serde_json::json!(name);
                    }
                    all.extend(list.as_array().cloned().unwrap_or_default());
                    continue;
                }
                if dirs.len() > 1 {
                    writeln!(out, "session {}:", name.unwrap_or_default())?;
                }
                if records.is_empty() {
                    writeln!(out, "no tasks in session {}", dir.display())?;
                }
                for r in &records {
                    match cost(r) {
                        Some(a) => writeln!(
                            out,
                            "{}  cost {}",
                            describe(r),
                            crate::agent::ledger::Ledger::cost_text(Some(a))
                        )?,
                        None => writeln!(out, "{}", describe(r))?,
                    }
                }
            }
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
            }
            Ok(0)
        }
        TasksCmd::Logs {
            id,
            follow,
            session,
        } => {
            let (dir, rec) = find_in(&session_dirs(cwd, session.as_deref())?, &id)?;
            let mut pos = 0u64;
            loop {
                pos = copy_from(&rec.output_file, pos, out)?;
                if !follow {
                    return Ok(0);
                }
                let now = find(&dir, &id)?;
                if now.status.is_terminal() || !process_alive(now.host_pid) {
                    copy_from(&rec.output_file, pos, out)?;
                    writeln!(out, "\n[task {} {}]", now.id, now.status.as_str())?;
                    return Ok(0);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        TasksCmd::Stop { id, session } => {
            let (dir, rec) = find_in(&session_dirs(cwd, session.as_deref())?, &id)?;
            if rec.status.is_terminal() {
                writeln!(out, "task {id} already ended ({})", rec.status.as_str())?;
                return Ok(0);
            }
            if !process_alive(rec.host_pid) {
                writeln!(
                    out,
                    "task {id} belonged to crew process {} which is gone; nothing is running",
                    rec.host_pid
                )?;
                return Ok(0);
            }
            let request = stop_request_path(&dir, &id);
            std::fs::write(&request, b"stop")
                .with_context(|| format!("cannot write {}", request.display()))?;
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let now = find(&dir, &id)?;
                if now.status.is_terminal() {
                    writeln!(out, "task {id} {}", now.status.as_str())?;
                    return Ok(if now.status == TaskStatus::Cancelled {
                        0
                    } else {
                        1
                    });
                }
            }
            writeln!(out, "asked task {id} to stop; it has not ended yet")?;
            Ok(1)
        }
    }
}

/// Copies a file's bytes from `pos` to `out`; returns the new position.
fn copy_from(path: &Path, pos: u64, out: &mut (dyn Write + Send)) -> anyhow::Result<u64> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Ok(pos);
    };
    f.seek(SeekFrom::Start(pos))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    out.write_all(&buf)?;
    out.flush()?;
    Ok(pos + buf.len() as u64)
}
