//! The only way crew itself starts the `git` program: on a tree an agent wrote, git must
//! run no program that the tree's configuration names. Every invocation built here turns
//! off hooks, fsmonitor, credential helpers, ssh and proxy commands, external diff,
//! signing, automatic maintenance, submodule recursion and the `ext::` transport, and
//! blanks every filter driver (clean, smudge, process), diff driver (textconv, command)
//! and merge driver that a repository-level configuration defines — the repository's own
//! `config`, its per-worktree `config.worktree`, the files they include, and the same for
//! every repository nested anywhere below the trees the command works on (git runs
//! `git status` inside a nested repository, with that repository's configuration, when
//! it adds, commits or reports on the outer one). Settings travel in `GIT_CONFIG_COUNT`
//! / `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`, which override every configuration file,
//! reach the nested `git` processes git starts, and cannot be split wrongly by a driver
//! name containing `=`.
//!
//! Drivers from the system and global configuration are the user's own (an installed
//! Git LFS, say): an agent cannot write those files, so they stay in effect.
//!
//! A second layer, [`SafeGit::confined_command`]: Landlock (the write profile) lets the
//! command write only below the trees it works on and their git directories, so a
//! program git would start despite the overrides can write nowhere else.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Settings every crew git invocation carries, whatever the repository says.
const FIXED: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", ""),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", ""),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("merge.verifySignatures", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.x509.program", ""),
    ("maintenance.auto", "false"),
    ("gc.auto", "0"),
];

/// The keys of a driver named in configuration that start a program, with the value
/// that turns each off (git treats an empty command as no driver).
const DRIVER_KEYS: &[(&str, &[(&str, &str)])] = &[
    (
        "filter",
        &[
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ],
    ),
    ("diff", &[("textconv", ""), ("command", "")]),
    ("merge", &[("driver", "")]),
];

/// Environment variables that would point git elsewhere or make it run something; crew's
/// git never inherits them.
const CLEARED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_ALLOW_PROTOCOL",
    "GIT_ATTR_SOURCE",
];

/// More nested repositories or drivers than this below one tree is refused rather than
/// turned into an environment of unbounded size.
const MAX_NESTED: usize = 2_000;
/// See [`MAX_NESTED`].
const MAX_DRIVERS: usize = 2_000;

/// Why a safe git invocation could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SafeGitError {
    /// `git config` could not be started.
    #[error("cannot run `git config` in {dir} to find its filter and diff drivers: {source}")]
    Spawn {
        /// Where.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `git config` failed: the configuration cannot be read, so it cannot be neutralized.
    #[error(
        "cannot read the git configuration of {dir} ({stderr}); crew runs no git on a tree whose configuration it cannot check: fix or remove that repository's config"
    )]
    Config {
        /// The repository.
        dir: PathBuf,
        /// What git said.
        stderr: String,
    },
    /// The Landlock rules could not be built although the kernel has Landlock.
    #[error("cannot confine git to {roots}: {source}")]
    Confine {
        /// The writable roots, joined.
        roots: String,
        /// The error.
        source: crate::sandbox::landlock::SandboxError,
    },
    /// Too many nested repositories or drivers.
    #[error(
        "{dir} holds more than {limit} {what}; crew refuses to run git on it: remove the nested repositories an agent created"
    )]
    TooMany {
        /// The tree.
        dir: PathBuf,
        /// What there are too many of.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
}

/// A prepared set of overrides for git commands on some trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafeGit {
    overrides: Vec<(String, String)>,
}

impl SafeGit {
    /// The overrides for git commands that work on `trees` (work trees or bare
    /// repositories): the fixed settings plus every driver that a repository-level
    /// configuration of these trees, or of a repository nested below them, defines.
    pub fn for_trees(trees: &[&Path]) -> Result<Self, SafeGitError> {
        let mut names: Vec<(String, String)> = Vec::new();
        for tree in trees.iter().filter(|t| t.exists()) {
            let mut repos = vec![(tree.to_path_buf(), Repo::Tree)];
            repos.extend(
                nested_repositories(tree)?
                    .into_iter()
                    .map(|r| (r, Repo::Nested)),
            );
            for (repo, kind) in repos {
                for found in drivers(&repo, kind)? {
                    if !names.contains(&found) {
                        names.push(found);
                    }
                }
                if names.len() > MAX_DRIVERS {
                    return Err(SafeGitError::TooMany {
                        dir: tree.to_path_buf(),
                        what: "filter, diff and merge drivers",
                        limit: MAX_DRIVERS,
                    });
                }
            }
        }
        let mut overrides: Vec<(String, String)> = FIXED
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        for (section, name) in names {
            let keys = DRIVER_KEYS
                .iter()
                .find(|(s, _)| *s == section)
                .map(|(_, keys)| *keys)
                .unwrap_or(&[]);
            for (key, value) in keys {
                overrides.push((format!("{section}.{name}.{key}"), (*value).to_string()));
            }
        }
        Ok(Self { overrides })
    }

    /// The settings this invocation forces (key, value), in order.
    pub fn overrides(&self) -> &[(String, String)] {
        &self.overrides
    }

    /// `git` in `cwd` with every override, no inherited git environment, no terminal
    /// prompt and stdin closed.
    pub fn command(&self, cwd: &Path) -> Command {
        let mut cmd = base_command(cwd);
        cmd.env("GIT_CONFIG_COUNT", self.overrides.len().to_string());
        for (i, (key, value)) in self.overrides.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        cmd
    }
}

