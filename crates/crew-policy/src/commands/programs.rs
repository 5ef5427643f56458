//! Programs that run a program named in their own options or program text, as one
//! table ([`RUNS_VIA`]): rsync's and scp's remote shells, man's pager, zip's test
//! command, tar's compressors and scripts, ssh's command-valued settings; and the
//! program text of awk, sed and vim, read just enough to see whether it can run a
//! command. A literal option value becomes an `Embedded` judged as a command of its own
//! (like `find -exec`); what the engine does not read (a vim command, an awk `system()`,
//! a sed `e`) makes the part opaque: it asks, or runs confined while no Bash deny or ask
//! rule exists.

use super::Embedded;

/// What the value of a [`RUNS_VIA`] option is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// Shell source.
    Shell,
    /// A program name.
    Program,
    /// Something that may run a command, which the engine does not read.
    Opaque,
}

const TAR: &[&str] = &["tar", "gtar", "bsdtar"];
const SSH: &[&str] = &["ssh", "scp", "sftp", "slogin"];
const VIM: &[&str] = &["vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "rvim"];

/// The table: programs, their options whose value runs (`-X v`, `-Xv`, `--long v`,
/// `--long=v`, a cluster ending in the flag as `-avze v`), and what the value is.
#[rustfmt::skip]
const RUNS_VIA: &[(&[&str], &[&str], Value)] = &[
    (&["rsync"], &["-e", "--rsh"], Value::Shell),
    (&["man"], &["-P", "--pager", "-H", "--html"], Value::Shell),
    (&["zip"], &["-TT", "--unzip-command"], Value::Shell),
    (TAR, &["-I", "--use-compress-program", "--to-command"], Value::Shell),
    (TAR, &["-F", "--info-script", "--new-volume-script", "--rsh-command"], Value::Program),
    (TAR, &["--checkpoint-action"], Value::Opaque),
    (&["scp", "sftp"], &["-S"], Value::Program),
    (SSH, &["-F"], Value::Opaque),
    (VIM, &["-c", "--cmd", "-S", "-u", "-U"], Value::Opaque),
];

/// ssh settings (`-o Key=v`, `-oKey v`) whose value is a command.
const SSH_COMMANDS: &[&str] = &[
    "proxycommand",
    "localcommand",
    "knownhostscommand",
    "remotecommand",
];

/// What `argv` (program already unwrapped) runs through its options or program text.
pub fn embedded(prog: &str, argv: &[String]) -> Vec<Embedded> {
    let args = argv.get(1..).unwrap_or_default();
    let mut out = Vec::new();
    for (names, opts, kind) in RUNS_VIA.iter().filter(|(n, ..)| n.contains(&prog)) {
        for (opt, value) in option_values(args, opts) {
            out.push(match kind {
                Value::Shell => script(&format!("{prog} {opt}"), &value),
                Value::Program => Embedded::Command {
                    via: format!("({prog} {opt})"),
                    argv: vec![value],
                },
                Value::Opaque => opaque(&format!("`{} {opt}` may run a command", names[0])),
            });
        }
    }
    match prog {
        "awk" | "gawk" | "mawk" | "nawk" => out.extend(awk(args)),
        "sed" | "gsed" => out.extend(sed(args)),
        p if SSH.contains(&p) => out.extend(ssh_settings(p, args)),
        // `vim +CMD` runs an Ex command (`+N` only moves to a line).
        p if VIM.contains(&p) => out.extend(
            args.iter()
                .filter(|a| a.len() > 1 && a.starts_with('+'))
                .filter(|a| !a[1..].chars().all(|c| c.is_ascii_digit()))
                .map(|a| opaque(&format!("vim command `{a}` may run a program"))),
        ),
        _ => {}
    }
    out
}

fn script(via: &str, text: &str) -> Embedded {
    Embedded::Script {
        via: format!("({via})"),
        script: text.to_string(),
    }
}

fn opaque(why: &str) -> Embedded {
    Embedded::Opaque(why.to_string())
}

/// The values of `opts` in `args`, each with the option as listed.
fn option_values<'a>(args: &[String], opts: &[&'a str]) -> Vec<(&'a str, String)> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        for opt in opts {
            let short = !opt.starts_with("--") && opt.len() == 2;
            let value = if a == opt {
                args.get(i + 1).cloned()
            } else if let Some(v) = a.strip_prefix(opt).and_then(|v| v.strip_prefix('=')) {
                Some(v.to_string())
            } else if short && !a.starts_with("--") && a.starts_with(opt) {
                Some(a[2..].to_string())
            } else if short && !a.starts_with("--") && a.starts_with('-') && a.ends_with(&opt[1..])
            {
                // A cluster ending in the flag (`rsync -avze CMD`).
                args.get(i + 1).cloned()
            } else {
                None
            };
            out.extend(value.map(|v| (*opt, v)));
        }
    }
    out
}

