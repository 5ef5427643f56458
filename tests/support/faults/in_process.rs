//! The four fault properties for in-process fault tests (a session from `support::start`,
//! the team store): a transcript an in-process session recorded, the process groups of
//! the commands its tools ran, the work in a repository's worktrees, a store's own records.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use crewmaster::protocol::Message;
use serde_json::Value;

use super::super::git;
use super::{
    Proc, assert_no_orphans_within, assert_no_work_lost, assert_transcripts_whole, processes,
    transcript_lines, wait_quietly, wait_within,
};

/// Where an in-process session started with `Setup { transcript: true, .. }` records its
/// transcript under `home`: the lead's file and its agents' directory, under
/// `.crew/projects` as the binary's, so [`transcript_files`] finds them.
pub fn in_process_transcript(home: &Path) -> (PathBuf, PathBuf) {
    let dir = home.join(".crew/projects/in-process");
    (dir.join("session.jsonl"), dir.join("session/agents"))
}

/// The transcript of an in-process session is whole ([`assert_transcripts_whole`] on every
/// file under `home`, the agents' too) and the lead's file holds exactly `conversation`
/// ([`assert_transcript_is`]). Returns every line.
pub fn assert_in_process_transcript(home: &Path, conversation: &[Message]) -> Vec<Value> {
    let lines = assert_transcripts_whole(home);
    assert_transcript_is(&in_process_transcript(home).0, conversation);
    lines
}

/// The lead's messages recorded in `path` are exactly `conversation`, in order: a message
/// lost or recorded twice fails, naming the first place they part. Every run recorded as
/// started is recorded as finished, once.
pub fn assert_transcript_is(path: &Path, conversation: &[Message]) {
    let recorded = crewmaster::transcript::load_conversation(path)
        .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
    let common = recorded.len().min(conversation.len());
    let at = (0..common)
        .find(|&i| recorded[i] != conversation[i])
        .unwrap_or(common);
    assert!(
        at == recorded.len() && at == conversation.len(),
        "{}: the transcript parts from the conversation at message {at} ({} recorded, {} held):\n\
         recorded: {:?}\nheld: {:?}",
        path.display(),
        recorded.len(),
        conversation.len(),
        recorded.get(at),
        conversation.get(at)
    );
    let runs = |kind: &str| {
        transcript_lines(path)
            .iter()
            .filter(|l| l["type"] == kind && l["agent"] == "lead")
            .count()
    };
    let (started, finished) = (runs("run_started"), runs("run_finished"));
    assert_eq!(
        started,
        finished,
        "{}: {started} runs started, {finished} finished",
        path.display()
    );
}

/// A shell prefix (ends with `; `) that writes to `file` the process group of the shell
/// running it and its PID namespace: a test puts it before a command a tool runs to learn
/// where the command's processes live ([`recorded_group`]).
pub fn record_group(file: &Path) -> String {
    format!(
        "read -r _ _ _ _ pg _ < /proc/$$/stat; echo \"$pg $(readlink /proc/$$/ns/pid)\" > '{}'; ",
        file.display()
    )
}

/// Where a command's processes live, as [`record_group`] saw it from inside.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Its process group, as numbered in its own PID namespace.
    pub pgid: u32,
    /// Its PID namespace (`pid:[inode]`).
    pub pid_ns: String,
}

/// The group [`record_group`] wrote to `file`, waiting (bounded) for it.
pub fn recorded_group(file: &Path) -> Group {
    let read = || {
        let text = std::fs::read_to_string(file).ok()?;
        let (pgid, ns) = text.trim().split_once(' ')?;
        Some(Group {
            pgid: pgid.parse().ok()?,
            pid_ns: ns.to_string(),
        })
    };
    let mut group = None;
    let seen = wait_quietly(|| {
        group = read();
        group.is_some()
    });
    assert!(seen, "{} never named a process group", file.display());
    group.unwrap_or_else(|| unreachable!())
}

/// Waits (bounded) until no process of `group` lives, then fails naming those left: in
/// the test's own PID namespace its process group ([`assert_no_orphans`]); in a PID
/// namespace of its own (a confined command) every process in that namespace.
pub fn assert_group_gone(group: &Group) {
    assert_group_gone_within(group, super::super::WAIT_BOUND);
}

/// [`assert_group_gone`] waiting at most `bound` (for the helper's own test).
pub fn assert_group_gone_within(group: &Group, bound: std::time::Duration) {
    let ours = std::fs::read_link("/proc/self/ns/pid")
        .map(|l| l.display().to_string())
        .unwrap_or_default();
    if group.pid_ns == ours {
        return assert_no_orphans_within(group.pgid, bound);
    }
    let in_ns = |p: &Proc| {
        std::fs::read_link(format!("/proc/{}/ns/pid", p.pid))
            .is_ok_and(|l| l.display().to_string() == group.pid_ns)
    };
    let mut left = Vec::new();
    let gone = wait_within(bound, || {
        left = processes().into_iter().filter(in_ns).collect();
        left.is_empty()
    });
    assert!(
        gone,
        "the PID namespace {} of a command outlived its run: {left:?}",
        group.pid_ns
    );
}

