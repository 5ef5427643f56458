//! Worker benchmark (issue 16): 12 scripted subagents, each taking 3 model turns of
//! 200 ms simulated latency (a file write, a `git status`, an answer), run two ways in
//! this one run, on a repository of ~500 files:
//!
//! - **local**: one `crew -p` with 12 local slots (`--max-concurrent-agents 12`);
//! - **remote**: the same lead with `--workers` on 3 loopback `crew worker` processes of
//!   4 slots each, the agent definition saying `placement: remote`.
//!
//! Prints both wall times (whole `crew -p` processes, start-up included), their ratio,
//! and the bytes shipped per subagent (bundle to the worker, bundle back), read from each
//! task's result. Runs the `crew` binary beside this example's own (build it first):
//!
//! `cargo build --release && cargo run --release --example worker_bench`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a example: it fails loudly and prints what it measures"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SUBAGENTS: usize = 12;
const LATENCY_MS: u64 = 200;

fn crew_bin() -> PathBuf {
    // target/<profile>/examples/worker_bench → target/<profile>/crew
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

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs")
        .success();
    assert!(ok, "git {args:?}");
}

fn put(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

fn repo(root: &Path) {
    std::fs::create_dir_all(root).expect("mkdir");
    git(root, &["init", "-q", "-b", "main"]);
    for i in 0..500 {
        let body: String = (0..40)
            .map(|l| format!("fn f{i}_{l}() -> u32 {{ {i} * {l} }}\n"))
            .collect();
        put(root, &format!("src/m{}/f{i}.rs", i % 20), &body);
    }
    for (name, placement) in [("bench-local", ""), ("bench-remote", "placement: remote\n")] {
        put(
            root,
            &format!(".crew/agents/{name}.md"),
            &format!(
                "---\nname: {name}\ndescription: bench\n{placement}tools: write_file, run_command\n---\nWork.\n"
            ),
        );
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
}

fn script(home: &Path, ty: &str) -> PathBuf {
    let calls: Vec<_> = (0..SUBAGENTS)
        .map(|i| {
            serde_json::json!({"name": "agent", "input": {
                "description": format!("job {i}"), "prompt": "work",
                "subagent_type": ty, "run_in_background": true}})
        })
        .collect();
    let turns = serde_json::json!([
        {"delay_ms": LATENCY_MS, "tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "done\n"}}]},
        {"delay_ms": LATENCY_MS, "tool_calls": [{"name": "run_command", "input": {"command": "git status --short"}}]},
        {"delay_ms": LATENCY_MS, "text": "finished"}
    ]);
    let s = serde_json::json!({
        "turns": [{"tool_calls": calls}],
        "agents": {ty: {"turns": turns}},
    });
    let path = home.join(format!("{ty}.json"));
    std::fs::write(&path, s.to_string()).expect("script");
    path
}

struct Worker(Child, String);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_worker(bin: &Path, home: &Path, cookie: &Path, i: usize) -> Worker {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let log = home.join(format!("worker{i}.log"));
    let child = Command::new(bin)
        .args(["worker", "--listen", &addr, "--slots", "4", "--name"])
        .arg(format!("bench{i}"))
        .arg("--cookie-file")
        .arg(cookie)
        .arg("--workdir")
        .arg(home.join(format!("wd{i}")))
        .env("HOME", home)
        .stderr(std::fs::File::create(&log).expect("log"))
        .stdout(Stdio::null())
        .spawn()
        .expect("worker starts");
    let start = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("listening on")
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "worker {i} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Worker(child, addr)
}

/// Runs the lead; returns its wall time and the task records.
fn run(
    bin: &Path,
    root: &Path,
    home: &Path,
    script: &Path,
    extra: &[String],
) -> (Duration, Vec<serde_json::Value>) {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(["-p", "fan out", "--model"])
        .arg(format!("script:{}", script.display()))
        .args(extra)
        .current_dir(root)
        .env("HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("crew runs");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = Command::new(bin)
        .args(["tasks", "list", "--json"])
        .current_dir(root)
        .env("HOME", home)
        .output()
        .expect("crew tasks list");
    let records: Vec<serde_json::Value> = serde_json::from_slice(&list.stdout).expect("json");
    (took, records)
}

/// The numbers of a remote task's `[worker …]` note, in order: bytes to the worker,
/// bytes back, checkout ms, run ms, commit+bundle ms (worker), fetch ms (lead).
fn shipped(rec: &serde_json::Value) -> Option<[u64; 6]> {
    let r = rec["result"].as_str()?;
    let tail = r.split("] ").find(|p| p.contains("bytes shipped"))?;
    let nums: Vec<u64> = tail
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().unwrap_or(0))
        .collect();
    nums.get(..6)?.try_into().ok()
}

fn main() {
    let bin = crew_bin();
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let home = base.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let cookie = home.join("cookie");
    std::fs::write(&cookie, "bench-cookie-0123456789abcdef\n").expect("cookie");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cookie, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }

    let local_root = base.join("local");
    repo(&local_root);
    let (local, local_recs) = run(
        &bin,
        &local_root,
        &home,
        &script(&home, "bench-local"),
        &["--max-concurrent-agents".into(), SUBAGENTS.to_string()],
    );

    let remote_root = base.join("remote");
    repo(&remote_root);
    let workers: Vec<Worker> = (0..3)
        .map(|i| start_worker(&bin, &home, &cookie, i))
        .collect();
    let addrs: Vec<&str> = workers.iter().map(|w| w.1.as_str()).collect();
    let (remote, remote_recs) = run(
        &bin,
        &remote_root,
        &home,
        &script(&home, "bench-remote"),
        &[
            "--workers".into(),
            addrs.join(","),
            "--cookie-file".into(),
            cookie.display().to_string(),
        ],
    );
    drop(workers);

    let done =
        |recs: &[serde_json::Value]| recs.iter().filter(|r| r["status"] == "completed").count();
    let notes: Vec<[u64; 6]> = remote_recs.iter().filter_map(shipped).collect();
    let n = notes.len().max(1) as u64;
    let mean = |i: usize| notes.iter().map(|b| b[i]).sum::<u64>() / n;
    let (to, back) = (mean(0), mean(1));
    println!("subagents: {SUBAGENTS}, 3 turns x {LATENCY_MS} ms each");
    println!(
        "local  (12 slots):           {:>7.2} s  ({} completed)",
        local.as_secs_f64(),
        done(&local_recs)
    );
    println!(
        "remote (3 workers x 4 slots): {:>7.2} s  ({} completed)",
        remote.as_secs_f64(),
        done(&remote_recs)
    );
    println!(
        "wall-time ratio remote/local: {:.2}",
        remote.as_secs_f64() / local.as_secs_f64()
    );
    println!(
        "bytes shipped per subagent: {to} to the worker (base bundle), {back} back (branch bundle)"
    );
    println!(
        "mean per remote subagent: checkout {} ms, run {} ms (model turns: {} ms), commit+bundle {} ms on the worker; fetch {} ms on the lead",
        mean(2),
        mean(3),
        3 * LATENCY_MS,
        mean(4),
        mean(5)
    );
}
