//! The durability contract (docs/performance.md, "Durability"; issue 30): a SIGKILL of
//! crew at any point of a long run loses no transcript line written before it and
//! doubles none after `--resume`, and the spending the resumed session reports is what the
//! transcript records; a long `crew -p` run makes a bounded number of fsync calls, not one
//! per turn.

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::Value;

/// `turns` turns of one `read_file` call each, every call and text unique to `round`, then
/// a last turn without calls.
fn script(round: &str, turns: usize) -> Value {
    let mut list: Vec<Value> = (0..turns)
        .map(|i| {
            serde_json::json!({"text": format!("{round} step {i}"), "tool_calls": [
                {"name": "read_file", "id": format!("{round}-{i}"), "input": {"path": "a.txt"}}]})
        })
        .collect();
    list.push(serde_json::json!({"text": format!("{round} done")}));
    serde_json::json!({ "turns": list })
}

/// `crew -p` on `script` in session `id` (resumed when `resume`), not waited for.
fn spawn_crew(
    project: &Path,
    home: &Path,
    script: &Path,
    id: &str,
    resume: bool,
) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    if resume {
        cmd.args(["--resume", id]);
    } else {
        cmd.args(["--session-id", id]);
    }
    cmd.args(["-p", "read a.txt again and again", "--max-turns", "10000"])
        .arg("--model")
        .arg(format!("script:{}", script.display()))
        .current_dir(project)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The whole lines of the file (a torn last line left out).
