//! What the engine knows about individual commands: which ones only run another command
//! (wrappers, unwrapped before any decision), which are read-only (count as reads for the
//! mode fallback), and which are dangerous (ask in every mode but bypassPermissions, deny
//! under dontAsk). The blacklist (deny everywhere) lives in `blacklist.rs`.

use super::shell::Part;

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
        /// The wrapped command gets arguments we cannot see (`xargs`).
        dynamic: bool,
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
}

/// Programs that run shell source.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox",
];

/// Programs that read a script from stdin when given no file (for `curl … | X`).
pub const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "python", "python3", "python2",
    "perl", "ruby", "node", "php", "lua", "pwsh", "sudo", "source", ".", "eval",
];

/// If `argv` starts with a wrapper, what it wraps.
pub fn unwrap(argv: &[String]) -> Option<Unwrap> {
    let prog = argv.first()?.rsplit('/').next()?;
    let rest = &argv[1..];
    // (options that take a value, options whose value is attached, privileged, dynamic)
    let (with_value, privileged, dynamic, positional_before): (&[&str], bool, bool, usize) =
        match prog {
            "sudo" | "doas" => (
                &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
                true,
                false,
                0,
            ),
            "nice" => (&["-n"], false, false, 0),
            "nohup" | "setsid" | "builtin" => (&[], false, false, 0),
            "time" => (&["-o", "-f"], false, false, 0),
            "timeout" => (&["-s", "-k"], false, false, 1),
            "stdbuf" => (&["-i", "-o", "-e"], false, false, 0),
            "ionice" => (&["-c", "-n", "-p", "-P", "-u"], false, false, 0),
            "exec" => (&["-a"], false, false, 0),
            "command" => {
                // `command -v x` only looks a name up.
                if rest.iter().any(|a| a == "-v" || a == "-V") {
                    return None;
                }
                (&[], false, false, 0)
            }
            "xargs" => (
                &["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"],
                false,
                true,
                0,
            ),
            "env" => return unwrap_env(argv),
            "eval" => {
                return Some(Unwrap::Script {
                    wrapper: "eval".into(),
                    script: rest.join(" "),
                    privileged: false,
                });
            }
            "su" => {
                let i = rest.iter().position(|a| a == "-c" || a == "--command")?;
                return Some(Unwrap::Script {
                    wrapper: "su -c".into(),
                    script: rest.get(i + 1)?.clone(),
                    privileged: true,
                });
            }
            p if SHELLS.contains(&p) => return unwrap_shell(prog, rest),
            _ => return None,
        };
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        // `nice -5`, `nice -n 5`, `-n5`, `--adjustment=5`.
        if with_value.contains(&a.as_str()) {
            i += 2;
        } else {
            i += 1;
        }
    }
    i += positional_before;
    if i >= rest.len() {
        // `sudo -i`, `xargs` alone (runs echo), `nohup` alone: nothing to unwrap.
        return None;
    }
    let wrapper = argv[..=i].join(" ");
    Some(Unwrap::Command {
        wrapper,
        rest: rest[i..].to_vec(),
        privileged,
        dynamic,
    })
}

fn unwrap_env(argv: &[String]) -> Option<Unwrap> {
    let rest = &argv[1..];
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        if a == "-S" || a == "--split-string" {
            return Some(Unwrap::Script {
                wrapper: "env -S".into(),
                script: rest.get(i + 1)?.clone(),
                privileged: false,
            });
        }
        if let Some(s) = a
            .strip_prefix("--split-string=")
            .or_else(|| a.strip_prefix("-S"))
        {
            return Some(Unwrap::Script {
                wrapper: "env -S".into(),
                script: s.to_string(),
                privileged: false,
            });
        }
        if a == "-u" || a == "-C" || a == "--unset" || a == "--chdir" {
            i += 2;
        } else if a.starts_with('-') || a.contains('=') {
            i += 1;
        } else {
            break;
        }
    }
    if i >= rest.len() {
        return None;
    }
    Some(Unwrap::Command {
        wrapper: argv[..=i].join(" "),
        rest: rest[i..].to_vec(),
        privileged: false,
        // Assignments through env change the command's environment.
        dynamic: i > 0,
    })
}

