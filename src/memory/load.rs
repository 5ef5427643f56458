//! Loading memory files with their imports: depth first, each import right after the
//! file that imports it, to [`MAX_DEPTH`] hops. A file is loaded once per agent (by its
//! real location, so a symlinked `AGENTS.md` → `CLAUDE.md` is not sent twice), an import
//! that would close a cycle is cut and reported, and the total is bounded by
//! [`MAX_TOTAL_BYTES`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::discover::{self, Candidate};
use super::read::Access;
use super::{Memory, MemoryFile, Scope, SkipReason, Skipped, imports};
use crate::permission::walk::WalkFilter;

/// How many imports deep a chain may go (Claude Code's limit).
pub(crate) const MAX_DEPTH: usize = 5;

/// The most bytes all of one agent's memory files may have together.
pub(crate) const MAX_TOTAL_BYTES: u64 = 512 * 1024;

/// Loads memory files for one agent, remembering what it loaded.
#[derive(Debug, Clone)]
pub struct Loader {
    access: Access,
    home: Option<PathBuf>,
    /// Real locations of the files loaded so far (and of those already in the
    /// conversation).
    seen: HashSet<PathBuf>,
    total: u64,
}

impl Loader {
    /// A loader for an agent in `cwd` of the project at `root`.
    pub fn new(walk: &Arc<WalkFilter>, root: &Path, cwd: &Path, home: Option<&Path>) -> Self {
        Self {
            access: Access::new(walk, root, cwd, home),
            home: home.map(Path::to_path_buf),
            seen: HashSet::new(),
            total: 0,
        }
    }

    /// Marks `path` as already given to the agent (found in its conversation).
    pub fn mark_seen(&mut self, path: &Path) {
        if let Ok(real) = std::fs::canonicalize(path) {
            self.seen.insert(real);
        }
    }

    /// Loads `candidates` that were not loaded before, with their imports.
    pub fn load(&mut self, candidates: &[Candidate]) -> Memory {
        let mut memory = Memory::default();
        for c in candidates {
            let mut stack = Vec::new();
            self.load_one(&c.path, c.scope, None, 0, &mut stack, &mut memory);
        }
        memory
    }

    fn load_one(
        &mut self,
        path: &Path,
        scope: Scope,
        imported_by: Option<&Path>,
        depth: usize,
        stack: &mut Vec<PathBuf>,
        memory: &mut Memory,
    ) {
        let skip = |reason| Skipped {
            path: path.to_path_buf(),
            imported_by: imported_by.map(Path::to_path_buf),
            reason,
        };
        let real = match std::fs::canonicalize(path) {
            Ok(real) => real,
            // An `@mention` names no file: quiet, at any depth.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return memory.skipped.push(skip(SkipReason::NotFound));
            }
            Err(e) => {
                return memory.skipped.push(skip(SkipReason::Unreadable {
                    message: e.to_string(),
                }));
            }
        };
        if stack.contains(&real) {
            let mut chain = stack.clone();
            chain.push(real);
            return memory.skipped.push(skip(SkipReason::Cycle { chain }));
        }
        if self.seen.contains(&real) {
            return;
        }
        if depth > MAX_DEPTH {
            return memory.skipped.push(skip(SkipReason::TooDeep));
        }
        let text = match self.access.read(path, scope) {
            Ok(text) => text,
            Err(reason) => return memory.skipped.push(skip(reason)),
        };
        if self.total + text.len() as u64 > MAX_TOTAL_BYTES {
            return memory.skipped.push(skip(SkipReason::OverBudget {
                limit: MAX_TOTAL_BYTES,
            }));
        }
        self.total += text.len() as u64;
        self.seen.insert(real.clone());
        let refs = imports::references(&text);
        memory.files.push(MemoryFile {
            path: path.to_path_buf(),
            scope,
            imported_by: imported_by.map(Path::to_path_buf),
            depth,
            text,
        });
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        stack.push(real);
        for raw in refs {
            let Some(target) = imports::resolve(&raw, &dir, self.home.as_deref()) else {
                continue;
            };
            self.load_one(&target, scope, Some(path), depth + 1, stack, memory);
        }
        stack.pop();
    }
}

