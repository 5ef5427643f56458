//! The protected paths below a confined command's writable roots, and the last line of
//! defence for them: a snapshot taken before the command and restored after it.
//!
//! Protected are the files whose change would run code or widen permissions later,
//! outside any sandbox: `.git/hooks`, `.git/config` (and `config.worktree`),
//! `.git/commondir`, the same in `.git/modules/*`, a linked worktree's `.git` file and its
//! private git dir's `commondir`, `gitdir` and `config.worktree` (seen from the worktree
//! and from the main checkout's `.git/worktrees/*`), and what crew loads as code or
//! policy (`config::loaded`: `.crew/settings*.json`, `.claude/settings*.json`,
//! agent definitions, skills, hooks, `.mcp.json`, the files hooks run). Where they exist, the mount namespace (`mount_ns`) binds them
//! read-only; a path that does not exist yet cannot be bound, and some kernels have no
//! usable mount namespace, so every confined command is also bracketed by a
//! [`Snapshot`]: what it created there is removed, what it changed is put back, and the
//! caller reports it loudly.

mod pins;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Files of a hooks directory larger than this are recorded by size and time only.
const MAX_RECORDED: u64 = 4 << 20;

/// The protected paths for a set of writable roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// Directories pinned in place (bound onto themselves, writable) so they cannot be
    /// renamed away with the protected files inside: `.git` and `.git/modules/*`.
    pub pins: Vec<PathBuf>,
    /// Existing protected files and directories, to be bound read-only.
    pub existing: Vec<PathBuf>,
    /// Every protected path, existing or not, for the snapshot.
    pub watched: Vec<PathBuf>,
}

impl Protected {
    /// Finds the protected paths directly in each writable root (the project or worktree
    /// roots; nested repositories are not searched). Roots inside a `.git` directory (a
    /// worktree's private git dir, `objects/`, its ref directories) are git's own and hold
    /// no checkout.
    pub fn find(writable_roots: &[PathBuf]) -> Self {
        let mut p = Protected::default();
        for root in writable_roots {
            if !root.components().any(|c| c.as_os_str() == ".git") {
                p.add_root(root);
            }
        }
        p.pins.sort();
        p.pins.dedup();
        p.existing.sort();
        p.existing.dedup();
        p.watched.sort();
        p.watched.dedup();
        p
    }

    fn watch(&mut self, path: PathBuf) {
        if std::fs::symlink_metadata(&path).is_ok() {
            self.existing.push(path.clone());
        }
        self.watched.push(path);
    }

    fn add_root(&mut self, root: &Path) {
        let dot_git = root.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => {
                self.pins.push(dot_git.clone());
                self.add_git_dir(&dot_git, 0);
            }
            Ok(_) => {
                // A linked worktree: its `.git` file and its private git dir's links.
                self.watch(dot_git.clone());
                if let Some(private) = private_git_dir(root) {
                    for name in ["commondir", "gitdir", "config.worktree"] {
                        self.watch(private.join(name));
                    }
                }
            }
            Err(_) => {
                // No repository yet: one a confined command creates could carry hooks or
                // config that run later, so it is removed whole (never left half-removed).
                self.watch(dot_git);
            }
        }
        // What crew loads as code or policy (`config::loaded`, the one
        // list): settings files, agent definitions, skills, hooks, `.mcp.json`, the files
        // hooks and MCP servers run. The settings directories are pinned in place so they
        // cannot be renamed away; their other files (reports, memory) stay writable.
        for dir in crew_config::loaded::SETTINGS_DIRS {
            let d = root.join(dir);
            if std::fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
                self.pins.push(d);
            }
        }
        for path in crew_config::loaded::sandbox_paths(root) {
            self.watch(path);
        }
    }

    /// `.git/hooks`, `.git/config`, `.git/config.worktree`, `.git/commondir` (missing in
    /// a plain checkout; created, it makes git read config and hooks from elsewhere) and
    /// the same in each `.git/modules/<name>` (submodules nest, so recursively, a few
    /// levels deep); in the top git dir also the links of its linked worktrees
    /// (`.git/worktrees/<name>/{commondir,gitdir,config.worktree}`).
    fn add_git_dir(&mut self, git: &Path, depth: usize) {
        for name in ["hooks", "config", "config.worktree", "commondir"] {
            self.watch(git.join(name));
        }
        if depth == 0
            && let Ok(entries) = std::fs::read_dir(git.join("worktrees"))
        {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    for name in ["commondir", "gitdir", "config.worktree"] {
                        self.watch(e.path().join(name));
                    }
                }
            }
        }
        if depth >= 4 {
            return;
        }
        let modules = git.join("modules");
        if let Ok(entries) = std::fs::read_dir(&modules) {
            self.pins.push(modules.clone());
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    self.pins.push(e.path());
                    self.add_git_dir(&e.path(), depth + 1);
                }
            }
        }
    }
}

