//! Check-then-use races against the file tools, through the real permission engine,
//! gate and executor (a session on the scripted model). A swapper thread exchanges `d`
//! (a real directory in the project) with `d2` (a symlink to a directory outside it that
//! holds `id_rsa`) with `renameat2(RENAME_EXCHANGE)` in a loop, so the engine judges
//! `d/…` inside the project while the tool may reach it through the link. Each tool is
//! attacked for at least ten seconds (all five at once, to keep the test short);
//! afterwards nothing outside was written or changed, and no tool result holds the
//! outside secret or an outside-only file name.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::permission::PermissionMode;
use serde_json::{Value, json};
use support::{Setup, start, tool_results};

/// How long each tool is attacked at least.
const ATTACK: Duration = Duration::from_secs(10);

/// The content of the file outside the project.
const SECRET: &str = "OUTSIDE-SECRET-7f3a";

/// A file name that exists only outside the project.
const OUTSIDE_ONLY: &str = "outside-only-5c1e.txt";

/// Exchanges `root/d` and `root/d2` until stopped; returns how often it swapped.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(root: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b) = (root.join("d"), root.join("d2"));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !flag.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("renameat2(RENAME_EXCHANGE) works here");
                swaps += 1;
                std::thread::sleep(Duration::from_micros(20));
            }
            swaps
        });
        Swapper {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the swapper, leaving `d` the real directory again.
    fn stop(mut self, root: &Path) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let swaps = self.thread.take().unwrap().join().unwrap();
        if std::fs::symlink_metadata(root.join("d"))
            .unwrap()
            .file_type()
            .is_symlink()
        {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                root.join("d"),
                rustix::fs::CWD,
                root.join("d2"),
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
        }
        swaps
    }
}

/// The directory outside the project, with what the attack is after.
fn outside() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("id_rsa"), format!("{SECRET}\n")).unwrap();
    std::fs::write(root.join("notes.txt"), format!("alpha {SECRET}\n")).unwrap();
    std::fs::write(root.join(OUTSIDE_ONLY), format!("{SECRET}\n")).unwrap();
    (dir, root)
}

/// Every file below `dir` with its content (links not followed).
fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(listing(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

/// The calls of one scripted turn for `tool`; `n` numbers them.
fn calls(tool: &str, turn: usize, per_turn: usize) -> Vec<Value> {
    (0..per_turn)
        .map(|i| {
            let n = turn * per_turn + i;
            let input = match tool {
                "write_file" => json!({"path": format!("d/w{n}.txt"), "content": "written"}),
                "read_file" => json!({"path": "d/id_rsa"}),
                "edit_file" => {
                    let (old, new) = if n % 2 == 0 {
                        ("alpha", "beta")
                    } else {
                        ("beta", "alpha")
                    };
                    json!({"path": "d/notes.txt", "old_string": old, "new_string": new})
                }
                "find_files" => {
                    json!({"pattern": "**/*", "path": if n % 2 == 0 { "d" } else { "." }})
                }
                "search_code" => json!({
                    "pattern": "SECRET|alpha",
                    "path": if n % 2 == 0 { "d" } else { "." },
                    "output_mode": "content",
                }),
                other => panic!("no calls for {other}"),
            };
            json!({"name": tool, "input": input})
        })
        .collect()
}

/// One tool's attack: sessions run one after another, each with its own swapper, until
/// [`ATTACK`] has passed. Returns (calls made, swaps, results that ran the tool).
async fn attack(tool: &'static str) -> (usize, u64, usize) {
    const TURNS: usize = 15;
    const PER_TURN: usize = 20;
    let (_outside_dir, outside) = outside();
    let before = listing(&outside);
    let started = Instant::now();
    let (mut made, mut swaps, mut ran) = (0, 0, 0);
    while started.elapsed() < ATTACK {
        let turns: Vec<Value> = (0..TURNS)
            .map(|t| json!({"tool_calls": calls(tool, t, PER_TURN)}))
            .chain([json!({"text": "done"})])
            .collect();
        let t = start(Setup {
            mode: PermissionMode::AcceptEdits,
            ..Setup::new(
                json!({ "turns": turns }).to_string(),
                crewmaster::tools::builtin_tools(),
            )
        })
        .await;
        let root = t.cwd();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("d/id_rsa"), "decoy\n").unwrap();
        std::fs::write(root.join("d/notes.txt"), "alpha\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("d2")).unwrap();
        let swapper = Swapper::start(&root);
        let outcome = t
            .session
            .run(RunRequest {
                mode: AgentMode::Do,
                task: "go".into(),
                plan: Some("1. go".into()),
            })
            .await;
        swaps += swapper.stop(&root);
        outcome.unwrap();
        let conv = t.session.conversation().await.unwrap();
        for r in tool_results(&conv) {
            made += 1;
            assert!(
                !r.content.contains(SECRET) && !r.content.contains(OUTSIDE_ONLY),
                "{tool} returned what lies outside the project: {}",
                r.content
            );
            ran += usize::from(!r.is_error);
        }
        assert_eq!(
            listing(&outside),
            before,
            "{tool} wrote or changed files outside the project"
        );
    }
    (made, swaps, ran)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_directory_swapped_for_a_symlink_never_lets_a_file_tool_out() {
    let tools = [
        "write_file",
        "read_file",
        "edit_file",
        "find_files",
        "search_code",
    ];
    let runs: Vec<_> = tools
        .iter()
        .map(|&tool| tokio::spawn(attack(tool)))
        .collect();
    for (tool, run) in tools.iter().zip(runs) {
        let (made, swaps, ran) = run.await.unwrap();
        eprintln!("{tool}: {made} calls, {ran} ran, {swaps} swaps");
        assert!(
            swaps > 1000,
            "{tool}: the swapper barely ran ({swaps} swaps)"
        );
        assert!(ran > 0, "{tool}: no call got through to the tool");
    }
}
