//! What every sandbox profile hides from a command, in one set ([`HiddenSet`]) that the
//! mount namespace (`mount_ns`) lays over the file system before the command starts:
//!
//! - the credential stores of the home directory, from the one list
//!   (`permission::sandbox::CREDENTIALS`) that the engine's hard check reads too;
//! - crew's own home (`~/.crew`: the cluster cookie, TLS keys, the trust store, user
//!   settings, control sockets, other sessions' transcripts and results, other agents'
//!   worktrees), veiled whole by an empty read-only tmpfs, with the agent's own
//!   workspace (its writable roots and cwd) and its session's `results` directory bound
//!   back in, visible and writable as before ([`Veil`]); its `teams` directory (team
//!   locks, work lists, inboxes) is hidden even when `allowRead` lifts the veil;
//! - every layer's `Read` deny rules (the session's [`WalkFilter`]): a directory a rule
//!   covers whole (`Read(./secrets/**)`) is hidden as a directory, so files created in it
//!   later are hidden too; each file a rule matches (`Read(./.env)`, `Read(**/*.pem)`) is
//!   hidden by itself (`hidden_scan`);
//! - hard links inside the roots to any hidden file, and the targets of symlinks inside
//!   the roots that are such links (a symlink to a hidden path needs nothing more: its
//!   target is hidden where it lies), found through an inode index of the roots that is
//!   cached per policy and roots (`hidden_scan`), not walked per command;
//! - Unix sockets that would be an unconfined escape: `$XDG_RUNTIME_DIR` and `/run/user`
//!   (session bus, systemd user manager), the Docker, containerd and Podman sockets
//!   (and `$DOCKER_HOST`'s), the ssh-agent socket (`$SSH_AUTH_SOCK`), the X11 and ICE
//!   socket directories, the system bus and the system manager's private socket.
//!
//! Directories get an empty read-only tmpfs, files and sockets `/dev/null`. Abstract Unix
//! sockets have no path; only a network namespace cuts them off.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crew_policy::sandbox::CREDENTIALS;
use crew_policy::walk::WalkFilter;

use super::hidden_scan;

/// Fixed Unix sockets (and directories of them) that reach a program outside the sandbox.
const SOCKETS: &[&str] = &[
    "/run/user",
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/dbus",
    "/var/run/dbus",
    "/run/systemd/private",
    "/tmp/.X11-unix",
    "/tmp/.ICE-unix",
];

/// What a command is hidden from, and what it keeps: the inputs of [`HiddenSet::for_command`].
#[derive(Debug, Clone)]
pub struct HideScope {
    /// The session's Read deny rules, home and results directory.
    pub walk: Arc<WalkFilter>,
    /// The command's writable roots: searched for links to hidden files, and kept visible
    /// where they lie below the crew home (the agent's own worktree).
    pub roots: Vec<PathBuf>,
    /// The command's working directory (kept visible like the roots).
    pub cwd: PathBuf,
    /// The user's home (its credential stores are hidden); `None`: the filter's.
    pub home: Option<PathBuf>,
    /// crew's home (`~/.crew`), veiled; `None`: `<home>/.crew`.
    pub crew_home: Option<PathBuf>,
    /// More paths below the crew home to keep visible (besides the roots, the cwd and
    /// the session's results directory).
    pub keep: Vec<PathBuf>,
    /// Paths the user explicitly lets commands read (`sandbox.filesystem.allowRead`):
    /// what the set would hide at or below one of them stays visible. A path inside a
    /// hidden directory (`~/.ssh/known_hosts`) does not un-hide its directory.
    pub allow_read: Vec<PathBuf>,
}

impl HideScope {
    /// The scope of a command in `cwd` with these writable roots under `walk`'s policy.
    pub fn new(walk: Arc<WalkFilter>, roots: &[PathBuf], cwd: &Path) -> Self {
        Self {
            walk,
            roots: roots.to_vec(),
            cwd: cwd.to_path_buf(),
            home: None,
            crew_home: None,
            keep: Vec::new(),
            allow_read: Vec::new(),
        }
    }

    /// The user's home: given, else the filter's, else `HOME`'s.
    fn home(&self) -> Option<PathBuf> {
        self.home
            .clone()
            .or_else(|| self.walk.homes().first().cloned())
            .or_else(crew_config::places::home_dir)
    }
}

/// crew's home covered whole, with some paths below it bound back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Veil {
    /// The directory covered (real path).
    pub over: PathBuf,
    /// Paths strictly below `over` (real, none below another) that stay visible.
    pub keep: Vec<PathBuf>,
}

/// The paths hidden from one command: real locations, none below another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HiddenSet {
    /// Directories covered by an empty read-only tmpfs.
    pub dirs: Vec<PathBuf>,
    /// Files and sockets covered by `/dev/null`.
    pub files: Vec<PathBuf>,
    /// crew's home, veiled.
    pub veil: Option<Veil>,
}

