//! Workspaces at fan-out, beside the fan-out benchmark (`fanout`): on generated
//! repositories of 2,000, 20,000 and 50,000 files, what 32 subagents' workspaces cost.
//! Prints, for each repository, all measured in this one run:
//!
//! - **ready**: 32 workspaces made at once (as a session makes them: in parallel, the base
//!   checkout cold) over one `git worktree add -b` of the same repository, in wall time
//!   and in CPU time (this process and git's);
//!   target ≤ 1.5×;
//! - **run**: a whole headless `crew -p` where the lead starts 32 background subagents that
//!   each write one file and end, over the same run with 1 subagent (each from a fresh
//!   HOME, so each pays for its base checkout); target ≤ 3×;
//! - **disk**: what crew keeps under `~/.crew` after those 32 (the workspaces kept, each
//!   holding its file) less one checkout of the base, over 32; target ≤ 1 MiB;
//! - **status**: `git status` in a workspace over `git status` in the main checkout
//!   (medians of 9, the two interleaved, the workspace's first status apart); target
//!   ≤ 1.5×.
//!
//! Workspaces are overlays only where crew may mount them: this bench enters crew's
//! namespace first, as the `crew` binary does, and says so when it cannot (then the
//! figures are those of full checkouts).
//!
//! Each timed step starts after a `sync`, so none pays for the writes of the step before,
//! and the steps run in 5 interleaved rounds whose medians are printed.
//!
//! `cargo build --release && cargo run --release --example workspace_fanout -- [SIZES…]`
//! (default 2000 20000 50000). Runs the `crew` binary beside this example's, or `CREW_BIN`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark: it fails loudly and prints what it measures"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmaster::sandbox::workspace_ns::{self, Support};
use crewmaster::worktree::manager::Manager;

const AGENTS: usize = 32;
/// Rounds of each timed step, interleaved; the medians are printed.
const ROUNDS: usize = 5;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::inherit())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed in {}",
        dir.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn crew_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("CREW_BIN") {
        return PathBuf::from(bin);
    }
    // target/<profile>/examples/workspace_fanout → target/<profile>/crew
    let exe = std::env::current_exe().expect("own path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("crew"))
        .unwrap();
    assert!(
        bin.exists(),
        "build the crew binary first: {}",
        bin.display()
    );
    bin
}

