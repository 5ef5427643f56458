//! Opening a file tool's path beneath the sandbox roots on file descriptors, so the
//! check and the I/O happen on the same object and a symlink swapped in between cannot
//! lead out (issue 25, item 6).
//!
//! The permission engine judged the call on the path's real location. By the time the
//! tool runs, a directory on the way may have been replaced by a symlink (`mv d d.old;
//! ln -s ~/.ssh d`, or one `renameat2(RENAME_EXCHANGE)`). So the tool resolves the path
//! again, finds the sandbox root it lies in (refusing when none), opens that root, and
//! then opens the rest with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`: the kernel refuses any symlink on the way (the resolved path
//! has none, so one there now is a swap) and anything that leaves the root. The object
//! reached is then checked again by name (deny rules, credentials, protected paths) and
//! by identity on the descriptor (a hard link to a denied file or a credential), and all
//! I/O goes through that descriptor. Writes open the parent directory this way and create
//! and rename their temporary file inside it with `*at` calls.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::{ToolContext, ToolError};
use crate::permission::RuleName;
use crate::permission::sandbox;
use crate::permission::walk::WalkScope;

/// How a path below an opened root is resolved: never through a symlink, never out.
const BENEATH: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// The roots a file tool may reach and the checks the reached object must pass.
#[derive(Clone)]
pub(crate) struct Beneath {
    roots: Vec<PathBuf>,
    scope: WalkScope,
    writes: bool,
}

/// A file opened beneath a root.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The open file (read-only).
    pub file: File,
    /// Its metadata, read from the descriptor.
    pub meta: std::fs::Metadata,
}

/// What [`Beneath::parent`] does with a directory on the way that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Create it (a write may make new directories).
    Create,
    /// Fail (an edit needs the file, so its directory, to exist).
    Fail,
}

/// The directory a write lands in, opened beneath a root.
#[derive(Debug)]
pub(crate) struct Parent {
    dir: OwnedFd,
    name: OsString,
}

impl Beneath {
    /// For reads by `tool` (`Read`, `Grep`, `Glob`): the sandbox roots plus the
    /// read-only roots (skills, offloaded results).
    pub(crate) fn reads(ctx: &ToolContext, tool: RuleName) -> Self {
        let scope = ctx.walk.scope(&ctx.cwd, tool);
        Beneath {
            roots: scope.read_roots(),
            scope,
            writes: false,
        }
    }

    /// For writes and edits: the sandbox roots only.
    pub(crate) fn writes(ctx: &ToolContext) -> Self {
        let scope = ctx.walk.scope(&ctx.cwd, RuleName::Edit);
        Beneath {
            roots: scope.write_roots(),
            scope,
            writes: true,
        }
    }

    /// The walk filter the checks use.
    pub(crate) fn scope(&self) -> &WalkScope {
        &self.scope
    }

