//! The part of a command's [`HiddenSet`](super::hidden::HiddenSet) that needs a walk of
//! the disk, done once per policy and roots and cached ([`scan`]):
//!
//! - the paths the `Read` deny rules cover: walked below each rule's literal prefix
//!   (relative rules from the project root, the cwd and each writable root), without
//!   following symlinks. A rule `X/**` whose `X` has no glob character hides the
//!   directory `X` whole; otherwise each matching entry is hidden (a matching directory
//!   whole);
//! - an inode index of the roots: every regular file with more than one name (only those
//!   can be hard links to a hidden file), and every symlink's target, by (device, inode).
//!   Each command then looks up the identities of its hidden files in it
//!   ([`Scan::links_to`]): a hard link to `~/.ssh/id_rsa` inside the project is covered
//!   with `/dev/null` like the key itself.
//!
//! Limits: a walk stops after [`MAX_ENTRIES`] entries; the cache is refreshed after
//! [`MAX_AGE`], so a link made outside the sandbox meanwhile (inside it, the hidden files
//! cannot be linked: they are not there) is found only then.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crew_policy::RuleName;
use crew_policy::rules::{Anchor, Rule, Subject};
use crew_policy::walk::WalkFilter;

/// How many entries one scan visits in all (deny rules and roots together).
pub const MAX_ENTRIES: usize = 100_000;

/// How long a scan is reused.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// How deep a walk goes.
const MAX_DEPTH: usize = 32;

/// How many files below hidden directories are identified per command.
const MAX_IDENTIFIED: usize = 4096;

/// How many scans are remembered (one per agent and roots).
const MAX_SCANS: usize = 64;

/// Identities (device, inode) of hidden files.
#[derive(Debug, Default)]
pub struct Ids(HashSet<(u64, u64)>);

impl Ids {
    /// Adds the file at `path`, or the files below the directory at `path` (bounded).
    pub fn identify(&mut self, path: &Path) {
        self.walk(path, 0, MAX_DEPTH);
    }

    /// Adds the files directly in the directory `path` and one level below (crew's home:
    /// the cookie, the TLS keys, the trust store and settings, not every session).
    pub fn identify_shallow(&mut self, path: &Path) {
        self.walk(path, 0, 2);
    }

    fn walk(&mut self, path: &Path, depth: usize, max_depth: usize) {
        if self.0.len() >= MAX_IDENTIFIED || depth > max_depth {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        if meta.is_file() {
            self.0.insert((meta.dev(), meta.ino()));
        } else if meta.is_dir()
            && let Ok(rd) = std::fs::read_dir(path)
        {
            for e in rd.flatten() {
                self.walk(&e.path(), depth + 1, max_depth);
            }
        }
    }
}

/// What a walk of the disk found for one policy and set of roots.
#[derive(Debug, Default)]
pub struct Scan {
    /// Directories `Read` deny rules cover (real paths).
    pub dirs: Vec<PathBuf>,
    /// Files `Read` deny rules cover (real paths).
    pub files: Vec<PathBuf>,
    /// The roots' files with more than one name, and their symlinks' targets, by
    /// identity: the real paths to cover when the identity is hidden.
    links: HashMap<(u64, u64), Vec<PathBuf>>,
}

impl Scan {
    /// Whether the roots hold any other name of a file (a file with several names, or a
    /// symlink to a file).
    pub fn has_links(&self) -> bool {
        !self.links.is_empty()
    }

    /// The paths inside the roots that are other names of (or symlinks to other names
    /// of) the files in `ids`.
    pub fn links_to(&self, ids: &Ids) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (id, paths) in &self.links {
            if ids.0.contains(id) {
                out.extend(paths.iter().cloned());
            }
        }
        out
    }
}

/// The rules (their text, and the homes `~` expanded to), the roots and the bases.
type Key = (Vec<String>, Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>);

/// The scans made, by key, with when each was made.
type Cache = Mutex<HashMap<Key, (Instant, Arc<Scan>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The scan for `walk`'s Read deny rules and these roots, from the cache when it is
/// younger than [`MAX_AGE`].
pub fn scan(walk: &WalkFilter, roots: &[PathBuf], cwd: &Path) -> Arc<Scan> {
    let rules: Vec<&Rule> = walk.read_denies().collect();
    let mut bases: Vec<PathBuf> = walk
        .project_root()
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    bases.push(std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf()));
    let mut real_roots: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    real_roots.sort();
    real_roots.dedup();
    let key: Key = (
        rules.iter().map(|r| r.text.clone()).collect(),
        walk.homes().to_vec(),
        real_roots.clone(),
        bases.clone(),
    );
    {
        let map = cache().lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, s)) = map.get(&key)
            && at.elapsed() < MAX_AGE
        {
            return s.clone();
        }
    }
    let scan = Arc::new(off_the_runtime(|| build(&rules, &bases, &real_roots)));
    let mut map = cache().lock().unwrap_or_else(|e| e.into_inner());
    if map.len() >= MAX_SCANS {
        map.clear();
    }
    map.insert(key, (Instant::now(), scan.clone()));
    scan
}

