//! Resource limits for sandboxed commands: how many processes one command may have (a
//! pids cgroup), how large a file it may write (`RLIMIT_FSIZE`) and how much CPU time each
//! of its processes may use (`RLIMIT_CPU`).
//!
//! `RLIMIT_NPROC` is no substitute for the cgroup: it counts every process of the user
//! (crew's own threads included), and root ignores it. So each sandboxed command gets its
//! own pids cgroup (cgroup v2 where crew may create one, else the v1 `pids` hierarchy),
//! made in the parent; the command's first process joins it between fork and exec by
//! writing `0` to its `cgroup.procs`, so every descendant is counted from the start. Where
//! no cgroup can be made the process limit is reported as unavailable ([`status`]) and
//! the other limits still hold. A fork bomb then ends with `fork: Resource temporarily
//! unavailable` inside its own cgroup, and crew and the other agents keep working.
//!
//! The limits are process-wide settings (`limits` in the settings files), like the
//! environment pass-through list: every command builder applies the same ones.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::libc;

/// Processes one sandboxed command may have at once, by default.
pub const DEFAULT_MAX_PROCESSES: u64 = 2048;

/// The largest file a sandboxed command may write, by default (8 GiB).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 8 << 30;

/// CPU seconds each process of a sandboxed command may use, by default (2 hours).
pub const DEFAULT_CPU_SECONDS: u64 = 2 * 60 * 60;

/// The errno the child reports when it could not join its cgroup or set its limits; the
/// parent turns it back into a sandbox error.
pub const LIMITS_ERRNO: i32 = nix::errno::Errno::EDQUOT as i32;

/// The limits a sandboxed command runs under; `None` means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes (and threads) the command may have at once (pids cgroup).
    pub max_processes: Option<u64>,
    /// Bytes: the largest file it may write (`RLIMIT_FSIZE`).
    pub max_file_size: Option<u64>,
    /// CPU seconds per process (`RLIMIT_CPU`).
    pub cpu_seconds: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_processes: Some(DEFAULT_MAX_PROCESSES),
            max_file_size: Some(DEFAULT_MAX_FILE_SIZE),
            cpu_seconds: Some(DEFAULT_CPU_SECONDS),
        }
    }
}

static LIMITS: RwLock<Option<Limits>> = RwLock::new(None);

/// Sets the limits for every sandboxed command from now on (from the settings).
pub fn configure(limits: Limits) {
    match LIMITS.write() {
        Ok(mut l) => *l = Some(limits),
        Err(poisoned) => *poisoned.into_inner() = Some(limits),
    }
}

/// The limits in force.
pub fn current() -> Limits {
    let l = match LIMITS.read() {
        Ok(l) => *l,
        Err(poisoned) => *poisoned.into_inner(),
    };
    l.unwrap_or_default()
}

/// Which cgroup hierarchy can hold per-command pids limits here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupSupport {
    /// New cgroups are made below this directory.
    Available(PathBuf),
    /// No writable pids cgroup; the text says what was tried.
    Unavailable(String),
}

/// Where crew makes its per-command cgroups, probed once: `CREW_CGROUP_PARENT` if set,
/// else a `crew` directory in the v2 hierarchy (when its `pids` controller can be
/// enabled below crew's own cgroup), else in the v1 `pids` hierarchy.
pub fn status() -> &'static CgroupSupport {
    static PROBE: std::sync::OnceLock<CgroupSupport> = std::sync::OnceLock::new();
    PROBE.get_or_init(probe)
}

fn probe() -> CgroupSupport {
    if std::env::var_os("CREW_TEST_SIMULATE_NO_CGROUPS").is_some() {
        return CgroupSupport::Unavailable("simulated by CREW_TEST_SIMULATE_NO_CGROUPS".into());
    }
    let mut tried = Vec::new();
    let candidates = std::env::var_os("CREW_CGROUP_PARENT")
        .map(|p| vec![PathBuf::from(p)])
        .unwrap_or_else(default_parents);
    for parent in candidates {
        sweep_stale(&parent);
        let dir = parent.join(format!("crew-{}", std::process::id()));
        match make_parent(&dir) {
            Ok(()) => {
                crate::cgroup_owner::claim(&dir);
                return CgroupSupport::Available(dir);
            }
            Err(e) => tried.push(format!("{}: {e}", dir.display())),
        }
    }
    CgroupSupport::Unavailable(if tried.is_empty() {
        "no cgroup file system is mounted".into()
    } else {
        tried.join("; ")
    })
}

/// The parents to try: crew's own v2 cgroup, then the v1 pids hierarchy's.
fn default_parents() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return out;
    };
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() {
            let v2 = Path::new("/sys/fs/cgroup");
            if v2.join("cgroup.controllers").exists() {
                out.insert(0, v2.join(rel));
            }
        } else if controllers.split(',').any(|c| c == "pids") {
            out.push(Path::new("/sys/fs/cgroup/pids").join(rel));
        }
    }
    out
}

/// Removes the empty cgroups that crews no longer running left below `parent`: a
/// `crew-<pid>` whose pid is gone here and whose owner's lock is free (`cgroup_owner`: a
/// pid of another PID namespace is no proof of death).
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("crew-")) else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        crate::cgroup_owner::sweep_if_abandoned(&e.path(), |dir| {
            if let Ok(children) = std::fs::read_dir(dir) {
                for c in children.flatten().filter(|c| c.path().is_dir()) {
                    let _ = std::fs::remove_dir(c.path());
                }
            }
            let _ = std::fs::remove_dir(dir);
        });
    }
}

