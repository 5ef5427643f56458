//! End-to-end cost of a turn and of a batched call in `crew -p` (issue 30), quiet and
//! while another process writes to the same disk with `dd oflag=dsync`, in one run.
//!
//! Whole `crew -p` processes run on the scripted model in a fresh HOME on DIR's file
//! system (transcript, costs, task list and all), each script a different shape:
//!
//! - **start**: one turn without calls: start-up and exit, subtracted from the others;
//! - **turns**: TURNS turns of one `read_file` call each: the cost of a turn (with its
//!   call) is `(turns − start) / T₁`, T₁ its tool turns;
//! - **batched**: TURNS turns of BATCH `read_file` calls each: the cost of a call batched
//!   into a turn is `(batched − start − T₈ × turn) / (C₈ − T₈)`, T₈ its tool turns and
//!   C₈ its calls.
//!
//! T and C are the model turns and tool calls each run made, counted in its transcript:
//! a long run compacts its context, and each compaction's summary takes a scripted turn,
//! so a run makes fewer turns than its script holds (the compactions' cost stays in).
//!
//! Each round runs the three shapes one after the other and gives a figure of each kind;
//! each figure printed is the median of ROUNDS rounds' figures, and is printed with its
//! ratio against a direct read of the same file in this process (open, read, close), and
//! the loaded figure with its ratio against the quiet one (target: 150 µs or less a turn,
//! 20 µs or less a batched call, loaded ≤ 1.5× quiet).
//!
//! Runs the `crew` binary beside this example's own (build it first), or `CREW_BIN`:
//! `cargo build --release && cargo run --release --example crew_p_bench -- [TURNS] [BATCH] [ROUNDS] [DIR]`
//! (defaults 1000, 8, 5 and the temp directory). With `CREW_BASELINE_BIN` (another
//! build, say an older commit's), each round runs that binary's shapes too, interleaved
//! with the first's, and each figure is printed with its ratio against the baseline's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn crew_bin() -> PathBuf {
    // Another build to compare with (an older commit's binary).
    if let Some(bin) = std::env::var_os("CREW_BIN") {
        return PathBuf::from(bin);
    }
    // target/<profile>/examples/crew_p_bench → target/<profile>/crew
    let exe = std::env::current_exe().expect("own path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("crew"))
        .expect("target directory");
    assert!(
        bin.exists(),
        "build the crew binary first: {}",
        bin.display()
    );
    bin
}

/// The file every call reads: about what a small source file gives back.
fn file_text() -> String {
    (0..40)
        .map(|i| format!("line {i:>3}: some source text of a typical width, \"quoted\"\n"))
        .collect()
}

/// `turns` turns of `calls` `read_file` calls each, then a last turn without calls.
fn script(turns: usize, calls: usize) -> serde_json::Value {
    let mut list: Vec<serde_json::Value> = (0..turns)
        .map(|t| {
            let calls: Vec<serde_json::Value> = (0..calls)
                .map(|c| {
                    serde_json::json!({"name": "read_file", "id": format!("c{t}-{c}"),
                        "input": {"path": "a.txt"}})
                })
                .collect();
            serde_json::json!({"text": "Reading.", "tool_calls": calls})
        })
        .collect();
    list.push(serde_json::json!({"text": "Done."}));
    serde_json::json!({ "turns": list })
}

/// One bench's files: a project holding `a.txt`, and the three scripts.
struct Bench {
    /// The binary measured, then the baseline's when there is one.
    crews: Vec<PathBuf>,
    root: PathBuf,
    project: PathBuf,
    turns: usize,
    scripts: [PathBuf; 3],
    run: usize,
}

impl Bench {
    fn new(dir: &Path, turns: usize, batch: usize) -> anyhow::Result<Self> {
        let root = dir.to_path_buf();
        let project = root.join("project");
        std::fs::create_dir_all(&project)?;
        std::fs::write(project.join("a.txt"), file_text())?;
        let shapes = [(0, 0), (turns, 1), (turns, batch)];
        let scripts = shapes.map(|(t, c)| root.join(format!("script-{t}-{c}.json")));
        for ((t, c), path) in shapes.iter().zip(&scripts) {
            std::fs::write(path, script(*t, *c).to_string())?;
        }
        let mut crews = vec![crew_bin()];
        crews.extend(std::env::var_os("CREW_BASELINE_BIN").map(PathBuf::from));
        Ok(Self {
            crews,
            root,
            project,
            turns,
            scripts,
            run: 0,
        })
    }

