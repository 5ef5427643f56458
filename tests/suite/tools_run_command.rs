//! `run_command` end to end: exit codes, process-group cleanup on timeout, cancellation
//! and after the shell exits, and the Landlock sandbox.

use crate::support;

use std::path::Path;
use std::time::Duration;

use crewmaster::sandbox::landlock::{self, KernelSupport};
use crewmaster::sandbox::process::{self, ProcessError};
use crewmaster::tools::run_command::RunCommand;
use crewmaster::tools::{CommandSandbox, Tool, ToolContext, ToolError};
use serde_json::json;
use support::{git, wait_until};
use tokio_util::sync::CancellationToken;

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir, "test")
}

/// Whether `pid` names a process that still runs (a zombie runs nothing).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let after = &stat[stat.rfind(')').unwrap() + 1..];
            !after.trim_start().starts_with('Z')
        }
        Err(_) => false,
    }
}

/// Reads a pid the command wrote with `echo $! > file`, waiting for the file to appear.
async fn read_pid(path: &Path) -> i32 {
    let pid = || std::fs::read_to_string(path).ok()?.trim().parse().ok();
    wait_until(&format!("the command to write {}", path.display()), || {
        pid().is_some()
    })
    .await;
    pid().unwrap()
}

#[tokio::test]
async fn nonzero_exit_is_a_result_showing_the_code_and_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let out = RunCommand::new()
        .run(
            json!({"command": "echo hello; echo oops >&2; exit 7"}),
            ctx(dir.path()),
        )
        .await
        .unwrap();
    assert!(out.contains("exit code: 7"), "{out}");
    assert!(out.contains("stdout:\nhello"), "{out}");
    assert!(out.contains("stderr:\noops"), "{out}");
}

#[tokio::test]
async fn runs_in_the_agent_cwd_with_stdin_closed() {
    let dir = tempfile::tempdir().unwrap();
    let out = RunCommand::new()
        .run(json!({"command": "pwd; cat; echo done"}), ctx(dir.path()))
        .await
        .unwrap();
    let real = dir.path().canonicalize().unwrap();
    assert!(out.contains(&real.display().to_string()), "{out}");
    // `cat` reads /dev/null and ends at once instead of waiting on a terminal.
    assert!(out.contains("done"), "{out}");
}

#[tokio::test]
async fn timeout_kills_the_whole_group_including_background_children() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("bg.pid");
    let err = RunCommand::new()
        .run(
            json!({"command": "sleep 300 & echo $! > bg.pid; echo started; sleep 30", "timeout_ms": 3000}),
            ctx(dir.path()),
        )
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ToolError::Failed(_)));
    assert!(msg.contains("within 3 s"), "{msg}");
    assert!(msg.contains("process group"), "{msg}");
    assert!(msg.contains("started"), "partial output kept: {msg}");
    let pid = read_pid(&pidfile).await;
    assert!(!running(pid), "background sleep {pid} survived the timeout");
}

#[tokio::test]
async fn background_grandchild_does_not_hang_the_call_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    // `sleep 300 &` keeps stdout open after bash exits; the call must still return.
    let out = RunCommand::new()
        .run(
            json!({"command": "sleep 300 & echo $! > bg.pid; echo quick"}),
            ctx(dir.path()),
        )
        .await
        .unwrap();
    assert!(out.contains("exit code: 0"), "{out}");
    assert!(out.contains("quick"), "{out}");
    assert!(out.contains("were killed"), "{out}");
    let pid = read_pid(&dir.path().join("bg.pid")).await;
    assert!(!running(pid), "background sleep {pid} outlived the command");
}

