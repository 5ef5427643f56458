//! The directory walk shared by `find_files` and `search_code`: ripgrep's parallel walker
//! (`ignore::WalkParallel`, one thread per core) with the permission filter applied to
//! every entry before it is shown, opened or descended into.
//!
//! The filter needs each entry's real location. Links are never followed below the root,
//! so a non-link entry's real path is the root's real path joined with the entry's path
//! below the root: one `canonicalize` per walk instead of one per entry. Links are still
//! resolved one by one, so a link to a credential or to a denied file stays hidden.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use crate::permission::walk::WalkScope;

/// One walker thread's state: it sees entries one at a time and is handed back when the
/// walk ends.
pub(crate) trait Worker: Send {
    /// Handles one entry below (or at) the root; [`WalkState::Quit`] stops the walk.
    fn visit(&mut self, entry: DirEntry) -> WalkState;
}

/// Walks `root` in parallel with a fresh worker from `make` on each thread, and returns
/// the workers once every thread is done. Unreadable entries are skipped, as ripgrep
/// skips them. The root itself (depth 0) is given to workers unfiltered: callers check it.
pub(crate) fn parallel<W: Worker>(
    root: &Path,
    scope: &WalkScope,
    make: impl Fn() -> W + Sync,
) -> Vec<W> {
    let done = Mutex::new(Vec::new());
    let mut builder = Builder {
        make: &make,
        done: &done,
    };
    configured(root, scope).build_parallel().visit(&mut builder);
    done.into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The walk configuration: `.gitignore`/`.ignore` respected even outside a git
/// repository, hidden files included, links not followed, `.git` itself skipped, and
/// every entry below the root checked against `scope` (deny rules, credentials).
fn configured(root: &Path, scope: &WalkScope) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    let judge = Judge::new(root, scope);
    b.require_git(false)
        .hidden(false)
        .follow_links(false)
        .threads(threads())
        .filter_entry(move |e| e.file_name() != ".git" && judge.allowed(e));
    b
}

/// Walker threads: one per core up to 12, as ripgrep chooses (`rg -j` default).
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(12))
}

/// The per-entry permission check, with what can be decided once per walk decided once.
struct Judge {
    scope: WalkScope,
    root: PathBuf,
    /// The root's real location, when it differs from `root`; `None` below means the
    /// root is its own real path (or cannot be resolved: see `resolvable`).
    real_root: Option<PathBuf>,
    resolvable: bool,
    /// Whether an entry below the root can be a credential location by name.
    credentials: bool,
}

impl Judge {
    fn new(root: &Path, scope: &WalkScope) -> Self {
        let real = std::fs::canonicalize(root).ok();
        let credentials = match &real {
            Some(r) => scope.credentials_below(&[root, r]),
            None => true,
        };
        Self {
            scope: scope.clone(),
            root: root.to_path_buf(),
            resolvable: real.is_some(),
            real_root: real.filter(|r| r != root),
            credentials,
        }
    }

    /// Whether the filter lets `e` through, resolving its real path without a syscall
    /// when it is not a link (see the module docs).
    fn allowed(&self, e: &DirEntry) -> bool {
        if e.path_is_symlink() || !self.resolvable {
            return self.scope.allows(e.path());
        }
        match &self.real_root {
            // A canonical root: the entry's path is its real path (no allocation).
            None => self
                .scope
                .allows_below(e.path(), e.path(), self.credentials),
            Some(real_root) => match e.path().strip_prefix(&self.root) {
                Ok(rel) => {
                    self.scope
                        .allows_below(e.path(), &real_root.join(rel), self.credentials)
                }
                Err(_) => self.scope.allows(e.path()),
            },
        }
    }
}

/// Makes one [`Slot`] per walker thread.
struct Builder<'s, W, F> {
    make: &'s F,
    done: &'s Mutex<Vec<W>>,
}

impl<'s, W: Worker + 's, F: Fn() -> W + Sync> ParallelVisitorBuilder<'s> for Builder<'s, W, F> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Slot {
            worker: Some((self.make)()),
            done: self.done,
        })
    }
}

/// A worker on its thread; returned to the shared list when the thread drops it.
struct Slot<'s, W> {
    worker: Option<W>,
    done: &'s Mutex<Vec<W>>,
}

impl<W: Worker> ParallelVisitor for Slot<'_, W> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        match (entry, self.worker.as_mut()) {
            (Ok(e), Some(w)) => w.visit(e),
            _ => WalkState::Continue,
        }
    }
}

impl<W> Drop for Slot<'_, W> {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
            done.push(w);
        }
    }
}
