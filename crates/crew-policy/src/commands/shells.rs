//! Shells and `su`: wrappers that run shell source. `bash -c SCRIPT` (options before or
//! after `-c`, `-o`/`-O` taking a value), `bash -s`, `bash /dev/stdin` and a bare `bash`
//! (the program comes from stdin), `su -c SCRIPT`. An option we do not know makes the
//! shell opaque (`bash --rcfile x`): it may run code from elsewhere.

use super::flags;
use super::table::SU;
use super::wrappers::{Unwrap, opaque, source};

/// Programs that run shell source.
#[rustfmt::skip]
pub const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"];

/// Programs that read a script from stdin when given no file (for `curl … | X`).
#[rustfmt::skip]
pub const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "python", "python3", "python2",
    "perl", "ruby", "node", "php", "lua", "pwsh", "sudo", "source", ".", "eval",
];

/// Paths that make a shell read its program from stdin.
#[rustfmt::skip]
pub(super) const STDIN_PATHS: &[&str] = &["/dev/stdin", "/proc/self/fd/0", "/dev/fd/0", "-"];

/// `su [options] [-] [user [args]]`: only `-c`/`--command` runs something unattended.
pub(super) fn su(argv: &[String]) -> Option<Unwrap> {
    let parsed = match flags::parse(&SU, &argv[1..], flags::Until::End) {
        Ok(p) => p,
        Err(flags::Unknown(opt)) => return Some(opaque(argv, "su", &opt)),
    };
    let (script, _) = parsed.value(&["-c", "--command", "--session-command"])?;
    Some(Unwrap::Script {
        wrapper: "su -c".into(),
        script: script.to_string(),
        privileged: true,
    })
}

/// `bash [options] -c SCRIPT`, `bash -s`, `bash /dev/stdin`, `bash` alone. Options may
/// come before or after `-c` (`bash -o errexit -c '…'`, `bash -c -e '…'`); `-o`/`-O`
/// take a value; unknown options make the shell opaque.
pub(super) fn shell(argv: &[String]) -> Option<Unwrap> {
    let prog = argv.first()?.rsplit('/').next()?;
    let rest = &argv[1..];
    let (mut c, mut s) = (false, false);
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            match long {
                "norc" | "noprofile" | "login" | "posix" | "restricted" | "verbose"
                | "noediting" | "protected" | "no-config" | "private" | "interactive" => {
                    i += 1;
                    continue;
                }
                "version" | "help" => return None,
                _ => {
                    if let Some(cmd) = long.strip_prefix("command=").filter(|_| prog == "fish") {
                        return Some(source(argv[..=i].join(" "), cmd.to_string()));
                    }
                    if long == "command" && prog == "fish" {
                        c = true;
                        i += 1;
                        continue;
                    }
                    return Some(opaque(argv, prog, a));
                }
            }
        }
        let Some(cluster) = a.strip_prefix('-').or_else(|| a.strip_prefix('+')) else {
            break;
        };
        let mut takes = 0;
        for ch in cluster.chars() {
            match ch {
                'c' => c = true,
                's' => s = true,
                'o' | 'O' => takes += 1,
                ch if "abefhkmnptuvxBCEHPTilr".contains(ch) => {}
                _ => return Some(opaque(argv, prog, &format!("-{ch}"))),
            }
        }
        i += 1 + takes;
    }
    let i = i.min(rest.len());
    let wrapper = argv[..=i].join(" ");
    if c {
        return Some(source(wrapper, rest.get(i)?.clone()));
    }
    let Some(file) = rest.get(i).filter(|_| !s) else {
        return Some(Unwrap::Stdin {
            wrapper,
            privileged: false,
        });
    };
    // `bash <(…)`, `bash /dev/fd/63`: the program comes from a pipe we cannot read.
    if file.contains("<(") || file.starts_with("/dev/fd/") && file != "/dev/fd/0" {
        let why = format!("`{prog}` runs a program read from a pipe (`{file}`)");
        return Some(super::wrappers::opaque_because(argv, why));
    }
    // Otherwise a script file: an ordinary program run.
    STDIN_PATHS.contains(&file.as_str()).then(|| Unwrap::Stdin {
        wrapper: argv[..=i + 1].join(" "),
        privileged: false,
    })
}
