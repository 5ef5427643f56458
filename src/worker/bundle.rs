//! Moving a repository between lead and worker as git bundles (the git CLI): the lead
//! bundles the commit a task starts from, the worker checks it out in a linked worktree
//! of its own bare repository, commits what the agent left and bundles `base..branch`,
//! and the lead fetches that into the task's worktree. Every git here is started through
//! [`safe_git`], so no hook, filter driver, fsmonitor or other program that an agent wrote
//! into a repository's configuration (or a nested repository's) runs as this process.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::worktree::safe_git;

/// Why a bundle operation failed; names the git command and its output.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// git could not be started.
    #[error("cannot run git ({args}): {source}")]
    Spawn {
        /// The arguments.
        args: String,
        /// The error.
        source: std::io::Error,
    },
    /// git failed.
    #[error("git {args} failed in {dir}: {stderr}")]
    Git {
        /// The arguments.
        args: String,
        /// Where it ran.
        dir: PathBuf,
        /// What it said.
        stderr: String,
    },
    /// A file could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs git in `dir` through [`safe_git`] (no hook, filter, fsmonitor or other program
/// that the configuration of `dir` or of a repository nested in it names; writes
/// confined to `dir` and its git directories); returns stdout (trimmed).
async fn git(dir: &Path, args: &[&str]) -> Result<String, BundleError> {
    git_on(dir, &[], args).await
}

