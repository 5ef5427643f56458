//! Protected paths are a hard check for commands too: a redirect, a named target of a
//! command that is not read-only, or a `git config` write aimed at `.git/hooks`,
//! `.git/config`, a worktree's `.git` link or a settings file is denied in every mode,
//! with a reason naming the path — and the same commands on ordinary files are not.

use crate::support;

use crewmaster::permission::{PermissionMode, Source, Verdict};
use support::permission::{Fixture, cmd};

use PermissionMode::*;

const MODES: [PermissionMode; 5] = [Strict, Default, AcceptEdits, BypassPermissions, DontAsk];

#[test]
fn command_writes_to_protected_paths_are_denied_in_every_mode() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.proj.join(".git/hooks")).unwrap();
    std::fs::write(f.proj.join(".git/config"), "[core]\n").unwrap();
    // Even a blanket allow rule does not open them.
    f.settings("local", r#"{"permissions":{"allow":["Bash"]}}"#);
    let attacks = [
        ("printf x > .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        (
            "echo '#!/bin/sh' >> .git/hooks/post-checkout",
            ".git/hooks/post-checkout",
        ),
        ("cp evil .git/config", ".git/config"),
        (
            "tee .crew/settings.local.json < x",
            ".crew/settings.local.json",
        ),
        ("sed -i s/a/b/ .git/config", ".git/config"),
        ("mv x .claude/settings.json", ".claude/settings.json"),
        ("ln -s /tmp/evil .git/hooks/pre-push", ".git/hooks/pre-push"),
        ("cd .git && printf x > hooks/pre-commit", "hooks/pre-commit"),
        ("bash -c 'cat x > .git/config'", ".git/config"),
        ("printf 'gitdir: /tmp/evil' > .git", ".git"),
        ("git config core.hooksPath x", "git configuration"),
        ("git config --add core.pager 'sh -c x'", "git configuration"),
        ("git config --local core.fsmonitor x", "git configuration"),
        (
            "git config --file .git/config core.hooksPath x",
            "git configuration",
        ),
        ("git config --unset core.hooksPath", "git configuration"),
        ("git -C . config alias.st '!sh'", "git configuration"),
    ];
    for (attack, named) in attacks {
        for mode in MODES {
            let d = f.check("run_command", &cmd(attack), mode);
            assert_eq!(d.verdict, Verdict::Deny, "{attack} in {mode}: {d:?}");
            assert_eq!(d.source, Source::Sandbox, "{attack}: {d:?}");
            assert!(d.reason.contains("protected"), "{attack}: {}", d.reason);
            assert!(d.reason.contains(named), "{attack}: {}", d.reason);
        }
    }
}

#[test]
fn ordinary_writes_and_git_config_reads_are_not_caught() {
    let f = Fixture::new();
    std::fs::write(f.proj.join(".git/config"), "[core]\n").unwrap();
    for ok in [
        "git config --get user.name",
        "git config user.email",
        "git config --list",
        "cat .git/config",
        "grep hooksPath .git/config",
        "ls .git/hooks",
        "cd .git && ls",
    ] {
        let d = f.check("run_command", &cmd(ok), DontAsk);
        assert_eq!(d.verdict, Verdict::Allow, "{ok}: {d:?}");
    }
    for ok in [
        "printf x > notes.txt",
        "cp a b",
        "sed -i s/a/b/ src/main.rs",
    ] {
        let d = f.check("run_command", &cmd(ok), BypassPermissions);
        assert_eq!(d.verdict, Verdict::Allow, "{ok}: {d:?}");
    }
}
