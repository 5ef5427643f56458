//! The shared fault assertions (`tests/support/faults.rs`) can fail: each is shown the
//! fault it exists to catch — a transcript line lost or duplicated, a process left in its
//! group, a worktree deleted with work only it held, a store record lost or kept twice,
//! a user never told — and must fail on it, while passing on the sound original.

use crate::support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::tools::{Safety, Tool};
use support::faults::{self, Work};
use support::{Behaviour, FakeTool, Setup, git, start};

/// Whether `check` fails (panics).
fn fails(check: impl FnOnce()) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)).is_err()
}

/// A copy of `home`'s in-process transcript with `edit` applied to its lines, in a new
/// home of its own.
fn edited(home: &Path, edit: impl FnOnce(&mut Vec<String>)) -> tempfile::TempDir {
    let (lead, _) = faults::in_process_transcript(home);
    let mut lines: Vec<String> = std::fs::read_to_string(&lead)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    edit(&mut lines);
    let copy = tempfile::tempdir().unwrap();
    let (to, _) = faults::in_process_transcript(copy.path());
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(&to, lines.join("\n") + "\n").unwrap();
    copy
}

#[tokio::test]
async fn the_transcript_check_fails_on_any_lost_or_duplicated_message_or_call_line() {
    let read = Arc::new(FakeTool::new(
        "read_file",
        Safety::ReadOnly,
        false,
        Behaviour::Succeed,
    ));
    let t = start(Setup {
        transcript: true,
        ..Setup::new(
            r#"{"turns":[
                {"text":"looking","tool_calls":[{"name":"read_file","input":{"path":"a"}},
                                                {"name":"read_file","input":{"path":"b"}}]},
                {"text":"done"},
                {"text":"again"}]}"#,
            vec![read as Arc<dyn Tool>],
        )
    })
    .await;
    let run = |task: &str| RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    };
    t.session.run(run("one")).await.unwrap();
    t.session.run(run("two")).await.unwrap();
    let conversation = t.session.conversation().await.unwrap();
    t.session.shutdown().await;
    let home = t.home.path();
    // The sound transcript passes.
    let lines = faults::assert_in_process_transcript(home, &conversation);
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| l["type"].as_str().unwrap_or_default().to_string())
        .collect();
    // Every line that records a message, a call or a run: losing it or writing it twice
    // fails the check.
    let guarded = [
        "message_appended",
        "tool_call_started",
        "tool_call_finished",
        "run_started",
        "run_finished",
    ];
    // Lines that carry a call: the binary-level check alone (no conversation to compare
    // with) fails on losing or doubling them as well.
    let carries_a_call = |l: &serde_json::Value| {
        let blocks = l["message"]["content"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        l["type"] == "tool_call_started"
            || l["type"] == "tool_call_finished"
            || blocks
                .iter()
                .any(|b| b["type"] == "tool_use" || b["type"] == "tool_result")
    };
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        if !carries_a_call(line) {
            continue;
        }
        let lost = edited(home, |l| {
            l.remove(i);
        });
        let twice = edited(home, |l| {
            let line = l[i].clone();
            l.insert(i + 1, line);
        });
        for (what, copy) in [("losing", &lost), ("doubling", &twice)] {
            assert!(
                fails(|| {
                    faults::assert_transcripts_whole(copy.path());
                }),
                "{what} line {} went unnoticed by assert_transcripts_whole",
                i + 1
            );
        }
        checked += 1;
    }
    assert_eq!(
        checked, 6,
        "2 calls: 2 started, 2 finished, 1 tool_use, 1 tool_result line"
    );
    let mut checked = 0;
    for (i, kind) in kinds.iter().enumerate() {
        if !guarded.contains(&kind.as_str()) {
            continue;
        }
        checked += 1;
        let lost = edited(home, |l| {
            l.remove(i);
        });
        assert!(
            fails(|| {
                faults::assert_in_process_transcript(lost.path(), &conversation);
            }),
            "losing line {} ({kind}) went unnoticed",
            i + 1
        );
        let twice = edited(home, |l| {
            let line = l[i].clone();
            l.insert(i + 1, line);
        });
        assert!(
            fails(|| {
                faults::assert_in_process_transcript(twice.path(), &conversation);
            }),
            "line {} ({kind}) written twice went unnoticed",
            i + 1
        );
    }
    // 2 runs, 6 messages (task, assistant with two calls, results, text; task, text),
    // 2 calls started and finished.
    assert!(checked >= 12, "only {checked} lines checked: {kinds:?}");
    // A line torn in the middle of the file fails too.
    let torn = edited(home, |l| {
        let half = l[1].len() / 2;
        l[1].truncate(half);
    });
    assert!(fails(|| {
        faults::assert_in_process_transcript(torn.path(), &conversation);
    }));
}