/// The memory files an agent in `cwd` starts with (those that go into its system prompt),
/// under the session's deny rules: what `/memory` and `crew memory show` report.
pub fn inspect(walk: &Arc<WalkFilter>, cwd: &Path, home: Option<&Path>) -> Memory {
    let root = crate::store::project_root(cwd);
    let mut loader = Loader::new(walk, &root, cwd, home);
    loader.load(&discover::start_files(home, &root, cwd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, root) = (base.join("home"), base.join("repo"));
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        (tmp, home, root)
    }

    fn load_at(home: &Path, root: &Path, cwd: &Path) -> Memory {
        let walk = Arc::new(WalkFilter::new(&crate::permission::Policy {
            home: Some(home.to_path_buf()),
            project_root: Some(root.to_path_buf()),
            ..Default::default()
        }));
        let mut loader = Loader::new(&walk, root, cwd, Some(home));
        loader.load(&discover::start_files(Some(home), root, cwd))
    }

    fn names(m: &Memory, root: &Path) -> Vec<String> {
        m.files
            .iter()
            .map(|f| {
                f.path
                    .strip_prefix(root)
                    .map_or(f.path.display().to_string(), |p| p.display().to_string())
            })
            .collect()
    }

    #[test]
    fn user_then_root_down_to_cwd_with_imports_after_their_importer() {
        let (_tmp, home, root) = setup();
        write(&home.join(".claude/CLAUDE.md"), "user prefs");
        write(&root.join("CLAUDE.md"), "root, see @docs/style.md");
        write(
            &root.join("docs/style.md"),
            "style; and @../CONTRIBUTING.md",
        );
        write(&root.join("CONTRIBUTING.md"), "contrib");
        write(&root.join("app/AGENTS.md"), "app agents");
        write(&root.join("app/CLAUDE.local.md"), "mine");
        write(&root.join("app/deep/AGENTS.md"), "below the cwd");
        let m = load_at(&home, &root, &root.join("app"));
        let mut got = names(&m, &root);
        got[0] = "USER".into();
        assert_eq!(
            got,
            [
                "USER",
                "CLAUDE.md",
                "docs/style.md",
                "CONTRIBUTING.md",
                "app/AGENTS.md",
                "app/CLAUDE.local.md"
            ]
        );
        assert_eq!(m.files[2].depth, 1);
        assert_eq!(m.files[3].depth, 2);
        assert_eq!(m.files[3].imported_by, Some(root.join("docs/style.md")));
        assert_eq!(m.files[5].scope, Scope::Local);
        assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    }

    #[test]
    fn a_cycle_is_cut_and_reported_and_a_symlinked_twin_loads_once() {
        let (_tmp, home, root) = setup();
        write(&root.join("CLAUDE.md"), "a: @b.md");
        write(&root.join("b.md"), "b: @CLAUDE.md");
        std::os::unix::fs::symlink(root.join("CLAUDE.md"), root.join("AGENTS.md")).unwrap();
        let m = load_at(&home, &root, &root);
        assert_eq!(names(&m, &root), ["CLAUDE.md", "b.md"]);
        assert_eq!(m.skipped.len(), 1);
        assert!(matches!(&m.skipped[0].reason, SkipReason::Cycle { chain } if chain.len() == 3));
        assert!(m.skipped[0].warning().contains("import cycle"));
    }

    #[test]
    fn imports_stop_at_depth_five() {
        let (_tmp, home, root) = setup();
        write(&root.join("CLAUDE.md"), "@d1.md");
        for i in 1..=7 {
            write(&root.join(format!("d{i}.md")), &format!("@d{}.md", i + 1));
        }
        write(&root.join("d5.md"), "@d6.md and ask @bob");
        let m = load_at(&home, &root, &root);
        assert_eq!(m.files.len(), 1 + MAX_DEPTH);
        assert_eq!(m.files.last().unwrap().depth, MAX_DEPTH);
        let warnings: Vec<_> = m.skipped.iter().filter(|s| s.is_warning()).collect();
        assert_eq!(warnings.len(), 1, "{:?}", m.skipped);
        assert_eq!(warnings[0].reason, SkipReason::TooDeep);
        assert_eq!(warnings[0].path, root.join("d6.md"));
    }

    #[test]
    fn missing_imports_are_quiet_and_the_budget_holds() {
        let (_tmp, home, root) = setup();
        let chunk = "x".repeat(110 * 1024);
        write(
            &root.join("CLAUDE.md"),
            "ask @alice; @1.md @2.md @3.md @4.md @5.md",
        );
        for i in 1..=5 {
            write(&root.join(format!("{i}.md")), &chunk);
        }
        let m = load_at(&home, &root, &root);
        assert_eq!(
            m.files.len(),
            1 + 4,
            "the fifth 110 KiB file exceeds 512 KiB"
        );
        let reasons: Vec<_> = m.skipped.iter().map(|s| s.is_warning()).collect();
        assert_eq!(reasons, [false, true], "{:?}", m.skipped);
    }
}
