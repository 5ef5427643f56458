//! Caps on what a session keeps on disk of its tool results: one result is kept up to
//! [`ResultCaps::max_result_bytes`] (32 MiB by default), and all of a session's kept
//! results together up to [`ResultCaps::session_budget_bytes`] (1 GiB). What is past a cap
//! is drained and discarded, and the preview says where the saved copy was cut, so a
//! command printing without end can neither fill the disk under `~/.crew` nor crew's
//! memory.
//!
//! The caps are process-wide settings (`limits` in the settings files). The budget is
//! per results directory (one per session), shared by every call of the session and
//! counted from what the directory already holds, so a resumed session goes on counting.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// How much of the tool results crew keeps on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultCaps {
    /// The most bytes of one result kept on disk.
    pub max_result_bytes: u64,
    /// The most bytes of all of one session's results kept on disk.
    pub session_budget_bytes: u64,
}

impl Default for ResultCaps {
    fn default() -> Self {
        Self {
            max_result_bytes: 32 << 20,
            session_budget_bytes: 1 << 30,
        }
    }
}

static CAPS: RwLock<Option<ResultCaps>> = RwLock::new(None);

/// Sets the caps from now on (from the settings).
pub fn configure(caps: ResultCaps) {
    match CAPS.write() {
        Ok(mut c) => *c = Some(caps),
        Err(poisoned) => *poisoned.into_inner() = Some(caps),
    }
}

/// The caps in force.
pub fn caps() -> ResultCaps {
    let c = match CAPS.read() {
        Ok(c) => *c,
        Err(poisoned) => *poisoned.into_inner(),
    };
    c.unwrap_or_default()
}

/// The bytes left to one session's results.
#[derive(Debug)]
pub struct SessionBudget {
    used: AtomicU64,
}

impl SessionBudget {
    /// Takes up to `want` bytes of the budget under `total`; returns how many were granted.
    pub fn take(&self, want: u64, total: u64) -> u64 {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let grant = want.min(total.saturating_sub(used));
            if grant == 0 {
                return 0;
            }
            match self.used.compare_exchange_weak(
                used,
                used + grant,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return grant,
                Err(now) => used = now,
            }
        }
    }

    /// Bytes used so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// The budget of the session whose directory is `dir`, counted from what its `results`
/// and `tasks` directories hold the first time it is asked for.
pub fn session_budget(dir: &Path) -> Arc<SessionBudget> {
    static BUDGETS: Mutex<Option<HashMap<PathBuf, Arc<SessionBudget>>>> = Mutex::new(None);
    let mut guard = match BUDGETS.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    let map = guard.get_or_insert_with(HashMap::new);
    Arc::clone(map.entry(dir.to_path_buf()).or_insert_with(|| {
        Arc::new(SessionBudget {
            used: AtomicU64::new(bytes_in(&dir.join("results")) + bytes_in(&dir.join("tasks"))),
        })
    }))
}

/// Bytes of the files directly in `dir` (0 when it does not exist).
fn bytes_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// How much of one result may still be written to disk: its own cap, and the session's.
#[derive(Debug, Clone)]
pub struct Allowance {
    granted: u64,
    left_in_result: u64,
    budget: Arc<SessionBudget>,
    session_total: u64,
    /// Why writing stopped, once it has.
    cut: Option<Cut>,
}

/// Which cap stopped the saved copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The result's own cap.
    Result(u64),
    /// The session's budget.
    Session(u64),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Result(cap) => write!(
                f,
                "the saved copy stops at {} MiB, the cap on a kept result (setting limits.maxResultMiB); the rest was discarded",
                cap >> 20
            ),
            Cut::Session(cap) => write!(
                f,
                "the session's {} MiB of kept results are used up (setting limits.sessionResultsMiB); the rest was discarded",
                cap >> 20
            ),
        }
    }
}

impl Allowance {
    /// The allowance for a new kept result at `path` (`<session>/results/<id>.txt` or
    /// `<session>/tasks/<id>.log`), under the caps in force; the session's budget is shared
    /// by every file of its directory.
    pub fn for_file(path: &Path) -> Self {
        let caps = caps();
        let session = path
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"));
        Self {
            granted: 0,
            left_in_result: caps.max_result_bytes,
            budget: session_budget(session),
            session_total: caps.session_budget_bytes,
            cut: None,
        }
    }

    /// How many of the next `want` bytes may be written (the rest is to be discarded).
    pub fn grant(&mut self, want: u64) -> u64 {
        if self.cut.is_some() {
            return 0;
        }
        let own = want.min(self.left_in_result);
        let granted = self.budget.take(own, self.session_total);
        self.left_in_result -= granted;
        self.granted += granted;
        if granted < want {
            self.cut = Some(if granted < own {
                Cut::Session(self.session_total)
            } else {
                Cut::Result(caps().max_result_bytes)
            });
        }
        granted
    }

    /// Bytes granted so far (written to the file).
    pub fn granted(&self) -> u64 {
        self.granted
    }

    /// Why the saved copy was cut, if it was.
    pub fn cut(&self) -> Option<Cut> {
        self.cut
    }
}

/// Creates `path` for writing, owner-only, failing when it exists (a planted symlink is
/// never followed).
pub fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_grants_no_more_than_is_left_even_when_shared() {
        let dir = tempfile::tempdir().unwrap();
        let b = session_budget(dir.path());
        assert_eq!(b.take(60, 100), 60);
        assert_eq!(session_budget(dir.path()).take(60, 100), 40);
        assert_eq!(b.take(1, 100), 0);
        assert_eq!(b.used(), 100);
    }

    #[test]
    fn a_resumed_session_counts_what_its_directory_holds() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["results", "tasks"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join("old"), vec![b'x'; 1000]).unwrap();
        }
        std::fs::write(dir.path().join("transcript.jsonl"), vec![b'x'; 50]).unwrap();
        assert_eq!(session_budget(dir.path()).used(), 2000);
    }

    #[test]
    fn an_allowance_stops_at_the_result_cap_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Allowance {
            granted: 0,
            left_in_result: 10,
            budget: session_budget(dir.path()),
            session_total: 1000,
            cut: None,
        };
        assert_eq!(a.grant(6), 6);
        assert_eq!(a.grant(6), 4);
        assert_eq!(a.grant(6), 0);
        assert!(matches!(a.cut(), Some(Cut::Result(_))));
    }

    #[test]
    fn an_allowance_stops_at_the_session_budget_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        session_budget(dir.path()).take(995, 1000);
        let mut a = Allowance {
            granted: 0,
            left_in_result: 100,
            budget: session_budget(dir.path()),
            session_total: 1000,
            cut: None,
        };
        assert_eq!(a.grant(10), 5);
        assert_eq!(a.cut(), Some(Cut::Session(1000)));
        assert!(a.cut().unwrap().to_string().contains("sessionResultsMiB"));
    }
}
