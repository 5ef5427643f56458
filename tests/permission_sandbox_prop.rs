//! Property: whatever tree of directories, files and symlinks (pointing inside or outside
//! the root, relative or absolute, dangling or looping) and whatever relative or absolute
//! target, the engine never allows a file tool to reach a path whose real location —
//! `std::fs::canonicalize` of the target, or of its nearest existing ancestor plus the
//! rest — lies outside the sandbox root.

mod permission_support;

use std::path::{Component, Path, PathBuf};

use crewmaster::permission::{PermissionMode, Policy, Verdict, check};
use permission_support::request;
use proptest::prelude::*;

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

/// The oracle: canonicalize the target, or its nearest existing ancestor plus the rest.
fn real_location(abs: &Path) -> Option<PathBuf> {
    let comps: Vec<Component<'_>> = abs.components().collect();
    for k in (1..=comps.len()).rev() {
        let prefix: PathBuf = comps[..k].iter().collect();
        if let Ok(p) = std::fs::canonicalize(&prefix) {
            let rest: PathBuf = comps[k..].iter().collect();
            return Some(lexical(&p.join(rest)));
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

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
                if d.verdict == Verdict::Allow {
                    let abs = if Path::new(&t).is_absolute() { PathBuf::from(&t) } else { root.join(&t) };
                    let real = real_location(&abs);
                    prop_assert!(
                        real.as_ref().is_some_and(|r| r.starts_with(&root)),
                        "{tool} `{t}` was allowed but really is {real:?} (root {})", root.display()
                    );
                }
            }
        }
    }
}
