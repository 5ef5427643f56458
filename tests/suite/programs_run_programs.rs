//! Issue 25 items 4 and 7 end to end: a Bash deny rule holds against programs that run
//! programs (interpreters with inline code, `make -f /dev/stdin`, aliases, package
//! runners), and a rule naming a wrapper does not grant what it wraps. Each test runs the
//! real `crew` binary on a scripted model and checks the disk afterwards: the bare remote's
//! refs, or the file the wrapped command would remove.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `crew -p go` on a scripted model whose turns each make one `run_command` call, in
/// `mode`, with `HOME=home`; returns stdout (crew's events, `--output-format events`).
fn crew_run(cwd: &Path, home: &Path, mode: &str, commands: &[&str]) -> String {
    let turns: Vec<serde_json::Value> = commands
        .iter()
        .map(|c| serde_json::json!({"text": "go", "tool_calls": [{"name": "run_command", "input": {"command": c}}]}))
        .chain([serde_json::json!({"text": "done"})])
        .collect();
    let script = home.join("script.json");
    std::fs::write(&script, serde_json::json!({ "turns": turns }).to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "go", "--model"])
        .arg(format!("script:{}", script.display()))
        .args([
            "--permission-mode",
            mode,
            "--output-format",
            "events",
            "--cwd",
        ])
        .arg(cwd)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("crew runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A project with one commit, a bare remote `origin` inside it that it can push to, a separate home, and
/// local settings `settings`.
struct Remote {
    _tmp: tempfile::TempDir,
    proj: PathBuf,
    home: PathBuf,
    bare: PathBuf,
}

fn remote(settings: &str) -> Remote {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    // The remote lies inside the project: the write profile a dontAsk command runs in
    // lets it write there, so only the engine's decision stands between it and a push.
    let (proj, home) = (base.join("proj"), base.join("home"));
    let bare = proj.join("remote.git");
    std::fs::create_dir_all(&home).unwrap();
    support::committed_repo(&proj, &[("README.md", "keep me\n")]);
    support::git(&base, &["init", "-q", "--bare", bare.to_str().unwrap()]);
    support::git(&proj, &["remote", "add", "origin", bare.to_str().unwrap()]);
    support::git(&proj, &["config", "push.default", "current"]);
    support::put(&proj, ".crew/settings.local.json", settings);
    Remote {
        _tmp: tmp,
        proj,
        home,
        bare,
    }
}

/// The refs the bare remote holds (empty while nothing was pushed).
fn pushed_refs(bare: &Path) -> String {
    let out = Command::new("git")
        .args(["for-each-ref", "--format=%(refname)"])
        .current_dir(bare)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const DENY_PUSH: &str = r#"{"permissions":{"deny":["Bash(git push:*)"]}}"#;

/// The control: with no deny rule, the same push through an interpreter really pushes
/// under dontAsk, so the tests below would see a push if the rule did not hold.
#[test]
fn the_remote_records_a_push_when_nothing_denies_it() {
    if !support::kernel::require(&[support::kernel::Feature::Landlock]) {
        return;
    }
    let r = remote(r#"{"permissions":{}}"#);
    let out = crew_run(
        &r.proj,
        &r.home,
        "dontAsk",
        &["python3 -c \"import os; os.system('git push -q origin HEAD:refs/heads/main')\""],
    );
    assert!(
        pushed_refs(&r.bare).contains("refs/heads/main"),
        "the control push did not happen, so the tests below prove nothing: {out}"
    );
}

#[test]
fn interpreters_with_inline_code_do_not_push_past_a_deny_rule() {
    let mut commands = vec![
        "python3 -c \"import os; os.system('git push -q origin HEAD:refs/heads/py')\"",
        "python3 -Ic \"import subprocess; subprocess.run(['git','push','-q','origin','HEAD:refs/heads/py2'])\"",
        "perl -e 'system(\"git push -q origin HEAD:refs/heads/perl\")'",
        "perl -E 'system(\"git\", \"push\", \"-q\", \"origin\", \"HEAD:refs/heads/perl2\")'",
        "sh -c \"$(printf 'git push -q origin HEAD:refs/heads/sh')\"",
        "awk 'BEGIN { system(\"git push -q origin HEAD:refs/heads/awk\") }'",
        "echo 'git push -q origin HEAD:refs/heads/pipe' | bash",
        "G=git; $G push -q origin HEAD:refs/heads/var",
    ];
    if have("node") {
        commands.push(
            "node -e \"require('child_process').execSync('git push -q origin HEAD:refs/heads/node')\"",
        );
    }
    if have("ruby") {
        commands.push("ruby -e 'system(\"git push -q origin HEAD:refs/heads/ruby\")'");
    }
    let r = remote(DENY_PUSH);
    let out = crew_run(&r.proj, &r.home, "dontAsk", &commands);
    assert_eq!(
        pushed_refs(&r.bare),
        "",
        "a denied push went through: {out}"
    );
    assert!(out.contains("\"type\":\"tool_result\""), "{out}");
}

#[test]
fn make_aliases_and_package_runners_do_not_push_past_a_deny_rule() {
    let r = remote(DENY_PUSH);
    support::put(
        &r.proj,
        "Makefile",
        "all:\n\tgit push -q origin HEAD:refs/heads/makefile\n",
    );
    let out = crew_run(
        &r.proj,
        &r.home,
        "dontAsk",
        &[
            "make -f /dev/stdin <<< $'all:\\n\\tgit push -q origin HEAD:refs/heads/make'",
            "make",
            "make -s all",
            "shopt -s expand_aliases; alias g=git; g push -q origin HEAD:refs/heads/alias",
            "alias p='git push'; p -q origin HEAD:refs/heads/alias2",
            "f() { git \"$@\"; }; f push -q origin HEAD:refs/heads/func",
            "eval 'git pu''sh -q origin HEAD:refs/heads/eval'",
            "echo 'git push -q origin HEAD:refs/heads/src' > p.sh; source p.sh",
            "echo push | xargs -I{} git {} -q origin HEAD:refs/heads/xargs",
            "find . -maxdepth 0 -exec git push -q origin HEAD:refs/heads/find \\;",
            "env -S 'git push -q origin HEAD:refs/heads/envs'",
            "npm exec -c 'git push -q origin HEAD:refs/heads/npm'",
            "npx -c 'git push -q origin HEAD:refs/heads/npx'",
        ],
    );
    assert_eq!(
        pushed_refs(&r.bare),
        "",
        "a denied push went through: {out}"
    );
}

/// `Bash(timeout:*)` names only the wrapper: the wrapped `rm` needs its own rule, so in
/// default mode (headless: nobody to ask) README.md stays.
#[test]
fn a_rule_naming_a_wrapper_does_not_grant_what_it_wraps() {
    for (rule, command) in [
        ("Bash(timeout:*)", "timeout 5 rm -f README.md"),
        ("Bash(env:*)", "env rm -f README.md"),
        ("Bash(nice:*)", "nice rm -f README.md"),
        ("Bash(nohup:*)", "nohup rm -f README.md"),
        ("Bash(xargs:*)", "echo README.md | xargs rm -f"),
        ("Bash(timeout 5:*)", "timeout 5 rm -f README.md"),
    ] {
        let r = remote(&format!(r#"{{"permissions":{{"allow":["{rule}"]}}}}"#));
        let out = crew_run(&r.proj, &r.home, "default", &[command]);
        assert!(
            r.proj.join("README.md").exists(),
            "`{command}` under {rule} removed README.md: {out}"
        );
    }
}

/// The over-block list stays allowed unasked while a Bash deny rule exists, and the
/// programs that run programs are held by it in every mode (decisions only).
#[test]
fn deny_rules_hold_against_runners_without_over_blocking() {
    use crewmaster::permission::{PermissionMode, Verdict};
    use support::permission::{Fixture, cmd};
    let f = Fixture::new();
    f.settings(
        "local",
        r#"{"permissions":{"deny":["Bash(git push:*)"],"allow":["Bash(python3:*)","Bash(make:*)","Bash(npm:*)"]}}"#,
    );
    for (c, mode) in [
        ("git log --oneline -5", PermissionMode::Default),
        (
            "ls -la src && grep -rn main src | wc -l",
            PermissionMode::Default,
        ),
        ("git -C . status", PermissionMode::Default),
        ("sort f | uniq -c", PermissionMode::Default),
        ("cargo build && git diff", PermissionMode::DontAsk),
        ("npm test", PermissionMode::Default),
    ] {
        let d = f.check("run_command", &cmd(c), mode);
        assert_eq!(d.verdict, Verdict::Allow, "`{c}` in {mode:?}: {d:?}");
    }
    for c in [
        "python3 -c 'print(1)'",
        "python3 x.py",
        "make",
        "npm exec -c 'git push'",
        "npx -y x",
        "pnpm dlx x",
        "yarn exec x",
        "bunx x",
        "bun x x",
        "uvx x",
        "uv run x",
        "pipx run x",
        "echo x | xargs git",
        "env -S 'git push'",
        "eval 'git pu''sh'",
        "source ./x.sh",
        ". ./x.sh",
    ] {
        let d = f.check("run_command", &cmd(c), PermissionMode::DontAsk);
        assert_eq!(d.verdict, Verdict::Deny, "`{c}`: {d:?}");
        let d = f.check("run_command", &cmd(c), PermissionMode::Default);
        assert_ne!(d.verdict, Verdict::Allow, "`{c}`: {d:?}");
    }
    // Without a Bash deny or ask rule, the granted interpreter runs (confined by the OS).
    let g = Fixture::new();
    g.settings("local", r#"{"permissions":{"allow":["Bash(python3:*)"]}}"#);
    let d = g.check(
        "run_command",
        &cmd("python3 -c 'print(1)'"),
        PermissionMode::Default,
    );
    assert_eq!(d.verdict, Verdict::Allow, "{d:?}");
}
