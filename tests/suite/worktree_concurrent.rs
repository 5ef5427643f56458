//! Many worktrees added at once, by threads of one process and by two processes, on one
//! real repository (issue 15): only git's metadata writes are serialised (an `flock`),
//! the checkouts run in parallel, and every worktree must come out complete, registered
//! with git and in our registry, and unlocked. A race detector: run it repeatedly.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use crewmaster::worktree::Manager;
use support::git;
use support::worktree::Fixture;

/// Set in the child process: the repository, the worktrees folder and the start file.
const CHILD_ENV: &str = "CREW_TEST_WORKTREE_CHILD";
const THREADS: usize = 4;
const PER_THREAD: usize = 2;

/// A fixture with a few hundred files, so a checkout takes long enough to overlap.
fn fixture() -> Fixture {
    let names: Vec<(String, String)> = (0..300)
        .map(|i| (format!("src/d{}/f{i}.txt", i % 10), format!("file {i}\n")))
        .chain([("README.md".to_string(), "hello\n".to_string())])
        .collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    Fixture::with_files(&files)
}

/// Waits for `go`, then creates `THREADS × PER_THREAD` worktrees named `<prefix><i>`
/// from that many threads, each with its own manager.
fn create_from_threads(repo: &Path, base: &Path, go: &Path, prefix: &str) {
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let manager = Manager::open(repo, Some(base)).expect("open manager");
                support::wait_until_blocking("the start file", || go.exists());
                for k in 0..PER_THREAD {
                    let id = format!("{prefix}{}", t * PER_THREAD + k);
                    manager.create(&id, "concurrent", None).expect("create");
                }
            });
        }
    });
}

/// The second process: does nothing unless the parent test started it.
#[test]
fn child_process_creates_worktrees_when_asked() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<PathBuf> = spec.split('\n').map(PathBuf::from).collect();
    let [repo, base, go] = parts.as_slice() else {
        panic!("{CHILD_ENV} must hold repo, base and start file, one a line");
    };
    create_from_threads(repo, base, go, "c");
}

#[test]
fn sixteen_worktrees_from_threads_and_two_processes_are_all_complete_and_registered() {
    let fx = fixture();
    let go = fx.tmp.path().join("go");
    let spec = format!(
        "{}\n{}\n{}",
        fx.repo.display(),
        fx.base.display(),
        go.display()
    );
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &support::own_test(module_path!(), "child_process_creates_worktrees_when_asked"),
            "--nocapture",
        ])
        .env(CHILD_ENV, spec)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both processes' threads wait for the same start file.
    let starter = {
        let go = go.clone();
        std::thread::spawn(move || std::fs::write(go, "go").unwrap())
    };
    create_from_threads(&fx.repo, &fx.base, &go, "p");
    starter.join().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the child process failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let total = 2 * THREADS * PER_THREAD;
    let mut expected: Vec<String> = ["p", "c"]
        .iter()
        .flat_map(|p| (0..THREADS * PER_THREAD).map(move |i| format!("{p}{i}")))
        .collect();
    expected.sort();
    // Registered with git, none locked or prunable.
    let porcelain = git(&fx.repo, &["worktree", "list", "--porcelain"]);
    assert!(!porcelain.contains("locked"), "{porcelain}");
    assert!(!porcelain.contains("prunable"), "{porcelain}");
    let mut theirs: Vec<PathBuf> = fx.git_worktrees();
    theirs.sort();
    assert_eq!(theirs.len(), total, "{porcelain}");
    // In our registry, each on its own branch, and complete: every file there and git
    // sees nothing changed.
    let manager = Manager::open(&fx.repo, Some(&fx.base)).unwrap();
    let listed = manager.list().unwrap();
    let mut ids: Vec<String> = listed.iter().map(|l| l.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, expected, "a registry update was lost");
    for l in &listed {
        assert!(theirs.contains(&l.path), "{} is not a git worktree", l.id);
        assert_eq!(l.path.file_name().unwrap().to_str(), Some(l.id.as_str()));
        assert_eq!(git(&l.path, &["status", "--porcelain"]), "", "{}", l.id);
        assert_eq!(
            std::fs::read_to_string(l.path.join("src/d9/f299.txt")).unwrap(),
            "file 299\n"
        );
        assert_eq!(
            git(&l.path, &["symbolic-ref", "HEAD"]),
            format!("refs/heads/{}", l.branch)
        );
        let summary = l.summary.as_ref().expect("present");
        assert!(summary.is_clean(), "{}: {summary:?}", l.id);
    }
    assert_eq!(fx.branches().len(), total + 1);
    assert_eq!(git(&fx.repo, &["fsck", "--no-progress"]), "");

    // Finishing them all at once removes every one, with its branch and git's record.
    std::thread::scope(|s| {
        for chunk in listed.chunks(4) {
            let (repo, base) = (&fx.repo, &fx.base);
            s.spawn(move || {
                let manager = Manager::open(repo, Some(base)).unwrap();
                for l in chunk {
                    manager.finish(&l.id).unwrap();
                }
            });
        }
    });
    assert!(fx.git_worktrees().is_empty());
    assert_eq!(fx.branches(), vec!["main".to_string()]);
    for l in &listed {
        assert!(!l.path.exists(), "{} still exists", l.path.display());
    }
}
