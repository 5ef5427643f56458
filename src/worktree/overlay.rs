//! Workspaces that cost what the agent changes: an overlay over one shared, read-only
//! checkout of the base, mounted in crew's own namespace (`sandbox::workspace_ns`).
//!
//! In the repository's worktrees folder:
//!
//! ```text
//! .bases/<commit>/tree     the base's files, checked out once per base and never written again
//! .bases/<commit>/index    git's index of them, its stat data matching the files
//! .layers/<id>/upper       what the agent changed (overlayfs's upper directory)
//! .layers/<id>/work        overlayfs's scratch directory
//! <id>/                    the workspace: the mount point; outside crew, a notice
//! ```
//!
//! git's records are a linked worktree's (`.git/worktrees/<id>`: HEAD, the `crew/…`
//! branch, its own index), so git inside crew sees a normal worktree. The index starts as
//! a hard link to the base's: git replaces an index by rename, never in place, so the
//! first rewrite gives the workspace its own. Seen through the overlay, the base's files
//! keep their inode, times and size, and the base's index is dated after them, so the
//! first `git status` hashes nothing again.
//!
//! Outside crew the path holds only a notice and no `.git`, so a shell there finds no
//! repository (it could otherwise commit the deletion of every file), and the worktree is
//! `locked` in git, so a `git worktree prune` keeps it. `crew worktrees open` turns a
//! workspace into a real checkout for an editor ([`materialize`]).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime};

use git2::{Oid, Repository};
use nix::fcntl::FlockArg;

use super::add::{AddLock, flock};
use super::registry::{Layout, Record};
use super::scope::Scope;
use super::{WorktreeError, io_err};
use crate::sandbox::workspace_ns::{self, Support};

/// The folder of base checkouts, in a repository's worktrees folder.
pub(crate) const BASES_DIR: &str = ".bases";
/// The folder of the workspaces' upper layers.
pub(crate) const LAYERS_DIR: &str = ".layers";
/// The file a workspace's path holds outside crew.
pub(crate) const NOTICE_FILE: &str = "CREW-WORKSPACE.txt";

/// Whether new workspaces can be overlays in this process; the reason when not, said once
/// per process so the user knows why workspaces cost a full checkout.
pub(crate) fn available() -> bool {
    match workspace_ns::support() {
        Support::Available => true,
        Support::Unavailable(why) => {
            fall_back(why);
            false
        }
    }
}

/// Says once that workspaces are full checkouts, and why.
pub(crate) fn fall_back(why: &str) {
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        tracing::warn!("workspaces are full checkouts: {why}");
    });
}

/// Where the layers of workspace `id` live.
pub(crate) fn layers(dir: &Path, id: &str) -> PathBuf {
    dir.join(LAYERS_DIR).join(id)
}

/// The shared checkout of `base`.
fn base_dir(dir: &Path, base: &str) -> PathBuf {
    dir.join(BASES_DIR).join(base)
}

/// Makes workspace `id` at `path` (whose git records `meta` were just written, `locked`):
/// the base's checkout if it is not there yet, the layers, the index, and the mount.
/// On failure the caller undoes the records; what this made is removed here.
pub(crate) fn prepare(
    main: &Repository,
    dir: &Path,
    id: &str,
    path: &Path,
    meta: &Path,
    base: Oid,
) -> Result<(), WorktreeError> {
    let made = (|| {
        let (base_dir, base_lock) = ensure_base(main, dir, base)?;
        let layers = layers(dir, id);
        let (upper, work) = (layers.join("upper"), layers.join("work"));
        for d in [&upper, &work] {
            fs::create_dir_all(d).map_err(io_err("create", d))?;
        }
        // The workspace's own `.git`, seen only through the overlay.
        let dot_git = [b"gitdir: ", meta.as_os_str().as_bytes(), b"\n"].concat();
        fs::write(upper.join(".git"), dot_git).map_err(io_err("write", &upper.join(".git")))?;
        let index = meta.join("index");
        let shared = base_dir.join("index");
        let _ = fs::remove_file(&index);
        if fs::hard_link(&shared, &index).is_err() {
            fs::copy(&shared, &index).map_err(io_err("copy", &shared))?;
        }
        // Outside crew: a notice instead of the `.git` the records step wrote.
        let _ = fs::remove_file(path.join(".git"));
        fs::write(path.join(NOTICE_FILE), notice(id)).map_err(io_err("write", path))?;
        fs::write(meta.join("locked"), lock_reason(id)).map_err(io_err("write", meta))?;
        hold(&layers, base_lock)?;
        mount(dir, id, path, &base.to_string())
    })();
    if made.is_err() {
        release(dir, id);
        let _ = fs::remove_dir_all(layers(dir, id));
        let _ = fs::remove_file(path.join(NOTICE_FILE));
    }
    made
}

