//! Wrappers: programs that only run another command (`sudo`, `env`, `timeout`, `nice`,
//! `nohup`, `xargs`, `busybox`, …) or shell source (`bash -c`, `eval`, `su -c`, `env -S`).
//! Each wrapper's options are parsed from an allow-list, so that a value-taking option
//! (`timeout -k 1 5`, `sudo --user root`, `bash -o errexit -c`) is not mistaken for the
//! wrapped command. An option we do not know makes the wrapper opaque: guessing where the
//! wrapped command starts could hide it from deny rules, so we do not guess.

use super::flags;
use super::shells::{self, STDIN_PATHS};
pub use super::shells::{INTERPRETERS, SHELLS};
use super::table::{self, ENV, WATCH, Wrap};

/// The result of unwrapping one wrapper from the front of an argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwrap {
    /// The wrapper runs `rest` as a command.
    Command {
        /// The wrapper as written (`sudo -u bob`, `timeout 5`).
        wrapper: String,
        /// The wrapped command.
        rest: Vec<String>,
        /// It raises privileges.
        privileged: bool,
        /// The wrapped command gets arguments or an environment we cannot see.
        dynamic: bool,
        /// Arguments are appended at run time (`xargs`): deny rules must assume the worst.
        open: bool,
        /// Files and directories the wrapper itself uses.
        effects: Effects,
    },
    /// The wrapper runs `script` as shell source (`bash -c`, `eval`, `su -c`, `env -S`).
    Script {
        /// The wrapper as written.
        wrapper: String,
        /// The script text.
        script: String,
        /// It raises privileges.
        privileged: bool,
    },
    /// A shell that reads its program from stdin (`bash`, `sh -s`, `bash /dev/stdin`,
    /// `source /dev/stdin`).
    Stdin {
        /// The wrapper as written.
        wrapper: String,
        /// It raises privileges.
        privileged: bool,
    },
    /// A wrapper whose options we do not understand, or one known to run commands in ways
    /// we cannot follow (`strace`, `chroot`): what runs is unknown.
    Opaque {
        /// The wrapper as written.
        wrapper: String,
        /// Why it is opaque.
        reason: String,
    },
}

/// What a wrapper does besides running the wrapped command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Files it writes (`time -o FILE`, `flock FILE`).
    pub writes: Vec<String>,
    /// Files it reads (`xargs -a FILE`).
    pub reads: Vec<String>,
    /// The directory it runs the command in (`env -C DIR`, `sudo -D DIR`).
    pub chdir: Option<String>,
    /// Variables it sets (`env A=1`).
    pub env: Vec<(String, String)>,
}

/// Every program [`unwrap`] treats as a wrapper: those the program table says wrap a
/// command. Auto mode's rule suspension reads the same table and sets aside a blanket
/// allow rule on any of them.
pub fn wrappers() -> impl Iterator<Item = &'static str> {
    table::names(|p| p.wrap != Wrap::No)
}

