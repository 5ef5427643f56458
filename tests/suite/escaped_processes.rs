//! A process that leaves its command's process group (`setsid`, `nohup setsid … &`, a
//! double-forked daemon) does not outlive the command: the command's guardian is its
//! subreaper and ends it when the command ends, times out, is stopped or its call is
//! dropped. Each test runs the real escape, checks that the process really left the group
//! (it leads a session of its own), and then checks `/proc` and the disk: the process is
//! gone and never wrote the marker it was waiting to write. (SIGKILL of crew itself:
//! `fault_matrix::sigkill_of_crew_leaves_no_command_hook_task_or_server_behind`.)

use crate::support;

use std::path::Path;
use std::time::Duration;

use crewmaster::sandbox::process::{self, ProcessError};
use crewmaster::tools::run_command::RunCommand;
use crewmaster::tools::{CommandSandbox, Tool, ToolContext};
use serde_json::json;
use support::wait_until;
use tokio_util::sync::CancellationToken;

/// A shell snippet that escapes with `how` (a prefix that runs `sh -c BODY`): the escaped
/// process records `pid pgrp session` in `esc.pid` (atomically), then waits for the file
/// `go` and writes `late.txt`, which it must never get to do.
fn escape(how: &str) -> String {
    escape_after(how, "")
}

/// [`escape`] with `prelude` run first by the escaped process (e.g. a `trap`).
fn escape_after(how: &str, prelude: &str) -> String {
    let body = "echo $$ $(cut -d\" \" -f5,6 /proc/$$/stat) > esc.tmp && mv esc.tmp esc.pid; \
                while [ ! -e go ]; do sleep 0.05; done; echo late > late.txt";
    format!("{how} sh -c '{prelude}{body}'")
}

/// The spellings of an escape checked by each test.
const ESCAPES: [&str; 2] = ["setsid -f", "nohup setsid"];

/// Put first in a command: records the command's session (the guardian's) in `cmd.sid`.
const RECORD_SID: &str = "cut -d' ' -f6 /proc/$$/stat > cmd.sid; ";

/// The escaped process's pid, waited for, after checking that it is in a session other
/// than its command's (`cmd.sid`), in that session's own group: no group kill of the
/// command could reach it.
async fn escaped_pid(dir: &Path) -> u32 {
    let file = dir.join("esc.pid");
    let read = || std::fs::read_to_string(&file).ok();
    wait_until("the escaped process to record its pid", || read().is_some()).await;
    let text = read().unwrap();
    let ids: Vec<u32> = text
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{text}");
    let command_sid: u32 = std::fs::read_to_string(dir.join("cmd.sid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(
        ids[2], command_sid,
        "still in its command's session: {text}"
    );
    assert_eq!(ids[1], ids[2], "not in its new session's group: {text}");
    ids[0]
}

/// Whether `pid` is a live process (a zombie is dead).
fn running(pid: u32) -> bool {
    support::faults::processes().iter().any(|p| p.pid == pid)
}

/// Lets a surviving escaped process go on (it would write `late.txt`), then checks that
/// it is gone and never wrote it.
async fn assert_ended_for_good(dir: &Path, pid: u32, how: &str) {
    std::fs::write(dir.join("go"), "").unwrap();
    // Were it alive, it would now write the marker and exit: wait for it to be gone first,
    // so the marker check below cannot run before its write.
    wait_until(&format!("escaped process {pid} ({how}) to be gone"), || {
        !running(pid)
    })
    .await;
    assert!(
        !dir.join("late.txt").exists(),
        "{how}: the escaped process {pid} outlived its command and wrote its marker"
    );
}

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir, "test")
}

