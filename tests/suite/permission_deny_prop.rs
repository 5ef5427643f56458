//! Property (issue 9, class 2): with `Bash(git push:*)` and `Bash(rm:*)` denied, a
//! command that really runs `git push` or `rm` is never allowed, in any permission mode,
//! whatever allow rules exist. Commands come from a grammar of wrappers (sudo, env,
//! timeout, nice, nohup, bash -c, sh -c, xargs, busybox, find -exec, eval, echo | bash,
//! here-strings, toybox, coreutils --coreutils-prog, awk system(), sed `1e`, process
//! substitutions feeding bash) × spellings of the program (`/usr/bin/git`, `git -C .`, `git -c a.b=c`,
//! `git --no-pager`, `git send-pack`, …) × separators (`;`, `&&`, `||`, `|`, newline) × quoting (single,
//! double, backslash, split) × expansions (`$(…)`, `"$X"`, and `$(…)` hidden in `[[ ]]`,
//! arithmetic, `${…}` operands and case patterns).
//!
//! A second test runs the attack for real: generated commands run in bash in a fresh
//! repository whose pre-push hook leaves a marker (with `x` and `build/` to remove);
//! whenever one really pushed or removed something, the engine must not have allowed it,
//! and most of them must really run (which keeps the grammar honest).
//!
//! 256 cases by default (and a twentieth of that, at least 24, run for real);
//! `PROPTEST_CASES=20000 cargo test --release --test permission_deny_prop` for a long
//! run.

use crate::support;

use std::process::{Command, Stdio};

use crewmaster::permission::{PermissionMode, Policy, Verdict, check};
use proptest::prelude::*;
use support::git;
use support::permission::{Fixture, cmd, request};

/// How a word or a script is quoted.
#[derive(Debug, Clone, Copy)]
enum Quote {
    Plain,
    Single,
    Double,
    Backslash,
    /// `pu''sh`: an empty quoted string in the middle.
    Split,
}

/// A wrapper around the command built so far.
#[derive(Debug, Clone, Copy)]
enum Wrap {
    Sudo,
    Env,
    Timeout,
    Nice,
    Nohup,
    BashC(Quote),
    ShC(Quote),
    Xargs,
    Busybox(Quote),
    FindExec,
    Eval(Quote),
    EchoBash(Quote),
    HereString(Quote),
    /// `toybox rm …` (rm only; else `toybox sh -c`).
    Toybox(Quote),
    /// `coreutils --coreutils-prog=rm …` (rm only; else through `bash -c`).
    Coreutils,
    /// `awk 'BEGIN{system("…")}'`.
    AwkSystem(Quote),
    /// `echo | sed '1e …'` (single-line commands; else through `bash -c`).
    SedE(Quote),
    /// `bash < <(echo …)`.
    ProcSubstIn(Quote),
    /// `echo … > >(bash)`.
    ProcSubstOut(Quote),
}

/// How one word of the core command is computed.
#[derive(Debug, Clone, Copy)]
enum Expansion {
    None,
    /// `$(echo push)`.
    Substitution,
    /// `X=push; git "$X"`.
    Variable,
    /// The whole command in a substitution hidden in a test, arithmetic or a
    /// parameter-expansion operand (`HIDDEN[n]`, `@` standing for the command).
    Hidden(usize),
}

/// Where bash runs a substitution the word parser leaves as raw text.
const HIDDEN: &[&str] = &[
    "[[ $(@) ]]",
    "[[ -n $(@) ]]",
    "[[ x == `@` ]]",
    "(( $(@) ))",
    "echo $(( $(@) ))",
    "echo $(( 1 + `@` ))",
    "echo $[ $(@) ]",
    "for (( i = $(@); i < 0; i++ )); do :; done",
    "echo ${y:-$(@)}",
    "echo \"${y:=$(@)}\"",
    "y=1; echo ${y:+$(@)}",
    "echo ${y:?$(@)}",
    "y=1; echo ${y#$(@)}",
    "y=1; echo ${y%%$(@)}",
    "y=1; echo ${y/$(@)/r}",
    "y=1; echo ${y:$(@)}",
    "echo \"${a[$(@)]}\"",
    "y=1; echo ${y:0:$(@)}",
    "case a in $(@)) ;; esac",
];