impl HiddenSet {
    /// Everything `scope` hides that exists now.
    pub fn for_command(scope: &HideScope) -> Self {
        let mut set = HiddenSet::default();
        let home = scope.home();
        let mut homes: Vec<PathBuf> = scope.walk.homes().to_vec();
        if let Some(h) = &home {
            homes.extend(crew_policy::sandbox::homes(Some(h)));
        }
        for h in &homes {
            for c in CREDENTIALS {
                set.add(&h.join(c));
            }
        }
        for s in sockets() {
            set.add(&s);
        }
        let crew_home = scope
            .crew_home
            .clone()
            .or_else(|| home.as_ref().map(|h| h.join(".crew")));
        let teams = crew_home.as_ref().map(|c| c.join("teams"));
        if let Some(over) = crew_home.and_then(|c| std::fs::canonicalize(c).ok())
            && over.is_dir()
        {
            let mut keep: Vec<PathBuf> = scope
                .roots
                .iter()
                .chain(std::iter::once(&scope.cwd))
                .chain(scope.walk.results_dir().map(Path::to_path_buf).iter())
                .chain(scope.keep.iter())
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .filter(|p| p.starts_with(&over) && *p != over)
                .collect();
            outermost(&mut keep);
            set.veil = Some(Veil { over, keep });
        }
        let scan = hidden_scan::scan(&scope.walk, &scope.roots, &scope.cwd);
        set.dirs.extend(scan.dirs.iter().cloned());
        set.files.extend(scan.files.iter().cloned());
        // Identities of the hidden files, for the links to them inside the roots (only
        // when the roots hold a file with several names or a symlink to a file at all).
        if scan.has_links() {
            let mut ids = hidden_scan::Ids::default();
            for p in set.dirs.iter().chain(&set.files) {
                ids.identify(p);
            }
            if let Some(v) = &set.veil {
                ids.identify_shallow(&v.over);
            }
            let links = scan.links_to(&ids);
            set.files.extend(links);
        }
        set.allow(&scope.allow_read);
        // The teams' files (locks, work lists, inboxes) stay hidden even where `allowRead`
        // lifts the veil: a command that can open a lock file, even read-only, can hold it.
        if let Some(teams) = &teams {
            set.add(teams);
        }
        set.normalise();
        set
    }

    /// Drops what lies at or below one of `allowed` (canonical or as given).
    fn allow(&mut self, allowed: &[PathBuf]) {
        if allowed.is_empty() {
            return;
        }
        let allowed: Vec<PathBuf> = allowed
            .iter()
            .map(|a| std::fs::canonicalize(a).unwrap_or_else(|_| a.clone()))
            .collect();
        let free = |p: &PathBuf| !allowed.iter().any(|a| p.starts_with(a));
        self.dirs.retain(free);
        self.files.retain(free);
        if self.veil.as_ref().is_some_and(|v| !free(&v.over)) {
            self.veil = None;
        }
    }

    /// Adds `path` when it exists, by its real location and kind.
    fn add(&mut self, path: &Path) {
        let Ok(real) = std::fs::canonicalize(path) else {
            return;
        };
        match std::fs::metadata(&real) {
            Ok(m) if m.is_dir() => self.dirs.push(real),
            Ok(_) => self.files.push(real),
            Err(_) => {}
        }
    }

    /// Sorts and deduplicates, and drops what another entry already hides: anything
    /// below a hidden directory, and anything below the veil that no kept path holds
    /// (a veil below a hidden directory is dropped whole).
    fn normalise(&mut self) {
        self.dirs.sort();
        self.dirs.dedup();
        outermost(&mut self.dirs);
        if let Some(v) = &self.veil
            && self.dirs.iter().any(|d| v.over.starts_with(d))
        {
            self.veil = None;
        }
        let dirs = self.dirs.clone();
        let veil = self.veil.clone();
        let covered = |p: &Path| {
            dirs.iter().any(|d| p.starts_with(d) && p != d)
                || veil.as_ref().is_some_and(|v| {
                    p.starts_with(&v.over) && !v.keep.iter().any(|k| p.starts_with(k))
                })
        };
        self.dirs.retain(|d| !covered(d));
        self.files.sort();
        self.files.dedup();
        self.files
            .retain(|f| !covered(f) && !dirs.iter().any(|d| f.starts_with(d)));
    }

    /// Whether nothing is hidden.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.files.is_empty() && self.veil.is_none()
    }

    /// Whether `path` (real) is hidden by this set.
    pub fn hides(&self, path: &Path) -> bool {
        self.dirs.iter().any(|d| path.starts_with(d))
            || self.files.iter().any(|f| path == f)
            || self.veil.as_ref().is_some_and(|v| {
                path.starts_with(&v.over) && !v.keep.iter().any(|k| path.starts_with(k))
            })
    }
}

/// Keeps only the paths that no other path of the list lies above (sorts the list).
fn outermost(paths: &mut Vec<PathBuf>) {
    paths.sort();
    paths.dedup();
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths.drain(..) {
        if !out.iter().any(|o| p.starts_with(o)) {
            out.push(p);
        }
    }
    *paths = out;
}

/// The sockets to hide that exist: the fixed list, `$XDG_RUNTIME_DIR`, `$SSH_AUTH_SOCK`
/// and a `unix://` `$DOCKER_HOST`.
fn sockets() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SOCKETS.iter().map(PathBuf::from).collect();
    for var in ["XDG_RUNTIME_DIR", "SSH_AUTH_SOCK"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let p = PathBuf::from(v);
            if p.is_absolute() && p != Path::new("/") {
                out.push(p);
            }
        }
    }
    if let Some(p) = std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(PathBuf::from))
        .filter(|p| p.is_absolute())
    {
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests;