/// Makes crew's parent cgroup and checks that a pids limit can be set below it.
fn make_parent(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // cgroup v2: the pids controller must be enabled for the children.
    let control = dir.join("cgroup.subtree_control");
    if control.exists() {
        std::fs::write(&control, "+pids")?;
    }
    let probe = dir.join("probe");
    let made = std::fs::create_dir(&probe)
        .and_then(|_| std::fs::write(probe.join("pids.max"), "max"))
        .and_then(|_| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(probe.join("cgroup.procs"))
        });
    let _ = std::fs::remove_dir(&probe);
    made.map(|_| ())
}

/// The limits of one command, prepared in the parent: its cgroup (made, with
/// `pids.max` set, and its `cgroup.procs` open) and the rlimits to set in the child.
#[derive(Debug)]
pub struct PreparedLimits {
    cgroup: Option<Cgroup>,
    file_size: Option<libc::rlim_t>,
    cpu: Option<libc::rlim_t>,
}

/// One command's cgroup; removed when dropped (after the command's processes are gone).
#[derive(Debug)]
struct Cgroup {
    dir: PathBuf,
    procs: OwnedFd,
}

impl PreparedLimits {
    /// Prepares `limits` for one command. Without a usable cgroup the process limit is
    /// left out (it is reported once per session by the caller through [`status`]).
    pub fn prepare(limits: &Limits) -> std::io::Result<Self> {
        let cgroup = match (limits.max_processes, status()) {
            (Some(max), CgroupSupport::Available(parent)) => Some(Cgroup::make(parent, max)?),
            _ => None,
        };
        Ok(Self {
            cgroup,
            file_size: limits.max_file_size.map(|b| b as libc::rlim_t),
            cpu: limits.cpu_seconds.map(|s| s as libc::rlim_t),
        })
    }

    /// Between fork and exec: joins the cgroup and sets the rlimits. Only system calls on
    /// data prepared in the parent.
    pub fn apply(&self) -> std::io::Result<()> {
        if let Some(c) = &self.cgroup {
            // SAFETY: a write of two static bytes to a descriptor we own.
            let n = unsafe { libc::write(c.procs.as_raw_fd(), b"0".as_ptr().cast(), 1) };
            if n != 1 {
                return Err(std::io::Error::from_raw_os_error(LIMITS_ERRNO));
            }
        }
        for (resource, value) in [
            (libc::RLIMIT_FSIZE, self.file_size),
            (libc::RLIMIT_CPU, self.cpu),
        ] {
            let Some(v) = value else { continue };
            let lim = libc::rlimit {
                rlim_cur: v,
                rlim_max: v,
            };
            // SAFETY: setrlimit on a stack value.
            if unsafe { libc::setrlimit(resource, &lim) } != 0 {
                return Err(std::io::Error::from_raw_os_error(LIMITS_ERRNO));
            }
        }
        Ok(())
    }

    /// Whether the command's processes are counted by a cgroup.
    pub fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }
}

impl Cgroup {
    fn make(parent: &Path, max: u64) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let dir = parent.join(format!("c{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let create = || match std::fs::create_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            made => made,
        };
        match create() {
            // The parent went away (removed by a crew of an older version, or by hand):
            // make it again rather than refuse every command from now on.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                make_parent(parent)?;
                create()?;
            }
            made => made?,
        }
        std::fs::write(dir.join("pids.max"), max.to_string())?;
        let path = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let procs = nix::fcntl::open(
            path.as_c_str(),
            nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        Ok(Self { dir, procs })
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The guardian ended every process of the command before it exited, so the first
        // `rmdir` normally succeeds. Anything left (a process that escaped it) is killed, and
        // the wait for the kernel to empty the directory happens off the async threads.
        let dir = std::mem::take(&mut self.dir);
        if remove_or_kill(&dir) {
            return;
        }
        let finish = move || {
            for _ in 0..20 {
                std::thread::sleep(std::time::Duration::from_millis(10));
                if remove_or_kill(&dir) {
                    return;
                }
            }
            tracing::warn!("could not remove the command cgroup {}", dir.display());
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(finish)),
            Err(_) => finish(),
        }
    }
}

/// Removes the cgroup directory `dir`; while it still holds processes, kills them and
/// answers false (try again shortly). Any other failure ends the attempt (true).
fn remove_or_kill(dir: &Path) -> bool {
    match std::fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: plain system call.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            false
        }
        Err(_) => true,
    }
}

/// One line for the session's start: which limits hold.
pub fn describe() -> String {
    let l = current();
    let fmt = |v: Option<u64>, unit: &str| match v {
        Some(v) => format!("{v}{unit}"),
        None => "none".into(),
    };
    let procs = match (l.max_processes, status()) {
        (None, _) => "none".to_string(),
        (Some(n), CgroupSupport::Available(_)) => n.to_string(),
        (Some(_), CgroupSupport::Unavailable(why)) => format!("unavailable ({why})"),
    };
    format!(
        "command limits: processes {procs}, file size {}, CPU {} per process",
        fmt(l.max_file_size.map(|b| b >> 20), " MiB"),
        fmt(l.cpu_seconds, " s"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_limit_everything() {
        let l = Limits::default();
        assert_eq!(l.max_processes, Some(DEFAULT_MAX_PROCESSES));
        assert_eq!(l.max_file_size, Some(DEFAULT_MAX_FILE_SIZE));
        assert_eq!(l.cpu_seconds, Some(DEFAULT_CPU_SECONDS));
    }

    #[test]
    fn the_v1_and_v2_parents_come_from_proc_self_cgroup() {
        // Whatever the machine has, every candidate lies below /sys/fs/cgroup.
        for p in default_parents() {
            assert!(p.starts_with("/sys/fs/cgroup"), "{}", p.display());
        }
    }
}
