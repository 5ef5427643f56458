//! The lead's view of its workers on disk, so `crew workers list` can ask the running
//! lead instead of opening a connection of its own: the lead's link actor rewrites
//! `~/.crew/projects/<slug>/workers/<pid>.json` atomically on every change (a worker
//! joined or was lost, a slot taken or freed), and `crew workers list` reads the newest
//! snapshot whose lead process is still alive. Snapshots of dead leads are ignored and
//! removed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One worker as the lead sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NodeView {
    /// The worker's node name (`name@host`).
    pub node: String,
    /// Its slots.
    pub slots: u32,
    /// The lead's tasks running there.
    pub tasks: Vec<String>,
    /// Finished tasks whose branch the worker still keeps (as of its last status).
    pub kept: Vec<String>,
    /// `false` once its connection was lost.
    pub alive: bool,
}

/// A lead's snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    /// The lead's process id.
    pub pid: u32,
    /// The lead's cluster node name.
    pub lead: String,
    /// Milliseconds since the Unix epoch at the last change.
    pub updated_ms: u64,
    /// Its workers.
    pub workers: Vec<NodeView>,
}

impl Snapshot {
    /// This process's snapshot as of now.
    pub(crate) fn now(lead: &str, workers: Vec<NodeView>) -> Snapshot {
        Snapshot {
            pid: std::process::id(),
            lead: lead.to_string(),
            updated_ms: now_ms(),
            workers,
        }
    }
}

/// `~/.crew/projects/<slug>/workers`: where the leads of a project write their snapshots.
pub(crate) fn dir(project_root: &Path) -> Option<PathBuf> {
    Some(crate::store::project_dir(project_root)?.join("workers"))
}

/// This process's snapshot file in `dir`.
pub(crate) fn own_file(dir: &Path) -> PathBuf {
    dir.join(format!("{}.json", std::process::id()))
}

/// Writes `snap` to `path` atomically; a failure is logged, never fatal (the snapshot is
/// for monitoring only).
pub(crate) fn write(path: &Path, snap: &Snapshot) {
    let result = path
        .parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|_| {
            let bytes = serde_json::to_vec_pretty(snap).map_err(std::io::Error::other)?;
            crate::store::write_atomic(path, &bytes)
        });
    if let Err(e) = result {
        tracing::warn!("cannot write the workers snapshot {}: {e}", path.display());
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether process `pid` exists (signal 0: no signal is sent).
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// The newest snapshot in `dir` whose lead is alive. Snapshots of dead leads are removed;
/// unreadable or malformed files are skipped (never trusted).
pub(crate) fn newest_live(dir: &Path) -> Option<Snapshot> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<Snapshot> = None;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(pid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !alive(pid) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let Ok(snap) = serde_json::from_slice::<Snapshot>(&text) else {
            continue;
        };
        if snap.pid != pid {
            continue;
        }
        if best.as_ref().is_none_or(|b| snap.updated_ms > b.updated_ms) {
            best = Some(snap);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(pid: u32, updated_ms: u64) -> Snapshot {
        Snapshot {
            pid,
            lead: format!("lead-{pid}"),
            updated_ms,
            workers: vec![NodeView {
                node: "a@127.0.0.1".into(),
                slots: 2,
                tasks: vec!["t1".into()],
                kept: vec![],
                alive: true,
            }],
        }
    }

    #[test]
    fn the_newest_live_snapshot_wins_and_dead_leads_are_swept() {
        let d = tempfile::tempdir().unwrap();
        // This process is alive; a child that has exited is not.
        let me = std::process::id();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        write(&d.path().join(format!("{dead}.json")), &snap(dead, 9_999));
        write(&own_file(d.path()), &snap(me, 5));
        // A file whose name and pid disagree, and garbage, are skipped.
        write(&d.path().join("1.json"), &snap(me, 10_000));
        std::fs::write(d.path().join("2.json"), "{not json").unwrap();
        let got = newest_live(d.path()).unwrap();
        assert_eq!(got, snap(me, 5));
        assert!(!d.path().join(format!("{dead}.json")).exists());
        assert!(newest_live(&d.path().join("missing")).is_none());
    }
}
