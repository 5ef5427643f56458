//! Helpers shared by the worktree tests: real temporary git repositories, checked with the
//! real `git` program, and a worktrees folder inside the temporary directory so nothing
//! touches the user's `~/.crew`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use crewmaster::worktree::{WorktreeError, WorktreeManager, WorktreeManagerArgs, WorktreeMsg};
use ractor::{Actor, ActorRef, RpcReplyPort, rpc::CallResult};

use super::git;

/// A temporary directory holding a repository (`repo/`, branch `main`, one commit) and a
/// worktrees folder (`home/.crew/worktrees`, as `~/.crew/worktrees` with HOME=`home`).
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub repo: PathBuf,
    pub home: PathBuf,
    pub base: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_files(&[
            ("README.md", "hello\n"),
            ("src/lib.txt", "one\ntwo\nthree\n"),
        ])
    }

    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical tmp");
        let repo = root.join("repo");
        let home = root.join("home");
        let base = home.join(".crew").join("worktrees");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["config", "user.name", "Test"]);
        git(&repo, &["config", "user.email", "test@example.com"]);
        git(&repo, &["config", "commit.gpgsign", "false"]);
        for (name, content) in files {
            write(&repo.join(name), content);
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "initial"]);
        Self {
            tmp,
            repo,
            home,
            base,
        }
    }

    pub async fn spawn(&self) -> ActorRef<WorktreeMsg> {
        let args = WorktreeManagerArgs {
            repo: self.repo.clone(),
            base_dir: Some(self.base.clone()),
            trusted: true,
        };
        let (actor, _) = Actor::spawn(None, WorktreeManager, args)
            .await
            .expect("spawn");
        actor
    }

    pub fn head(&self) -> String {
        git(&self.repo, &["rev-parse", "HEAD"]).trim().to_string()
    }

    pub fn branches(&self) -> Vec<String> {
        git(&self.repo, &["branch", "--format=%(refname:short)"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Linked worktree paths from `git worktree list --porcelain` (the main one excluded).
    pub fn git_worktrees(&self) -> Vec<PathBuf> {
        git(&self.repo, &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .map(PathBuf::from)
            .filter(|p| *p != self.repo)
            .collect()
    }

    pub fn status(&self) -> String {
        git(&self.repo, &["status", "--porcelain"])
    }
}

pub fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Commits everything in `dir` with `message`.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// Calls the actor and unwraps the transport (not the operation's result).
pub async fn call<T: Send + 'static>(
    actor: &ActorRef<WorktreeMsg>,
    msg: impl FnOnce(RpcReplyPort<Result<T, WorktreeError>>) -> WorktreeMsg,
) -> Result<T, WorktreeError> {
    match actor.call(msg, Some(Duration::from_secs(60))).await {
        Ok(CallResult::Success(r)) => r,
        Ok(CallResult::Timeout) => panic!("worktree manager timed out"),
        Ok(CallResult::SenderError) => panic!("worktree manager dropped the reply"),
        Err(_) => panic!("worktree manager is not running"),
    }
}

/// Makes the workspace at `path` an ordinary checkout, as a user does to look at it from
/// outside crew (`crew worktrees open`): crew mounts a subagent's workspace as an overlay
/// that only crew and the programs it runs can see. A full checkout stays as it is.
pub fn open_workspace(repo: &Path, home: &Path, path: &Path) {
    let id = path.file_name().unwrap().to_str().unwrap();
    let out = super::crew(repo, home, &["worktrees", "open", id]);
    assert!(
        out.status.success(),
        "crew worktrees open {id}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