fn notice(id: &str) -> String {
    format!(
        "This is crew workspace `{id}`. Its files are an overlay that only crew and the \
         programs it runs can see.\nRun `crew worktrees open {id}` to turn it into an \
         ordinary checkout here, or `crew worktrees diff {id}` to see what it changed.\n"
    )
}

fn lock_reason(id: &str) -> String {
    format!("crew workspace (overlay): run `crew worktrees open {id}` to see it outside crew\n")
}

/// The shared locks this process holds on the workspaces it made, by layers folder: the
/// crew whose agent works in a workspace holds a shared `flock` on it until the task ends
/// (or the crew does), so `open` (which wants it alone) knows when an agent still works
/// in it. Other crews mount a workspace without holding it.
static IN_USE: Mutex<BTreeMap<PathBuf, [AddLock; 2]>> = Mutex::new(BTreeMap::new());

const IN_USE_FILE: &str = "in-use.lock";

/// Holds the workspace at `layers` (and, by `base`, its base) for this process.
fn hold(layers: &Path, base: AddLock) -> Result<(), WorktreeError> {
    let mut held = IN_USE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !held.contains_key(layers) {
        let lock = flock(&layers.join(IN_USE_FILE), FlockArg::LockSharedNonblock)?;
        held.insert(layers.to_path_buf(), [lock, base]);
    }
    Ok(())
}

/// Lets go of this process's hold on workspace `id`: its task has ended.
pub(crate) fn release(dir: &Path, id: &str) {
    IN_USE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&layers(dir, id));
}

/// Lets go of this process's hold on `layers` and takes the workspace alone; fails with
/// `StillActive` while another crew holds it.
fn take_alone(layers: &Path, id: &str) -> Result<AddLock, WorktreeError> {
    IN_USE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(layers);
    flock(&layers.join(IN_USE_FILE), FlockArg::LockExclusiveNonblock)
        .map_err(|_| WorktreeError::StillActive { id: id.to_string() })
}

/// Mounts workspace `id` at `path` unless it is mounted already.
pub(crate) fn mount(dir: &Path, id: &str, path: &Path, base: &str) -> Result<(), WorktreeError> {
    let layers = layers(dir, id);
    if workspace_ns::is_mount_point(path) {
        return Ok(());
    }
    let upper = layers.join("upper");
    workspace_ns::mount_overlay(
        &base_dir(dir, base).join("tree"),
        &upper,
        &layers.join("work"),
        path,
    )
    .map_err(|e| WorktreeError::Overlay {
        id: id.to_string(),
        path: path.to_path_buf(),
        upper,
        reason: e.to_string(),
    })
}

/// Mounts the workspace of `rec` if it is an overlay (a no-op for a checkout).
pub(crate) fn ensure_mounted(dir: &Path, rec: &Record) -> Result<(), WorktreeError> {
    if rec.layout != Layout::Overlay {
        // Opened by another crew since this one mounted it: the checkout is below.
        return workspace_ns::unmount(&rec.path).map_err(io_err("unmount", &rec.path));
    }
    if !rec.path.exists() {
        return Ok(());
    }
    mount(dir, &rec.id, &rec.path, &rec.base_commit)
}