/// If `argv` starts with a wrapper, what it wraps.
pub fn unwrap(argv: &[String]) -> Option<Unwrap> {
    let prog = argv.first()?.rsplit('/').next()?;
    let entry = table::program(prog)?;
    let rest = &argv[1..];
    let (privileged, positional_before) = match entry.wrap {
        Wrap::No => return None,
        Wrap::Own => return own(prog, argv),
        Wrap::Opaque => {
            let why = format!("`{prog}` runs a command in a way the engine does not follow");
            return Some(opaque_because(argv, why));
        }
        // `command -v x` only looks a name up.
        Wrap::Options { .. }
            if prog == "command" && rest.iter().any(|a| a == "-v" || a == "-V") =>
        {
            return None;
        }
        Wrap::Options {
            privileged,
            positional,
        } => (privileged, positional),
    };
    let mut parsed = match flags::parse(&entry.spec, rest, flags::Until::FirstOperand) {
        Ok(p) => p,
        Err(flags::Unknown(opt)) => return Some(opaque(argv, prog, &opt)),
    };
    let mut effects = Effects::default();
    let i = parsed.stopped_at.unwrap_or(rest.len()) + positional_before;
    if prog == "flock" {
        // `flock FILE cmd` creates FILE; `flock FILE -c 'cmd'` runs shell source.
        let file = rest.get(i - 1)?;
        effects.writes.push(file.clone());
        if rest.get(i).is_some_and(|a| a == "-c" || a == "--command") {
            return Some(source(argv[..=i + 1].join(" "), rest.get(i + 1)?.clone()));
        }
    }
    let paths = std::mem::take(&mut parsed.paths);
    match prog {
        "time" => effects.writes.extend(paths),
        "xargs" => effects.reads.extend(paths),
        "sudo" => effects.chdir = parsed.value(&["-D", "--chdir"]).map(|(d, _)| d.into()),
        _ => {}
    }
    if i >= rest.len() {
        // `sudo -i`, `xargs` alone (runs echo), `nohup` alone: nothing to unwrap.
        return None;
    }
    let mut wrapped = rest[i..].to_vec();
    // The replace string of `xargs -I R`, `-IR`, `--replace[=R]`.
    let replace = match parsed.value(&["-I", "--replace"]) {
        Some((r, _)) => Some(r),
        None => parsed.seen.iter().any(|o| o == "--replace").then_some("{}"),
    };
    if prog == "xargs"
        && let Some(r) = replace.filter(|r| !r.is_empty())
    {
        // `xargs -I{} git {}`: the replace string stands for input read at run time.
        for w in &mut wrapped {
            *w = w.replace(r, "$(…)");
        }
    }
    Some(Unwrap::Command {
        wrapper: argv[..=i].join(" "),
        rest: wrapped,
        privileged,
        // `xargs` appends arguments read at run time.
        dynamic: prog == "xargs",
        open: prog == "xargs",
        effects,
    })
}

/// The wrappers with a grammar of their own.
fn own(prog: &str, argv: &[String]) -> Option<Unwrap> {
    let rest = &argv[1..];
    match prog {
        "env" => env(argv),
        "watch" => watch(argv),
        "busybox" | "toybox" => busybox(prog, argv),
        "coreutils" => coreutils(argv),
        "eval" => Some(source("eval".into(), rest.join(" "))),
        "source" | "." => {
            let first = rest.first()?;
            if first.contains("<(") || first.starts_with("/dev/fd/") && first != "/dev/fd/0" {
                let why = format!("`{prog}` runs a program read from a pipe (`{first}`)");
                return Some(opaque_because(argv, why));
            }
            STDIN_PATHS
                .contains(&first.as_str())
                .then(|| Unwrap::Stdin {
                    wrapper: format!("{prog} {first}"),
                    privileged: false,
                })
        }
        "su" => shells::su(argv),
        _ => shells::shell(argv),
    }
}

pub(super) fn opaque(argv: &[String], prog: &str, opt: &str) -> Unwrap {
    let why =
        format!("`{prog}` option `{opt}` is not one the engine knows, so what it runs is unknown");
    opaque_because(argv, why)
}

/// The whole of `argv` as an opaque wrapper, for `reason`.
pub(super) fn opaque_because(argv: &[String], reason: String) -> Unwrap {
    Unwrap::Opaque {
        wrapper: argv.join(" "),
        reason,
    }
}