#[tokio::test]
async fn an_escaped_process_ends_with_its_command_and_the_result_says_so() {
    for how in ESCAPES {
        let dir = tempfile::tempdir().unwrap();
        let command = format!(
            "{RECORD_SID}{} >/dev/null 2>&1 & while [ ! -s esc.pid ]; do sleep 0.01; done; echo back",
            escape(how)
        );
        let out = RunCommand::new()
            .run(json!({ "command": command }), ctx(dir.path()))
            .await
            .unwrap();
        let pid = escaped_pid(dir.path()).await;
        // The guardian ended it before the call returned.
        assert!(
            !running(pid),
            "{how}: escaped process {pid} outlived the call: {out}"
        );
        assert!(
            out.contains("exit code: 0") && out.contains("back"),
            "{how}: {out}"
        );
        assert!(
            out.contains("were killed"),
            "{how}: the model is not told: {out}"
        );
        assert_ended_for_good(dir.path(), pid, how).await;
    }
}

#[tokio::test]
async fn an_escaped_process_holding_the_output_open_neither_hangs_the_call_nor_survives() {
    let dir = tempfile::tempdir().unwrap();
    // Keeps the call's stdout: the pipe closes only once the escaped process is dead.
    let command = format!(
        "{RECORD_SID}{} & while [ ! -s esc.pid ]; do sleep 0.01; done; echo back",
        escape("setsid -f")
    );
    let out = RunCommand::new()
        .run(json!({ "command": command }), ctx(dir.path()))
        .await
        .unwrap();
    let pid = escaped_pid(dir.path()).await;
    assert!(
        !running(pid),
        "escaped process {pid} outlived the call: {out}"
    );
    assert!(out.contains("back"), "{out}");
    assert!(
        !out.contains("reading stopped"),
        "the output was held open: {out}"
    );
    assert_ended_for_good(dir.path(), pid, "setsid -f").await;
}

#[tokio::test]
async fn an_escaped_process_ends_when_the_call_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{RECORD_SID}{} >/dev/null 2>&1 & while [ ! -s esc.pid ]; do sleep 0.01; done; echo started; sleep 1000",
        escape("setsid -f")
    );
    // Long enough for the escape to happen first on a loaded machine.
    let err = RunCommand::new()
        .run(
            json!({ "command": command, "timeout_ms": 8000 }),
            ctx(dir.path()),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("did not finish") && err.contains("started"),
        "{err}"
    );
    let pid = escaped_pid(dir.path()).await;
    assert!(
        !running(pid),
        "escaped process {pid} survived the timeout: {err}"
    );
    assert_ended_for_good(dir.path(), pid, "setsid -f").await;
}

#[tokio::test]
async fn an_escaped_process_ends_when_the_call_is_stopped() {
    for how in ESCAPES {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let command = format!("{RECORD_SID}{} >/dev/null 2>&1 & sleep 1000", escape(how));
        let run = {
            let (cancel, cwd) = (cancel.clone(), dir.path().to_path_buf());
            tokio::spawn(async move {
                process::run_in_group(
                    &command,
                    &cwd,
                    Duration::from_secs(600),
                    &cancel,
                    &CommandSandbox::None,
                )
                .await
            })
        };
        let pid = escaped_pid(dir.path()).await;
        assert!(running(pid), "{how}");
        cancel.cancel();
        let err = run.await.unwrap().unwrap_err();
        let ProcessError::Cancelled { pgid, .. } = err else {
            panic!("{how}: expected Cancelled, got {err:?}");
        };
        assert!(
            !running(pid),
            "{how}: escaped process {pid} survived the stop"
        );
        assert!(!process::group_alive(pgid), "{how}");
        assert_ended_for_good(dir.path(), pid, how).await;
    }
}

#[tokio::test]
async fn an_escaped_process_ends_when_the_call_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_path_buf();
    let command = format!(
        "{RECORD_SID}{} >/dev/null 2>&1 & sleep 1000",
        escape("setsid -f")
    );
    // The executor aborts a tool's task on its own timeout: the drop guard asks the
    // guardian to end everything.
    let task = tokio::spawn(async move {
        process::run_in_group(
            &command,
            &cwd,
            Duration::from_secs(600),
            &CancellationToken::new(),
            &CommandSandbox::None,
        )
        .await
    });
    let pid = escaped_pid(dir.path()).await;
    task.abort();
    let _ = task.await;
    // The drop guard's request to the guardian is asynchronous: the process must be gone
    // within the wait bound (a survivor fails here), before it is told to go on.
    wait_until(
        &format!("escaped process {pid} to end after the drop"),
        || !running(pid),
    )
    .await;
    assert_ended_for_good(dir.path(), pid, "setsid -f").await;
}