#[derive(Debug, Clone)]
struct Case {
    git: bool,
    spelling: usize,
    word_quotes: Vec<Quote>,
    expansion: Expansion,
    wraps: Vec<Wrap>,
    sep: usize,
    sep_at: usize,
    sep_before: bool,
    mode: PermissionMode,
    allow_all: bool,
}

/// The command built so far: words (shell text each) or a whole script.
enum Cmd {
    Argv(Vec<String>),
    Script(String),
}

impl Cmd {
    fn text(&self) -> String {
        match self {
            Cmd::Argv(w) => w.join(" "),
            Cmd::Script(s) => s.clone(),
        }
    }

    /// As words, running a script through `bash -c` if need be.
    fn argv(self) -> Vec<String> {
        match self {
            Cmd::Argv(w) => w,
            Cmd::Script(s) => vec!["bash".into(), "-c".into(), quote(&s, Quote::Single)],
        }
    }
}

/// `s` as one shell word, quoted in the given style.
fn quote(s: &str, q: Quote) -> String {
    match q {
        Quote::Plain
            if s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=,".contains(c)) =>
        {
            s.to_string()
        }
        Quote::Plain | Quote::Single => format!("'{}'", s.replace('\'', r"'\''")),
        Quote::Double => {
            let mut out = String::from("\"");
            for c in s.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
            out
        }
        // A backslash before a newline would join lines: quote those singly.
        Quote::Backslash if s.contains('\n') => quote(s, Quote::Single),
        Quote::Backslash => s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_string()
                } else {
                    format!("\\{c}")
                }
            })
            .collect(),
        Quote::Split
            if s.len() >= 2
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,".contains(c)) =>
        {
            let mid = s.len() / 2;
            format!("{}''{}", &s[..mid], &s[mid..])
        }
        Quote::Split => quote(s, Quote::Single),
    }
}

const GIT_SPELLINGS: &[&[&str]] = &[
    &["git", "push"],
    &["/usr/bin/git", "push"],
    &["git", "-C", ".", "push"],
    &["git", "-c", "a.b=c", "push"],
    &["git", "--no-pager", "push"],
    &["git", "-C", ".", "--no-pager", "push", "origin", "main"],
    // Push plumbing (no pre-push hook: the real run sees the remote's new branch).
    &["git", "send-pack", "../b.git", "main"],
];
const RM_SPELLINGS: &[&[&str]] = &[
    &["rm", "x"],
    &["/bin/rm", "-f", "x"],
    &["rm", "-rf", "build"],
];
const SEPS: &[&str] = &[" ; ", " && ", " || ", " | ", "\n"];

/// The core command: the program's spelling, its words quoted, one word maybe computed.
fn core(c: &Case) -> Cmd {
    let spelling = if c.git {
        GIT_SPELLINGS[c.spelling % GIT_SPELLINGS.len()]
    } else {
        RM_SPELLINGS[c.spelling % RM_SPELLINGS.len()]
    };
    // The word that names what runs: `push` for git, the program for rm.
    let key = if c.git {
        spelling.iter().position(|w| *w == "push").unwrap_or(1)
    } else {
        0
    };
    let mut words: Vec<String> = spelling
        .iter()
        .enumerate()
        .map(|(i, w)| quote(w, c.word_quotes[i % c.word_quotes.len()]))
        .collect();
    match c.expansion {
        Expansion::None => Cmd::Argv(words),
        Expansion::Substitution => {
            words[key] = format!("$(echo {})", spelling[key]);
            Cmd::Argv(words)
        }
        Expansion::Variable => {
            words[key] = "\"$X\"".into();
            Cmd::Script(format!("X={}; {}", spelling[key], words.join(" ")))
        }
        Expansion::Hidden(n) => {
            Cmd::Script(HIDDEN[n % HIDDEN.len()].replace('@', &words.join(" ")))
        }
    }
}