/// The work one worktree held when [`work_in`] looked.
#[derive(Debug, Clone)]
pub struct Work {
    /// The worktree's directory.
    pub path: PathBuf,
    /// Its head commit.
    pub head: String,
    /// Its uncommitted files (changed or untracked), each with its content's blob id.
    pub dirty: Vec<(String, String)>,
}

/// Every registered worktree of `repo` (the main one too) with its head and uncommitted
/// files: take it before the fault, check it after with [`assert_work_kept`].
pub fn work_in(repo: &Path) -> Vec<Work> {
    let list = git(repo, &["worktree", "list", "--porcelain"]);
    let mut work = Vec::new();
    for block in list.split("\n\n") {
        let field = |name: &str| block.lines().find_map(|l| l.strip_prefix(name));
        let (Some(path), Some(head)) = (field("worktree "), field("HEAD ")) else {
            continue;
        };
        let path = PathBuf::from(path);
        if path.is_dir() {
            let dirty = dirty_files(&path);
            work.push(Work {
                path,
                head: head.to_string(),
                dirty,
            });
        }
    }
    work
}

/// The files of `worktree` that differ from its head or are untracked, with blob ids.
fn dirty_files(worktree: &Path) -> Vec<(String, String)> {
    let status = git(
        worktree,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
        ],
    );
    status
        .split('\0')
        .filter_map(|entry| entry.get(3..))
        .filter(|rel| worktree.join(rel).is_file())
        .map(|rel| (rel.to_string(), blob_of(worktree, rel)))
        .collect()
}

fn blob_of(worktree: &Path, rel: &str) -> String {
    git(worktree, &["hash-object", "--", rel])
}

/// No work that `before` ([`work_in`]) held is lost: each uncommitted file is still in its
/// worktree with the same content or was committed (its blob is reachable from a ref or
/// an index), and a worktree no longer registered had its head on a branch. A worktree
/// deleted with work only it held fails, naming it. Also [`assert_no_work_lost`].
pub fn assert_work_kept(repo: &Path, before: &[Work]) {
    assert_no_work_lost(repo, &[]);
    let now = work_in(repo);
    let reachable: HashSet<String> = git(
        repo,
        &["rev-list", "--objects", "--all", "--indexed-objects"],
    )
    .lines()
    .filter_map(|l| l.split(' ').next().map(str::to_string))
    .collect();
    for w in before {
        let here = now.iter().any(|n| n.path == w.path);
        for (rel, blob) in &w.dirty {
            let file = w.path.join(rel);
            let in_place = here && file.is_file() && blob_of(&w.path, rel) == *blob;
            assert!(
                in_place || reachable.contains(blob),
                "the uncommitted {} was lost: no longer in its worktree{} and never committed",
                file.display(),
                if here { "" } else { " (deleted)" }
            );
        }
        assert!(
            here || reachable.contains(&w.head),
            "the worktree {} was deleted with its head {} on no branch",
            w.path.display(),
            w.head
        );
    }
}

/// Every line of every `.jsonl` file under `dir` (a store's inboxes, say), parsed: a torn
/// or spliced line fails, naming the file and line.
pub fn assert_jsonl_whole(dir: &Path) -> Vec<Value> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    assert!(!files.is_empty(), "no .jsonl file under {}", dir.display());
    files.sort();
    files.iter().flat_map(|f| transcript_lines(f)).collect()
}

/// Each of `expected` is in `got` exactly once and nothing else is: a record lost or kept
/// twice fails, naming them. `what` names the records (`"inbox message"`).
pub fn assert_each_once<K: Ord + Clone + Debug>(
    what: &str,
    expected: impl IntoIterator<Item = K>,
    got: impl IntoIterator<Item = K>,
) {
    let mut counts: BTreeMap<K, (usize, usize)> = BTreeMap::new();
    for k in expected {
        counts.entry(k).or_default().0 += 1;
    }
    for k in got {
        counts.entry(k).or_default().1 += 1;
    }
    let lost: Vec<&K> = counts
        .iter()
        .filter(|(_, (e, g))| *e > 0 && *g == 0)
        .map(|(k, _)| k)
        .collect();
    let twice: Vec<(&K, usize)> = counts
        .iter()
        .filter(|(_, (_, g))| *g > 1)
        .map(|(k, (_, g))| (k, *g))
        .collect();
    let stray: Vec<&K> = counts
        .iter()
        .filter(|(_, (e, g))| *e == 0 && *g > 0)
        .map(|(k, _)| k)
        .collect();
    assert!(
        lost.is_empty() && twice.is_empty() && stray.is_empty(),
        "{what}: lost {lost:?}; more than once {twice:?}; never sent {stray:?}"
    );
}
