//! Measures worktree creation by `crewmaster::worktree::Manager::create` against plain
//! `git worktree add -b` on a repository of ~2,000 small files, in the same run and
//! interleaved, and prints the ratio.
//!
//! `cargo run --release --example worktree_bench -- [N]` (N worktrees each, default 10).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

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
    std::fs::write(repo.join(".git/info/exclude"), ".env\n")?;
    std::fs::write(repo.join(".env"), "SECRET=1\n")?;
    let include = repo.join(".worktreeinclude");
    // Interleaved so that load from other processes hits all three alike; medians
    // because a shared machine has bursts.
    let (mut ours, mut plain, mut with_include, mut removal) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        // Rotate the order each round so no variant always follows the same one.
        for step in 0..3 {
            match (step + i) % 3 {
                0 => {
                    let t = Instant::now();
                    manager.create(&format!("t{i}"), "bench task", None)?;
                    ours.push(t.elapsed());
                }
                1 => {
                    let path = plain_dir.join(format!("p{i}"));
                    let path = path.to_str().unwrap_or("p");
                    let t = Instant::now();
                    git(
                        &repo,
                        &[
                            "worktree",
                            "add",
                            "-q",
                            "-b",
                            &format!("plain/{i}"),
                            path,
                            "HEAD",
                        ],
                    );
                    plain.push(t.elapsed());
                }
                _ => {
                    // With a `.worktreeinclude`, create also walks the main checkout.
                    std::fs::write(&include, ".env\n")?;
                    let t = Instant::now();
                    manager.create(&format!("i{i}"), "bench task", None)?;
                    with_include.push(t.elapsed());
                    std::fs::remove_file(&include)?;
                }
            }
        }
    }
    for i in 0..n {
        let t = Instant::now();
        manager.finish(&format!("t{i}"))?;
        removal.push(t.elapsed());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ratios = |a: &[Duration]| {
        let r: Vec<f64> = a
            .iter()
            .zip(&plain)
            .map(|(x, p)| x.as_secs_f64() / p.as_secs_f64())
            .collect();
        median_f(r)
    };
    println!("repository: 2000 files; {n} rounds, interleaved; medians");
    println!("crewmaster create:      {:8.1} ms", ms(median(&ours)));
    println!("git worktree add -b:    {:8.1} ms", ms(median(&plain)));
    println!("ratio (ours / git):     {:8.2}", ratios(&ours));
    println!(
        "with .worktreeinclude:  {:8.1} ms (ratio {:.2})",
        ms(median(&with_include)),
        ratios(&with_include)
    );
    println!("finish (clean, removed): {:7.1} ms", ms(median(&removal)));
    Ok(())
}

fn median(xs: &[Duration]) -> Duration {
    let mut v = xs.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
