//! `search_code` and `find_files` against the `rg` binary on the same tree, in one run,
//! interleaved, and the ratios (issue 15: target ≤ 1.1× `rg` for files-with-matches,
//! count and content, ≤ 1.2× `rg --files` for `find_files`, newest first).
//!
//! `cargo run --release --example search_bench -- [DIR] [ROUNDS]`
//!
//! DIR defaults to `~/.cargo/registry/src`, ROUNDS (the median of which is reported) to 5.
//! Our side is the tool called in-process (no crew start-up); the `rg` side is the binary
//! with the same walk settings (hidden files searched, `.gitignore` honoured outside git,
//! `.git` skipped, no config file), its output read through a pipe as crew reads a tool's
//! result. The two sides alternate within each round, so load on a shared machine falls
//! on both alike. Each figure is printed as wall time and CPU time (user + system, from
//! `getrusage`: the whole process for us, the waited-for child for `rg`), each the median
//! over the rounds; the CPU ratio is the steadier one on a loaded machine.
//!
//! Differences, stated: our tool also applies the permission walk filter (deny rules,
//! credentials) to every entry, which `rg` does not have; `find_files` sorts newest first
//! (stat of every matched file), `rg --files` prints in walk order without a stat. Without
//! `rg` on the PATH the example says so and measures our side alone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crewmaster::tools::find_files::FindFiles;
use crewmaster::tools::search_code::SearchCode;
use crewmaster::tools::{Tool, ToolContext};
use serde_json::{Value, json};

/// One comparison: our tool call and the equivalent `rg` arguments.
struct Case {
    name: &'static str,
    tool: &'static str,
    input: Value,
    rg: Vec<&'static str>,
    target: f64,
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = match args.next() {
        Some(d) => PathBuf::from(d),
        None => dirs::home_dir()
            .ok_or_else(|| anyhow::anyhow!("no home directory: give DIR"))?
            .join(".cargo/registry/src"),
    };
    let rounds: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let dir = dir
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("DIR `{}`: {e}", dir.display()))?;
    let rg = Command::new("rg").arg("--version").output().is_ok();
    if !rg {
        println!(
            "rg (ripgrep) is not on the PATH: install it (apt-get install ripgrep) for the ratios; timing our side only"
        );
    }
    let walk = ["--hidden", "--no-require-git", "--no-config", "-g", "!.git"];
    let all = 1_000_000_000u64;
    let cases = [
        Case {
            name: "files-with-matches",
            tool: "search_code",
            input: json!({"pattern": "unsafe", "head_limit": all}),
            rg: vec!["-l", "unsafe"],
            target: 1.1,
        },
        Case {
            name: "count",
            tool: "search_code",
            input: json!({"pattern": "fn [a-z_]+\\(", "output_mode": "count", "head_limit": all}),
            rg: vec!["-c", "fn [a-z_]+\\("],
            target: 1.1,
        },
        Case {
            name: "content",
            tool: "search_code",
            input: json!({"pattern": "TODO", "output_mode": "content", "head_limit": all}),
            rg: vec!["-n", "TODO"],
            target: 1.1,
        },
        Case {
            name: "find_files newest-first vs rg --files",
            tool: "find_files",
            input: json!({"pattern": "**/*"}),
            rg: vec!["--files"],
            target: 1.2,
        },
    ];
    let runtime = tokio::runtime::Runtime::new()?;
    let files = count_files(&dir);
    let bytes = tree_bytes(&dir);
    println!(
        "tree {} ({files} files, {:.0} MB, as the walk sees it), {rounds} rounds each, both sides interleaved, medians shown, {} cores",
        dir.display(),
        bytes as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // SEARCH_BENCH_ONLY=WORD measures only the cases whose name contains WORD.
    let only = std::env::var("SEARCH_BENCH_ONLY").unwrap_or_default();
    for case in cases.iter().filter(|c| c.name.contains(only.as_str())) {
        // Warm the page cache and check that both sides find something.
        let ours_out = ours(&runtime, &dir, case)?;
        let (mut ours_wall, mut ours_cpu) = (Vec::new(), Vec::new());
        let (mut rg_wall, mut rg_cpu) = (Vec::new(), Vec::new());
        let mut rg_lines = 0;
        for _ in 0..rounds {
            let (t, c) = (Instant::now(), cpu(Who::Us));
            ours(&runtime, &dir, case)?;
            ours_wall.push(t.elapsed());
            ours_cpu.push(cpu(Who::Us).saturating_sub(c));
            if rg {
                let (t, c) = (Instant::now(), cpu(Who::Children));
                rg_lines = run_rg(&dir, &walk, &case.rg)?;
                rg_wall.push(t.elapsed());
                rg_cpu.push(cpu(Who::Children).saturating_sub(c));
            }
        }
        let (ow, oc) = (median(&mut ours_wall), median(&mut ours_cpu));
        println!(
            "{}\n  ours  wall {:>8.1} ms  cpu {:>8.1} ms  ({} lines)",
            case.name,
            ms(ow),
            ms(oc),
            ours_out.lines().count()
        );
        if rg {
            let (rw, rc) = (median(&mut rg_wall), median(&mut rg_cpu));
            println!(
                "  rg    wall {:>8.1} ms  cpu {:>8.1} ms  ({rg_lines} lines)",
                ms(rw),
                ms(rc)
            );
            let (wr, cr) = (ratio(ow, rw), ratio(oc, rc));
            println!(
                "  ratio wall {wr:.2}×  cpu {cr:.2}×  (target ≤ {:.1}×: wall {}, cpu {})",
                case.target,
                verdict(wr, case.target),
                verdict(cr, case.target)
            );
        }
    }
    if rg {
        floor(&dir, &walk, rounds)?;
    }
    // The default head_limit (500) in content mode stops the walk early.
    let case = Case {
        name: "content, default head_limit (early exit)",
        tool: "search_code",
        input: json!({"pattern": "fn ", "output_mode": "content"}),
        rg: vec![],
        target: 0.0,
    };
    let t = Instant::now();
    let out = ours(&runtime, &dir, &case)?;
    println!(
        "{:<40} ours {:>8.1} ms ({} lines)",
        case.name,
        ms(t.elapsed()),
        out.lines().count()
    );
    Ok(())
}

