//! Measures worktree creation by `crewmaster::worktree::Manager::create` against plain
//! `git worktree add -b` on a repository of ~2,000 small files, in the same run and
//! interleaved, and prints the ratio.
//!
//! `cargo run --release --example worktree_bench -- [N]` (N worktrees each, default 10).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crewmaster::worktree::Manager;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?} failed");
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).map_or(Ok(10), |a| a.parse())?;
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().canonicalize()?;
    let repo = root.join("repo");
    for d in 0..40 {
        let dir = repo.join(format!("src/mod{d:02}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..50 {
            std::fs::write(
                dir.join(format!("file{f:02}.rs")),
                format!("// file {d}/{f}\npub fn f{f}() -> u32 {{ {f} }}\n"),
            )?;
        }
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Bench"]);
    git(&repo, &["config", "user.email", "bench@example.com"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "2000 files"]);

    let manager = Manager::open(&repo, Some(&root.join("crew")))?;
    let plain_dir = root.join("plain");
    let (mut ours, mut plain) = (Duration::ZERO, Duration::ZERO);
    for i in 0..n {
        let t = Instant::now();
        manager.create(&format!("t{i}"), "bench task", None)?;
        ours += t.elapsed();
        let path = plain_dir.join(format!("p{i}"));
        let t = Instant::now();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("plain/{i}"),
                path.to_str().unwrap_or("p"),
                "HEAD",
            ],
        );
        plain += t.elapsed();
    }
    let mut removal = Duration::ZERO;
    for i in 0..n {
        let t = Instant::now();
        manager.finish(&format!("t{i}"))?;
        removal += t.elapsed();
    }
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
    println!("repository: 2000 files; {n} worktrees each, interleaved");
    println!("crewmaster create:   {:8.1} ms per worktree", per(ours));
    println!("git worktree add -b: {:8.1} ms per worktree", per(plain));
    println!(
        "ratio (ours / git):  {:8.2}",
        ours.as_secs_f64() / plain.as_secs_f64()
    );
    println!(
        "crewmaster finish (clean, removed): {:.1} ms per worktree",
        per(removal)
    );
    Ok(())
}