/// [`git`], also neutralizing the drivers of the trees `also` and letting the command
/// write below them (the task directory a bare repository's `worktree add` or `remove`
/// works in, the scratch directory a bundle is written to).
async fn git_on(dir: &Path, also: &[&Path], args: &[&str]) -> Result<String, BundleError> {
    let shown = args.join(" ");
    let mut trees: Vec<PathBuf> = vec![dir.to_path_buf()];
    trees.extend(also.iter().map(|p| p.to_path_buf()));
    let cwd = dir.to_path_buf();
    let cmd = tokio::task::spawn_blocking(move || {
        let refs: Vec<&Path> = trees.iter().map(PathBuf::as_path).collect();
        safe_git::SafeGit::for_trees(&refs)?.confined_command(&cwd, &refs)
    })
    .await
    .map_err(|e| BundleError::Spawn {
        args: shown.clone(),
        source: std::io::Error::other(e.to_string()),
    })?
    .map_err(|e| BundleError::Git {
        args: shown.clone(),
        dir: dir.to_path_buf(),
        stderr: e.to_string(),
    })?;
    let mut cmd = Command::from(cmd);
    let out = cmd
        .args(["-c", "user.name=crew", "-c", "user.email=crew@localhost"])
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|source| BundleError::Spawn {
            args: shown.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(BundleError::Git {
            args: shown,
            dir: dir.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit and branch checked out in `worktree`.
pub async fn head_of(worktree: &Path) -> Result<(String, String), BundleError> {
    let commit = git(worktree, &["rev-parse", "HEAD"]).await?;
    let branch = git(worktree, &["symbolic-ref", "--short", "HEAD"]).await?;
    Ok((commit, branch))
}

/// A bundle of `branch` (its whole history) from the repository at `repo`.
pub async fn create(repo: &Path, branch: &str) -> Result<Vec<u8>, BundleError> {
    let scratch = tempfile::tempdir().map_err(io(repo))?;
    let file = scratch.path().join("out.bundle");
    let path = file.to_string_lossy().to_string();
    git_on(
        repo,
        &[scratch.path()],
        &["bundle", "create", "-q", &path, branch],
    )
    .await?;
    tokio::fs::read(&file).await.map_err(io(&file))
}

/// Where a worker keeps one task: its bare repository and its worktree.
#[derive(Debug, Clone)]
pub struct TaskCopy {
    /// The task's directory.
    pub dir: PathBuf,
    /// The bare repository (`dir/repo.git`).
    pub repo: PathBuf,
    /// The worktree the agent works in (`dir/wt`).
    pub worktree: PathBuf,
}

impl TaskCopy {
    /// The layout below `dir`.
    pub fn at(dir: PathBuf) -> Self {
        Self {
            repo: dir.join("repo.git"),
            worktree: dir.join("wt"),
            dir,
        }
    }
}

/// Unpacks `bundle` into a new bare repository and checks `base` out on `branch` in a
/// linked worktree (so the agent's sandbox can reach only that worktree's private git
/// dir, its branch's refs and the objects — never the repository's config or hooks).
pub async fn checkout(
    bundle: &[u8],
    copy: &TaskCopy,
    branch: &str,
    base: &str,
) -> Result<(), BundleError> {
    tokio::fs::create_dir_all(&copy.dir)
        .await
        .map_err(io(&copy.dir))?;
    let file = copy.dir.join("base.bundle");
    tokio::fs::write(&file, bundle).await.map_err(io(&file))?;
    let file_s = file.to_string_lossy().to_string();
    let repo_s = copy.repo.to_string_lossy().to_string();
    git(&copy.dir, &["init", "-q", "--bare", &repo_s]).await?;
    git(
        &copy.repo,
        &["fetch", "-q", &file_s, "+refs/heads/*:refs/lead/*"],
    )
    .await?;
    let commit = format!("{base}^{{commit}}");
    git(&copy.repo, &["rev-parse", "--verify", "-q", &commit]).await?;
    git(&copy.repo, &["branch", branch, base]).await?;
    let wt_s = copy.worktree.to_string_lossy().to_string();
    git_on(
        &copy.repo,
        &[&copy.dir],
        &["worktree", "add", "-q", &wt_s, branch],
    )
    .await?;
    let _ = tokio::fs::remove_file(&file).await;
    Ok(())
}

/// Commits everything the agent left uncommitted in `worktree` (one commit); returns
/// whether there was anything.
pub async fn commit_all(worktree: &Path, message: &str) -> Result<bool, BundleError> {
    git(worktree, &["add", "-A"]).await?;
    // A moved gitlink counts (the overrides ignore submodules); a nested repository's
    // own work tree is not looked at.
    if git(
        worktree,
        &["diff", "--cached", "--quiet", "--ignore-submodules=dirty"],
    )
    .await
    .is_ok()
    {
        return Ok(false);
    }
    git(worktree, &["commit", "-q", "--no-verify", "-m", message]).await?;
    Ok(true)
}

/// The branch's head and a bundle of `base..branch`; `None` when it has no commit
/// beyond `base`.
pub async fn since(
    repo: &Path,
    branch: &str,
    base: &str,
) -> Result<Option<(String, Vec<u8>)>, BundleError> {
    let head = git(repo, &["rev-parse", branch]).await?;
    if head == base {
        return Ok(None);
    }
    let scratch = tempfile::tempdir().map_err(io(repo))?;
    let file = scratch.path().join("out.bundle");
    let path = file.to_string_lossy().to_string();
    let not_base = format!("^{base}");
    git_on(
        repo,
        &[scratch.path()],
        &["bundle", "create", "-q", &path, branch, &not_base],
    )
    .await?;
    let bytes = tokio::fs::read(&file).await.map_err(io(&file))?;
    Ok(Some((head, bytes)))
}

/// Brings a worker's bundle of `branch` into the lead's `worktree` (which is on that
/// branch, at the base): fetch, then fast-forward. Refuses anything that is not a
/// fast-forward to `head`.
pub async fn fetch_into(
    worktree: &Path,
    bundle: &[u8],
    branch: &str,
    head: &str,
) -> Result<(), BundleError> {
    let tmp = tempfile::Builder::new()
        .suffix(".bundle")
        .tempfile()
        .map_err(io(worktree))?;
    tokio::fs::write(tmp.path(), bundle)
        .await
        .map_err(io(tmp.path()))?;
    let path = tmp.path().to_string_lossy().to_string();
    git(worktree, &["fetch", "-q", &path, branch]).await?;
    let fetched = git(worktree, &["rev-parse", "FETCH_HEAD"]).await?;
    if fetched != head {
        return Err(BundleError::Git {
            args: "fetch".into(),
            dir: worktree.to_path_buf(),
            stderr: format!("the bundle's {branch} is {fetched}, the worker said {head}"),
        });
    }
    git(worktree, &["merge", "-q", "--ff-only", head]).await?;
    Ok(())
}

/// Removes a task's worktree but keeps its repository (and so its branch).
pub async fn drop_worktree(copy: &TaskCopy) -> Result<(), BundleError> {
    let wt_s = copy.worktree.to_string_lossy().to_string();
    git_on(
        &copy.repo,
        &[&copy.dir],
        &["worktree", "remove", "--force", &wt_s],
    )
    .await?;
    Ok(())
}
