//! Which repository a git command will use. Git reads the configuration of the repository
//! it discovers (`core.fsmonitor`, `core.pager`, filters, hooks), and those settings run
//! programs. A command can plant a nested `sub/.git` (or a bare repository) with such a
//! setting; `git -C sub status` would then run it unconfined. So git counts as read-only
//! only when it will use the project's own repository: the one discovered from the
//! project root, or the one whose `.git` sits in the agent's cwd (a worktree).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use crate::sandbox;
use crate::shell::Part;

use super::git;

/// Where a script's git commands start from.
#[derive(Debug, Clone, Copy)]
pub struct Places<'a> {
    /// The agent's cwd.
    pub cwd: &'a Path,
    /// Whether `cwd` is its own real (canonical) location, as the policy cache resolved
    /// it: discovery from it then needs no `canonicalize`.
    pub cwd_is_real: bool,
    /// The project root, real; `None` when there is no project.
    pub project_root: Option<&'a Path>,
    /// Whether there is a project root that no longer exists (nothing is discovered
    /// from it then).
    pub project_gone: bool,
    /// What `~` expands to.
    pub home: Option<&'a Path>,
}

/// For each part of a script, why it is a git command that may not use the project's own
/// repository (`None` for every other part, and for git that surely uses it).
pub fn foreign(parts: &[Part], at: &Places<'_>) -> Vec<Option<String>> {
    if !parts.iter().any(|p| p.program() == "git") {
        return vec![None; parts.len()];
    }
    let memo = Memo {
        at,
        seen: RefCell::new(Vec::new()),
    };
    let own = own_repos(&memo);
    let env_why = git_env_set(parts);
    parts
        .iter()
        .map(|part| match part.program() {
            "git" => env_why
                .clone()
                .or_else(|| git_foreign(part, part.dir.path(Some(at.cwd)), &own, &memo)),
            _ => None,
        })
        .collect()
}

/// The discoveries made while judging one script, from real start directories (the cwd
/// and the project root are often the same).
struct Memo<'a> {
    at: &'a Places<'a>,
    seen: RefCell<Vec<(PathBuf, Option<PathBuf>)>>,
}

impl Memo<'_> {
    /// `discover_real(dir)`, once per directory.
    fn real(&self, dir: &Path) -> Option<PathBuf> {
        if let Some((_, found)) = self.seen.borrow().iter().find(|(d, _)| d == dir) {
            return found.clone();
        }
        let found = discover_real(dir);
        self.seen
            .borrow_mut()
            .push((dir.to_path_buf(), found.clone()));
        found
    }

    /// `discover(dir)`, without resolving `dir` when it is the cwd the policy cache
    /// already resolved.
    fn discover(&self, dir: &Path) -> Option<PathBuf> {
        if self.at.cwd_is_real && dir == self.at.cwd {
            self.real(dir)
        } else {
            discover(dir)
        }
    }
}

/// The repositories the agent may read with git unasked.
fn own_repos(memo: &Memo<'_>) -> Vec<PathBuf> {
    let at = memo.at;
    let mut own: Vec<PathBuf> = match at.project_root {
        Some(root) => memo.real(root).into_iter().collect(),
        None if at.project_gone => Vec::new(),
        None => memo.discover(at.cwd).into_iter().collect(),
    };
    // Discovery from the cwd itself has looked at its `.git` already.
    if at.cwd_is_real && at.project_root.is_none_or(|r| r == at.cwd) && !at.project_gone {
        return own;
    }
    let here = at.cwd.join(".git");
    if let Ok(meta) = here.symlink_metadata() {
        own.push(match meta.file_type().is_symlink() || !at.cwd_is_real {
            true => real(&here),
            false => here,
        });
    }
    own
}

