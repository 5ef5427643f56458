//! The four properties every row of the fault matrix checks (issue 15), as assertions
//! shared by the fault tests:
//!
//! - [`assert_transcript_whole`] / [`assert_transcripts_whole`]: no transcript line lost,
//!   torn or duplicated (each call started once, finished once; each `tool_use` answered
//!   by exactly one `tool_result`);
//! - [`assert_no_orphans`] / [`assert_no_process_with`]: no process left behind, checked
//!   by process group in `/proc`;
//! - [`assert_no_work_lost`]: no commit of a deleted branch or worktree became
//!   unreachable, no registered worktree lost its directory;
//! - [`assert_told`]: the user sees what happened (stderr or a transcript line says so).
//!
//! In-process fault tests (a session from `support::start`, the team store) use the same
//! properties through: [`assert_in_process_transcript`] (the transcript an in-process
//! session recorded with `Setup { transcript: true, .. }` is whole and holds its
//! conversation exactly), [`record_group`] / [`recorded_group`] (the process group of a
//! command a tool ran, for [`assert_no_orphans`]), [`work_in`] / [`assert_work_kept`] (no
//! worktree deleted with uncommitted work or commits only it held), and
//! [`assert_jsonl_whole`] / [`assert_each_once`] (a store's own records: none torn, each
//! once).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod in_process;
pub use in_process::*;

/// The transcript files under `home` (the lead's and every agent's), sorted.
pub fn transcript_files(home: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![home.join(".crew/projects")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every line of one transcript file, parsed; a line that does not parse (torn or
/// spliced) fails the test, naming the file and line.
pub fn transcript_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the transcript {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{} line {}: {e}: {line}", path.display(), i + 1))
        })
        .collect()
}

/// Checks one transcript file whole and returns its lines: every line parses; every
/// `tool_call_started` has exactly one `tool_call_finished` and no call finishes that did
/// not start; every `tool_use` of an appended assistant message is answered by exactly one
/// `tool_result` of an appended user message, and no result answers an unknown call.
pub fn assert_transcript_whole(path: &Path) -> Vec<Value> {
    check_transcript(path, false)
}

/// [`assert_transcript_whole`] for a run that was cut off (SIGKILL, a restart storm): the
/// last line may be torn, and the calls of the last assistant message may lack their
/// results (resume closes them); everything before is whole.
pub fn assert_transcript_whole_but_cut(path: &Path) -> Vec<Value> {
    check_transcript(path, true)
}

fn check_transcript(path: &Path, cut: bool) -> Vec<Value> {
    let lines = if cut {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read the transcript {}: {e}", path.display()));
        let all: Vec<&str> = text.lines().collect();
        let mut lines = Vec::new();
        for (i, line) in all.iter().enumerate() {
            match serde_json::from_str::<Value>(line) {
                Ok(v) => lines.push(v),
                // Only the very last line may be torn, by the kill itself.
                Err(_) if i + 1 == all.len() && !text.ends_with('\n') => {}
                Err(e) => panic!("{} line {}: {e}: {line}", path.display(), i + 1),
            }
        }
        lines
    } else {
        transcript_lines(path)
    };
    // The calls a cut run may leave open: those of its last assistant message.
    let open: Vec<String> = if cut {
        lines
            .iter()
            .rev()
            .find(|l| l["type"] == "message_appended" && l["message"]["role"] == "assistant")
            .and_then(|l| l["message"]["content"].as_array())
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str().map(str::to_string))
            .collect()
    } else {
        Vec::new()
    };
    let may_be_open = |id: &str, n: Option<&usize>| n.is_none() && open.iter().any(|o| o == id);
    let name = path.display();
    let mut started: HashMap<String, usize> = HashMap::new();
    let mut finished: HashMap<String, usize> = HashMap::new();
    let mut uses: HashMap<String, usize> = HashMap::new();
    let mut results: HashMap<String, usize> = HashMap::new();
    for l in &lines {
        match l["type"].as_str() {
            Some("tool_call_started") => count(&mut started, &l["call"]["id"]),
            Some("tool_call_finished") => count(&mut finished, &l["call_id"]),
            Some("message_appended") => {
                for b in l["message"]["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str() {
                        Some("tool_use") => count(&mut uses, &b["id"]),
                        Some("tool_result") => count(&mut results, &b["tool_use_id"]),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    for (id, n) in &started {
        assert_eq!(*n, 1, "{name}: call {id} started {n} times");
        if may_be_open(id, finished.get(id)) {
            continue;
        }
        assert_eq!(
            finished.get(id),
            Some(&1),
            "{name}: call {id} started once but finished {:?} times",
            finished.get(id)
        );
    }
    for id in finished.keys() {
        assert!(
            started.contains_key(id),
            "{name}: call {id} finished but never started"
        );
    }
    for (id, n) in &uses {
        assert_eq!(*n, 1, "{name}: tool_use {id} appended {n} times");
        if may_be_open(id, results.get(id)) {
            continue;
        }
        assert_eq!(
            results.get(id),
            Some(&1),
            "{name}: tool_use {id} has {:?} tool_result lines",
            results.get(id)
        );
    }
    for id in results.keys() {
        assert!(
            uses.contains_key(id),
            "{name}: a tool_result answers {id}, which no tool_use asked"
        );
    }
    lines
}

/// [`assert_transcript_whole`] on every transcript under `home` (at least one); the lead's
/// and the agents' lines together.
pub fn assert_transcripts_whole(home: &Path) -> Vec<Value> {
    let files = transcript_files(home);
    assert!(!files.is_empty(), "no transcript under {}", home.display());
    files
        .iter()
        .flat_map(|f| assert_transcript_whole(f))
        .collect()
}

fn count(map: &mut HashMap<String, usize>, id: &Value) {
    let id = id
        .as_str()
        .unwrap_or_else(|| panic!("a call line without an id: {id}"));
    *map.entry(id.to_string()).or_default() += 1;
}

/// A live process (zombies are dead): its pid, process group and command line.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub pgid: u32,
    pub cmdline: String,
}

/// Every live process but this test's, from `/proc`.
pub fn processes() -> Vec<Proc> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
            continue;
        }
        let Some(pgid) = fields.get(2).and_then(|f| f.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        found.push(Proc { pid, pgid, cmdline });
    }
    found
}

/// The live processes of process group `pgid` (its leader included).
pub fn group_members(pgid: u32) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|p| p.pgid == pgid || p.pid == pgid)
        .collect()
}