/// CPU time (user + system) of this process and its waited-for children so far, from
/// `/proc/self/stat` (clock ticks of 10 ms): less at the disk's mercy than wall time.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let ticks: u64 = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Writes back what earlier steps left dirty, so that no step pays for another's writes.
fn settle() {
    let _ = Command::new("sync").status();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A repository of `files` files, 100 to a folder, and the agent the runs start.
fn make_repo(repo: &Path, files: usize) {
    for i in 0..files {
        let dir = repo.join(format!("src/d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("f{:02}.rs", i % 100)),
            format!("// {i}\npub fn f() -> usize {{ {i} }}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(repo.join(".crew/agents")).unwrap();
    std::fs::write(
        repo.join(".crew/agents/writer.md"),
        "---\nname: writer\ndescription: writes one file\nisolation: worktree\ntools: write_file\n---\nWrite.\n",
    )
    .unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "generated"]);
}

/// Bytes used on disk below `dir` (blocks, as `du` counts them; hard links once).
fn disk(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if seen.insert((m.dev(), m.ino())) {
                total += m.blocks() * 512;
            }
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

/// One `git worktree add -b` of `repo`.
fn plain_add(repo: &Path, scratch: &Path, i: usize) -> (Duration, Duration) {
    let path = scratch.join(format!("plain{i}"));
    settle();
    let (t, c) = (Instant::now(), cpu());
    git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &format!("plain{i}"),
            path.to_str().unwrap(),
        ],
    );
    // Kept until every step is measured: on ext4, creating files soon after deleting
    // many costs more (the inode allocator steps around recently freed inodes), which
    // would charge one side for the other's clean-up.
    (t.elapsed(), cpu() - c)
}

/// 32 workspaces made at once from a cold base; returns the time until all are ready.
fn ready(repo: &Path, base_dir: &Path, round: usize) -> (Duration, Duration) {
    let manager = Manager::open(repo, Some(base_dir)).unwrap();
    settle();
    let (t, c) = (Instant::now(), cpu());
    std::thread::scope(|s| {
        for i in 0..AGENTS {
            let m = manager.clone();
            s.spawn(move || {
                m.create(&format!("r{round}w{i}"), "bench", Some("HEAD"))
                    .unwrap()
            });
        }
    });
    (t.elapsed(), cpu() - c)
}

/// A headless run whose lead starts `n` background writers; its wall time.
fn headless_run(repo: &Path, home: &Path, n: usize) -> Duration {
    let calls: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"name":"agent","input":{{"description":"part {i}","prompt":"p","subagent_type":"writer","run_in_background":true}}}}"#)
        })
        .collect();
    let mut lead = vec![format!(r#"{{"tool_calls":[{}]}}"#, calls.join(","))];
    lead.extend((0..=n).map(|_| r#"{"text":"noted"}"#.to_string()));
    let script = format!(
        r#"{{"turns":[{}],"agents":{{"writer":{{"turns":[{{"tool_calls":[{{"name":"write_file","input":{{"path":"mine.txt","content":"mine"}}}}]}},{{"text":"done"}}]}}}}}}"#,
        lead.join(",")
    );
    std::fs::create_dir_all(home).unwrap();
    let path = home.join("script.json");
    std::fs::write(&path, script).unwrap();
    settle();
    let t = Instant::now();
    let out = Command::new(crew_bin())
        .args(["-p", "go", "--permission-mode", "acceptEdits", "--model"])
        .arg(format!("script:{}", path.display()))
        .current_dir(repo)
        .env("HOME", home)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn status_time(dir: &Path) -> Duration {
    settle();
    let t = Instant::now();
    git(dir, &["status", "--porcelain"]);
    t.elapsed()
}

fn main() {
    let support = workspace_ns::enter().clone();
    match &support {
        Support::Available => println!("workspaces: overlays"),
        Support::Unavailable(why) => println!("workspaces: full checkouts ({why})"),
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a repository size in files"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![2_000, 20_000, 50_000]
    } else {
        sizes
    };
    println!(
        "{:>7} {:>10} {:>10} {:>7} {:>9} {:>10} {:>10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>7}",
        "files",
        "add",
        "32 ready",
        "ratio",
        "cpu ratio",
        "run ×1",
        "run ×32",
        "ratio",
        "disk/agent",
        "status",
        "ws 1st",
        "ws",
        "ratio"
    );
    for files in sizes {
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path().canonicalize().unwrap();
        let repo = root.join("repo");
        make_repo(&repo, files);
        // Interleaved rounds, medians: the disk's speed wanders between steps.
        let (mut adds, mut readies, mut ones, mut alls) = (vec![], vec![], vec![], vec![]);
        let (mut add_cpu, mut ready_cpu) = (vec![], vec![]);
        for r in 0..ROUNDS {
            // Which goes first alternates, so neither always follows the other's writes.
            let (mut add, mut made) = (None, None);
            for side in [r % 2, 1 - r % 2] {
                match side {
                    0 => add = Some(plain_add(&repo, &root, r)),
                    _ => made = Some(ready(&repo, &root.join(format!("ready{r}")), r)),
                }
            }
            let ((wall, cpu), (made_wall, made_cpu)) = (add.unwrap(), made.unwrap());
            adds.push(wall);
            add_cpu.push(cpu);
            readies.push(made_wall);
            ready_cpu.push(made_cpu);
            ones.push(headless_run(&repo, &root.join(format!("home1-{r}")), 1));
            alls.push(headless_run(
                &repo,
                &root.join(format!("home32-{r}")),
                AGENTS,
            ));
        }
        let (add, ready, run_one, run_all) =
            (median(adds), median(readies), median(ones), median(alls));
        let (add_cpu, ready_cpu) = (median(add_cpu), median(ready_cpu));
        let home = root.join("home32-0");
        let kept = disk(&home.join(".crew"));
        let bases = home.join(".crew/worktrees");
        let base_tree: u64 = std::fs::read_dir(&bases)
            .unwrap()
            .flatten()
            .map(|r| r.path().join(".bases"))
            .filter_map(|b| std::fs::read_dir(b).ok())
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| disk(&e.path().join("tree")))
            .max()
            .unwrap_or(0);
        let per_agent = kept.saturating_sub(base_tree) / AGENTS as u64;

        let ws = root
            .join("ready0")
            .join(
                std::fs::read_dir(root.join("ready0"))
                    .unwrap()
                    .flatten()
                    .next()
                    .unwrap()
                    .file_name(),
            )
            .join("r0w0");
        let first = status_time(&ws);
        // Interleaved, which goes first alternating, so that a burst of load on the
        // machine falls on both sides alike.
        let (mut mains, mut wss) = (Vec::new(), Vec::new());
        for r in 0..9 {
            if r % 2 == 0 {
                mains.push(status_time(&repo));
                wss.push(status_time(&ws));
            } else {
                wss.push(status_time(&ws));
                mains.push(status_time(&repo));
            }
        }
        let (main_status, ws_status) = (median(mains), median(wss));
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
        let ratio = |a: Duration, b: Duration| format!("{:.2}×", a.as_secs_f64() / b.as_secs_f64());
        println!(
            "{files:>7} {:>10} {:>10} {:>7} {:>9} {:>10} {:>10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>7}",
            ms(add),
            ms(ready),
            ratio(ready, add),
            ratio(ready_cpu, add_cpu),
            ms(run_one),
            ms(run_all),
            ratio(run_all, run_one),
            format!("{:.0} KiB", per_agent as f64 / 1024.0),
            ms(main_status),
            ms(first),
            ms(ws_status),
            ratio(ws_status, main_status),
        );
        // The workspaces this process made are mounted in its namespace, and a mounted
        // directory cannot be removed: discard them, then the scratch directory.
        for r in 0..ROUNDS {
            let manager = Manager::open(&repo, Some(&root.join(format!("ready{r}")))).unwrap();
            for i in 0..AGENTS {
                if let Err(e) = manager.discard(&format!("r{r}w{i}")) {
                    eprintln!("could not discard workspace r{r}w{i}: {e}");
                }
            }
        }
        if let Err(e) = scratch.close() {
            eprintln!("could not remove {}: {e}", root.display());
        }
    }
    println!("targets: ready ≤ 1.5×, run ≤ 3×, disk ≤ 1024 KiB an agent, status ≤ 1.5×");
}
