//! The OS sandbox against real attacks: an opaque program (a python3 one-liner the
//! permission engine cannot see into) writing protected files, injecting keystrokes into
//! a terminal, and `env` printing the user's secrets. Each test checks the disk (or the
//! terminal) afterwards. Tests that need a kernel feature fail without it, unless knowingly opted out
//! (`support::kernel`).

use crate::support;
use crewmaster::tools::rule_names::LoadPolicy;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crewmaster::sandbox::landlock;
use crewmaster::tools::ToolContext;
use serde_json::json;
use support::sandbox::{confined, crew, python_write, repo, run, snapshot, tool_results};

#[tokio::test]
async fn a_confined_program_cannot_change_existing_protected_files() {
    require_sandbox!();
    let (_d, root) = repo();
    std::fs::write(root.join(".crew/settings.local.json"), "{}").unwrap();
    std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let before = snapshot(&root);
    for target in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".crew/settings.local.json",
    ] {
        let out = run(confined(&root), &python_write(target)).await;
        if support::kernel::require_named(
            &format!("{}::read_only_bind", support::kernel::test_name()),
            &[support::kernel::Feature::MountNamespaces],
        ) {
            // Stopped by the read-only bind, before anything was written.
            assert!(!out.contains("wrote"), "{target}: {out}");
            assert!(out.contains("Read-only file system"), "{target}: {out}");
        }
        // Either way (without mount namespaces, by the snapshot and restore after the
        // command) the protected file is as it was.
        assert_eq!(snapshot(&root), before, "{target}: {out}");
    }
    // Root in the namespace cannot undo the binds: Landlock forbids mount changes.
    let out = run(
        confined(&root),
        "umount .git/hooks; umount -l .git/config; mount -o remount,rw,bind .git/config; \
         echo '#!/bin/sh' > .git/hooks/pre-commit; echo x >> .git/config; echo done",
    )
    .await;
    assert!(out.contains("done"), "{out}");
    assert_eq!(snapshot(&root), before, "{out}");
    // Moving the directory away with the hooks inside does not work either.
    let out = run(
        confined(&root),
        "mv .git .git-old; mv .crew .crew-old; ls -a",
    )
    .await;
    assert_eq!(snapshot(&root), before);
    assert!(!root.join(".git-old").exists(), "{out}");
    assert!(!root.join(".crew-old").exists(), "{out}");
    // Nor moving it away and planting a repository of one's own in its place: the real
    // one comes back (held by its bind, or moved back after the command), the plant does
    // not stay at `.git`.
    let out = run(
        confined(&root),
        "mv .git .git-old; mkdir -p .git/hooks; printf '#!/bin/sh\\necho planted\\n' > \
         .git/hooks/pre-commit; echo '[core]' > .git/config; echo done",
    )
    .await;
    assert!(out.contains("done"), "{out}");
    assert_eq!(snapshot(&root), before, "{out}");
    assert!(!root.join(".git-old").exists(), "{out}");
    // Ordinary work in the checkout still works, committing included.
    let out = run(
        confined(&root),
        "echo hi > notes.txt && git add notes.txt && \
         git -c user.name=t -c user.email=t@t commit -q -m notes && git log --format=%s",
    )
    .await;
    assert!(out.contains("stdout:\nnotes"), "{out}");
}

#[tokio::test]
async fn protected_files_a_confined_program_creates_are_removed_loudly() {
    require_sandbox!();
    let (_d, root) = repo();
    std::fs::remove_dir_all(root.join(".crew")).unwrap();
    std::fs::remove_dir_all(root.join(".git/hooks")).unwrap();
    for target in [
        ".git/hooks/pre-commit",
        ".crew/settings.local.json",
        ".claude/settings.json",
    ] {
        let out = run(confined(&root), &python_write(target)).await;
        // Nothing could stop the creation (a bind needs an existing target), so the
        // snapshot put things back and the result says so.
        assert!(out.contains("WARNING"), "{target}: {out}");
        assert!(out.contains("restored"), "{target}: {out}");
        assert!(!root.join(target).exists(), "{target} survived: {out}");
    }
}