/// Why git's repository is not the project's, if it may not be.
fn git_foreign(
    part: &Part,
    dir: Option<PathBuf>,
    own: &[PathBuf],
    memo: &Memo<'_>,
) -> Option<String> {
    let home = memo.at.home;
    let argv = &part.argv;
    let g = git::parse(argv);
    let globals = &argv[1..g.sub.unwrap_or(argv.len())];
    if let Some(a) = globals.iter().find(|a| {
        ["--git-dir", "--work-tree", "--bare"]
            .iter()
            .any(|o| a.starts_with(o))
    }) {
        return Some(format!(
            "`{a}` points git at a repository chosen by the command"
        ));
    }
    // `-C a -C b` is cumulative; `env -C DIR` comes first.
    let mut hops: Vec<&str> = part.chdir.iter().map(String::as_str).collect();
    let mut i = 0;
    while i < globals.len() {
        if globals[i] == "-C" {
            hops.extend(globals.get(i + 1).map(String::as_str));
            i += 1;
        }
        i += 1;
    }
    let Some(mut dir) = dir else {
        return Some("git runs in a directory the engine cannot follow".into());
    };
    for h in &hops {
        if h.contains('$') {
            return Some(format!("git -C `{h}` is computed at run time"));
        }
        dir = sandbox::absolute(h, &dir, home);
    }
    match memo.discover(&dir) {
        Some(repo) if own.contains(&repo) => None,
        Some(repo) => Some(format!(
            "git in {} uses the repository {}, not the project's own, and its configuration can run programs",
            dir.display(),
            repo.display()
        )),
        None => Some(format!(
            "git in {} uses no repository the engine can locate",
            dir.display()
        )),
    }
}

/// Why the script may change git's environment (`GIT_DIR`, `GIT_WORK_TREE`, …) for its
/// git commands, if it may: an assignment, an `export`/`declare` of a `GIT_` name, or a
/// sourced file.
fn git_env_set(parts: &[Part]) -> Option<String> {
    parts.iter().find_map(|p| {
        if let Some((name, _)) = p.env.iter().find(|(n, _)| n.starts_with("GIT_")) {
            return Some(format!(
                "`{name}=…` chooses git's repository or configuration"
            ));
        }
        match p.program() {
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                p.argv[1..].iter().find(|a| a.starts_with("GIT_")).map(|a| {
                    format!(
                        "`{} {a}` chooses git's repository or configuration",
                        p.program()
                    )
                })
            }
            "source" | "." => Some(format!(
                "`{}` may set git's environment (GIT_DIR…)",
                p.full_text()
            )),
            _ => None,
        }
    })
}

/// The repository git discovers from `start`: the first ancestor (itself included) that
/// holds a `.git` entry or is itself a git directory (a bare repository), canonical.
pub fn discover(start: &Path) -> Option<PathBuf> {
    discover_real(&std::fs::canonicalize(start).ok()?)
}

/// `discover` from a directory that is already real (canonical): its ancestors are real
/// too, so a `.git` entry that is not a symlink needs no resolving (one `lstat` for the
/// common case).
fn discover_real(start: &Path) -> Option<PathBuf> {
    for d in start.ancestors() {
        let dot = d.join(".git");
        if let Ok(meta) = dot.symlink_metadata() {
            if meta.file_type().is_symlink() {
                return Some(real(&dot));
            }
            return Some(dot);
        }
        if d.join("HEAD").is_file() && (d.join("objects").is_dir() || d.join("commondir").is_file())
        {
            return Some(d.to_path_buf());
        }
    }
    None
}

fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell;

    #[test]
    #[rustfmt::skip]
    fn nested_bare_and_cd_repositories_are_foreign() {
        let tmp = tempfile::tempdir().unwrap();
        let proj = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::create_dir_all(proj.join("src")).unwrap();
        std::fs::create_dir_all(proj.join("sub/.git")).unwrap();
        std::fs::create_dir_all(proj.join("bare/objects")).unwrap();
        std::fs::write(proj.join("bare/HEAD"), "ref: refs/heads/main\n").unwrap();
        let run = |c: &str| {
            let env = shell::Env { cwd: Some(proj.clone()), home: None };
            let s = shell::parse_in(c, &env).unwrap();
            let (cwd, project_root, home) = (proj.as_path(), Some(proj.as_path()), None);
            let at = Places { cwd, cwd_is_real: true, project_root, project_gone: false, home };
            foreign(&s.parts, &at).into_iter().flatten().collect::<Vec<_>>()
        };
        for ok in [
            "git status", "git -C . status", "git -C src log", "cd src && git diff", "ls; git log",
        ] {
            assert!(run(ok).is_empty(), "{ok}: {:?}", run(ok));
        }
        for bad in [
            "git -C sub status", "cd sub && git diff", "(cd sub) ; git status",
            "git -C src -C ../sub log", "git -C bare log", "git --git-dir=sub/.git log",
            "git --bare log", "cd $X && git status", "export GIT_DIR=sub/.git; git status",
            "GIT_DIR=sub/.git; git status", "git -C /nonexistent status", "cd / && git status",
        ] {
            assert!(!run(bad).is_empty(), "{bad}");
        }
    }
}