/// Unmounts workspace `id` and deletes its layers (its changes): for a removal the user
/// or the rule "nothing beyond the base" decided. The mount point is left for the
/// caller's removal of the worktree.
pub(crate) fn remove_layers(dir: &Path, id: &str, path: &Path) -> Result<(), WorktreeError> {
    workspace_ns::unmount(path).map_err(io_err("unmount", path))?;
    let _ = fs::remove_file(path.join(NOTICE_FILE));
    release(dir, id);
    let layers = layers(dir, id);
    if layers.exists() {
        fs::remove_dir_all(&layers).map_err(io_err("delete", &layers))?;
    }
    Ok(())
}

/// What status and diff of the worktree of `rec` must look at: for an overlay workspace,
/// the paths its upper layer holds (a folder whole where the layer hides or moves the
/// base's: opaque or redirected, or new); for a checkout, everything. Anything unreadable
/// widens it to everything.
pub(crate) fn scope(dir: &Path, rec: &Record) -> Scope {
    if rec.layout != Layout::Overlay {
        return Scope::Everything;
    }
    let upper = layers(dir, &rec.id).join("upper");
    let lower = base_dir(dir, &rec.base_commit).join("tree");
    let mut paths = Vec::new();
    match changed(&upper, &lower, Path::new(""), &mut paths) {
        Ok(()) => Scope::Paths(paths),
        Err(_) => Scope::Everything,
    }
}

fn changed(upper: &Path, lower: &Path, rel: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(upper.join(rel))? {
        let entry = entry?;
        if rel.as_os_str().is_empty() && entry.file_name() == ".git" {
            continue;
        }
        let path = rel.join(entry.file_name());
        let in_lower = fs::symlink_metadata(lower.join(&path)).is_ok_and(|m| m.is_dir());
        if entry.file_type()?.is_dir() && in_lower && !hides_lower(&entry.path()) {
            changed(upper, lower, &path, out)?;
            continue;
        }
        let Some(text) = path.to_str() else {
            // A pathspec of a name that is not UTF-8 could miss it: look at everything.
            return Err(std::io::Error::other("a path that is not UTF-8"));
        };
        out.push(text.to_string());
    }
    Ok(())
}

/// Whether overlayfs marked the upper folder `dir` as hiding the base's folder (opaque)
/// or standing for another (redirect), under either xattr namespace it may use.
fn hides_lower(dir: &Path) -> bool {
    let mut buf = [0u8; 256];
    [
        "user.overlay.opaque",
        "user.overlay.redirect",
        "trusted.overlay.opaque",
        "trusted.overlay.redirect",
    ]
    .iter()
    .any(|name| rustix::fs::lgetxattr(dir, *name, &mut buf).is_ok())
}

/// Removes the `locked` that [`prepare`] left in git's records `meta` (and no other lock:
/// one a user set stays).
pub(crate) fn unlock(meta: &Path) {
    let locked = meta.join("locked");
    if fs::read(&locked).is_ok_and(|text| text.starts_with(b"crew workspace (overlay)")) {
        let _ = fs::remove_file(&locked);
    }
}