#[tokio::test]
async fn cancel_token_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("bg.pid");
    let cancel = CancellationToken::new();
    let run = {
        let cancel = cancel.clone();
        let cwd = dir.path().to_path_buf();
        tokio::spawn(async move {
            process::run_in_group(
                "sleep 300 & echo $! > bg.pid; sleep 300",
                &cwd,
                Duration::from_secs(600),
                &cancel,
                &CommandSandbox::None,
            )
            .await
        })
    };
    let pid = read_pid(&pidfile).await;
    assert!(running(pid));
    cancel.cancel();
    let err = run.await.unwrap().unwrap_err();
    let ProcessError::Cancelled { pgid, .. } = err else {
        panic!("expected Cancelled, got {err:?}");
    };
    assert!(
        !running(pid),
        "background sleep {pid} survived cancellation"
    );
    assert!(!process::group_alive(pgid));
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("bg.pid");
    let cwd = dir.path().to_path_buf();
    // The executor aborts a tool's task on its own timeout: the drop guard must kill.
    let task = tokio::spawn(async move {
        process::run_in_group(
            "sleep 300 & echo $! > bg.pid; sleep 300",
            &cwd,
            Duration::from_secs(600),
            &CancellationToken::new(),
            &CommandSandbox::None,
        )
        .await
    });
    let pid = read_pid(&pidfile).await;
    task.abort();
    let _ = task.await;
    wait_until(
        &format!("background sleep {pid} to die with the aborted call"),
        || !running(pid),
    )
    .await;
}

#[tokio::test]
async fn large_output_is_capped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let out = RunCommand::new()
        .run(
            json!({"command": "seq 1 100000; echo LAST"}),
            ctx(dir.path()),
        )
        .await
        .unwrap();
    assert!(out.contains("cut from the middle"), "{}", &out[..200]);
    assert!(out.contains("LAST"), "the tail is kept");
    assert!(out.len() < 30_000);
}

#[tokio::test]
async fn empty_command_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let err = RunCommand::new()
        .run(json!({"command": "  "}), ctx(dir.path()))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(ref m) if m.contains("`command`")));
}

#[test]
fn definition_timeout_outlasts_the_largest_command_timeout() {
    let def = RunCommand::new();
    let t = def.definition().timeout.unwrap();
    assert!(t > run_command_max());
}

fn run_command_max() -> Duration {
    crewmaster::tools::run_command::MAX_TIMEOUT
}

/// A scratch directory that is not below a temp directory: sandboxed commands may always
/// write to the temp dirs, so "outside the root" must be somewhere else (CI may run the
/// whole checkout under /tmp).
fn outside_temp_root() -> tempfile::TempDir {
    let temp_roots = crewmaster::sandbox::landlock::effective_writable_roots(&[]);
    let candidates = [
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        std::path::PathBuf::from("/var/tmp"),
        std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .unwrap_or_default(),
    ];
    for dir in candidates.iter().filter(|d| d.is_dir()) {
        let Ok(real) = dir.canonicalize() else {
            continue;
        };
        if temp_roots.iter().any(|t| real.starts_with(t)) {
            continue;
        }
        if let Ok(t) = tempfile::tempdir_in(&real) {
            return t;
        }
    }
    panic!(
        "no writable directory outside the temp dirs to test escapes against \
         (tried {candidates:?}); give the tests a writable HOME or /var/tmp"
    )
}

fn landlock_ctx(dir: &Path, writable: &Path) -> ToolContext {
    let mut c = ctx(dir);
    c.sandbox = CommandSandbox::landlock(vec![writable.to_path_buf()]);
    c
}

