//! The path sandbox: where a path argument really points, whether that is inside the
//! sandbox roots (the agent's cwd plus `additionalDirectories`), and whether it is a
//! credential file. Decisions use the real location: symlinks of the target, of its
//! directories and of the nearest existing ancestor of a not-yet-existing target are all
//! followed, so `link/escape.txt` is judged where it would land (seed 000). Credentials
//! are recognised by name and by file identity (`credentials.rs`, re-exported here).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::scopes;

/// How many symlinks one resolution may follow (Linux allows 40).
const MAX_LINKS: usize = 40;

pub use crew_config::paths::absolute;

/// The real location of an absolute path, following every symlink on the way, including
/// a dangling final link (a write through it would create its target). Components that do
/// not exist yet are appended as written; `..` after one of them is an error.
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    resolve_from(PathBuf::from("/"), path).map(|r| r.path)
}

/// Where a path resolved to, with what the walk learned on the way (so callers need no
/// further `stat` of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The real location.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// Whether it is a directory.
    pub dir: bool,
    /// How many symlinks were followed.
    pub links: usize,
}

/// `resolve` for a path relative to `base`, which must already be a real (canonical)
/// directory: only the relative components are looked up. Absolute paths ignore `base`.
/// Returns the real location with what the walk learned.
pub fn resolve_traced(base: &Path, path: &Path) -> io::Result<Resolved> {
    // An absolute path's root component starts the walk over at `/`.
    resolve_from(base.to_path_buf(), path)
}

fn resolve_from(start: PathBuf, path: &Path) -> io::Result<Resolved> {
    let mut out = start;
    let mut missing = false;
    let mut links = 0;
    let mut dir = true;
    // Components are processed from a stack so a link's target can be pushed in front;
    // the path's own components are borrowed, a link target's are owned.
    let mut stack: Vec<Cow<'_, OsStr>> = path
        .components()
        .rev()
        .map(|c| Cow::Borrowed(c.as_os_str()))
        .collect();
    while let Some(c) = stack.pop() {
        let comp = Path::new(&*c).components().next();
        match comp {
            None | Some(Component::CurDir) => {}
            Some(Component::RootDir) | Some(Component::Prefix(_)) => {
                out = PathBuf::from("/");
                missing = false;
                dir = true;
            }
            // `..` after a component that does not exist (a missing directory or a
            // dangling link) has no real location: the kernel would fail, and guessing
            // lexically could place it outside the roots. Refuse to resolve it.
            Some(Component::ParentDir) if missing => {
                return Err(io::Error::other(format!(
                    "`..` follows {}, which does not exist",
                    out.display()
                )));
            }
            Some(Component::ParentDir) => {
                out.pop();
                dir = true;
            }
            Some(Component::Normal(name)) => {
                // The candidate is `out` with the name pushed; it stays unless it is a link.
                out.push(name);
                if missing {
                    continue;
                }
                dir = false;
                match std::fs::symlink_metadata(&out) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(io::Error::other(format!(
                                "too many levels of symbolic links at {}",
                                out.display()
                            )));
                        }
                        let target = std::fs::read_link(&out)?;
                        out.pop();
                        for tc in target.components().rev() {
                            stack.push(Cow::Owned(tc.as_os_str().to_os_string()));
                        }
                    }
                    Ok(meta) => dir = meta.is_dir(),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => missing = true,
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(Resolved {
        path: out,
        exists: !missing,
        dir: dir && !missing,
        links,
    })
}

/// Where a not-yet-existing path would be by name: the canonical nearest existing
/// ancestor plus the remaining components (lexically). Differs from `resolve` only when a
/// dangling symlink is on the way; the sandbox requires both to be inside.
pub fn by_ancestor(abs: &Path) -> Option<PathBuf> {
    let comps: Vec<Component<'_>> = abs.components().collect();
    (1..=comps.len()).rev().find_map(|k| {
        let prefix: PathBuf = comps[..k].iter().collect();
        std::fs::canonicalize(&prefix).ok().map(|p| {
            let rest: PathBuf = comps[k..].iter().collect();
            lexical(&p.join(rest))
        })
    })
}

/// Lexical normalisation of an absolute path (`.` dropped, `..` pops), without touching
/// the file system: used to recognise credential paths by name before resolution.
pub fn lexical(path: &Path) -> PathBuf {
    if scopes::plain(path) {
        return path.to_path_buf();
    }
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Canonical sandbox roots: each root resolved to its real location; roots that cannot be
/// resolved are dropped (they cannot contain anything).
pub fn canonical_roots<'a>(roots: impl IntoIterator<Item = &'a Path>) -> Vec<PathBuf> {
    roots
        .into_iter()
        .filter_map(|r| std::fs::canonicalize(r).ok().or_else(|| resolve(r).ok()))
        .collect()
}

/// Whether `real` is one of `roots` or below one (component-wise, so `/a/proj2` is not
/// below `/a/proj`).
pub fn inside(real: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| scopes::starts_with(real, r))
}

pub use super::credentials::{CREDENTIALS, Credentials, credential, homes};

