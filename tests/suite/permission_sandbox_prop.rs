//! Property: whatever tree of directories, files and symlinks (pointing inside or outside
//! the root, relative or absolute, dangling or looping) and whatever relative or absolute
//! target, the engine allows a file tool exactly the paths whose real location lies
//! inside the sandbox root: escapes are never allowed, and in-root targets are (so an
//! engine denying everything fails too). The real location comes from a reference
//! resolver walking the path one component at a time, following dangling symlinks as the
//! kernel does when a write creates their target.

use crate::support;

use std::path::{Component, Path, PathBuf};

use crewmaster::permission::{PermissionMode, Policy, Verdict, check};
use proptest::prelude::*;
use support::permission::request;

const NAMES: [&str; 4] = ["a", "b", "l1", "l2"];

#[derive(Debug, Clone)]
enum Op {
    Dir {
        outside: bool,
        path: Vec<usize>,
    },
    File {
        outside: bool,
        path: Vec<usize>,
    },
    Link {
        outside: bool,
        path: Vec<usize>,
        target: LinkTarget,
    },
}

#[derive(Debug, Clone)]
enum LinkTarget {
    /// Absolute: into the root or the outside tree.
    Absolute { outside: bool, path: Vec<usize> },
    /// Relative, with some leading `..`.
    Relative { ups: usize, path: Vec<usize> },
}

fn comp_path() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..NAMES.len(), 1..4)
}

fn op() -> impl Strategy<Value = Op> {
    let target = prop_oneof![
        (any::<bool>(), comp_path())
            .prop_map(|(outside, path)| LinkTarget::Absolute { outside, path }),
        (0usize..4, comp_path()).prop_map(|(ups, path)| LinkTarget::Relative { ups, path }),
    ];
    prop_oneof![
        (any::<bool>(), comp_path()).prop_map(|(outside, path)| Op::Dir { outside, path }),
        (any::<bool>(), comp_path()).prop_map(|(outside, path)| Op::File { outside, path }),
        (any::<bool>(), comp_path(), target).prop_map(|(outside, path, target)| Op::Link {
            outside,
            path,
            target
        }),
    ]
}

/// A target argument: components drawn from names, `..`, `.`, `new`, maybe absolute.
fn target() -> impl Strategy<Value = String> {
    let comp = prop_oneof![
        4 => (0..NAMES.len()).prop_map(|i| NAMES[i].to_string()),
        2 => Just("..".to_string()),
        1 => Just(".".to_string()),
        1 => Just("new".to_string()),
    ];
    (prop::collection::vec(comp, 1..6), 0..3u8).prop_map(|(comps, abs)| {
        let rel = comps.join("/");
        match abs {
            0 => format!("@ROOT/{rel}"),
            1 => format!("@OUT/{rel}"),
            _ => rel,
        }
    })
}

fn join(base: &Path, path: &[usize]) -> PathBuf {
    path.iter()
        .fold(base.to_path_buf(), |p, i| p.join(NAMES[*i]))
}

/// `p` with `.` and `..` applied to the text alone: where the path claims to go.
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Where a path lands, by the reference resolver.
#[derive(Debug)]
struct Resolved {
    /// The real location, as a write that creates missing directories would reach it.
    location: PathBuf,
    /// Whether the kernel itself resolves it: no `..` out of, and no name under, a
    /// missing directory or a file. Only such paths must be allowed when inside.
    clean: bool,
}

/// The reference resolver: the kernel's path walk, one component at a time. A symlink —
/// dangling or not — is replaced by its target (taken from the link's directory, or from
/// `/` when absolute), `..` goes to the parent of the real directory reached so far, and
/// a component that does not exist is kept as a plain name (a write creates it there,
/// and a later `..` leaves it again). `None` for a symlink loop (more than 40 links, as
/// Linux).
fn real_location(abs: &Path) -> Option<Resolved> {
    let mut todo: std::collections::VecDeque<std::ffi::OsString> = abs
        .components()
        .filter(|c| !matches!(c, Component::RootDir))
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    let mut cur = PathBuf::from("/");
    let mut clean = true;
    let mut links = 0;
    while let Some(c) = todo.pop_front() {
        if c == "." {
            continue;
        }
        clean &= cur.is_dir();
        if c == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&c);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > 40 {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                if target.is_absolute() {
                    cur = PathBuf::from("/");
                }
                for part in target.components().rev() {
                    if !matches!(part, Component::RootDir) {
                        todo.push_front(part.as_os_str().to_os_string());
                    }
                }
            }
            _ => cur = next,
        }
    }
    Some(Resolved {
        location: cur,
        clean,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn nothing_outside_the_root_is_ever_allowed(
        ops in prop::collection::vec(op(), 0..12),
        targets in prop::collection::vec(target(), 1..8),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        let out = base.join("out");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        for op in &ops {
            // Failures (parent missing, name taken) are part of the randomness.
            match op {
                Op::Dir { outside, path } => {
                    let _ = std::fs::create_dir_all(join(if *outside { &out } else { &root }, path));
                }
                Op::File { outside, path } => {
                    let _ = std::fs::write(join(if *outside { &out } else { &root }, path), "x");
                }
                Op::Link { outside, path, target } => {
                    let link = join(if *outside { &out } else { &root }, path);
                    let to = match target {
                        LinkTarget::Absolute { outside, path } => join(if *outside { &out } else { &root }, path),
                        LinkTarget::Relative { ups, path } => {
                            let mut p = PathBuf::new();
                            for _ in 0..*ups { p.push(".."); }
                            join(&p, path)
                        }
                    };
                    let _ = std::os::unix::fs::symlink(to, link);
                }
            }
        }
        let policy = Policy::default();
        for t in &targets {
            let t = t.replace("@ROOT", &root.to_string_lossy()).replace("@OUT", &out.to_string_lossy());
            for tool in ["read_file", "write_file", "edit_file", "search_code"] {
                let args = serde_json::json!({"path": t, "content": "", "old_string": "a", "new_string": "b", "pattern": "x"}).to_string();
                let d = check(&request(tool, &args, &root, PermissionMode::BypassPermissions), &policy);
                let abs = if Path::new(&t).is_absolute() { PathBuf::from(&t) } else { root.join(&t) };
                let real = real_location(&abs);
                let inside = real.as_ref().is_some_and(|r| r.location.starts_with(&root));
                let allowed = d.verdict == Verdict::Allow;
                // Escapes are never allowed, dangling links and `..` after a created
                // directory included.
                prop_assert!(
                    !allowed || inside,
                    "{} `{}` was allowed but really is {:?} (root {})",
                    tool, t, real, root.display()
                );
                // And a target that names a place inside the root and that the kernel
                // resolves inside it is allowed: an engine denying everything fails here.
                // (One named outside, even if a link leads back in, may be denied.)
                let clean = real.as_ref().is_some_and(|r| r.clean)
                    && lexical(&abs).starts_with(&root);
                prop_assert!(
                    allowed || !(inside && clean),
                    "{} `{}` got {:?} though it really is {:?}, inside the root {}",
                    tool, t, d.verdict, real, root.display()
                );
            }
        }
    }
}