#[test]
fn the_orphan_check_fails_on_a_process_left_in_the_group_of_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let group_file = dir.path().join("group");
    // A command that leaves a sleeper behind in its own process group and exits.
    let script = format!(
        "{}sleep 600 & echo $! > '{}'",
        faults::record_group(&group_file),
        dir.path().join("sleeper").display()
    );
    let status = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(dir.path())
        .process_group(0)
        .status()
        .unwrap();
    assert!(status.success());
    let group = faults::recorded_group(&group_file);
    let sleeper: u32 = std::fs::read_to_string(dir.path().join("sleeper"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(
        group.pgid,
        std::process::id(),
        "the command had a group of its own"
    );
    assert!(
        faults::group_members(group.pgid)
            .iter()
            .any(|p| p.pid == sleeper),
        "the sleeper is in the recorded group"
    );
    // The orphan is there for good, so a short bound shows the failure.
    let short = std::time::Duration::from_millis(300);
    assert!(fails(|| faults::assert_no_orphans_within(
        group.pgid, short
    )));
    assert!(fails(|| faults::assert_group_gone_within(&group, short)));
    // The sleeper runs in the command's directory, marked by it: the other two process
    // checks see it as well.
    assert!(fails(|| faults::assert_no_process_under_within(
        dir.path(),
        short
    )));
    assert!(fails(|| faults::assert_no_process_with_within(
        "sleep 600",
        short
    )));
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group.pgid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    faults::assert_group_gone(&group);
    faults::assert_no_process_under(dir.path());
}

#[test]
fn the_orphan_check_fails_on_a_process_left_in_the_pid_namespace_of_a_confined_command() {
    // A command in a PID namespace of its own (as a confined subagent's runs): its group
    // number means nothing outside, so the check watches the namespace.
    require_features!(PidNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let group_file = dir.path().join("group");
    let script = format!(
        "{}sleep 600 & echo started > '{}'; wait",
        faults::record_group(&group_file),
        dir.path().join("started").display()
    );
    let mut unshare = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "bash", "-c", &script])
        .process_group(0)
        .spawn()
        .unwrap();
    let group = faults::recorded_group(&group_file);
    support::wait_until_blocking("the sleeper", || dir.path().join("started").exists());
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    assert_ne!(group.pid_ns, ours.display().to_string(), "{group:?}");
    let short = std::time::Duration::from_millis(300);
    assert!(fails(|| faults::assert_group_gone_within(&group, short)));
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(unshare.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    unshare.wait().unwrap();
    faults::assert_group_gone(&group);
}

/// A repository with one linked worktree on `crew/t1` holding `edit` uncommitted.
fn repo_with_dirty_worktree() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    support::committed_repo(&repo, &[("README.md", "base\n")]);
    let wt = root.path().join("wt");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "crew/t1",
            wt.to_str().unwrap(),
        ],
    );
    std::fs::write(wt.join("edit.txt"), "work only this worktree holds\n").unwrap();
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    (root, repo, wt)
}

#[test]
fn the_work_check_fails_on_a_deleted_dirty_worktree_and_passes_once_the_work_is_committed() {
    let (_root, repo, wt) = repo_with_dirty_worktree();
    let before: Vec<Work> = faults::work_in(&repo);
    let linked = before.iter().find(|w| w.path == wt).unwrap();
    assert_eq!(linked.dirty.len(), 2, "{linked:?}");
    // Kept in place: passes.
    faults::assert_work_kept(&repo, &before);
    // Deleted with its uncommitted work: fails.
    git(
        &repo,
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    assert!(fails(|| faults::assert_work_kept(&repo, &before)));

    // Committed to its branch, then removed: nothing lost.
    let (_root, repo, wt) = repo_with_dirty_worktree();
    let before = faults::work_in(&repo);
    git(&wt, &["add", "."]);
    git(&wt, &["commit", "-qm", "work"]);
    git(&repo, &["worktree", "remove", wt.to_str().unwrap()]);
    faults::assert_work_kept(&repo, &before);
    // … but deleting the branch as well loses the commit: both checks see it.
    git(&repo, &["branch", "-D", "crew/t1"]);
    assert!(fails(|| faults::assert_work_kept(&repo, &before)));
    assert!(fails(|| faults::assert_no_work_lost(&repo, &[])));
}

#[test]
fn the_store_checks_fail_on_a_record_lost_twice_or_torn() {
    faults::assert_each_once("message", ["a", "b", "c"], ["c", "a", "b"]);
    assert!(fails(|| faults::assert_each_once(
        "message",
        ["a", "b", "c"],
        ["a", "c"]
    )));
    assert!(fails(|| faults::assert_each_once(
        "message",
        ["a", "b"],
        ["a", "b", "b"]
    )));
    assert!(fails(|| faults::assert_each_once(
        "message",
        ["a"],
        ["a", "z"]
    )));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.jsonl"), "{\"a\":1}\n{\"b\":2}\n").unwrap();
    assert_eq!(faults::assert_jsonl_whole(dir.path()).len(), 2);
    std::fs::write(dir.path().join("y.jsonl"), "{\"a\":1}{\"b\"\n{}\n").unwrap();
    assert!(fails(|| {
        faults::assert_jsonl_whole(dir.path());
    }));
}

#[test]
fn the_told_check_fails_when_nobody_said_it() {
    let lines = vec![serde_json::json!({"type":"error","message":"the disk is full"})];
    faults::assert_told("", &lines, "disk is full");
    faults::assert_told("crew: the disk is full", &[], "disk is full");
    assert!(fails(|| faults::assert_told(
        "all fine",
        &lines,
        "worker lost"
    )));
}
