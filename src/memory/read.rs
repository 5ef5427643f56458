//! Reading one memory file as safely as the file tools would: the Read deny rules and the
//! credential locations (by name, through symlinks, and by identity for hard links) decide
//! first, a project's file may reach only into the project, and only a bounded regular
//! text file is read. A FIFO named `CLAUDE.md` must not hang the agent, and a 2 GB log
//! symlinked as `AGENTS.md` must not fill the prompt: both are skipped with a reason.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Scope, SkipReason};
use crate::permission::sandbox::{self, Credentials};
use crate::permission::spec::RuleName;
use crate::permission::walk::{WalkFilter, WalkScope};

/// The most bytes one memory file may have.
pub(crate) const MAX_FILE_BYTES: u64 = 128 * 1024;

/// What may be read, from one agent's place.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    scope: WalkScope,
    creds: Credentials,
    /// Where a project's memory files may import from (canonical project root and cwd).
    project: Vec<PathBuf>,
    /// `~/.claude` and `~/.crew`, as given and canonical: Markdown there may be imported
    /// by a project's files (Claude Code's documented way to share personal notes).
    personal: Vec<PathBuf>,
}

impl Access {
    /// The access of an agent in `cwd` of the project at `root`, under the session's
    /// deny rules (`walk`) and with the user's home `home`.
    pub(crate) fn new(
        walk: &Arc<WalkFilter>,
        root: &Path,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Self {
        let personal = sandbox::homes(home)
            .into_iter()
            .flat_map(|h| [h.join(".claude"), h.join(".crew")])
            .collect();
        Self {
            scope: walk.scope(cwd, RuleName::Read),
            creds: Credentials::load(home),
            project: sandbox::canonical_roots([root, cwd]),
            personal,
        }
    }

    /// The text of `path` (absolute, lexically clean) for a file of `scope`, or why not.
    pub(crate) fn read(&self, path: &Path, scope: Scope) -> Result<String, SkipReason> {
        let real = match std::fs::canonicalize(path) {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SkipReason::NotFound);
            }
            Err(e) => {
                return Err(SkipReason::Unreadable {
                    message: e.to_string(),
                });
            }
        };
        if let Some(name) = self.creds.matches(path, Some(&real)) {
            return Err(SkipReason::Credential { name: name.into() });
        }
        if !self.scope.allows(path) {
            return Err(SkipReason::Denied);
        }
        if scope != Scope::User && !self.reachable_from_project(path, &real) {
            return Err(SkipReason::OutsideProject);
        }
        read_bounded(&real)
    }

    /// Whether a project's memory file may import `path`: inside the project (by name and
    /// by real location), or Markdown under `~/.claude` / `~/.crew`.
    fn reachable_from_project(&self, path: &Path, real: &Path) -> bool {
        let inside = |p: &Path| sandbox::inside(p, &self.project);
        let personal = |p: &Path| {
            p.extension().is_some_and(|e| e == "md")
                && self.personal.iter().any(|d| p.starts_with(d))
        };
        (inside(path) && inside(real)) || (personal(path) && personal(real))
    }
}

