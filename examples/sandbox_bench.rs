//! What the OS sandbox adds to a command: runs `true` and `git status` unsandboxed and in
//! the read and write profiles (Landlock, mount and PID namespaces where they hold),
//! interleaved in the same run, and prints each p50 and the p50 added over unsandboxed.
//! Target: 5 ms or less added.
//!
//! `cargo run --release --example sandbox_bench [ROUNDS]` (default 60 rounds).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::time::{Duration, Instant};

use crewmaster::sandbox::process::run_in_group;
use crewmaster::tools::{CommandSandbox, SandboxProfile};
use tokio_util::sync::CancellationToken;

fn p50(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(60);
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status()?;
    anyhow::ensure!(git.success(), "git init failed");
    std::fs::write(root.join("file.txt"), "x\n")?;
    if let Some(line) = crewmaster::sandbox::layers::probe().summary() {
        eprintln!("{line}");
    }
    let confined = CommandSandbox::landlock(vec![root.clone()]);
    let sandboxes = [
        ("unsandboxed", CommandSandbox::None),
        ("read", confined.clone().for_call(SandboxProfile::Read)),
        ("write", confined.for_call(SandboxProfile::Write)),
    ];
    let cancel = CancellationToken::new();
    for command in ["true", "git status --short"] {
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); sandboxes.len()];
        for round in 0..rounds + 3 {
            for (i, (_, sandbox)) in sandboxes.iter().enumerate() {
                let start = Instant::now();
                let out =
                    run_in_group(command, &root, Duration::from_secs(30), &cancel, sandbox).await?;
                let took = start.elapsed();
                anyhow::ensure!(out.exit_code() == Some(0), "`{command}` failed: {out:?}");
                // The first rounds warm the probes and caches.
                if round >= 3 {
                    times[i].push(took);
                }
            }
        }
        let base = p50(&mut times[0]);
        for (i, (name, _)) in sandboxes.iter().enumerate() {
            let median = p50(&mut times[i]);
            println!(
                "{command:<20} {name:<12} p50 {:>7.2} ms   added {:>6.2} ms",
                median.as_secs_f64() * 1e3,
                (median.as_secs_f64() - base.as_secs_f64()) * 1e3
            );
        }
    }
    Ok(())
}