/// ssh's `-o Key=value` settings that run a command; `-o Include` reads more settings.
fn ssh_settings(prog: &str, args: &[String]) -> Vec<Embedded> {
    let mut out = Vec::new();
    for (_, o) in option_values(args, &["-o"]) {
        let (key, value) = o.split_once(['=', ' ']).map_or((o.as_str(), ""), |(k, v)| {
            (k, v.trim_start_matches(['=', ' ']))
        });
        let key = key.to_ascii_lowercase();
        if SSH_COMMANDS.contains(&key.as_str()) {
            out.push(script(&format!("{prog} -o {key}"), value));
        } else if key == "include" {
            out.push(opaque(&format!(
                "`{prog} -o {o}` reads settings that may run commands"
            )));
        }
    }
    out
}

/// sed's `e` command (`1e CMD`, bare `e`) and the `e` flag of `s`, in the scripts on its
/// command line: the part is opaque.
fn sed(args: &[String]) -> Option<Embedded> {
    let runs = super::sed::parse(args)
        .scripts
        .iter()
        .flat_map(|s| s.lines())
        .flat_map(|l| l.split(';'))
        .any(|cmd| {
            let cmd = strip_address(cmd);
            cmd.starts_with('e')
                || cmd
                    .strip_prefix('s')
                    .and_then(s_flags)
                    .is_some_and(|f| f.contains('e'))
        });
    runs.then(|| opaque("sed `e` runs a command"))
}

/// A sed command without its address (`1`, `$`, `/re/`, `1,5`, `!`, `{`).
fn strip_address(s: &str) -> &str {
    let mut s = s.trim_start();
    loop {
        let before = s;
        s = s.trim_start_matches(|c: char| {
            c.is_ascii_digit() || "$,!{~+".contains(c) || c.is_whitespace()
        });
        if let Some(r) = s.strip_prefix('/')
            && let Some(end) = r.find('/')
        {
            s = &r[end + 1..];
        }
        if s == before {
            return s;
        }
    }
}

/// The flags of `s<d>re<d>rep<d>flags`, given what follows the `s`.
fn s_flags(after: &str) -> Option<&str> {
    let d = after
        .chars()
        .next()
        .filter(|d| !d.is_alphanumeric() && !d.is_whitespace())?;
    let body = &after[d.len_utf8()..];
    let (mut seen, mut escaped) = (0, false);
    for (i, c) in body.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == d {
            seen += 1;
            if seen == 2 {
                let flags = &body[i + d.len_utf8()..];
                return Some(&flags[..flags.find('}').unwrap_or(flags.len())]);
            }
        }
    }
    None
}

/// awk programs that can run a command (`system()`, `print | "cmd"`, `"cmd" | getline`,
/// `|&`): the part is opaque. The program is the first operand unless `-f`/`-e`/
/// `--source` give it (a program file is judged by `runners`).
fn awk(args: &[String]) -> Option<Embedded> {
    let mut programs = Vec::new();
    let mut from_option = false;
    let mut i = 0;
    while let Some(a) = args.get(i).map(String::as_str) {
        // Options with a value take the next word too.
        i += match a {
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" => {
                from_option = true;
                2
            }
            "-e" | "--source" => {
                programs.extend(args.get(i + 1));
                from_option = true;
                2
            }
            "-F" | "-v" | "--assign" | "--field-separator" => 2,
            _ if a.starts_with('-') && a.len() > 1 => 1,
            _ => {
                if !from_option && programs.is_empty() {
                    programs.push(&args[i]);
                }
                break;
            }
        };
    }
    programs
        .iter()
        .any(|p| awk_runs(p))
        .then(|| opaque("awk runs a command (`system()` or a pipe)"))
}

/// Whether an awk program has `system` or a pipe outside its strings, regexes and
/// comments. A `/` read as a regex where it divides only makes more text visible.
fn awk_runs(src: &str) -> bool {
    let mut code = String::new();
    let mut chars = src.chars().peekable();
    let mut prev = None;
    while let Some(c) = chars.next() {
        let close = match c {
            '"' => Some('"'),
            '/' if prev.is_none_or(|p: char| "(,{;!~&|=<>+-*%?:".contains(p)) => Some('/'),
            '#' => Some('\n'),
            _ => None,
        };
        if let Some(close) = close {
            while let Some(d) = chars.next().filter(|d| *d != close) {
                if d == '\\' {
                    chars.next();
                }
            }
            code.push(' ');
        } else {
            code.push(c);
        }
        if !c.is_whitespace() {
            prev = Some(c);
        }
    }
    code.contains("system") || code.replace("||", " ").contains('|')
}