impl SafeGit {
    /// [`command`](Self::command), confined with Landlock's write profile to writing
    /// below `trees` (which must exist), their git directories (a linked worktree's
    /// private one and the common one) and the harmless devices. Without Landlock in the
    /// kernel the command runs with the overrides alone (logged at debug level).
    pub fn confined_command(&self, cwd: &Path, trees: &[&Path]) -> Result<Command, SafeGitError> {
        use crate::sandbox::landlock::{self, KernelSupport, PreparedLandlock};
        let mut cmd = self.command(cwd);
        let support = landlock::kernel_support();
        if let KernelSupport::Unavailable(why) = support {
            tracing::debug!("crew's git runs without Landlock: {why}");
            return Ok(cmd);
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        for tree in trees {
            roots.push(tree.to_path_buf());
            roots.extend(git_dirs(tree));
        }
        roots.sort();
        roots.dedup();
        let mut prepared =
            PreparedLandlock::prepare(&roots, crate::tools::SandboxProfile::Write, support)
                .map_err(|source| SafeGitError::Confine {
                    roots: roots
                        .iter()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    source,
                })?;
        // SAFETY: `apply` only makes system calls on the ruleset prepared above.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || prepared.apply());
        }
        Ok(cmd)
    }
}

/// The git directories of the repository at `tree`: its own (`.git`, a linked
/// worktree's `.git/worktrees/NAME`, or the bare repository) and the common one.
fn git_dirs(tree: &Path) -> Vec<PathBuf> {
    match git2::Repository::open(tree) {
        Ok(repo) => {
            let mut dirs = vec![repo.path().to_path_buf(), repo.commondir().to_path_buf()];
            dirs.dedup();
            dirs
        }
        Err(_) => Vec::new(),
    }
}

/// `git` in `cwd` with the inherited git environment removed (inherited
/// `GIT_CONFIG_KEY_n` included), no prompt, no pager, stdin closed.
fn base_command(cwd: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0");
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    for (var, _) in std::env::vars_os() {
        let s = var.to_string_lossy();
        if s.starts_with("GIT_CONFIG_KEY_") || s.starts_with("GIT_CONFIG_VALUE_") {
            cmd.env_remove(&var);
        }
    }
    cmd
}

/// Which kind of repository [`drivers`] asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repo {
    /// A tree crew was given (a work tree or a bare repository).
    Tree,
    /// A repository nested below one.
    Nested,
}

/// The (section, driver name) pairs that `repo`'s repository-level configuration defines
/// (`local` and `worktree` scope, includes followed), asked of git itself so every file
/// git would read is covered. A [`Repo::Nested`] repository is asked the way git asks it
/// for its status (`GIT_DIR=.git` in its directory), so both read the same files.
fn drivers(repo: &Path, kind: Repo) -> Result<Vec<(String, String)>, SafeGitError> {
    let mut cmd = base_command(repo);
    if kind == Repo::Nested {
        cmd.env("GIT_DIR", ".git");
    }
    let out = cmd
        .args([
            "config",
            "--includes",
            "--null",
            "--show-scope",
            "--name-only",
            "--get-regexp",
            r"^(filter|diff|merge)\.",
        ])
        .output()
        .map_err(|source| SafeGitError::Spawn {
            dir: repo.to_path_buf(),
            source,
        })?;
    // Exit 1: no key matched.
    let nothing = out.status.code() == Some(1) && out.stdout.is_empty();
    if !out.status.success() && !nothing {
        return Err(SafeGitError::Config {
            dir: repo.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let mut found = Vec::new();
    let mut fields = out.stdout.split(|b| *b == 0);
    while let (Some(scope), Some(key)) = (fields.next(), fields.next()) {
        if matches!(scope, b"system" | b"global") {
            continue;
        }
        let key = String::from_utf8_lossy(key);
        if let Some(pair) = split_driver_key(&key)
            && !found.contains(&pair)
        {
            found.push(pair);
        }
    }
    Ok(found)
}

/// `filter.NAME.clean` → (`filter`, `NAME`); `None` for a key without a subsection.
fn split_driver_key(key: &str) -> Option<(String, String)> {
    let (section, rest) = key.split_once('.')?;
    let (name, _) = rest.rsplit_once('.')?;
    Some((section.to_ascii_lowercase(), name.to_string()))
}

/// The directories below `tree` (not `tree` itself) that hold a `.git` entry — nested
/// repositories, submodules, linked worktrees — found without following symbolic links
/// and without entering any `.git` directory.
pub fn nested_repositories(tree: &Path) -> Result<Vec<PathBuf>, SafeGitError> {
    let mut found = Vec::new();
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name == OsStr::new(".git") {
                if dir != tree {
                    found.push(dir.clone());
                    if found.len() > MAX_NESTED {
                        return Err(SafeGitError::TooMany {
                            dir: tree.to_path_buf(),
                            what: "nested git repositories",
                            limit: MAX_NESTED,
                        });
                    }
                }
            } else if kind.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_keys_split_at_the_first_and_last_dot() {
        assert_eq!(
            split_driver_key("filter.a.b=c.clean"),
            Some(("filter".into(), "a.b=c".into()))
        );
        assert_eq!(split_driver_key("diff.external"), None);
        assert_eq!(
            split_driver_key("DIFF.x.textconv"),
            Some(("diff".into(), "x".into()))
        );
    }

    #[test]
    fn nested_repositories_are_found_below_but_not_inside_git_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in [".git/modules/m/.git", "a/b/.git", "a/b/c/.git", "x/y"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::create_dir_all(root.join("w")).unwrap();
        std::fs::write(root.join("w/.git"), "gitdir: /elsewhere\n").unwrap();
        let mut got = nested_repositories(root).unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![root.join("a/b"), root.join("a/b/c"), root.join("w")]
        );
    }
}