    /// Wall time of one `crew -p` on script `shape`, in a HOME of its own, and the model
    /// turns and tool calls its transcript records.
    fn time(&mut self, crew: usize, shape: usize) -> anyhow::Result<(Duration, Counts)> {
        self.run += 1;
        let home = self.root.join(format!("home-{}", self.run));
        std::fs::create_dir_all(&home)?;
        let start = Instant::now();
        let status = Command::new(&self.crews[crew])
            .args(["-p", "read a.txt again and again", "--max-turns"])
            .arg((self.turns + 10).to_string())
            .arg("--model")
            .arg(format!("script:{}", self.scripts[shape].display()))
            .current_dir(&self.project)
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        let took = start.elapsed();
        anyhow::ensure!(status.success(), "crew -p failed on shape {shape}");
        let counts = counts(&home)?;
        let _ = std::fs::remove_dir_all(&home);
        Ok((took, counts))
    }

    /// For each binary, the wall time (µs) of each shape in each of `rounds` rounds,
    /// binaries and shapes interleaved, with the turns and calls of its last run (the
    /// same in every run of a shape).
    fn rounds(&mut self, rounds: usize) -> anyhow::Result<Vec<[Shape; 3]>> {
        let crews = self.crews.len();
        let mut out: Vec<[Shape; 3]> = vec![Default::default(); crews];
        for _ in 0..rounds {
            for (crew, shapes) in out.iter_mut().enumerate() {
                for (shape, (times, counts)) in shapes.iter_mut().enumerate() {
                    let (took, c) = self.time(crew, shape)?;
                    times.push(took.as_secs_f64() * 1e6);
                    *counts = c;
                }
            }
        }
        Ok(out)
    }
}

/// A shape's wall times (µs), a round each, and what its runs did.
type Shape = (Vec<f64>, Counts);

/// What a run did, by its transcript.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    /// Model turns (not counting compactions' summary turns).
    turns: usize,
    /// Tool calls.
    calls: usize,
    /// Compactions.
    compactions: usize,
}

/// The counts of the one session transcript under `home`.
fn counts(home: &Path) -> anyhow::Result<Counts> {
    let mut c = Counts::default();
    for project in std::fs::read_dir(home.join(".crew/projects"))? {
        for file in std::fs::read_dir(project?.path())? {
            let path = file?.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                for line in std::fs::read_to_string(&path)?.lines() {
                    if line.contains("\"type\":\"turn_finished\"") {
                        c.turns += 1;
                    } else if line.contains("\"type\":\"tool_call_finished\"") {
                        c.calls += 1;
                    } else if line.contains("\"type\":\"compacted\"") {
                        c.compactions += 1;
                    }
                }
            }
        }
    }
    Ok(c)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// µs of one direct read of the project's file (open, read, close), median of batches.
fn direct_read(project: &Path) -> anyhow::Result<f64> {
    let path = project.join("a.txt");
    let mut batches = Vec::new();
    for _ in 0..21 {
        let start = Instant::now();
        for _ in 0..200 {
            std::hint::black_box(std::fs::read_to_string(&path)?);
        }
        batches.push(start.elapsed().as_secs_f64() * 1e6 / 200.0);
    }
    Ok(median(&mut batches))
}

/// The figures of one phase: µs a turn, µs a batched call, µs a direct read, and the
/// start-up run's wall time.
struct Figures {
    turn: f64,
    call: f64,
    read: f64,
    start: f64,
    /// What the batched run did.
    batched: Counts,
}

