//! The paths the user's `sandbox.filesystem` settings add to every sandboxed command of
//! this process: `denyRead` paths join the hidden set (an empty tmpfs or `/dev/null` over
//! them) and `denyWrite` paths are bound read-only, while `allowRead` (the user's own
//! settings only) keeps a credential store visible. Set once at session start ([`set`]),
//! like the environment passthrough, and read for every command.

use std::path::PathBuf;
use std::sync::RwLock;

use super::hidden::HiddenSet;
use super::protect::Protected;

/// What the settings add.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraPaths {
    /// Hidden from every sandboxed command (`sandbox.filesystem.denyRead`).
    pub deny_read: Vec<PathBuf>,
    /// Read-only for every sandboxed command (`sandbox.filesystem.denyWrite`).
    pub deny_write: Vec<PathBuf>,
    /// Not hidden though listed as credential stores (`sandbox.filesystem.allowRead`
    /// of the user's own settings): a hidden path at or below one of these stays visible.
    pub allow_read: Vec<PathBuf>,
}

static EXTRA: RwLock<ExtraPaths> = RwLock::new(ExtraPaths {
    deny_read: Vec::new(),
    deny_write: Vec::new(),
    allow_read: Vec::new(),
});

/// Sets the paths for the rest of the process (a later session replaces them).
pub fn set(extra: ExtraPaths) {
    // A poisoned lock only means a panic mid-write; the value is replaced whole.
    *EXTRA.write().unwrap_or_else(|e| e.into_inner()) = extra;
}

/// Adds the existing `denyWrite` paths to the read-only binds of `protected`.
pub fn add_to(protected: &mut Protected) {
    let extra = EXTRA.read().unwrap_or_else(|e| e.into_inner());
    for p in &extra.deny_write {
        if std::fs::symlink_metadata(p).is_ok() {
            protected.existing.push(p.clone());
        }
    }
}

/// Adds the existing `denyRead` paths to the hidden set: a directory under an empty
/// tmpfs, anything else under `/dev/null`.
pub fn extend_hidden(hidden: &mut HiddenSet) {
    let extra = EXTRA.read().unwrap_or_else(|e| e.into_inner());
    for p in &extra.deny_read {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        let list = if meta.is_dir() {
            &mut hidden.dirs
        } else {
            &mut hidden.files
        };
        if !list.contains(p) {
            list.push(p.clone());
        }
    }
}

/// The `allowRead` paths: what the hidden set would hide at or below one of them stays
/// visible (`HideScope::allow_read`).
pub fn allow_read() -> Vec<PathBuf> {
    EXTRA
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .allow_read
        .clone()
}