fn unwrap_shell(prog: &str, rest: &[String]) -> Option<Unwrap> {
    // `busybox sh -c …` → treat as `sh -c …`.
    if prog == "busybox" {
        let inner = rest.first()?;
        if SHELLS.contains(&inner.as_str()) && inner != "busybox" {
            return unwrap_shell(inner, &rest[1..]);
        }
        return None;
    }
    let mut saw_c = false;
    for a in rest {
        if saw_c {
            return Some(Unwrap::Script {
                wrapper: format!("{prog} -c"),
                script: a.clone(),
                privileged: false,
            });
        }
        if a.starts_with("--") {
            continue;
        }
        if let Some(flags) = a.strip_prefix('-').or_else(|| a.strip_prefix('+')) {
            saw_c |= flags.contains('c');
            continue;
        }
        return None;
    }
    None
}

/// Whether a part is a shell or interpreter that reads its program from stdin.
pub fn reads_program_from_stdin(part: &Part) -> bool {
    let prog = part.program();
    if !INTERPRETERS.contains(&prog) {
        return false;
    }
    // Any non-option argument names a script file (or `-c` was unwrapped already);
    // `-s` and `-` explicitly read stdin.
    let args = &part.argv[1..];
    args.iter().all(|a| a.starts_with('-')) || args.iter().any(|a| a == "-s" || a == "-")
}