/// `env [OPTION]… [NAME=VALUE]… [COMMAND [ARG]…]`, with `-S`/`--split-string` running
/// its value as (space-split) source and `-C DIR` changing directory.
fn env(argv: &[String]) -> Option<Unwrap> {
    let rest = &argv[1..];
    let mut effects = Effects::default();
    let mut i = 0;
    // After `--`, assignments only.
    let mut ended = false;
    while let Some(a) = rest.get(i) {
        if let Some((k, v)) = a.split_once('=').filter(|(k, _)| !k.starts_with('-')) {
            effects.env.push((k.to_string(), v.to_string()));
            i += 1;
            continue;
        }
        if ended || !a.starts_with('-') || a == "-" {
            break;
        }
        let p = match flags::parse(&ENV, &rest[i..], flags::Until::FirstOperand) {
            Ok(p) => p,
            Err(flags::Unknown(opt)) => return Some(opaque(argv, "env", &opt)),
        };
        // `env -S 'cmd a' b`: the split string is followed by more arguments; option
        // parsing goes on inside it.
        let split = p
            .values
            .iter()
            .find(|(o, ..)| o == "-S" || o == "--split-string");
        if let Some((_, script, after)) = split {
            let mut script = script.clone();
            for extra in &rest[i + after..] {
                script.push(' ');
                script.push_str(extra);
            }
            return Some(source("env -S".into(), script));
        }
        if let Some((dir, _)) = p.value(&["-C", "--chdir"]) {
            effects.chdir = Some(dir.to_string());
        }
        let stop = p.stopped_at.unwrap_or(rest.len() - i);
        // Stopped after a `--` that is not an option's value: the command follows.
        ended = stop > 0
            && rest[i + stop - 1] == "--"
            && !p.values.iter().any(|(.., next)| *next == stop);
        i += stop;
    }
    if i >= rest.len() {
        return None;
    }
    Some(Unwrap::Command {
        wrapper: argv[..=i].join(" "),
        rest: rest[i..].to_vec(),
        privileged: false,
        // Assignments through env change the command's environment.
        dynamic: !effects.env.is_empty(),
        open: false,
        effects,
    })
}

/// `watch [options] command…`: runs its arguments joined by spaces through `sh -c`
/// (with `-x`, directly).
fn watch(argv: &[String]) -> Option<Unwrap> {
    let rest = &argv[1..];
    let parsed = match flags::parse(&WATCH, rest, flags::Until::FirstOperand) {
        Ok(p) => p,
        Err(flags::Unknown(opt)) => return Some(opaque(argv, "watch", &opt)),
    };
    let i = parsed.stopped_at.unwrap_or(rest.len());
    if i >= rest.len() {
        return None;
    }
    let wrapper = argv[..=i].join(" ");
    if parsed.seen.iter().any(|s| s == "-x" || s == "--exec") {
        return Some(plain(wrapper, rest[i..].to_vec()));
    }
    Some(source(wrapper, rest[i..].join(" ")))
}

/// `busybox APPLET args…` (or `toybox`) runs the applet; `busybox --list` and friends
/// run nothing.
fn busybox(prog: &str, argv: &[String]) -> Option<Unwrap> {
    let applet = argv.get(1)?;
    if applet.starts_with('-') {
        return None;
    }
    Some(plain(prog.into(), argv[1..].to_vec()))
}

/// `coreutils --coreutils-prog=PROG args…` runs PROG; so does
/// `--coreutils-prog-shebang=PROG FILE…` (on the file). Anything else runs nothing.
fn coreutils(argv: &[String]) -> Option<Unwrap> {
    let first = argv.get(1)?;
    let prog = first
        .strip_prefix("--coreutils-prog-shebang=")
        .or_else(|| first.strip_prefix("--coreutils-prog="))?;
    let rest = [&[prog.to_string()], &argv[2..]].concat();
    Some(plain("coreutils".into(), rest))
}

/// A wrapper that runs `script` as shell source, raising no privileges.
pub(super) fn source(wrapper: String, script: String) -> Unwrap {
    Unwrap::Script {
        wrapper,
        script,
        privileged: false,
    }
}

/// A wrapper that runs `rest` as it is, with no effect of its own.
fn plain(wrapper: String, rest: Vec<String>) -> Unwrap {
    Unwrap::Command {
        wrapper,
        rest,
        privileged: false,
        dynamic: false,
        open: false,
        effects: Effects::default(),
    }
}