fn whole_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if !text.is_empty() && !text.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// How many times each id occurs in `lines` under `field` for lines of `kind`, and in
/// appended messages' blocks of `block`.
fn counts(lines: &[Value]) -> [HashMap<String, usize>; 4] {
    let mut c: [HashMap<String, usize>; 4] = Default::default();
    let mut add = |i: usize, v: &Value| {
        *c[i]
            .entry(v.as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    };
    for l in lines {
        match l["type"].as_str() {
            Some("tool_call_started") => add(0, &l["call"]["id"]),
            Some("tool_call_finished") => add(1, &l["call_id"]),
            Some("message_appended") => {
                for b in l["message"]["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str() {
                        Some("tool_use") => add(2, &b["id"]),
                        Some("tool_result") => add(3, &b["tool_use_id"]),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    c
}

#[test]
fn sigkill_at_random_points_loses_nothing_written_and_resume_doubles_nothing() {
    let seed: u64 = std::env::var("CREW_DURABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let why = format!("seed {seed} (rerun with CREW_DURABILITY_SEED={seed})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (project, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    support::put(&project, "a.txt", "one line of text\n");
    let id = "durability";
    // Three runs killed at random points, then one that runs to its end.
    let kills = 3;
    let mut transcript: Option<PathBuf> = None;
    for round in 0..=kills {
        let name = format!("r{round}");
        let turns = if round < kills { 400 } else { 5 };
        let script_path = home.join(format!("{name}.json"));
        std::fs::write(&script_path, script(&name, turns).to_string()).unwrap();
        let before = transcript.as_deref().map(whole_lines).unwrap_or_default();
        let mut child = spawn_crew(&project, &home, &script_path, id, round > 0);
        if round == kills {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{why}: the last run failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            // Killed once the transcript has grown by a random number of lines, after a
            // random pause: anywhere in a turn, between two writes or during one.
            let grow = rng.random_range(5..1500);
            let pause = Duration::from_micros(rng.random_range(0..3000));
            let started = Instant::now();
            loop {
                let path = transcript.clone().or_else(|| {
                    support::faults::transcript_files(&home)
                        .into_iter()
                        .find(|p| p.file_stem().is_some_and(|s| s == id))
                });
                let grown = path.as_deref().map_or(0, |p| whole_lines(p).len());
                if grown >= before.len() + grow || child.try_wait().unwrap().is_some() {
                    transcript = path;
                    break;
                }
                assert!(
                    started.elapsed() < support::WAIT_BOUND,
                    "{why}: round {round} never wrote {grow} lines"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(pause);
            let seen = transcript.as_deref().map(whole_lines).unwrap_or_default();
            let _ = child.kill(); // SIGKILL
            child.wait().unwrap();
            let after = transcript.as_deref().map(whole_lines).unwrap_or_default();
            eprintln!(
                "{why}: round {round} killed after {} new lines (target {grow}, pause {pause:?})",
                seen.len().saturating_sub(before.len())
            );
            // What was written before the kill is on disk after it.
            assert!(
                after.len() >= seen.len() && after[..seen.len()] == seen[..],
                "{why}: round {round}: lines written before the kill are gone"
            );
        }
        let path = transcript.clone().expect("the session's transcript");
        let now = whole_lines(&path);
        // Nothing lost: the earlier rounds' whole lines open the file, unchanged (resume
        // cuts only a torn tail and appends).
        assert!(
            now.len() >= before.len() && now[..before.len()] == before[..],
            "{why}: round {round}: earlier lines were lost or changed"
        );
    }
    let path = transcript.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'), "{why}: the transcript ends torn");
    let lines: Vec<Value> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{why}: line {}: {e}: {l}", i + 1))
        })
        .collect();
    // Nothing doubled: each call started, finished, asked and answered at most once, and
    // every call asked has its one result (a killed one's says it was interrupted).
    let [started, finished, uses, results] = counts(&lines);
    for (what, map) in [
        ("started", &started),
        ("finished", &finished),
        ("tool_use", &uses),
    ] {
        for (call, n) in map {
            assert_eq!(*n, 1, "{why}: call {call}: {what} {n} times");
        }
    }
    for call in uses.keys() {
        assert_eq!(results.get(call), Some(&1), "{why}: call {call}: results");
    }
    assert!(
        started.keys().all(|c| uses.contains_key(c)),
        "{why}: a call started unasked"
    );
    // Each step's text was appended once.
    let mut texts: HashMap<String, usize> = HashMap::new();
    for l in lines.iter().filter(|l| l["type"] == "message_appended") {
        for b in l["message"]["content"].as_array().into_iter().flatten() {
            if let Some(t) = b["text"].as_str().filter(|t| t.contains(" step ")) {
                *texts.entry(t.to_string()).or_default() += 1;
            }
        }
    }
    assert!(
        texts.values().all(|n| *n == 1),
        "{why}: a step's text was doubled"
    );
    assert!(
        lines.last().is_some_and(|l| l["type"] == "run_finished"),
        "{why}: the last run did not finish"
    );
    // The ledger the last run left says what the transcript records, although the killed
    // runs never wrote their last costs: a resume adds it up from the transcript.
    let usage = lines
        .iter()
        .filter(|l| l["type"] == "request_usage" && l["agent"] == "lead")
        .count();
    let session_dir = path.with_extension("");
    let costs: Value =
        serde_json::from_slice(&std::fs::read(session_dir.join("costs.json")).unwrap()).unwrap();
    assert_eq!(
        costs["agents"]["lead"]["requests"].as_u64(),
        Some(usage as u64),
        "{why}: costs.json disagrees with the transcript"
    );
}

/// The fsync-family calls (`fsync`, `fdatasync`, `sync_file_range`) `crew -p` makes over a
/// run of `turns` turns, counted by `strace -f -c`; `None` when strace cannot trace here.
fn fsyncs(turns: usize, window_ms: Option<u64>) -> Option<(u64, Duration)> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (project, home) = (root.join("project"), root.join("home"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    support::put(&project, "a.txt", "one line of text\n");
    let script_path = root.join("script.json");
    std::fs::write(&script_path, script("s", turns).to_string()).unwrap();
    let counted = root.join("strace.txt");
    let mut cmd = Command::new("strace");
    cmd.args([
        "-f",
        "-c",
        "-e",
        "trace=fsync,fdatasync,sync_file_range,syncfs",
        "-o",
    ])
    .arg(&counted)
    .arg(env!("CARGO_BIN_EXE_crew"))
    .args(["-p", "read a.txt", "--max-turns", "10000", "--model"])
    .arg(format!("script:{}", script_path.display()))
    .current_dir(&project)
    .env("HOME", &home)
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env_remove("ANTHROPIC_API_KEY")
    .env_remove("OPENAI_API_KEY");
    if let Some(ms) = window_ms {
        cmd.env("CREW_FLUSH_WINDOW_MS", ms.to_string());
    }
    let started = Instant::now();
    let out = cmd.output().ok()?;
    let elapsed = started.elapsed();
    let report = std::fs::read_to_string(&counted).ok()?;
    if !out.status.success() {
        // strace itself could not trace (no ptrace here): say so; a failed crew fails.
        if report.trim().is_empty() || report.contains("ptrace") {
            return None;
        }
        panic!("crew failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Each call is shown on stderr as `→ read_file …`.
    let calls = String::from_utf8_lossy(&out.stderr)
        .matches("→ read_file")
        .count();
    assert!(calls >= turns, "the run made {calls} calls of {turns}");
    // `% time seconds usecs/call calls [errors] syscall` rows, then a `total` row.
    let total = report
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .last()
                .is_some_and(|s| s.contains("sync"))
        })
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum();
    Some((total, elapsed))
}

#[test]
fn a_200_turn_run_makes_at_most_10_fsync_calls() {
    let traceable = Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !traceable {
        eprintln!(
            "skipped: strace is not installed or cannot trace here (no ptrace); \
             install strace (Debian package strace) to run this test"
        );
        return;
    }
    // A window longer than any test run: only what a run does at its start and its exit
    // is left, which must not grow with the number of turns.
    let (short, _) = fsyncs(20, Some(600_000)).expect("strace traced the probe");
    let (long, _) = fsyncs(200, Some(600_000)).expect("strace traced the probe");
    eprintln!("fsync calls at exit alone: {short} for 20 turns, {long} for 200");
    assert!(long <= 10, "a 200-turn run made {long} fsync calls");
    assert!(
        long <= short + 1,
        "fsync calls grow with the turns: {short} for 20 turns, {long} for 200"
    );
    // With the default window (1 s), the flusher adds at most one batch a window: the
    // transcript, the task list and the two directories holding new entries.
    let (default, elapsed) = fsyncs(200, None).expect("strace traced the probe");
    let windows = elapsed.as_secs() + 1;
    eprintln!("fsync calls with the 1 s window: {default} in {elapsed:?}");
    assert!(
        default <= long + 4 * windows,
        "{default} fsync calls in {elapsed:?} with a 1 s window (at exit alone: {long})"
    );
}