    /// Where `abs` really is, the sandbox root it lies in, and the rest below that root.
    fn locate(&self, abs: &Path, shown: &str) -> Result<(PathBuf, &Path, PathBuf), ToolError> {
        let real = sandbox::resolve(abs)
            .map_err(|e| ToolError::Failed(format!("cannot resolve `{shown}`: {e}")))?;
        let root = self
            .roots
            .iter()
            .filter(|r| real.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "`{shown}` resolves to {}, outside the sandbox roots ({}); nothing was {}",
                    real.display(),
                    self.roots
                        .iter()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if self.writes { "written" } else { "read" }
                ))
            })?;
        let rel = real
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok((real.clone(), root.as_path(), rel))
    }

    /// The object at `real` passes the checks by name: no deny rule, credential or
    /// (for writes) protected path.
    fn judge_name(&self, abs: &Path, real: &Path, shown: &str) -> Result<(), ToolError> {
        if !self.scope.allows_resolved(&sandbox::lexical(abs), real) {
            return Err(denied(shown));
        }
        if self.writes
            && let Some(what) = sandbox::protected_from_edits(real)
        {
            return Err(ToolError::Failed(format!(
                "`{shown}` now resolves to {} ({what}), a protected path; nothing was written",
                real.display()
            )));
        }
        Ok(())
    }

    /// Opens the file at `abs` for reading. Directories open too (the caller says what
    /// it wants); FIFOs and devices are refused.
    pub(crate) fn open(&self, abs: &Path, shown: &str) -> Result<Opened, ToolError> {
        self.open_with(
            abs,
            shown,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        )
    }

    fn open_with(&self, abs: &Path, shown: &str, flags: OFlags) -> Result<Opened, ToolError> {
        if let Some(fd) = self.open_lexical(abs, shown, flags) {
            return self.checked(File::from(fd), shown);
        }
        let (real, root, rel) = self.locate(abs, shown)?;
        self.judge_name(abs, &real, shown)?;
        let root_fd = open_root(root, shown)?;
        let fd = openat2(&root_fd, &rel, flags, shown)?;
        self.checked(File::from(fd), shown)
    }

    /// Opens `abs` at its place below the root it names, without resolving it first (a
    /// `stat` of every component): the kernel refuses a symlink on the way and a step out
    /// of the root, so an open that succeeds reached exactly that place, which is then its
    /// real location, and that name was judged before the open. Only for a plain path
    /// (no `.` or `..`: `link/../f` is not `f` when `link` is a symlink). `None` (nothing
    /// opened) when `abs` is not plain or not below a root, its name is refused, or the
    /// open fails: the full resolution then decides and says why.
    fn open_lexical(&self, abs: &Path, shown: &str, flags: OFlags) -> Option<OwnedFd> {
        let plain = abs
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain {
            return None;
        }
        let root = self
            .roots
            .iter()
            .filter(|r| abs.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())?;
        let rel = abs.strip_prefix(root).ok()?;
        self.judge_name(abs, abs, shown).ok()?;
        let root_fd = open_root(root, shown).ok()?;
        openat2(&root_fd, rel, flags, shown).ok()
    }

    /// Opens the directory a write of `abs` lands in, creating missing directories on the
    /// way when `missing` says so; each is created and opened beneath the root.
    pub(crate) fn parent(
        &self,
        abs: &Path,
        shown: &str,
        missing: Missing,
    ) -> Result<Parent, ToolError> {
        let (real, root, rel) = self.locate(abs, shown)?;
        self.judge_name(abs, &real, shown)?;
        let (Some(name), Some(dir_rel)) = (rel.file_name(), rel.parent()) else {
            return Err(ToolError::Failed(format!(
                "`{shown}` is a sandbox root, not a file; give the path of a file to write"
            )));
        };
        let mut dir = open_root(root, shown)?;
        for c in dir_rel.components() {
            let Component::Normal(part) = c else {
                return Err(changed(shown));
            };
            let flags = OFlags::RDONLY | OFlags::DIRECTORY;
            dir = match openat2(&dir, Path::new(part), flags, shown) {
                Err(_) if missing == Missing::Create => {
                    match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => {
                            return Err(ToolError::Failed(format!(
                                "cannot create the parent directories of `{shown}`: {e}"
                            )));
                        }
                    }
                    openat2(&dir, Path::new(part), flags, shown)?
                }
                other => other?,
            };
        }
        Ok(Parent {
            dir,
            name: name.to_os_string(),
        })
    }
}