/// The checkout of `base` shared by its workspaces, made on first use. Several crews (or
/// threads) may ask at once: one makes it under a lock and the others wait, and only a
/// finished checkout is ever moved into place.
///
/// Returns it with a shared lock on it, which the workspace's maker keeps until its task
/// ends: a sweep (which takes the lock alone) never deletes a base a workspace is being
/// made on before the registry names it.
fn ensure_base(
    main: &Repository,
    dir: &Path,
    base: Oid,
) -> Result<(PathBuf, AddLock), WorktreeError> {
    let bases = dir.join(BASES_DIR);
    let target = bases.join(base.to_string());
    fs::create_dir_all(&bases).map_err(io_err("create", &bases))?;
    let lock = bases.join(format!("{base}.lock"));
    let shared = flock(&lock, FlockArg::LockShared)?;
    if target.join("index").is_file() {
        return Ok((target, shared));
    }
    drop(shared);
    let held = flock(&lock, FlockArg::LockExclusive)?;
    if !target.join("index").is_file() {
        make_base(main, &bases, &target, base)?;
    }
    drop(held);
    // Between the two locks a sweep may have come; then this is an error, not a race.
    let shared = flock(&lock, FlockArg::LockShared)?;
    if target.join("index").is_file() {
        return Ok((target, shared));
    }
    Err(WorktreeError::Io {
        op: "keep",
        path: target,
        source: std::io::Error::other("the base checkout was swept away as it was made"),
    })
}

/// Checks `base` out at `target`, in a staging folder moved into place once complete.
fn make_base(
    main: &Repository,
    bases: &Path,
    target: &Path,
    base: Oid,
) -> Result<(), WorktreeError> {
    let _span = tracing::debug_span!("worktree.overlay.base").entered();
    let staging = tempfile::Builder::new()
        .prefix(&format!("{base}.making-"))
        .tempdir_in(bases)
        .map_err(io_err("create a folder in", bases))?;
    let tree = staging.path().join("tree");
    let index = staging.path().join("index");
    fs::create_dir(&tree).map_err(io_err("create", &tree))?;
    checkout_base(main, &tree, &index, base)?;
    // Date the index after every file it describes: git re-hashes a file whose mtime
    // is not older than the index ("racily clean"), and these files never change.
    let later = SystemTime::now() + Duration::from_secs(2);
    fs::File::options()
        .write(true)
        .open(&index)
        .and_then(|f| f.set_modified(later))
        .map_err(io_err("date", &index))?;
    let staged = staging.keep();
    fs::rename(&staged, target).map_err(io_err("move into place", target))
}