/// Whether a part only observes: a known read-only program with safe flags, no
/// redirection that writes, no substitution or variable, not in the background.
pub fn is_read_only(part: &Part) -> bool {
    if part.dynamic || part.background || part.privileged {
        return false;
    }
    if part
        .redirects
        .iter()
        .any(|r| r.write && r.target != "/dev/null")
    {
        return false;
    }
    if part.argv.is_empty() {
        return true;
    }
    let args: Vec<&str> = part.argv[1..].iter().map(String::as_str).collect();
    match part.program() {
        "ls" | "cat" | "head" | "wc" | "pwd" | "echo" | "printf" | "true" | "false" | "which"
        | "whoami" | "id" | "date" | "uname" | "file" | "stat" | "du" | "df" | "tree"
        | "basename" | "dirname" | "realpath" | "readlink" | "cut" | "tr" | "diff" | "cmp"
        | "nl" | "test" | "[" | "type" | "env" | "printenv" | "grep" | "egrep" | "fgrep"
        | "column" | "md5sum" | "sha1sum" | "sha256sum" | "tac" | "rev" | "jq" | "less"
        | "more" | "seq" | "sleep" | "comm" | "paste" | "expand" | "fold" | "od" | "hexdump"
        | "xxd" | "strings" => !args
            .iter()
            .any(|a| a.starts_with("--pre") || *a == "-o" && part.program() == "jq"),
        "tail" => true,
        "sort" => !args.iter().any(|a| *a == "-o" || a.starts_with("--output")),
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "rg" => !args.iter().any(|a| {
            a.starts_with("--pre")
                || *a == "-z"
                || *a == "--search-zip"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('z'))
        }),
        "find" => !args.iter().any(|a| {
            matches!(
                *a,
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "sed" => sed_read_only(&args),
        "git" => git_read_only(&args),
        "cargo" => matches!(
            args.first(),
            Some(&"--version") | Some(&"tree") | Some(&"metadata")
        ),
        _ => false,
    }
}

/// `sed -n '3p'`, `sed -n '1,20p'`: printing only, never `-i`, `w` or `e`.
fn sed_read_only(args: &[&str]) -> bool {
    let mut quiet = false;
    let mut scripts = Vec::new();
    for a in args {
        if *a == "-n" || *a == "--quiet" || *a == "--silent" {
            quiet = true;
        } else if a.starts_with('-') {
            return false;
        } else if scripts.is_empty() {
            scripts.push(*a);
        }
    }
    quiet
        && scripts.len() == 1
        && scripts[0].split(';').all(|cmd| {
            let cmd = cmd.trim();
            cmd.ends_with('p')
                && cmd[..cmd.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ',' || c == '$')
        })
}

fn git_read_only(args: &[&str]) -> bool {
    // Global options before the subcommand: only `-C dir` and `--no-pager` are harmless
    // (`-c key=value` can set a pager or a hook that runs anything).
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        match args[i] {
            "-C" => i += 2,
            "--no-pager" => i += 1,
            _ => return false,
        }
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    let rest = &args[i + 1..];
    if rest.iter().any(|a| {
        a.starts_with("--output") || a.starts_with("--ext-diff") || a.starts_with("--exec")
    }) {
        return false;
    }
    match *sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" | "describe"
        | "shortlog" | "reflog" | "ls-tree" | "cat-file" | "merge-base" | "grep"
        | "whatchanged" => !(*sub == "reflog" && rest.first().is_some_and(|a| *a != "show")),
        // Listing only: any positional (a new branch name) or a mutating flag is not.
        "branch" => rest.iter().all(|a| {
            matches!(
                *a,
                "-a" | "--all"
                    | "-r"
                    | "--remotes"
                    | "-v"
                    | "-vv"
                    | "--list"
                    | "-l"
                    | "--show-current"
                    | "--merged"
                    | "--no-merged"
                    | "--contains"
            )
        }),
        "tag" => rest.is_empty() || rest.iter().all(|a| *a == "-l" || *a == "--list"),
        "remote" => rest.is_empty() || rest == ["-v"],
        "stash" => rest.first().is_some_and(|a| *a == "list" || *a == "show"),
        "config" => rest
            .iter()
            .any(|a| matches!(*a, "--get" | "--list" | "-l" | "--get-all")),
        _ => false,
    }
}

/// Why a part is dangerous (ask in every mode but bypassPermissions), if it is.
pub fn dangerous(part: &Part) -> Option<&'static str> {
    let args: Vec<&str> = part.argv.iter().skip(1).map(String::as_str).collect();
    if part
        .argv
        .first()
        .is_some_and(|a| a.contains("$VAR") || a.contains("$("))
    {
        return Some("the program to run is computed at run time");
    }
    match part.program() {
        "git" => git_dangerous(&args),
        "rm" if part.dynamic
            && (has_short_or_long(&args, 'r', "--recursive")
                || has_short_or_long(&args, 'R', "--recursive")) =>
        {
            Some("recursive removal of targets computed at run time")
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => Some("stops the machine"),
        "kill" if args.contains(&"-1") => Some("kills every process"),
        "pkill" | "killall" => Some("kills processes by name"),
        "crontab" if args.contains(&"-r") => Some("removes the crontab"),
        "npm" | "cargo" | "yarn" | "pnpm" | "twine" | "gem" if args.first() == Some(&"publish") => {
            Some("publishes a package")
        }
        "terraform" | "tofu" if args.first() == Some(&"destroy") => Some("destroys infrastructure"),
        "kubectl" if args.first() == Some(&"delete") => Some("deletes cluster resources"),
        "docker" | "podman" if args.contains(&"prune") => Some("prunes containers or images"),
        _ => None,
    }
}

fn git_dangerous(args: &[&str]) -> Option<&'static str> {
    let sub_at = args.iter().position(|a| !a.starts_with('-'))?;
    let sub = args[sub_at];
    let rest = &args[sub_at + 1..];
    match sub {
        "reset" if rest.contains(&"--hard") || rest.contains(&"--merge") => {
            Some("git reset --hard discards uncommitted work")
        }
        "push"
            if rest.iter().any(|a| {
                a.starts_with("--force")
                    || *a == "--delete"
                    || *a == "--mirror"
                    || *a == "--prune"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && (a.contains('f') || a.contains('d')))
                    || (a.starts_with('+') && a.len() > 1)
                    || (a.starts_with(':') && a.len() > 1)
            }) =>
        {
            Some("git push that rewrites or deletes remote history")
        }
        "clean" if has_short_or_long(rest, 'f', "--force") => {
            Some("git clean -f deletes untracked files")
        }
        "branch"
            if rest.contains(&"-D")
                || (has_short_or_long(rest, 'd', "--delete")
                    && has_short_or_long(rest, 'f', "--force")) =>
        {
            Some("git branch -D deletes an unmerged branch")
        }
        "checkout"
            if rest
                .iter()
                .any(|a| *a == "-f" || *a == "--force" || *a == "--" || *a == ".") =>
        {
            Some("git checkout that discards local changes")
        }
        "restore" if !rest.contains(&"--staged") => Some("git restore discards local changes"),
        "stash" if rest.first().is_some_and(|a| *a == "drop" || *a == "clear") => {
            Some("git stash drop/clear loses stashed work")
        }
        "filter-branch" | "filter-repo" => Some("rewrites history"),
        "update-ref" if rest.contains(&"-d") => Some("deletes a ref"),
        "reflog" if rest.first() == Some(&"expire") => Some("expires the reflog"),
        "worktree"
            if rest.first() == Some(&"remove") && has_short_or_long(rest, 'f', "--force") =>
        {
            Some("removes a worktree with its changes")
        }
        _ => None,
    }
}

/// Whether `args` hold the short flag `c` (alone or in a cluster) or `long`.
pub fn has_short_or_long(args: &[&str], c: char, long: &str) -> bool {
    args.iter()
        .any(|a| *a == long || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c)))
}