fn wrap(cmd: Cmd, w: Wrap) -> Cmd {
    let argv_wrap = |prefix: &[&str], cmd: Cmd| {
        let mut words: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        words.extend(cmd.argv());
        Cmd::Argv(words)
    };
    match w {
        Wrap::Sudo => argv_wrap(&["sudo", "-u", "root"], cmd),
        Wrap::Env => argv_wrap(&["env", "A=1"], cmd),
        Wrap::Timeout => argv_wrap(&["timeout", "-k", "1", "5"], cmd),
        Wrap::Nice => argv_wrap(&["nice", "-n", "5"], cmd),
        Wrap::Nohup => argv_wrap(&["nohup"], cmd),
        Wrap::Xargs => argv_wrap(&["xargs"], cmd),
        Wrap::FindExec => {
            let mut words = vec!["find", ".", "-maxdepth", "0", "-exec"]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>();
            words.extend(cmd.argv());
            words.push("\\;".into());
            Cmd::Argv(words)
        }
        Wrap::Busybox(q) => match cmd {
            Cmd::Argv(w) if w[0] == "rm" => argv_wrap(&["busybox"], Cmd::Argv(w)),
            other => Cmd::Script(format!("busybox sh -c {}", quote(&other.text(), q))),
        },
        Wrap::BashC(q) => Cmd::Script(format!("bash -c {}", quote(&cmd.text(), q))),
        Wrap::ShC(q) => Cmd::Script(format!("sh -c {}", quote(&cmd.text(), q))),
        Wrap::Eval(q) => Cmd::Script(format!("eval {}", quote(&cmd.text(), q))),
        Wrap::EchoBash(q) => Cmd::Script(format!("echo {} | bash", quote(&cmd.text(), q))),
        Wrap::HereString(q) => Cmd::Script(format!("bash <<< {}", quote(&cmd.text(), q))),
        Wrap::Toybox(q) => match cmd {
            Cmd::Argv(w) if w[0] == "rm" => argv_wrap(&["toybox"], Cmd::Argv(w)),
            other => Cmd::Script(format!("toybox sh -c {}", quote(&other.text(), q))),
        },
        Wrap::Coreutils => match cmd {
            Cmd::Argv(w) if w[0] == "rm" => argv_wrap(
                &["coreutils", "--coreutils-prog=rm"],
                Cmd::Argv(w[1..].to_vec()),
            ),
            other => argv_wrap(&[], Cmd::Argv(other.argv())),
        },
        Wrap::AwkSystem(q) => {
            let text = cmd
                .text()
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            Cmd::Script(format!(
                "awk {}",
                quote(&format!("BEGIN{{system(\"{text}\")}}"), q)
            ))
        }
        Wrap::SedE(q) => {
            let text = cmd.text();
            if text.contains('\n') {
                Cmd::Script(format!("bash -c {}", quote(&text, q)))
            } else {
                Cmd::Script(format!("echo | sed {}", quote(&format!("1e {text}"), q)))
            }
        }
        Wrap::ProcSubstIn(q) => Cmd::Script(format!("bash < <(echo {})", quote(&cmd.text(), q))),
        Wrap::ProcSubstOut(q) => Cmd::Script(format!("echo {} > >(bash)", quote(&cmd.text(), q))),
    }
}

fn render(c: &Case) -> String {
    let mut cmd = core(c);
    for (i, w) in c.wraps.iter().enumerate() {
        if i == c.sep_at {
            cmd = separate(cmd, c);
        }
        cmd = wrap(cmd, *w);
    }
    if c.sep_at >= c.wraps.len() {
        cmd = separate(cmd, c);
    }
    cmd.text()
}

fn separate(cmd: Cmd, c: &Case) -> Cmd {
    let sep = SEPS[c.sep % SEPS.len()];
    Cmd::Script(if c.sep_before {
        format!("ls{sep}{}", cmd.text())
    } else {
        format!("{}{sep}ls", cmd.text())
    })
}