/// What kind of protected path `path` (lexical or real) is: one whose change would alter
/// permissions or run code later, outside any sandbox (`.git/hooks`, `.git/config`,
/// `.git/commondir`, the same in `.git/modules/*`, a `.git` entry itself, a worktree's
/// `commondir`/`gitdir` links, `.crew`/`.claude` and their settings files). Writes to
/// them are denied in every mode.
pub fn protected(path: &Path) -> Option<&'static str> {
    // Every protected path has a `.git`, `.crew` or `.claude` component.
    let bytes = path.as_os_str().as_encoded_bytes();
    let named = |i: usize| {
        let rest = &bytes[i..];
        (i == 0 || bytes[i - 1] == b'/')
            && [&b".git"[..], b".crew", b".claude"]
                .iter()
                .any(|n| rest.starts_with(n))
    };
    if !(0..bytes.len()).any(|i| bytes[i] == b'.' && named(i)) {
        return None;
    }
    let comps: Vec<std::borrow::Cow<'_, str>> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy()),
            _ => None,
        })
        .collect();
    for (i, c) in comps.iter().enumerate() {
        let rest: Vec<&str> = comps[i + 1..].iter().map(|c| c.as_ref()).collect();
        match (c.as_ref(), rest.as_slice()) {
            (".git", []) => return Some("a `.git` directory or worktree link"),
            (".git", ["hooks", ..]) => return Some("git hooks"),
            (".git", ["config" | "config.worktree"]) => return Some("git config"),
            // `commondir` redirects where git reads its config and hooks from.
            (".git", ["commondir"]) => return Some("git's common-dir link"),
            (".git", ["modules", more @ ..])
                if more.contains(&"hooks")
                    || more
                        .last()
                        .is_some_and(|l| l.starts_with("config") || *l == "commondir") =>
            {
                return Some("a submodule's git hooks, config or common-dir link");
            }
            (".git", ["worktrees", _, "commondir" | "gitdir" | "config.worktree"]) => {
                return Some("a worktree's git links");
            }
            (".crew" | ".claude", []) => return Some("the settings directory"),
            (".crew" | ".claude", [name])
                if name.starts_with("settings") && name.ends_with(".json") =>
            {
                return Some("a settings file");
            }
            _ => {}
        }
    }
    None
}

/// What kind of path the file tools may not write `path` (lexical or real) is: a
/// protected path, or anything inside a `.git` directory (refs, `info/attributes` …),
/// which redirects what the user's git reads and runs; git itself still writes them.
pub fn protected_from_edits(path: &Path) -> Option<&'static str> {
    protected(path).or_else(|| {
        let mut comps = path.components().skip_while(|c| c.as_os_str() != ".git");
        (comps.next().is_some() && comps.next().is_some())
            .then_some("inside a `.git` directory (git's internals)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn resolves_missing_targets_through_symlinked_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let outside = base.join("outside");
        std::fs::create_dir(&outside).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        symlink(&outside, root.join("link")).unwrap();
        // Attack: write root/link/new/file.txt, which lands in outside/.
        let real = resolve(&root.join("link/new/file.txt")).unwrap();
        assert_eq!(real, outside.join("new/file.txt"));
        // `link/..` is the parent of the link's target, as the kernel sees it.
        let real = resolve(&root.join("link/../x")).unwrap();
        assert_eq!(real, base.join("x"));
        // A dangling link points where a write would create the file.
        symlink(base.join("nowhere/secret"), root.join("dangling")).unwrap();
        assert_eq!(
            resolve(&root.join("dangling")).unwrap(),
            base.join("nowhere/secret")
        );
    }

    #[test]
    fn sibling_directories_are_not_inside() {
        let roots = vec![PathBuf::from("/root/proj")];
        assert!(!inside(Path::new("/root/proj2/a"), &roots));
        assert!(inside(Path::new("/root/proj/a"), &roots));
        assert!(inside(Path::new("/root/proj"), &roots));
    }

    #[test]
    fn parent_of_a_missing_or_dangling_component_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere/deeper"), root.join("dangling")).unwrap();
        // The found case: `dangling/../..` was judged `root` but a name-based guess says its
        // parent; neither is real while the link dangles.
        assert!(resolve(&root.join("dangling/../..")).is_err());
        assert!(resolve(&root.join("missing/../x")).is_err());
        std::fs::create_dir(root.join("a")).unwrap();
        assert_eq!(resolve(&root.join("a/../b")).unwrap(), root.join("b"));
    }

    #[test]
    #[rustfmt::skip]
    fn protected_paths_are_recognised() {
        for p in [
            "/p/.git/hooks/pre-commit", "/p/.git/hooks", "/p/.git/config",
            "/p/.git/modules/sub/hooks/post-checkout", "/p/.git/modules/a/modules/b/config",
            "/wt/.git", "/p/.git/worktrees/t1/commondir", "/p/.git/worktrees/t1/gitdir",
            "/p/.crew/settings.local.json", "/p/.claude/settings.json", "/p/.crew",
            "/p/.git/commondir", "/p/.git/modules/sub/commondir",
        ] {
            assert!(protected(Path::new(p)).is_some(), "{p}");
        }
        // The file tools may write none of git's internals.
        for p in [
            "/p/.git/HEAD", "/p/.git/refs/heads/main", "/p/.git/packed-refs",
            "/p/.git/info/attributes", "/p/.git/objects/info/alternates",
            "/p/.git/worktrees/t1/HEAD", "/p/.git/commondir", "/p/.crew/settings.json",
        ] {
            assert!(protected_from_edits(Path::new(p)).is_some(), "{p}");
        }
        for p in ["/p/src/.gitignore", "/p/.github/workflows/ci.yml", "/p/git/HEAD"] {
            assert!(protected_from_edits(Path::new(p)).is_none(), "{p}");
        }
        for p in [
            "/p/src/main.rs", "/p/.git/objects/ab/cd", "/p/.git/refs/heads/main",
            "/p/.crew/agents/x.md", "/p/config", "/p/.gitignore",
        ] {
            assert!(protected(Path::new(p)).is_none(), "{p}");
        }
    }

    #[test]
    fn symlink_loops_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        symlink(tmp.path().join("b"), tmp.path().join("a")).unwrap();
        symlink(tmp.path().join("a"), tmp.path().join("b")).unwrap();
        assert!(resolve(&tmp.path().join("a/x")).is_err());
    }
}