/// The figures of each binary (the measured one first).
fn measure(bench: &mut Bench, rounds: usize, batch: usize) -> anyhow::Result<Vec<Figures>> {
    let read_before = direct_read(&bench.project)?;
    let runs = bench.rounds(rounds)?;
    let read_after = direct_read(&bench.project)?;
    let read = (read_before + read_after) / 2.0;
    runs.into_iter()
        .map(|[(start, c0), (turns, c1), (batched, c8)]| {
            anyhow::ensure!(
                c1.turns > c0.turns && c8.turns > c0.turns && c8.calls > c8.turns - c0.turns,
                "the runs made too few turns or calls to measure: {c0:?} {c1:?} {c8:?} (batch {batch})"
            );
            // Tool turns: each run's turns but its last, which answers in text (as
            // `start`'s one).
            let (tool_turns_1, tool_turns_8) = (c1.turns - c0.turns, c8.turns - c0.turns);
            let extra_calls = c8.calls - tool_turns_8;
            // Each round's figures from its own three runs, which ran one after the
            // other: what slows the machine for a while slows all three alike.
            let (mut turn, mut call) = (Vec::new(), Vec::new());
            for ((start, turns), batched) in start.iter().zip(&turns).zip(&batched) {
                let t = (turns - start) / tool_turns_1 as f64;
                turn.push(t);
                call.push((batched - start - tool_turns_8 as f64 * t) / extra_calls as f64);
            }
            Ok(Figures {
                turn: median(&mut turn),
                call: median(&mut call),
                read,
                start: median(&mut start.clone()),
                batched: c8,
            })
        })
        .collect()
}

/// `dd` writing to `dir` with a sync after every 4 KiB block, until it is killed.
fn disk_writer(dir: &Path) -> anyhow::Result<Child> {
    let child = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", dir.join("dd.out").display()))
        .args(["bs=4k", "count=10000000", "oflag=dsync"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(child)
}

fn show(name: &str, f: &Figures) -> String {
    format!(
        "{name}: turn {:.1} µs ({:.0}× a direct read), batched call {:.1} µs ({:.1}×); direct read {:.2} µs; start-up and exit {:.1} ms; the batched run made {} turns, {} calls, {} compactions",
        f.turn,
        f.turn / f.read,
        f.call,
        f.call / f.read,
        f.read,
        f.start / 1000.0,
        f.batched.turns,
        f.batched.calls,
        f.batched.compactions
    )
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let turns: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let batch: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    anyhow::ensure!(
        turns > 0 && batch > 1 && rounds > 0,
        "TURNS ≥ 1, BATCH ≥ 2, ROUNDS ≥ 1"
    );
    let base = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base)?;
    let mut bench = Bench::new(dir.path(), turns, batch)?;
    println!(
        "crew -p, {turns} turns of 1 and of {batch} read_file calls, medians of {rounds} rounds, on {}",
        base.display()
    );
    let quiet = measure(&mut bench, rounds, batch)?;
    println!("{}", show("quiet", &quiet[0]));
    let mut dd = disk_writer(dir.path())?;
    // Let the writer get going before the first run.
    std::thread::sleep(Duration::from_millis(300));
    let loaded = measure(&mut bench, rounds, batch);
    let _ = dd.kill();
    let _ = dd.wait();
    let loaded = loaded?;
    println!("{}", show("under dd oflag=dsync", &loaded[0]));
    println!(
        "loaded / quiet: turn {:.2}×, batched call {:.2}×, start-up and exit {:.2}× (targets: turn ≤ 150 µs, batched call ≤ 20 µs, loaded ≤ 1.5× quiet)",
        loaded[0].turn / quiet[0].turn,
        loaded[0].call / quiet[0].call,
        loaded[0].start / quiet[0].start
    );
    if let (Some(base_quiet), Some(base_loaded), Some(base)) =
        (quiet.get(1), loaded.get(1), bench.crews.get(1))
    {
        println!("baseline {}, in the same rounds:", base.display());
        for (name, this, baseline) in [
            ("quiet", &quiet[0], base_quiet),
            ("under dd oflag=dsync", &loaded[0], base_loaded),
        ] {
            println!("{}", show(&format!("  baseline {name}"), baseline));
            println!(
                "  this / baseline, {name}: turn {:.2}×, batched call {:.2}×, start-up and exit {:.2}×",
                this.turn / baseline.turn,
                this.call / baseline.call,
                this.start / baseline.start
            );
        }
    }
    Ok(())
}