#[tokio::test]
async fn landlock_allows_writes_inside_and_blocks_writes_outside() {
    require_features!(Landlock);
    let root = outside_temp_root();
    let inside = root.path().join("inside");
    std::fs::create_dir(&inside).unwrap();
    let c = landlock_ctx(&inside, &inside);

    let ok = RunCommand::new()
        .run(json!({"command": "touch x && echo made"}), c.clone())
        .await
        .unwrap();
    assert!(ok.contains("exit code: 0"), "{ok}");
    assert!(inside.join("x").exists());

    // The attack: a confined command writing outside its worktree.
    let denied = RunCommand::new()
        .run(json!({"command": "touch ../outside.txt"}), c.clone())
        .await
        .unwrap();
    assert!(denied.contains("exit code: 1"), "{denied}");
    assert!(denied.contains("Permission denied"), "{denied}");
    assert!(!root.path().join("outside.txt").exists());

    // Reading and executing outside stay allowed.
    let read = RunCommand::new()
        .run(
            json!({"command": "ls / > /dev/null && cat /etc/hostname >/dev/null; echo $?"}),
            c,
        )
        .await
        .unwrap();
    assert!(read.contains("stdout:\n0"), "{read}");
}

#[tokio::test]
async fn landlock_blocks_rename_out_and_delete_outside() {
    require_features!(Landlock);
    let root = outside_temp_root();
    let inside = root.path().join("inside");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(root.path().join("victim.txt"), "keep").unwrap();
    std::fs::write(inside.join("mine.txt"), "mine").unwrap();
    let out = RunCommand::new()
        .run(
            json!({"command": "rm -f ../victim.txt; mv mine.txt ../escaped.txt; echo > ../victim.txt"}),
            landlock_ctx(&inside, &inside),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.path().join("victim.txt")).unwrap(),
        "keep",
        "{out}"
    );
    assert!(!root.path().join("escaped.txt").exists(), "{out}");
    assert!(inside.join("mine.txt").exists(), "{out}");
}

/// The refusal itself, on any kernel: building a confined command fails before any
/// process exists, and the error says why and what to do. That the command then never
/// runs is checked end to end, on the disk, by
/// `sandbox_os::without_landlock_unasked_commands_are_refused_and_the_advice_works`.
#[tokio::test]
async fn landlock_unsupported_kernel_refuses_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = CommandSandbox::landlock(vec![dir.path().to_path_buf()]);
    let err = process::shell_command_with(
        "touch ran",
        dir.path(),
        &sandbox,
        KernelSupport::Unavailable("this kernel does not support Landlock"),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("refused"), "{msg}");
    assert!(msg.contains("does not support Landlock"), "{msg}");
    assert!(msg.contains(landlock::ADVICE), "{msg}");
}

