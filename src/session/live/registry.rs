//! The registry of live sessions: each running crew writes `~/.crew/run/<pid>.<n>.json` (the
//! directory is 0700) naming its process, project, session and control socket, and removes
//! it when it exits. An entry whose process is gone (killed, crashed) or whose pid now
//! belongs to another process is removed by whoever reads the registry next.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One running crew process and the session it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The session id.
    pub session: String,
    /// The project root.
    pub project: PathBuf,
    /// The session's state directory (`~/.crew/projects/<slug>/<session>`).
    pub session_dir: PathBuf,
    /// The crew process.
    pub pid: u32,
    /// The process's start time (clock ticks since boot, from `/proc`), so that a pid the
    /// kernel reused is not taken for the session.
    pub pid_start: Option<u64>,
    /// When the session started (Unix milliseconds).
    pub started_ms: u64,
    /// The control socket that answers snapshots (`None`: none could be bound).
    pub socket: Option<PathBuf>,
}

/// `~/.crew/run` (`None`: no home directory).
pub(crate) fn run_dir() -> Option<PathBuf> {
    Some(crate::store::crew_home()?.join("run"))
}

/// Makes the run directory, private to the user (0700, also when it already existed).
pub(crate) fn ensure_run_dir() -> io::Result<PathBuf> {
    let dir =
        run_dir().ok_or_else(|| io::Error::other("cannot find the home directory (set HOME)"))?;
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// Where the `n`th session of process `pid` keeps its entry and socket: `<run>/<pid>.<n>.json`
/// and `<run>/<pid>.<n>.sock` (one process may run several sessions: `crew mcp serve`). Short,
/// for the 108-byte limit of a socket's path.
pub(crate) fn paths(run: &Path, pid: u32, n: u32) -> (PathBuf, PathBuf) {
    (
        run.join(format!("{pid}.{n}.json")),
        run.join(format!("{pid}.{n}.sock")),
    )
}

/// Writes `entry` to `file` (readable by the user only).
pub(crate) fn register(file: &Path, entry: &Entry) -> io::Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let json = serde_json::to_vec(entry).map_err(io::Error::other)?;
    std::fs::write(&tmp, json)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&tmp, file)
}

/// The socket beside an entry file: `<pid>.<n>.json` → `<pid>.<n>.sock`. Derived, never
/// read from the entry, so a crafted entry cannot point crew at another file.
fn socket_of(entry_file: &Path) -> PathBuf {
    entry_file.with_extension("sock")
}

/// Removes an entry and its socket (what is already gone is fine).
pub(crate) fn unregister(entry_file: &Path) {
    let _ = std::fs::remove_file(entry_file);
    let _ = std::fs::remove_file(socket_of(entry_file));
}

/// The live sessions, oldest first. Entries of processes that are gone are removed, with
/// their sockets; files that are not entries are left alone.
pub(crate) fn live() -> Vec<Entry> {
    let Some(run) = run_dir() else {
        return Vec::new();
    };
    let Ok(read) = std::fs::read_dir(&run) else {
        return Vec::new();
    };
    let mut entries: Vec<Entry> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|path| {
            let mut entry: Entry = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
            if !alive(&entry) {
                unregister(&path);
                return None;
            }
            // Only the socket beside the entry is the session's.
            entry.socket = entry.socket.map(|_| socket_of(&path));
            Some(entry)
        })
        .collect();
    entries.sort_by_key(|e| (e.started_ms, e.pid));
    entries
}

/// Whether the entry's process still runs (and is the same process).
fn alive(entry: &Entry) -> bool {
    crate::tasks::process_alive(entry.pid)
        && match entry.pid_start {
            Some(start) => start_time(entry.pid) == Some(start),
            None => true,
        }
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name, which may hold spaces: field 3 (state) onwards.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crafted_entry_cannot_make_a_reader_delete_or_reach_another_file() {
        let home = tempfile::tempdir().unwrap();
        let run = home.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let victim = home.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let (file, sock) = paths(&run, dead, 0);
        let entry = Entry {
            session: "s".into(),
            project: "/p".into(),
            session_dir: "/p/s".into(),
            pid: dead,
            pid_start: None,
            started_ms: 0,
            socket: Some(victim.clone()),
        };
        register(&file, &entry).unwrap();
        std::fs::write(&sock, "").unwrap();
        unregister(&file);
        assert!(
            !file.exists() && !sock.exists(),
            "the entry and its own socket go"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "keep",
            "the named file stays"
        );
    }

    #[test]
    fn start_time_tells_this_process_from_a_reused_pid() {
        let me = std::process::id();
        let start = start_time(me).expect("this process has a start time");
        let mut entry = Entry {
            session: "s".into(),
            project: "/p".into(),
            session_dir: "/p/s".into(),
            pid: me,
            pid_start: Some(start),
            started_ms: 0,
            socket: None,
        };
        assert!(alive(&entry));
        entry.pid_start = Some(start + 1);
        assert!(!alive(&entry), "another start time is another process");
    }
}