/// The floor for `find_files` newest first: `rg --files` lists without reading a
/// single inode, while newest first needs every matched file's mtime, one `stat` each
/// (the directory walk does not return it). This times exactly that extra work: a stat
/// of every path `rg --files` printed, on one thread per core, in this process.
fn floor(dir: &Path, walk: &[&str], rounds: usize) -> anyhow::Result<()> {
    let out = Command::new("rg")
        .args(walk)
        .arg("--files")
        .current_dir(dir)
        .output()?;
    let paths: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| dir.join(l))
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(12));
    let chunk = paths.len().div_ceil(threads).max(1);
    let (mut wall, mut cpu_t) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (t, c) = (Instant::now(), cpu(Who::Us));
        std::thread::scope(|s| {
            for part in paths.chunks(chunk) {
                s.spawn(move || {
                    for p in part {
                        let _ = std::fs::symlink_metadata(p).and_then(|m| m.modified());
                    }
                });
            }
        });
        wall.push(t.elapsed());
        cpu_t.push(cpu(Who::Us).saturating_sub(c));
    }
    println!(
        "find_files floor: a stat of each of the {} files alone costs wall {:.1} ms, cpu {:.1} ms (add it to rg --files for the least newest-first can cost)",
        paths.len(),
        ms(median(&mut wall)),
        ms(median(&mut cpu_t))
    );
    Ok(())
}

/// Our tool, called as the executor calls it.
fn ours(rt: &tokio::runtime::Runtime, dir: &Path, case: &Case) -> anyhow::Result<String> {
    let ctx = ToolContext::new(dir, "bench");
    let out = rt.block_on(async {
        match case.tool {
            "find_files" => FindFiles::new().run(case.input.clone(), ctx).await,
            _ => SearchCode::new().run(case.input.clone(), ctx).await,
        }
    });
    out.map_err(|e| anyhow::anyhow!("{}: {e}", case.name))
}

/// The `rg` binary with the same walk settings; returns how many lines it printed.
fn run_rg(dir: &Path, walk: &[&str], args: &[&str]) -> anyhow::Result<usize> {
    let out = Command::new("rg")
        .args(walk)
        .args(args)
        .current_dir(dir)
        .output()?;
    Ok(out.stdout.iter().filter(|b| **b == b'\n').count())
}

fn tree_bytes(dir: &Path) -> u64 {
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn count_files(dir: &Path) -> usize {
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .count()
}

/// Whose CPU time [`cpu`] reads.
enum Who {
    /// This process, every thread (our tool's walker threads included).
    Us,
    /// Children waited for so far (each `rg` run).
    Children,
}

/// User + system CPU time so far, from `getrusage`.
fn cpu(who: Who) -> Duration {
    let which = match who {
        Who::Us => nix::libc::RUSAGE_SELF,
        Who::Children => nix::libc::RUSAGE_CHILDREN,
    };
    // SAFETY: `getrusage` only writes the zeroed struct it is given.
    let mut u: nix::libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { nix::libc::getrusage(which, &mut u) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: nix::libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn ratio(ours: Duration, rg: Duration) -> f64 {
    ours.as_secs_f64() / rg.as_secs_f64().max(1e-9)
}

fn verdict(ratio: f64, target: f64) -> &'static str {
    if ratio <= target { "ok" } else { "OVER" }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