/// The private git dir a linked worktree's `.git` file points at.
pub fn private_git_dir(worktree: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?;
    Some(worktree.join(gitdir.trim()))
}

/// What was at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Missing,
    File { bytes: Vec<u8>, mode: u32 },
    Large { len: u64, mtime: i64, mode: u32 },
    Link(PathBuf),
    Dir(BTreeMap<std::ffi::OsString, Entry>),
    Other,
}

/// Whether a path is recorded as watched or as an entry of a watched directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// A watched path: a directory is recorded with its entries.
    Watched,
    /// An entry of a watched directory: a directory is recorded without its entries.
    Entry,
}

fn record(path: &Path, level: Level) -> Entry {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Entry::Missing;
    };
    let mode = meta.permissions().mode();
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path).map_or(Entry::Other, Entry::Link);
    }
    if meta.is_file() {
        if meta.len() > MAX_RECORDED {
            return Entry::Large {
                len: meta.len(),
                mtime: meta.mtime(),
                mode,
            };
        }
        return std::fs::read(path).map_or(Entry::Other, |bytes| Entry::File { bytes, mode });
    }
    if meta.is_dir() && level == Level::Watched {
        let mut children = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                children.insert(e.file_name(), record(&e.path(), Level::Entry));
            }
        }
        return Entry::Dir(children);
    }
    Entry::Other
}

/// The protected files before a command, to be compared and restored after it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    entries: Vec<(PathBuf, Option<PathBuf>, Entry)>,
    /// The pinned directories, put back first where no mount namespace held them.
    pins: Vec<pins::Pin>,
}

impl Snapshot {
    /// Records every watched path not below one of `guarded` (paths another layer keeps
    /// read-only, so a change there was made by someone else and must stand), with its
    /// parent directory's real location, so a restore never writes through a directory
    /// the command swapped for a link.
    pub fn take(protected: &Protected, guarded: &[PathBuf]) -> Self {
        let entries = protected
            .watched
            .iter()
            .filter(|p| !guarded.iter().any(|g| p.starts_with(g)))
            .map(|p| {
                let parent = p.parent().and_then(|d| std::fs::canonicalize(d).ok());
                (p.clone(), parent, record(p, Level::Watched))
            })
            .collect();
        let pinned: Vec<PathBuf> = protected
            .pins
            .iter()
            .filter(|p| !guarded.iter().any(|g| p.starts_with(g)))
            .cloned()
            .collect();
        Self {
            entries,
            pins: pins::record(&pinned),
        }
    }

    /// Whether nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.pins.is_empty()
    }

    /// Puts back what changed; returns one line per protected path that was changed
    /// (and whether restoring it worked). Empty when nothing was touched.
    pub fn restore(&self) -> Vec<String> {
        let mut report = pins::put_back(&self.pins);
        for (path, parent, before) in &self.entries {
            let now = record(path, Level::Watched);
            if &now == before {
                continue;
            }
            let outcome = match parent {
                Some(p)
                    if path
                        .parent()
                        .and_then(|d| std::fs::canonicalize(d).ok())
                        .as_ref()
                        == Some(p) =>
                {
                    put_back(path, before, &now)
                }
                Some(_) => Err(std::io::Error::other(
                    "its directory was moved or replaced; restore it by hand",
                )),
                // The directory itself was created by the command: remove a link in its
                // place rather than anything the link points into.
                None => match path.parent().map(std::fs::symlink_metadata) {
                    Some(Ok(m)) if m.file_type().is_symlink() => {
                        path.parent().map_or(Ok(()), remove_any)
                    }
                    _ => remove_any(path),
                },
            };
            report.push(match outcome {
                Ok(()) => format!("{} was changed and has been restored", path.display()),
                Err(e) => format!(
                    "{} was changed and could NOT be restored: {e}",
                    path.display()
                ),
            });
        }
        report
    }
}