fn quote_strategy() -> impl Strategy<Value = Quote> {
    prop_oneof![
        Just(Quote::Plain),
        Just(Quote::Single),
        Just(Quote::Double),
        Just(Quote::Backslash),
        Just(Quote::Split),
    ]
}

fn wrap_strategy() -> impl Strategy<Value = Wrap> {
    prop_oneof![
        Just(Wrap::Sudo),
        Just(Wrap::Env),
        Just(Wrap::Timeout),
        Just(Wrap::Nice),
        Just(Wrap::Nohup),
        quote_strategy().prop_map(Wrap::BashC),
        quote_strategy().prop_map(Wrap::ShC),
        Just(Wrap::Xargs),
        quote_strategy().prop_map(Wrap::Busybox),
        Just(Wrap::FindExec),
        quote_strategy().prop_map(Wrap::Eval),
        quote_strategy().prop_map(Wrap::EchoBash),
        quote_strategy().prop_map(Wrap::HereString),
        quote_strategy().prop_map(Wrap::Toybox),
        Just(Wrap::Coreutils),
        quote_strategy().prop_map(Wrap::AwkSystem),
        quote_strategy().prop_map(Wrap::SedE),
        quote_strategy().prop_map(Wrap::ProcSubstIn),
        quote_strategy().prop_map(Wrap::ProcSubstOut),
    ]
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let mode = prop_oneof![
        Just(PermissionMode::Strict),
        Just(PermissionMode::Default),
        Just(PermissionMode::AcceptEdits),
        Just(PermissionMode::BypassPermissions),
        Just(PermissionMode::DontAsk),
    ];
    let expansion = prop_oneof![
        2 => Just(Expansion::None),
        1 => Just(Expansion::Substitution),
        1 => Just(Expansion::Variable),
        2 => (0..HIDDEN.len()).prop_map(Expansion::Hidden),
    ];
    (
        (
            any::<bool>(),
            0usize..8,
            prop::collection::vec(quote_strategy(), 1..4),
            expansion,
        ),
        prop::collection::vec(wrap_strategy(), 0..4),
        (0usize..5, 0usize..5, any::<bool>()),
        (mode, any::<bool>()),
    )
        .prop_map(
            |(
                (git, spelling, word_quotes, expansion),
                wraps,
                (sep, sep_at, sep_before),
                (mode, allow_all),
            )| Case {
                git,
                spelling,
                word_quotes,
                expansion,
                wraps,
                sep,
                sep_at,
                sep_before,
                mode,
                allow_all,
            },
        )
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn policies(f: &Fixture) -> (Policy, Policy) {
    f.settings(
        "user",
        r#"{"permissions":{"deny":["Bash(git push:*)","Bash(rm:*)"]}}"#,
    );
    let deny_only = f.policy();
    f.settings(
        "local",
        r#"{"permissions":{"allow":["Bash","Bash(*)","Bash(git:*)","Bash(bash:*)","Bash(find:*)"]}}"#,
    );
    (deny_only, f.policy())
}

#[test]
fn the_generated_spellings_parse_and_cover_every_wrapper() {
    // A few fixed renderings, so the grammar itself is visibly right.
    let c = Case {
        git: true,
        spelling: 2,
        word_quotes: vec![Quote::Backslash],
        expansion: Expansion::Variable,
        wraps: vec![Wrap::EchoBash(Quote::Double), Wrap::Sudo],
        sep: 1,
        sep_at: 1,
        sep_before: true,
        mode: PermissionMode::Default,
        allow_all: false,
    };
    assert_eq!(
        render(&c),
        r#"sudo -u root bash -c 'ls && echo "X=push; git \\-C \\. \"\$X\"" | bash'"#
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_denied_command_is_never_allowed_however_it_is_spelled(c in case_strategy()) {
        thread_local! {
            static FIXTURE: (Fixture, Policy, Policy) = {
                let f = Fixture::new();
                let (a, b) = policies(&f);
                (f, a, b)
            };
        }
        let command = render(&c);
        FIXTURE.with(|(f, deny_only, with_allows)| {
            let policy = if c.allow_all { with_allows } else { deny_only };
            let d = check(&request("run_command", &cmd(&command), &f.proj, c.mode), policy);
            prop_assert_ne!(d.verdict, Verdict::Allow, "`{}` in {}: {:?}", command, c.mode, d);
            Ok(())
        })?;
    }
}

/// Runs `command` with bash in a fresh repository (remote `origin`, a pre-push hook that
/// leaves `PUSHED`, files `x` and `build/`) and says whether it really pushed or removed.
/// `sudo` and `busybox` are stand-ins that run their command, for machines without them.
fn really_runs(command: &str) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, bare, bin) = (
        tmp.path().join("r"),
        tmp.path().join("b.git"),
        tmp.path().join("bin"),
    );
    for d in [&repo, &bin] {
        std::fs::create_dir_all(d).unwrap();
    }
    git(
        tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "push.default", "current"]);
    git(&repo, &["remote", "add", "origin", bare.to_str().unwrap()]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
    let hook = repo.join(".git/hooks/pre-push");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ntouch '{}'\nexit 1\n",
            tmp.path().join("PUSHED").display()
        ),
    )
    .unwrap();
    std::fs::write(bin.join("sudo"), "#!/bin/sh\nshift 2\nexec \"$@\"\n").unwrap();
    std::fs::write(bin.join("busybox"), "#!/bin/sh\nexec \"$@\"\n").unwrap();
    std::fs::write(bin.join("toybox"), "#!/bin/sh\nexec \"$@\"\n").unwrap();
    std::fs::write(
        bin.join("coreutils"),
        "#!/bin/sh\np=${1#--coreutils-prog=}\nshift\nexec \"$p\" \"$@\"\n",
    )
    .unwrap();
    let stubs = ["sudo", "busybox", "toybox", "coreutils"].map(|s| bin.join(s));
    for f in std::iter::once(&hook).chain(&stubs) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(repo.join("x"), "x").unwrap();
    std::fs::create_dir_all(repo.join("build")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .args(["-c", command])
        .current_dir(&repo)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    tmp.path().join("PUSHED").exists()
        || bare.join("refs/heads/main").exists()
        || !repo.join("x").exists()
        || !repo.join("build").exists()
}