/// Waits (bounded, [`super::WAIT_BOUND`]) until no live process is in group `pgid`, then
/// fails naming those left if any remain: no orphan survives its run.
pub fn assert_no_orphans(pgid: u32) {
    assert_no_orphans_within(pgid, super::WAIT_BOUND);
}

/// [`assert_no_orphans`] waiting at most `bound`: for the helper's own test, which must
/// see it fail on a real orphan without waiting the generous bound.
pub fn assert_no_orphans_within(pgid: u32, bound: std::time::Duration) {
    let mut left = Vec::new();
    let gone = wait_within(bound, || {
        left = group_members(pgid);
        left.is_empty()
    });
    assert!(gone, "process group {pgid} outlived its run: {left:?}");
}

/// Waits (bounded) until no live process's command line contains `token`, and no process
/// is left in any of their groups: a command a test started (marked with `token`) that
/// outlived its run, or a child it left in its group, fails the test.
pub fn assert_no_process_with(token: &str) {
    assert_no_process_with_within(token, super::WAIT_BOUND);
}

/// [`assert_no_process_with`] waiting at most `bound` (for the helper's own test).
pub fn assert_no_process_with_within(token: &str, bound: std::time::Duration) {
    let groups: Vec<u32> = processes()
        .into_iter()
        .filter(|p| p.cmdline.contains(token))
        .map(|p| p.pgid)
        .collect();
    let mut left = Vec::new();
    let gone = wait_within(bound, || {
        left = processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(token) || groups.contains(&p.pgid))
            .collect();
        left.is_empty()
    });
    assert!(
        gone,
        "left running (marked `{token}` or in its group): {left:?}"
    );
}

/// Polls `cond` every 10 ms for at most [`super::WAIT_BOUND`]; whether it came to hold.
fn wait_quietly(cond: impl FnMut() -> bool) -> bool {
    wait_within(super::WAIT_BOUND, cond)
}

/// Polls `cond` every 10 ms for at most `bound`; whether it came to hold.
fn wait_within(bound: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// No work in `repo` was lost: no commit became unreachable (a deleted branch or
/// worktree with commits of its own leaves its commits dangling; reflogs are not counted
/// as keeping them), and every registered worktree still has its directory, unless it is
/// one of `deleted_by_the_test`.
pub fn assert_no_work_lost(repo: &Path, deleted_by_the_test: &[&Path]) {
    let fsck = super::git_output(
        repo,
        &["fsck", "--no-reflogs", "--unreachable", "--no-progress"],
    );
    let text = String::from_utf8_lossy(&fsck.stdout);
    let lost: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("unreachable commit"))
        .collect();
    assert!(
        lost.is_empty(),
        "commits lost in {}: {lost:?}",
        repo.display()
    );
    let list = super::git(repo, &["worktree", "list", "--porcelain"]);
    for path in list.lines().filter_map(|l| l.strip_prefix("worktree ")) {
        let path = Path::new(path);
        if deleted_by_the_test.contains(&path) {
            continue;
        }
        assert!(
            path.exists(),
            "the registered worktree {} lost its directory",
            path.display()
        );
    }
}

/// The user was told: `stderr` or some transcript line contains `needle`.
pub fn assert_told(stderr: &str, lines: &[Value], needle: &str) {
    let in_lines = lines.iter().any(|l| l.to_string().contains(needle));
    assert!(
        stderr.contains(needle) || in_lines,
        "the user was never told `{needle}`; stderr: {stderr}"
    );
}

/// Waits (bounded) until no live process has its working directory under `root`, then
/// fails naming those left: a command a run started there (in the project or in one of
/// its worktrees) that outlived the run. Processes whose `cwd` cannot be read (another
/// user's) are not this test's.
pub fn assert_no_process_under(root: &Path) {
    assert_no_process_under_within(root, super::WAIT_BOUND);
}

/// [`assert_no_process_under`] waiting at most `bound` (for the helper's own test).
pub fn assert_no_process_under_within(root: &Path, bound: std::time::Duration) {
    let under = |p: &Proc| {
        std::fs::read_link(format!("/proc/{}/cwd", p.pid)).is_ok_and(|cwd| cwd.starts_with(root))
    };
    let mut left = Vec::new();
    let gone = wait_within(bound, || {
        left = processes().into_iter().filter(under).collect();
        left.is_empty()
    });
    assert!(gone, "left running under {}: {left:?}", root.display());
}