/// Removes whatever is at `path` without following links.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
    }
}

/// Makes `path` hold `before` again.
fn put_back(path: &Path, before: &Entry, now: &Entry) -> std::io::Result<()> {
    match (before, now) {
        // A directory (hooks) that is still a directory: fix its entries one by one.
        // One entry that cannot be put back does not stop the others.
        (Entry::Dir(was), Entry::Dir(is)) => {
            let mut first_error = None;
            for name in is.keys().filter(|n| !was.contains_key(*n)) {
                if let Err(e) = remove_any(&path.join(name)) {
                    first_error.get_or_insert(e);
                }
            }
            for (name, entry) in was {
                let now = is.get(name).unwrap_or(&Entry::Missing);
                if now != entry
                    && let Err(e) = put_back(&path.join(name), entry, now)
                {
                    first_error.get_or_insert(e);
                }
            }
            first_error.map_or(Ok(()), Err)
        }
        (Entry::Missing, _) => remove_any(path),
        (Entry::File { bytes, mode }, _) => {
            remove_any(path)?;
            write_new(path, bytes, *mode)
        }
        (Entry::Link(target), _) => {
            remove_any(path)?;
            std::os::unix::fs::symlink(target, path)
        }
        (Entry::Dir(_), _) => {
            remove_any(path)?;
            std::fs::create_dir(path)?;
            put_back(path, before, &Entry::Dir(BTreeMap::new()))
        }
        (Entry::Large { .. } | Entry::Other, _) => Err(std::io::Error::other(
            "it was not recorded in full (too large or not a regular file)",
        )),
    }
}