/// Runs the disk walk `f`: on a multi-threaded tokio runtime, as a blocking section, so the
/// runtime moves its other tasks to another thread while the walk runs.
fn off_the_runtime<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Walks the deny rules' prefixes and the roots.
fn build(rules: &[&Rule], bases: &[PathBuf], roots: &[PathBuf]) -> Scan {
    let mut scan = Scan::default();
    let mut budget = MAX_ENTRIES;
    let mut starts_anywhere: Vec<PathBuf> = bases.to_vec();
    starts_anywhere.extend(roots.iter().cloned());
    starts_anywhere.sort();
    starts_anywhere.dedup();
    for rule in rules {
        let Some((globs, absolute)) = rule.path_globs() else {
            // A regex or exact rule: walk from its anchor.
            let starts = match rule.anchor() {
                Anchor::Absolute(p) => vec![PathBuf::from(p)],
                Anchor::Relative(p) => bases.iter().map(|b| b.join(p)).collect(),
                Anchor::Anywhere => starts_anywhere.clone(),
            };
            for s in starts {
                deny_walk(&s, 0, rule, bases, &mut scan, &mut budget);
            }
            continue;
        };
        for g in globs {
            let glob = g.glob();
            let prefix = literal_prefix(glob);
            let starts: Vec<PathBuf> = if absolute {
                vec![PathBuf::from(prefix)]
            } else if prefix.is_empty() {
                starts_anywhere.clone()
            } else {
                bases.iter().map(|b| b.join(prefix)).collect()
            };
            // `X/**`: the directory X is hidden whole, with what is created in it later.
            let whole = glob
                .strip_suffix("/**")
                .is_some_and(|d| !d.is_empty() && literal_prefix(d) == d);
            for s in starts {
                if whole
                    && let Ok(real) = std::fs::canonicalize(&s)
                    && real.is_dir()
                {
                    scan.dirs.push(real);
                    continue;
                }
                deny_walk(&s, 0, rule, bases, &mut scan, &mut budget);
            }
        }
    }
    for root in roots {
        link_walk(root, 0, &mut scan, &mut budget);
    }
    scan
}

/// Records what `rule` covers at or below `path`, without following symlinks (a
/// matching symlink hides its target).
fn deny_walk(
    path: &Path,
    depth: usize,
    rule: &Rule,
    bases: &[PathBuf],
    scan: &mut Scan,
    budget: &mut usize,
) {
    if *budget == 0 || depth > MAX_DEPTH {
        return;
    }
    *budget -= 1;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let covers = |p: &Path| {
        rule.matches(&Subject::Path {
            names: &[RuleName::Read],
            real: p,
            bases,
        })
    };
    let real = std::fs::canonicalize(path).ok();
    if covers(path) || real.as_deref().is_some_and(covers) {
        if let Some(real) = real {
            if real.is_dir() {
                scan.dirs.push(real);
            } else {
                scan.files.push(real);
            }
        }
        return;
    }
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for e in entries.flatten() {
            deny_walk(&e.path(), depth + 1, rule, bases, scan, budget);
        }
    }
}

/// Indexes the files below `path` with more than one name, and the targets of its
/// symlinks, by identity.
fn link_walk(path: &Path, depth: usize, scan: &mut Scan, budget: &mut usize) {
    if *budget == 0 || depth > MAX_DEPTH {
        return;
    }
    *budget -= 1;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let ft = meta.file_type();
    if ft.is_file() {
        if meta.nlink() > 1 {
            scan.links
                .entry((meta.dev(), meta.ino()))
                .or_default()
                .push(path.to_path_buf());
        }
    } else if ft.is_symlink() {
        // The target itself, wherever it lies, when it is another name of a hidden file.
        if let (Ok(target), Ok(real)) = (std::fs::metadata(path), std::fs::canonicalize(path))
            && target.is_file()
        {
            scan.links
                .entry((target.dev(), target.ino()))
                .or_default()
                .push(real);
        }
    } else if ft.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for e in entries.flatten() {
            link_walk(&e.path(), depth + 1, scan, budget);
        }
    }
}

/// The directories of a glob before its first component with a glob character
/// (`secrets/**` → `secrets`, `**/.env` → ``, `/etc/*.key` → `/etc`).
fn literal_prefix(glob: &str) -> &str {
    let Some(meta) = glob.find(['*', '?', '[', '{']) else {
        return glob;
    };
    match glob[..meta].rfind('/') {
        Some(0) => "/",
        Some(slash) => &glob[..slash],
        None => "",
    }
}