#[tokio::test]
async fn a_background_program_is_held_to_the_same_rules() {
    require_sandbox!();
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let before = snapshot(&root);
    let script = root.join("script.json");
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "run_command", "input": {
            "command": format!(
                "{}; {}; {}",
                python_write(".git/hooks/pre-commit"),
                python_write(".crew/settings.local.json"),
                python_write(".claude/settings.json")
            ),
            "run_in_background": true}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "sleep 2"}}]},
        {"text": "done"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(&root), before);
    // The file no bind could cover was created, then removed when the task ended, and the
    // task says so.
    assert!(!root.join(".claude/settings.json").exists());
    let list = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["tasks", "list", "--json"])
        .current_dir(&root)
        .env("HOME", &home)
        .output()
        .unwrap();
    let tasks: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let result = tasks[0]["result"].as_str().unwrap_or_default();
    assert!(result.contains("WARNING"), "{tasks}");
    assert!(result.contains(".claude"), "{tasks}");
}

#[test]
fn opaque_programs_under_dont_ask_leave_protected_files_alone() {
    require_sandbox!();
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join(".crew/settings.json"), "{}").unwrap();
    let before = snapshot(&root);
    let calls: Vec<_> = [
        ".git/hooks/pre-commit",
        ".git/config",
        ".crew/settings.local.json",
        ".crew/settings.json",
    ]
    .iter()
    .map(|t| json!({"name": "run_command", "input": {"command": python_write(t)}}))
    // The same attacks spelled out, which the engine itself denies.
    .chain(
        [
            "printf '#!/bin/sh\\ntouch /tmp/pwned' > .git/hooks/pre-commit",
            "git config core.hooksPath /tmp",
        ]
        .iter()
        .map(|c| json!({"name": "run_command", "input": {"command": c}})),
    )
    .collect();
    let script = root.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string(),
    )
    .unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The engine allowed the opaque calls (the OS layer is what stopped them) and denied
    // the spelled-out ones.
    let results = tool_results(&root);
    assert!(results.contains("rc="), "{stderr}");
    assert_eq!(results.matches("a protected path").count(), 2, "{results}");
    assert_eq!(snapshot(&root), before, "{stderr}");
    assert!(!Path::new("/tmp/pwned").exists());
}

#[test]
fn commands_do_not_see_secrets_unless_passed_through() {
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join(".crew/settings.local.json"),
        r#"{"commandEnv": {"passthrough": ["NPM_TOKEN"]}}"#,
    )
    .unwrap();
    let script = root.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "run_command", "input": {"command": "env | sort"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = crew(
        &root,
        &home,
        &script,
        "bypassPermissions",
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-leak"),
            ("GITHUB_TOKEN", "ghp_leak"),
            ("MY_PASSWORD", "hunter2"),
            ("Db_Secret", "s3cret"),
            ("NPM_TOKEN", "npm_passed"),
            ("HARMLESS_SETTING", "visible"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&root);
    assert!(
        results.contains("HARMLESS_SETTING=visible"),
        "env did not run: {results}"
    );
    assert!(results.contains("NPM_TOKEN=npm_passed"), "{results}");
    for leak in ["sk-ant-leak", "ghp_leak", "hunter2", "s3cret"] {
        // The first request holds the user's prompt only; any hit is in a tool result.
        assert!(!results.contains(leak), "{leak} leaked: {results}");
    }
}

/// Reads what arrives on a pty master for `wait`.
fn drain(reader: Box<dyn std::io::Read + Send>, wait: Duration) -> Vec<u8> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = reader;
        let mut buf = [0u8; 256];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + wait;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(bytes) => got.extend(bytes),
            Err(_) => break,
        }
    }
    got
}