/// Creates `path` anew (never through a link a command left there) with `bytes`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode & 0o7777)
        .open(path)?;
    f.write_all(bytes)?;
    f.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
        std::fs::write(
            dir.path().join(".git/hooks/pre-commit.sample"),
            "#!/bin/sh\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".crew")).unwrap();
        std::fs::write(dir.path().join(".crew/settings.json"), "{}").unwrap();
        dir
    }

    #[test]
    fn finds_existing_and_missing_protected_paths() {
        let dir = repo();
        let root = dir.path().to_path_buf();
        let p = Protected::find(std::slice::from_ref(&root));
        assert!(p.existing.contains(&root.join(".git/hooks")));
        assert!(p.existing.contains(&root.join(".git/config")));
        // The settings directory is pinned; what crew loads from it is bound read-only.
        assert!(p.pins.contains(&root.join(".crew")));
        assert!(p.existing.contains(&root.join(".crew/settings.json")));
        assert!(!p.existing.contains(&root.join(".crew")));
        assert!(!p.existing.contains(&root.join(".claude")));
        assert!(p.watched.contains(&root.join(".crew/agents")));
        assert!(p.watched.contains(&root.join(".mcp.json")));
        assert!(p.watched.contains(&root.join(".crew/settings.local.json")));
        assert!(p.watched.contains(&root.join(".claude/settings.json")));
        assert!(p.pins.contains(&root.join(".git")));
        // A plain checkout has no commondir; one a command creates is removed again.
        assert!(p.watched.contains(&root.join(".git/commondir")));
        assert!(!p.existing.contains(&root.join(".git/commondir")));
    }

    #[test]
    fn a_planted_commondir_is_removed_and_worktree_links_are_watched_from_main() {
        let dir = repo();
        let root = dir.path().to_path_buf();
        let private = root.join(".git/worktrees/t1");
        std::fs::create_dir_all(&private).unwrap();
        std::fs::write(private.join("commondir"), "../..\n").unwrap();
        let p = Protected::find(std::slice::from_ref(&root));
        assert!(p.existing.contains(&private.join("commondir")));
        assert!(p.watched.contains(&private.join("gitdir")));
        let snap = Snapshot::take(&p, &[]);
        std::fs::write(root.join(".git/commondir"), "../g2\n").unwrap();
        std::fs::write(private.join("commondir"), "../../../g2\n").unwrap();
        let report = snap.restore();
        assert_eq!(report.len(), 2, "{report:?}");
        assert!(!root.join(".git/commondir").exists());
        assert_eq!(
            std::fs::read_to_string(private.join("commondir")).unwrap(),
            "../..\n"
        );
    }

    #[test]
    fn restore_undoes_created_changed_and_removed_files() {
        let dir = repo();
        let root = dir.path().to_path_buf();
        let snap = Snapshot::take(&Protected::find(std::slice::from_ref(&root)), &[]);
        assert!(snap.restore().is_empty(), "nothing changed yet");
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\nhooksPath = x\n").unwrap();
        std::fs::remove_file(root.join(".git/hooks/pre-commit.sample")).unwrap();
        std::fs::write(root.join(".crew/settings.local.json"), "{}").unwrap();
        // A link in place of a settings file must be removed, not written through.
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = elsewhere.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::fs::remove_file(root.join(".crew/settings.json")).unwrap();
        std::os::unix::fs::symlink(&victim, root.join(".crew/settings.json")).unwrap();

        let report = snap.restore();
        // .git/hooks, .git/config, and the two .crew settings files.
        assert_eq!(report.len(), 4, "{report:?}");
        assert!(
            report.iter().all(|l| l.contains("has been restored")),
            "{report:?}"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert!(!root.join(".crew/settings.local.json").exists());
        assert!(!root.join(".crew/settings.json").is_symlink());
        assert_eq!(
            std::fs::read_to_string(root.join(".crew/settings.json")).unwrap(),
            "{}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn an_entry_that_cannot_be_restored_does_not_stop_the_others() {
        let dir = repo();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join(".crew/agents/nested")).unwrap();
        let snap = Snapshot::take(&Protected::find(std::slice::from_ref(&root)), &[]);
        std::fs::remove_dir_all(root.join(".crew/agents/nested")).unwrap();
        std::fs::write(
            root.join(".crew/settings.json"),
            r#"{"permissions":{"allow":["Bash"]}}"#,
        )
        .unwrap();
        // The hooks directory replaced by a file is rebuilt with its hooks.
        std::fs::remove_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks"), "x").unwrap();
        let report = snap.restore();
        assert_eq!(
            std::fs::read_to_string(root.join(".crew/settings.json")).unwrap(),
            "{}"
        );
        assert!(root.join(".git/hooks/pre-commit.sample").is_file());
        // The sub-directory was not recorded, and the report says so.
        assert!(
            report
                .iter()
                .any(|l| l.contains(".crew/agents") && l.contains("NOT")),
            "{report:?}"
        );
    }

    #[test]
    fn a_repository_created_by_the_command_is_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let snap = Snapshot::take(&Protected::find(std::slice::from_ref(&root)), &[]);
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join("kept.txt"), "mine").unwrap();
        let report = snap.restore();
        assert_eq!(report.len(), 1, "{report:?}");
        assert!(!root.join(".git").exists());
        assert!(root.join("kept.txt").exists());
    }

    #[test]
    fn a_worktree_link_and_its_private_git_dir_are_watched() {
        let main = tempfile::tempdir().unwrap();
        let private = main.path().join(".git/worktrees/wt");
        std::fs::create_dir_all(&private).unwrap();
        std::fs::write(private.join("commondir"), "../..\n").unwrap();
        std::fs::write(private.join("gitdir"), "x\n").unwrap();
        let wt = tempfile::tempdir().unwrap();
        std::fs::write(
            wt.path().join(".git"),
            format!("gitdir: {}\n", private.display()),
        )
        .unwrap();
        let p = Protected::find(&[wt.path().to_path_buf()]);
        assert!(p.existing.contains(&wt.path().join(".git")));
        assert!(p.existing.contains(&private.join("commondir")));
        assert!(p.existing.contains(&private.join("gitdir")));
        assert!(p.watched.contains(&private.join("config.worktree")));
    }
}
