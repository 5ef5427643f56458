//! Adding a git worktree so that many can be added at once, by threads and by processes.
//!
//! libgit2's `worktree add` reads every other worktree's metadata (is the branch checked
//! out elsewhere?) while writing its own and then checks out, so two adds at once saw
//! each other half written ("already checked out"), and serialising the whole add made
//! N worktrees cost N checkouts. Here an add has two steps, as `git worktree add` has:
//!
//! 1. **Metadata**, under the repository's add lock (an `flock` on
//!    `<git dir>/crew-worktree-add.lock`, so threads and processes exclude each other):
//!    the branch, `.git/worktrees/<name>/{gitdir,commondir,HEAD,locked}` and the
//!    worktree's `.git` file. This is a few small files.
//! 2. **Checkout**, outside the lock, in parallel with other checkouts: libgit2 writes
//!    the files and the index of the new worktree only.
//!
//! While the checkout runs, the worktree is `locked` ("initializing", git's own word), so
//! a prune in this or another process leaves it alone; the lock is removed once the
//! files are all there. [`add`] returns only then: nobody gets the path of a half
//! checked-out tree. If the checkout fails, the worktree, its metadata and its branch
//! are removed again (they hold nothing).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use git2::{Oid, Repository, build::CheckoutBuilder};

use super::registry::Layout;
use super::{WorktreeError, git, git_err, io_err};

/// The name of the lock file, in the repository's git directory.
pub(crate) const ADD_LOCK_NAME: &str = "crew-worktree-add.lock";

/// The repository's add lock, held until dropped (the kernel drops it when the process
/// dies, so a killed crew never leaves it stuck).
pub(crate) struct AddLock {
    _file: nix::fcntl::Flock<fs::File>,
}

/// Takes the add lock of the repository whose git directory is `git_dir`. Each call opens
/// its own descriptor, so threads of one process exclude each other too.
pub(crate) fn lock(git_dir: &Path) -> Result<AddLock, WorktreeError> {
    flock(
        &git_dir.join(ADD_LOCK_NAME),
        nix::fcntl::FlockArg::LockExclusive,
    )
}

/// An `flock` of kind `how` on the file at `path` (created if need be).
pub(crate) fn flock(path: &Path, how: nix::fcntl::FlockArg) -> Result<AddLock, WorktreeError> {
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io_err("open", path))?;
    let file = nix::fcntl::Flock::lock(file, how)
        .map_err(|(_, errno)| io_err("lock", path)(std::io::Error::from(errno)))?;
    Ok(AddLock { _file: file })
}

/// Creates branch `branch` at `base` and checks it out at `path` as git worktree `name`,
/// as a full checkout or an overlay workspace (`layout`). Returns once every file is
/// there. On failure nothing is left behind.
pub(crate) fn add(
    main: &Repository,
    name: &str,
    path: &Path,
    branch: &str,
    base: Oid,
    layout: Layout,
) -> Result<(), WorktreeError> {
    let meta = main.path().join("worktrees").join(name);
    let locked = meta.join("locked");
    {
        let waiting = tracing::debug_span!("worktree.add.lock_wait").entered();
        let _held = lock(main.path())?;
        drop(waiting);
        let _span = tracing::debug_span!("worktree.add.metadata").entered();
        write_metadata(main, &meta, path, branch, base)?;
    }
    if layout == Layout::Overlay {
        // The workspace stays `locked`, with a reason that says how to open it.
        let _span = tracing::debug_span!("worktree.add.overlay").entered();
        let dir = path.parent().unwrap_or(Path::new("/"));
        if let Err(e) = super::overlay::prepare(main, dir, name, path, &meta, base) {
            let _ = fs::remove_file(&locked);
            let _ = git::remove(main, dir, name, path, branch);
            return Err(e);
        }
        return Ok(());
    }
    let checked_out = {
        let _span = tracing::debug_span!("worktree.add.checkout").entered();
        checkout(path)
    };
    // Whatever happened, the worktree is no longer being initialised.
    let unlocked = fs::remove_file(&locked).map_err(io_err("delete", &locked));
    if let Err(e) = checked_out.and(unlocked) {
        let base_dir = path.parent().unwrap_or(Path::new("/"));
        let _ = git::remove(main, base_dir, name, path, branch);
        return Err(e);
    }
    Ok(())
}

/// Step 1, under the add lock: the branch and git's records of the new worktree, locked
/// while it is initialised. Undoes what it did on failure.
fn write_metadata(
    main: &Repository,
    meta: &Path,
    path: &Path,
    branch: &str,
    base: Oid,
) -> Result<(), WorktreeError> {
    let commit = main
        .find_commit(base)
        .map_err(git_err("find commit", base))?;
    let folder = main.path().join("worktrees");
    fs::create_dir_all(&folder).map_err(io_err("create", &folder))?;
    // `create_dir`, not `create_dir_all`: an existing record of that name is an error,
    // never something to write over.
    fs::create_dir(meta).map_err(io_err("create", meta))?;
    let mut created = match main.branch(branch, &commit, false) {
        Ok(b) => b,
        Err(source) => {
            let _ = fs::remove_dir_all(meta);
            return Err(git_err("create branch", branch)(source));
        }
    };
    let written = write_records(meta, path, branch);
    if written.is_err() {
        let _ = fs::remove_dir_all(meta);
        let _ = fs::remove_file(path.join(".git"));
        let _ = fs::remove_dir(path);
        let _ = created.delete();
    }
    written
}

/// The files `git worktree add` writes, `locked` first so that no prune takes the half
/// made worktree for a stale one.
fn write_records(meta: &Path, path: &Path, branch: &str) -> Result<(), WorktreeError> {
    // Paths are written as bytes: a worktree folder need not be valid UTF-8.
    let line = |parts: &[&[u8]]| [parts.concat(), b"\n".to_vec()].concat();
    let put = |file: &Path, text: Vec<u8>| fs::write(file, text).map_err(io_err("write", file));
    put(&meta.join("locked"), line(&[b"initializing"]))?;
    fs::create_dir(path).map_err(io_err("create", path))?;
    let dot_git = path.join(".git");
    put(
        &meta.join("gitdir"),
        line(&[dot_git.as_os_str().as_bytes()]),
    )?;
    put(&meta.join("commondir"), line(&[b"../.."]))?;
    put(
        &meta.join("HEAD"),
        line(&[b"ref: refs/heads/", branch.as_bytes()]),
    )?;
    put(&dot_git, line(&[b"gitdir: ", meta.as_os_str().as_bytes()]))
}

/// Step 2, outside the lock: the files and the index of the worktree at `path`, from its
/// HEAD. Touches nothing shared but the object database, which it only reads.
fn checkout(path: &Path) -> Result<(), WorktreeError> {
    let shown = path.display().to_string();
    let wt = Repository::open(path).map_err(git_err("open worktree", &shown))?;
    let mut opts = CheckoutBuilder::new();
    opts.force();
    wt.checkout_head(Some(&mut opts))
        .map_err(git_err("check out", &shown))
}