#[tokio::test]
async fn a_double_forked_python_daemon_ends_with_its_command() {
    require_features!(Python3);
    let dir = tempfile::tempdir().unwrap();
    let daemon = "import os,time\n\
        if os.fork(): os._exit(0)\n\
        os.setsid()\n\
        if os.fork(): os._exit(0)\n\
        for fd in (0,1,2): os.close(fd)\n\
        s=open('/proc/self/stat').read().rsplit(')',1)[1].split()\n\
        open('esc.tmp','w').write('%d %s %s' % (os.getpid(), s[2], s[3]))\n\
        os.rename('esc.tmp','esc.pid')\n\
        while not os.path.exists('go'): time.sleep(0.05)\n\
        open('late.txt','w').write('late')\n";
    std::fs::write(dir.path().join("daemon.py"), daemon).unwrap();
    let out = RunCommand::new()
        .run(
            json!({"command": format!(
                "{RECORD_SID}python3 daemon.py; while [ ! -s esc.pid ]; do sleep 0.01; done; echo back"
            )}),
            ctx(dir.path()),
        )
        .await
        .unwrap();
    let pid = escaped_pid(dir.path()).await;
    assert!(!running(pid), "daemon {pid} outlived the call: {out}");
    assert!(out.contains("were killed"), "{out}");
    assert_ended_for_good(dir.path(), pid, "python double fork").await;
}

#[tokio::test]
async fn a_confined_command_s_escaped_process_ends_with_it() {
    require_features!(Landlock);
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    c.sandbox = CommandSandbox::landlock(vec![dir.path().to_path_buf()]);
    let command = format!(
        "{RECORD_SID}{} >/dev/null 2>&1 & while [ ! -s esc.pid ]; do sleep 0.01; done; echo back",
        escape("setsid -f")
    );
    let out = RunCommand::new()
        .run(json!({ "command": command }), c)
        .await
        .unwrap();
    assert!(out.contains("back"), "{out}");
    escaped_pid(dir.path()).await;
    // Its pid may be one of a PID namespace, not ours to look up: its directory is.
    std::fs::write(dir.path().join("go"), "").unwrap();
    support::faults::assert_no_process_under(&dir.path().canonicalize().unwrap());
    assert!(
        !dir.path().join("late.txt").exists(),
        "a confined escaped process outlived its command: {out}"
    );
}

#[tokio::test]
async fn an_escaped_process_that_ignores_sigterm_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{RECORD_SID}{} >/dev/null 2>&1 & while [ ! -s esc.pid ]; do sleep 0.01; done; echo back",
        escape_after("setsid -f", "trap \"\" TERM; ")
    );
    let out = RunCommand::new()
        .run(json!({ "command": command }), ctx(dir.path()))
        .await
        .unwrap();
    let pid = escaped_pid(dir.path()).await;
    assert!(
        !running(pid),
        "escaped process {pid} ignoring SIGTERM outlived the call: {out}"
    );
    assert!(out.contains("were killed"), "{out}");
    assert_ended_for_good(dir.path(), pid, "setsid -f, SIGTERM ignored").await;
}

#[tokio::test]
async fn a_command_signalling_its_own_group_cannot_make_the_guardian_kill_it() {
    let dir = tempfile::tempdir().unwrap();
    // The guardian obeys crew's kill request only from crew: the same signal sent by the
    // command to its own group (which it ignores itself) changes nothing.
    let out = RunCommand::new()
        .run(
            json!({"command": "trap '' USR1; kill -USR1 0; echo survived; exit 3"}),
            ctx(dir.path()),
        )
        .await
        .unwrap();
    assert!(
        out.contains("survived") && out.contains("exit code: 3"),
        "{out}"
    );
}