#[test]
fn what_really_runs_a_denied_command_is_never_allowed() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let f = Fixture::new();
    let (deny_only, with_allows) = policies(&f);
    let mut runner = TestRunner::default();
    let total = (cases() / 20).max(24);
    let mut ran = 0;
    for _ in 0..total {
        let c = case_strategy().new_tree(&mut runner).unwrap().current();
        let command = render(&c);
        let policy = if c.allow_all {
            &with_allows
        } else {
            &deny_only
        };
        let d = check(
            &request("run_command", &cmd(&command), &f.proj, c.mode),
            policy,
        );
        if really_runs(&command) {
            ran += 1;
            assert_ne!(
                d.verdict,
                Verdict::Allow,
                "`{command}` ran in {}: {d:?}",
                c.mode
            );
        }
    }
    // Most generated commands really run what is denied (the rest sit behind `ls ||`).
    assert!(
        ran * 2 >= total,
        "only {ran} of {total} generated commands really ran"
    );
}

#[test]
fn the_real_run_sees_a_push_and_a_removal() {
    assert!(really_runs("git push"));
    assert!(really_runs("echo 'rm x' | bash"));
    assert!(!really_runs("ls || git push"));
    assert!(really_runs("git send-pack ../b.git main"));
    assert!(really_runs("awk 'BEGIN{system(\"rm x\")}'"));
    assert!(really_runs("echo | sed '1e rm x'"));
    assert!(really_runs("bash < <(echo rm x)"));
    for h in HIDDEN {
        let c = h.replace('@', "rm x");
        assert!(really_runs(&c), "`{c}` should remove x");
    }
}