#[tokio::test]
async fn a_confined_command_cannot_inject_keystrokes_into_a_terminal() {
    require_sandbox!();
    use portable_pty::{PtySize, native_pty_system};
    let pair = native_pty_system()
        .openpty(PtySize::default())
        .expect("open a pty");
    let slave = pair.master.tty_name().expect("the pty has a name");
    let reader = pair.master.try_clone_reader().unwrap();
    let (_d, root) = repo();
    let script = format!(
        "import fcntl, os, termios\n\
         print('sid', os.getsid(0))\n\
         try:\n\
         \x20   os.open('/dev/tty', os.O_RDONLY)\n\
         except OSError as e:\n\
         \x20   print('no ctty', e.errno)\n\
         for flags, name in ((os.O_RDONLY, 'ro'), (os.O_RDWR, 'rw')):\n\
         \x20   try:\n\
         \x20       fd = os.open('{}', flags | os.O_NOCTTY)\n\
         \x20   except OSError as e:\n\
         \x20       print(name, 'open refused', e.errno); continue\n\
         \x20   try:\n\
         \x20       fcntl.ioctl(fd, termios.TIOCSTI, b'x'); print(name, 'INJECTED')\n\
         \x20   except OSError as e:\n\
         \x20       print(name, 'ioctl refused', e.errno)\n",
        slave.display()
    );
    std::fs::write(root.join("inject.py"), script).unwrap();
    let out = run(confined(&root), "python3 inject.py").await;
    // Its own session, not the test's: led by crew's intermediate process, or, in its own
    // PID namespace, by a process outside it (sid 0); either way there is no controlling
    // terminal (ENXIO).
    // SAFETY: plain system call.
    let own_sid = unsafe { nix::libc::getsid(0) };
    if own_sid == 0 {
        // The test itself runs in a PID namespace whose session leader is outside it (a
        // container's runner), so both sides read 0 and the ids cannot tell the sessions
        // apart; the missing controlling terminal below is what still shows.
        eprintln!("note: this test's own session leader is outside its PID namespace");
    } else {
        assert!(
            !out.contains(&format!("sid {own_sid}\n")),
            "still in the test's session: {out}"
        );
    }
    assert!(out.contains("sid "), "{out}");
    assert!(out.contains("no ctty 6"), "{out}");
    assert!(out.contains("rw open refused"), "{out}");
    if landlock::restricts_device_ioctls() {
        assert!(out.contains("ro ioctl refused"), "{out}");
    } else {
        eprintln!("note: Landlock ABI < 5 here; device ioctls are not restricted by Landlock");
    }
    assert!(!out.contains("INJECTED"), "{out}");
    let arrived = drain(reader, Duration::from_millis(500));
    assert!(!arrived.contains(&b'x'), "keystrokes arrived: {arrived:?}");
    drop(pair.slave);
}

#[tokio::test]
async fn an_unconfined_command_runs_in_its_own_session() {
    require_features!(Python3);
    let dir = tempfile::tempdir().unwrap();
    // The command's session is led by crew's guardian for it (crates/crew-sandbox/src/process/
    // lifeline.rs), not by the shell: what matters is that it is not crew's session.
    let ours = nix::unistd::getsid(None).unwrap();
    let out = run(
        ToolContext::new(dir.path(), "test"),
        &format!(
            "python3 -c 'import os; print(\"sid\", os.getsid(0) != {ours}); open(\"/dev/tty\")'"
        ),
    )
    .await;
    assert!(out.contains("sid True"), "{out}");
    // No controlling terminal: /dev/tty cannot be opened.
    assert!(out.contains("No such device or address"), "{out}");
}

#[test]
fn a_cloned_repository_cannot_pass_secrets_through() {
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join(".crew/settings.json"),
        r#"{"commandEnv": {"passthrough": ["GITHUB_TOKEN"]}}"#,
    )
    .unwrap();
    std::fs::write(
        root.join(".crew/settings.local.json"),
        r#"{"commandEnv": {"passthrough": ["NPM_TOKEN"]}}"#,
    )
    .unwrap();
    let (policy, warnings) = crewmaster::permission::Policy::load(&root, Some(&home)).unwrap();
    assert_eq!(policy.env_passthrough, ["NPM_TOKEN"]);
    assert!(
        warnings
            .iter()
            .any(|w| w.to_string().contains("commandEnv.passthrough is ignored")),
        "{warnings:?}"
    );
}

#[test]
fn an_opaque_program_cannot_read_credentials_under_dont_ask() {
    require_features!(Landlock, Python3, MountNamespaces);
    let (_d, root) = repo();
    let home = root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "SSH-PRIVATE-KEY").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password NETRC-PASSWORD").unwrap();
    let reader = "python3 -c \"import os; h=os.environ['HOME']; \
        [print(p, repr(open(h+p).read()) if os.path.exists(h+p) else 'missing') \
        for p in ('/.s'+'sh/id_rsa', '/.ne'+'trc')]\"";
    let script = root.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "run_command", "input": {"command": reader}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = crew(&root, &home, &script, "dontAsk", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&root);
    assert!(
        results.contains("exit code"),
        "the engine did not run it: {results}"
    );
    assert!(results.contains("/.ssh/id_rsa missing"), "{results}");
    assert!(results.contains("/.netrc ''"), "{results}");
    assert!(!results.contains("SSH-PRIVATE-KEY"), "{results}");
    assert!(!results.contains("NETRC-PASSWORD"), "{results}");
    // The files themselves are untouched.
    assert_eq!(
        std::fs::read_to_string(home.join(".netrc")).unwrap(),
        "machine x password NETRC-PASSWORD"
    );
}
