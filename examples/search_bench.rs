//! `search_code` and `find_files` against the `rg` binary on the same tree, in one run,
//! interleaved, and the ratios (issue 15: target ≤ 1.1× `rg` for files-with-matches,
//! count and content, ≤ 1.2× `rg --files` for `find_files`, newest first).
//!
//! `cargo run --release --example search_bench -- [DIR] [ROUNDS]`
//!
//! DIR defaults to `~/.cargo/registry/src`, ROUNDS (the median of which is reported) to 5.
//! Our side is the tool called in-process (no crew start-up); the `rg` side is the binary
//! with the same walk settings (hidden files searched, `.gitignore` honoured outside git,
//! `.git` skipped), its output read through a pipe as crew reads a tool's result. Without
//! `rg` on the PATH the example says so and measures our side alone.

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
    let cases = vec![
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
    println!(
        "tree {} ({files} files), {rounds} rounds each, median shown, {} walker threads",
        dir.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for case in &cases {
        // Warm the page cache and check that both sides find something.
        let ours_out = ours(&runtime, &dir, case)?;
        let mut ours_t = Vec::new();
        let mut rg_t = Vec::new();
        let mut rg_lines = 0;
        for _ in 0..rounds {
            let t = Instant::now();
            ours(&runtime, &dir, case)?;
            ours_t.push(t.elapsed());
            if rg {
                let t = Instant::now();
                rg_lines = run_rg(&dir, &walk, &case.rg)?;
                rg_t.push(t.elapsed());
            }
        }
        let o = median(&mut ours_t);
        let line = format!(
            "{:<40} ours {:>8.1} ms ({} lines)",
            case.name,
            ms(o),
            ours_out.lines().count()
        );
        if rg {
            let r = median(&mut rg_t);
            let ratio = o.as_secs_f64() / r.as_secs_f64();
            println!(
                "{line}   rg {:>8.1} ms ({rg_lines} lines)   ratio {ratio:.2}× (target ≤ {:.1}×) {}",
                ms(r),
                case.target,
                if ratio <= case.target { "ok" } else { "OVER" }
            );
        } else {
            println!("{line}");
        }
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

fn count_files(dir: &Path) -> usize {
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .count()
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