/// Reads a regular file of at most [`MAX_FILE_BYTES`] holding UTF-8 text. Opened without
/// blocking (a FIFO would otherwise wait for a writer forever) and checked on the open
/// handle, so a file swapped after the name was checked is judged as what was opened.
fn read_bounded(real: &Path) -> Result<String, SkipReason> {
    let unreadable = |e: std::io::Error| SkipReason::Unreadable {
        message: e.to_string(),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(real)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if meta.is_dir() {
        return Err(SkipReason::Directory);
    }
    if !meta.is_file() {
        return Err(SkipReason::NotAFile);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(SkipReason::TooLarge {
            bytes: meta.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    // The file may have grown since its size was read.
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(SkipReason::TooLarge {
            bytes: bytes.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    if bytes.contains(&0) {
        return Err(SkipReason::Binary);
    }
    String::from_utf8(bytes).map_err(|_| SkipReason::Binary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Policy;
    use crate::permission::rules::{Rule, RuleKind};
    use crate::tools::rule_names::ParseRule;

    struct Fx {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        proj: PathBuf,
    }

    fn fixture() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        let proj = home.join("proj");
        std::fs::create_dir_all(proj.join("secrets")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(proj.join("secrets/notes.md"), "TOPSECRET").unwrap();
        Fx {
            _tmp: tmp,
            home,
            proj,
        }
    }

    fn access(fx: &Fx) -> Access {
        let rule = Rule::parse(
            "Read(./secrets/**)",
            RuleKind::Deny,
            crate::permission::Layer::Project,
            None,
        )
        .unwrap();
        let policy = Policy {
            project_root: Some(fx.proj.clone()),
            home: Some(fx.home.clone()),
            rules: vec![rule],
            ..Policy::default()
        };
        let walk = Arc::new(WalkFilter::new(&policy));
        Access::new(&walk, &fx.proj, &fx.proj, Some(&fx.home))
    }

    #[test]
    fn credentials_denied_files_and_links_to_them_are_refused() {
        let fx = fixture();
        let a = access(&fx);
        let key = fx.home.join(".ssh/id_rsa");
        assert!(matches!(
            a.read(&key, Scope::User),
            Err(SkipReason::Credential { .. })
        ));
        std::os::unix::fs::symlink(&key, fx.proj.join("CLAUDE.md")).unwrap();
        assert!(matches!(
            a.read(&fx.proj.join("CLAUDE.md"), Scope::Project),
            Err(SkipReason::Credential { .. })
        ));
        std::fs::hard_link(&key, fx.proj.join("AGENTS.md")).unwrap();
        let a = access(&fx); // credential identities are taken when access is built
        assert!(matches!(
            a.read(&fx.proj.join("AGENTS.md"), Scope::Project),
            Err(SkipReason::Credential { .. })
        ));
        assert_eq!(
            a.read(&fx.proj.join("secrets/notes.md"), Scope::Project),
            Err(SkipReason::Denied)
        );
    }

    #[test]
    fn a_project_file_reaches_only_into_the_project_and_personal_markdown() {
        let fx = fixture();
        let a = access(&fx);
        std::fs::write(fx.home.join("diary.txt"), "private").unwrap();
        std::fs::write(fx.home.join(".claude/prefs.md"), "tabs").unwrap();
        std::fs::write(fx.home.join(".claude/settings.json"), "{}").unwrap();
        assert_eq!(
            a.read(&fx.home.join("diary.txt"), Scope::Project),
            Err(SkipReason::OutsideProject)
        );
        assert_eq!(
            a.read(&fx.home.join(".claude/settings.json"), Scope::Project),
            Err(SkipReason::OutsideProject)
        );
        assert_eq!(
            a.read(&fx.home.join(".claude/prefs.md"), Scope::Project),
            Ok("tabs".into())
        );
        assert_eq!(
            a.read(&fx.home.join("diary.txt"), Scope::User),
            Ok("private".into())
        );
        // A symlink inside the project to a file outside it is outside (a repository can
        // commit `CLAUDE.md -> /proc/self/environ`, which would carry crew's API keys).
        std::os::unix::fs::symlink(fx.home.join("diary.txt"), fx.proj.join("d.md")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", fx.proj.join("CLAUDE.md")).unwrap();
        for name in ["d.md", "CLAUDE.md"] {
            assert_eq!(
                a.read(&fx.proj.join(name), Scope::Project),
                Err(SkipReason::OutsideProject)
            );
        }
    }

    #[test]
    fn huge_binary_and_special_files_are_skipped_not_read() {
        let fx = fixture();
        let a = access(&fx);
        let big = fx.proj.join("big.md");
        std::fs::write(&big, vec![b'a'; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert!(matches!(
            a.read(&big, Scope::Project),
            Err(SkipReason::TooLarge { .. })
        ));
        std::fs::write(fx.proj.join("bin.md"), b"abc\0def").unwrap();
        assert_eq!(
            a.read(&fx.proj.join("bin.md"), Scope::Project),
            Err(SkipReason::Binary)
        );
        std::fs::write(fx.proj.join("latin1.md"), b"caf\xe9").unwrap();
        assert_eq!(
            a.read(&fx.proj.join("latin1.md"), Scope::Project),
            Err(SkipReason::Binary)
        );
        let fifo = fx.proj.join("fifo.md");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(a.read(&fifo, Scope::Project), Err(SkipReason::NotAFile));
        std::fs::create_dir(fx.proj.join("dir.md")).unwrap();
        assert_eq!(
            a.read(&fx.proj.join("dir.md"), Scope::Project),
            Err(SkipReason::Directory)
        );
        assert_eq!(
            a.read(&fx.proj.join("missing.md"), Scope::Project),
            Err(SkipReason::NotFound)
        );
    }
}