#[tokio::test]
async fn landlock_git_commit_in_a_linked_worktree_needs_its_git_dirs() {
    require_features!(Landlock);
    let root = outside_temp_root();
    let repo = root.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    git(
        &repo,
        &["worktree", "add", "-q", "../wt", "-b", "crew/t1/work"],
    );
    let wt = root.path().join("wt");
    let commit = json!({"command": "echo hi > f.txt && git add f.txt && \
        git -c user.name=t -c user.email=t@t commit -q -m add && echo committed"});

    // Only the worktree itself: git cannot write its index (kept in the main repo), and
    // it is the sandbox that stops it, not anything else about the command.
    let out = RunCommand::new()
        .run(commit.clone(), landlock_ctx(&wt, &wt))
        .await
        .unwrap();
    assert!(!out.contains("committed"), "{out}");
    assert!(
        out.contains("index.lock") && out.contains("Permission denied"),
        "git should fail on its index for want of the sandbox grant: {out}"
    );
    let count = |r: &str| {
        let o = std::process::Command::new("git")
            .args(["rev-list", "--count", r])
            .current_dir(&repo)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(count("crew/t1/work"), "1", "{out}");

    // The production grant (what a subagent gets): the commit lands on its branch, but
    // the common dir's hooks/ and config, and the user's branch, stay out of reach.
    let common = repo.join(".git");
    let hook = common.join("hooks/pre-commit");
    let config_before = std::fs::read(common.join("config")).unwrap();
    let mut roots = vec![wt.clone()];
    roots.extend(landlock::git_writable_dirs(&wt));
    let mut c = ctx(&wt);
    c.sandbox = CommandSandbox::landlock(roots);
    let out = RunCommand::new().run(commit, c.clone()).await.unwrap();
    assert!(out.contains("committed"), "{out}");
    assert_eq!(count("crew/t1/work"), "2", "{out}");
    for attack in [
        format!("echo 'touch /tmp/pwned' > {}", hook.display()),
        format!(
            "echo '[core] fsmonitor = evil' >> {}",
            common.join("config").display()
        ),
        "git config core.hooksPath /tmp/evil".to_string(),
        "git update-ref refs/heads/main HEAD".to_string(),
    ] {
        let out = RunCommand::new()
            .run(json!({ "command": attack }), c.clone())
            .await
            .unwrap();
        assert!(!out.contains("exit code: 0"), "{attack}: {out}");
    }
    assert!(!hook.exists(), "a hook was planted in the main checkout");
    assert_eq!(std::fs::read(common.join("config")).unwrap(), config_before);
    assert_eq!(count("main"), "1");
}

#[tokio::test]
async fn landlock_protects_a_checkout_that_lives_in_the_temp_dir() {
    require_features!(Landlock);
    // The attack: the main checkout sits under /tmp (as in CI or a scratch clone), and a
    // confined subagent whose root is its own worktree writes into it through the temp
    // dir, which used to be writable as a whole.
    let victim = tempfile::tempdir().unwrap();
    let worktree = tempfile::tempdir().unwrap();
    let c = landlock_ctx(worktree.path(), worktree.path());
    let target = victim.path().join("planted.txt");
    let out = RunCommand::new()
        .run(
            json!({"command": format!("touch {}; echo tmp=$TMPDIR; touch \"$TMPDIR/scratch\" && echo scratch ok", target.display())}),
            c,
        )
        .await
        .unwrap();
    assert!(out.contains("Permission denied"), "{out}");
    assert!(
        !target.exists(),
        "the checkout in the temp dir was written to"
    );
    // Temp files still work, in the private sandbox temp dir.
    assert!(out.contains("scratch ok"), "{out}");
    assert!(
        out.contains(&landlock::sandbox_temp_dir().display().to_string()),
        "{out}"
    );
}

/// The Landlock test [`without_landlock_a_safety_test_fails_unless_knowingly_skipped`]
/// runs again in a child.
const LANDLOCK_TEST: &str = "landlock_blocks_rename_out_and_delete_outside";

/// The explicit state itself: this binary's own Landlock test, run again in a child with
/// Landlock simulated missing, fails; with the opt-out it passes and the ledger says it
/// was skipped, never that it ran.
#[test]
fn without_landlock_a_safety_test_fails_unless_knowingly_skipped() {
    let ledger = tempfile::tempdir().unwrap();
    let ledger = ledger.path().join("ledger.log");
    let run = |allow: bool| {
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args(["--exact", &support::own_test(module_path!(), LANDLOCK_TEST)])
            .env("CREW_TEST_SIMULATE_NO_LANDLOCK", "1")
            .env("CREW_SAFETY_LEDGER", &ledger)
            .env_remove("CREW_TEST_ALLOW_NO_LANDLOCK");
        if allow {
            c.env("CREW_TEST_ALLOW_NO_LANDLOCK", "1");
        }
        c.output().unwrap()
    };
    let failed = run(false);
    assert!(!failed.status.success(), "{failed:?}");
    assert!(
        String::from_utf8_lossy(&failed.stdout).contains("CREW_TEST_ALLOW_NO_LANDLOCK=1"),
        "{failed:?}"
    );
    let skipped = run(true);
    assert!(skipped.status.success(), "{skipped:?}");
    let lines = std::fs::read_to_string(&ledger).unwrap();
    let name = format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        support::own_test(module_path!(), LANDLOCK_TEST)
    );
    assert!(lines.contains(&format!("FAILED\t{name}")), "{lines}");
    assert!(lines.contains(&format!("skipped\t{name}")), "{lines}");
    assert!(!lines.contains(&format!("ran\t{name}")), "{lines}");
}