/// Checks `base` out into `tree` with its index at `index`, by git itself (the same
/// checkout `git worktree add` makes, with crew's git settings).
fn checkout_base(
    main: &Repository,
    tree: &Path,
    index: &Path,
    base: Oid,
) -> Result<(), WorktreeError> {
    let git = super::safe_git::SafeGit::for_trees(&[tree]).map_err(|e| WorktreeError::Io {
        op: "prepare git for",
        path: tree.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let mut cmd = git.command(tree);
    cmd.arg("--git-dir")
        .arg(main.path())
        .arg("--work-tree")
        .arg(tree)
        .args(["read-tree", "-u", "--reset"])
        .arg(base.to_string())
        .env("GIT_INDEX_FILE", index);
    let out = cmd.output().map_err(io_err("run git in", tree))?;
    if out.status.success() {
        return Ok(());
    }
    Err(WorktreeError::GitCommand {
        command: format!("git read-tree -u --reset {base}"),
        cwd: tree.to_path_buf(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// Deletes the base checkouts no registered workspace uses (`in_use`: their base commits).
pub(crate) fn sweep_bases(dir: &Path, in_use: &[&str]) {
    let Ok(entries) = fs::read_dir(dir.join(BASES_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // A base, or what a killed crew left of making one (`<commit>.making-…`).
        let commit = name.split('.').next().unwrap_or_default();
        let is_base = commit.len() >= 40 && commit.bytes().all(|b| b.is_ascii_hexdigit());
        let staging = name.contains(".making-");
        if is_base && entry.path().is_dir() && (staging || !in_use.contains(&commit)) {
            // Under its lock: a crew making a workspace on it right now keeps it.
            let lock = dir.join(BASES_DIR).join(format!("{commit}.lock"));
            if let Ok(_held) = flock(&lock, FlockArg::LockExclusiveNonblock) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Turns the workspace of `rec` into an ordinary checkout at its path, for editors and
/// shells outside crew: its files (the merged view, uncommitted changes included) are
/// copied beside it, the overlay is unmounted, the copy moved into place with the
/// workspace's `.git`, and the layers deleted last, once nothing can be lost.
pub(crate) fn materialize(dir: &Path, rec: &Record, meta: &Path) -> Result<(), WorktreeError> {
    ensure_mounted(dir, rec)?;
    let _alone = take_alone(&layers(dir, &rec.id), &rec.id)?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".open-{}-", rec.id))
        .tempdir_in(dir)
        .map_err(io_err("create a folder in", dir))?;
    copy_tree(&rec.path, staging.path(), true)?;
    workspace_ns::unmount(&rec.path).map_err(io_err("unmount", &rec.path))?;
    let _ = fs::remove_file(rec.path.join(NOTICE_FILE));
    for entry in fs::read_dir(staging.path()).map_err(io_err("read", staging.path()))? {
        let entry = entry.map_err(io_err("read", staging.path()))?;
        let to = rec.path.join(entry.file_name());
        fs::rename(entry.path(), &to).map_err(io_err("move into place", &to))?;
    }
    let dot_git = rec.path.join(".git");
    let line = [b"gitdir: ", meta.as_os_str().as_bytes(), b"\n"].concat();
    fs::write(&dot_git, line).map_err(io_err("write", &dot_git))?;
    unlock(meta);
    let layers = layers(dir, &rec.id);
    fs::remove_dir_all(&layers).map_err(io_err("delete", &layers))
}

/// Copies the tree at `from` into the existing directory `to`: files with their mode and
/// times, symbolic links as links; the top-level `.git` is left out (`top`).
fn copy_tree(from: &Path, to: &Path, top: bool) -> Result<(), WorktreeError> {
    for entry in fs::read_dir(from).map_err(io_err("read", from))? {
        let entry = entry.map_err(io_err("read", from))?;
        if top && entry.file_name() == ".git" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io_err("read", &src))?;
        if kind.is_symlink() {
            let target = fs::read_link(&src).map_err(io_err("read", &src))?;
            std::os::unix::fs::symlink(target, &dst).map_err(io_err("create", &dst))?;
        } else if kind.is_dir() {
            fs::create_dir(&dst).map_err(io_err("create", &dst))?;
            copy_tree(&src, &dst, false)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(io_err("copy", &src))?;
            if let Ok(m) = fs::metadata(&src).and_then(|m| m.modified()) {
                let _ = fs::File::options()
                    .write(true)
                    .open(&dst)
                    .and_then(|f| f.set_modified(m));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_removes_unused_bases_and_leftovers_but_keeps_used_and_held_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let bases = tmp.path().join(BASES_DIR);
        let hex = |c: char| std::iter::repeat_n(c, 40).collect::<String>();
        let (used, unused, held, half) = (hex('a'), hex('b'), hex('c'), hex('d'));
        for name in [&used, &unused, &held, &format!("{half}.making-x1")] {
            fs::create_dir_all(bases.join(name).join("tree")).unwrap();
        }
        fs::write(bases.join("notes.txt"), "not a base").unwrap();
        // A crew making a workspace on `held` holds its lock shared.
        let _maker = flock(&bases.join(format!("{held}.lock")), FlockArg::LockShared).unwrap();

        sweep_bases(tmp.path(), &[used.as_str()]);

        assert!(
            bases.join(&used).is_dir(),
            "a base the registry names stays"
        );
        assert!(
            bases.join(&held).is_dir(),
            "a base being used by a maker stays"
        );
        assert!(!bases.join(&unused).exists(), "an unused base goes");
        assert!(
            !bases.join(format!("{half}.making-x1")).exists(),
            "a leftover goes"
        );
        assert!(
            bases.join("notes.txt").is_file(),
            "what is not a base stays"
        );
    }
}