impl Beneath {
    /// Opens the existing file `parent` names, for reading, inside the opened directory
    /// (a symlink at the name is refused), with the identity check.
    pub(crate) fn open_in(&self, parent: &Parent, shown: &str) -> Result<Opened, ToolError> {
        let fd = rustix::fs::openat(
            &parent.dir,
            &parent.name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOENT => not_found(shown),
            Errno::LOOP => changed(shown),
            other => ToolError::Failed(format!("cannot open `{shown}`: {other}")),
        })?;
        self.checked(File::from(fd), shown)
    }

    /// The opened `file`, once it passed the type and identity checks.
    fn checked(&self, file: File, shown: &str) -> Result<Opened, ToolError> {
        let meta = file
            .metadata()
            .map_err(|e| ToolError::Failed(format!("cannot read `{shown}`: {e}")))?;
        if !meta.is_file() && !meta.is_dir() {
            return Err(ToolError::Failed(format!(
                "`{shown}` is not a regular file or directory; file tools open only those"
            )));
        }
        if self.scope.denies_identity(&meta) {
            return Err(denied(shown));
        }
        Ok(Opened { file, meta })
    }
}

impl Parent {
    /// What is at the file's name now (not following a link): `None` when nothing.
    pub(crate) fn existing(&self) -> std::io::Result<Option<rustix::fs::FileType>> {
        match rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(rustix::fs::FileType::from_raw_mode(st.st_mode as _))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Replaces the file with `bytes` atomically: a temporary file created in the opened
    /// directory, flushed, and renamed over the name there, so readers and crashes see
    /// the old or the new file, never half of one. An existing file's permissions are
    /// kept; a symlink found at the name (one swapped in since the path was resolved) is
    /// refused, and a directory is refused.
    pub(crate) fn write_atomic(&self, bytes: &[u8], shown: &str) -> Result<(), ToolError> {
        let fail = |e: std::io::Error| ToolError::Failed(format!("cannot write `{shown}`: {e}"));
        let mode = match rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                let kind = rustix::fs::FileType::from_raw_mode(st.st_mode as _);
                if kind == rustix::fs::FileType::Directory {
                    return Err(ToolError::Failed(format!(
                        "`{shown}` is a directory; give the path of a file to write"
                    )));
                }
                if kind != rustix::fs::FileType::RegularFile {
                    return Err(changed(shown));
                }
                Some(Mode::from_raw_mode(st.st_mode as _) & Mode::from_raw_mode(0o7777))
            }
            Err(Errno::NOENT) => None,
            Err(e) => return Err(fail(e.into())),
        };
        let tmp = format!(
            ".{}.crew-tmp-{}-{}",
            self.name.to_string_lossy(),
            std::process::id(),
            rand::random::<u32>()
        );
        let result = (|| -> std::io::Result<()> {
            let fd = rustix::fs::openat(
                &self.dir,
                tmp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            )?;
            if let Some(mode) = mode {
                rustix::fs::fchmod(&fd, mode)?;
            }
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            rustix::fs::renameat(&self.dir, tmp.as_str(), &self.dir, &self.name)?;
            Ok(())
        })();
        if let Err(e) = result {
            let _ = rustix::fs::unlinkat(&self.dir, tmp.as_str(), AtFlags::empty());
            return Err(fail(e));
        }
        // Persist the rename itself; not all filesystems allow syncing a directory.
        let _ = rustix::fs::fsync(&self.dir);
        Ok(())
    }
}

/// Opens a sandbox root (canonical, so no symlink is on its way).
fn open_root(root: &Path, shown: &str) -> Result<OwnedFd, ToolError> {
    openat2(
        rustix::fs::CWD,
        root,
        OFlags::PATH | OFlags::DIRECTORY,
        shown,
    )
    .map_err(|_| {
        ToolError::Failed(format!(
            "cannot open the sandbox root {} for `{shown}`; it moved or was replaced",
            root.display()
        ))
    })
}

