//! The one in-memory copy of each inbox per process: a registry keyed by the inbox path,
//! so every [`super::Team`] handle on the same team directory (clones or separately
//! opened) shares one inbox state, and two copies never disagree about a cursor. A team
//! handle keeps the inboxes it used alive; the registry only points at them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use super::inbox_file::{Inbox, relock};
use super::inbox_read::Stamp;
use super::{MemberName, Roster};

/// The inboxes of one team directory that a [`super::Team`] and its clones use (they keep
/// them open), and the roster as last read (for checking addresses on every send).
pub(crate) struct Inboxes {
    /// The team's `inboxes/` directory, canonical (the registry's key).
    dir: PathBuf,
    open: Mutex<HashMap<String, Arc<Inbox>>>,
    /// `config.json`'s stamp (`None`: missing) and what it held.
    pub(crate) roster: Mutex<Option<(Option<Stamp>, Arc<Roster>)>>,
}

impl std::fmt::Debug for Inboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inboxes").field("dir", &self.dir).finish()
    }
}

impl Inboxes {
    /// The inboxes in `dir` (canonicalised when it exists, so two spellings share state).
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
            open: Mutex::new(HashMap::new()),
            roster: Mutex::new(None),
        }
    }

    /// `name`'s inbox.
    pub(crate) fn get(&self, name: &MemberName) -> Arc<Inbox> {
        let mut open = relock(&self.open);
        if let Some(inbox) = open.get(name.as_str()) {
            return inbox.clone();
        }
        let inbox = shared(&self.dir, name.as_str());
        open.insert(name.to_string(), inbox.clone());
        inbox
    }

    /// Every inbox of this directory that this process has open.
    pub(crate) fn all(&self) -> Vec<Arc<Inbox>> {
        let mut all: Vec<Arc<Inbox>> = relock(&REGISTRY)
            .values()
            .filter_map(Weak::upgrade)
            .filter(|i| i.dir() == self.dir)
            .collect();
        for inbox in relock(&self.open).values() {
            if !all.iter().any(|i| Arc::ptr_eq(i, inbox)) {
                all.push(inbox.clone());
            }
        }
        all
    }
}

/// Every inbox of this process that some team handle still uses, by inbox path.
static REGISTRY: LazyLock<Mutex<HashMap<PathBuf, Weak<Inbox>>>> = LazyLock::new(Default::default);

/// Every inbox this process has open (for the last flush before it exits).
pub(crate) fn every_open() -> Vec<Arc<Inbox>> {
    relock(&REGISTRY)
        .values()
        .filter_map(Weak::upgrade)
        .collect()
}

/// The one copy of the inbox `<dir>/<name>.jsonl` in this process.
fn shared(dir: &Path, name: &str) -> Arc<Inbox> {
    let path = dir.join(format!("{name}.jsonl"));
    let mut registry = relock(&REGISTRY);
    if let Some(inbox) = registry.get(&path).and_then(Weak::upgrade) {
        return inbox;
    }
    if registry.len() >= 64 && registry.len().is_power_of_two() {
        registry.retain(|_, w| w.strong_count() > 0);
    }
    let inbox = Arc::new(Inbox::new(dir, name));
    registry.insert(path, Arc::downgrade(&inbox));
    inbox
}