/// `openat2(dir, rel, flags, BENEATH)`; an empty `rel` opens `dir` itself.
fn openat2<Fd: std::os::fd::AsFd>(
    dir: Fd,
    rel: &Path,
    flags: OFlags,
    shown: &str,
) -> Result<OwnedFd, ToolError> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let resolve = if rel.is_absolute() {
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
    } else {
        BENEATH
    };
    rustix::fs::openat2(dir, rel, flags | OFlags::CLOEXEC, Mode::empty(), resolve).map_err(|e| {
        match e {
            Errno::LOOP | Errno::XDEV | Errno::AGAIN => changed(shown),
            Errno::NOENT => not_found(shown),
            Errno::NOTDIR => ToolError::Failed(format!(
                "`{shown}`: a component of the path is not a directory"
            )),
            Errno::NOSYS => ToolError::Failed(
                "this kernel has no openat2 (Linux 5.6 or later is needed); the file tools \
                 cannot open paths safely without it"
                    .into(),
            ),
            other => ToolError::Failed(format!("cannot open `{shown}`: {other}")),
        }
    })
}

/// The answer for a path that does not exist.
fn not_found(shown: &str) -> ToolError {
    ToolError::Failed(format!(
        "file not found: `{shown}`. Check the path, or use find_files to locate it"
    ))
}

/// The refusal when the path changed between the check and the open.
fn changed(shown: &str) -> ToolError {
    ToolError::Failed(format!(
        "`{shown}` changed while it was being opened (a symlink appeared on its way, or it \
         left the sandbox roots); nothing was read or written. Check the path and try again"
    ))
}

/// The refusal when the object reached is denied (by a rule, as a credential, or as the
/// same file as one).
fn denied(shown: &str) -> ToolError {
    ToolError::Failed(format!(
        "`{shown}` is denied: it is (or is a link to) a file a deny rule or the credential \
         protection covers; nothing was read or written"
    ))
}

/// A walk's starting directory, opened beneath its sandbox root: every entry the walker
/// lists is opened again from that root before it is shown or read.
pub(crate) struct WalkBase {
    beneath: Beneath,
    root: OwnedFd,
    /// The walk's start below the sandbox root.
    below: PathBuf,
    /// The walk's start as the walker was given it (entries' paths begin with it).
    given: PathBuf,
}

impl Beneath {
    /// Opens the walk's start `abs` (a directory, or a file for `search_code`).
    pub(crate) fn walk_base(&self, abs: &Path, shown: &str) -> Result<WalkBase, ToolError> {
        let (real, root, below) = self.locate(abs, shown)?;
        self.judge_name(abs, &real, shown)?;
        let fd = open_root(root, shown)?;
        // The start itself must be reachable without a symlink now.
        openat2(&fd, &below, OFlags::PATH, shown)?;
        Ok(WalkBase {
            beneath: self.clone(),
            root: fd,
            below,
            given: abs.to_path_buf(),
        })
    }
}

/// What a walked file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenFor {
    /// Its contents.
    Reading,
    /// Only its metadata (an `O_PATH` descriptor: no read access needed).
    Metadata,
}

impl WalkBase {
    /// Opens the regular file the walker listed at `entry` (for what `open` says) beneath
    /// the root; `None` when it is no longer there, is
    /// reached through a symlink swapped in on the way, is not a regular file, or is (a
    /// hard link to) a denied file or a credential. An entry that is itself a symlink
    /// (`link`) is resolved and opened where it leads, which must be inside the roots.
    pub(crate) fn open_file(
        &self,
        entry: &Path,
        link: bool,
        open: OpenFor,
    ) -> Option<(File, std::fs::Metadata)> {
        let flags = match open {
            OpenFor::Metadata => OFlags::PATH,
            OpenFor::Reading => OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        };
        let (file, meta) = if link {
            let o = self.beneath.open_with(entry, "", flags).ok()?;
            (o.file, o.meta)
        } else {
            let rel = entry.strip_prefix(&self.given).ok()?;
            // `join("")` would add a trailing slash, which a file does not take.
            let full = if rel.as_os_str().is_empty() {
                self.below.clone()
            } else {
                self.below.join(rel)
            };
            let fd = openat2(&self.root, &full, flags, "").ok()?;
            let o = self.beneath.checked(File::from(fd), "").ok()?;
            (o.file, o.meta)
        };
        meta.is_file().then_some((file, meta))
    }
}

#[cfg(test)]
mod tests;
