//! What the engine knows about `git`: its global options (so `git -C . push`,
//! `git -c k=v push` and `git --no-pager push` are matched as `git push`), the `-c`
//! settings that run programs (`core.pager`, `alias.*=!…`, `core.sshCommand`, …), the
//! read-only subcommands, and the dangerous ones.

use super::flags::{self, Spec};
pub use super::git_config::{ConfigEffect, config_effect};
use super::{Embedded, has_short_or_long};

/// A git command line split at its subcommand.
#[derive(Debug, Clone, Default)]
pub struct Git {
    /// `-c key=value` settings, keys lower-cased.
    pub config: Vec<(String, String)>,
    /// Paths named by global options (`-C`, `--git-dir`, `--work-tree`).
    pub paths: Vec<String>,
    /// Index of the subcommand in argv, if any.
    pub sub: Option<usize>,
    /// A global option that is unknown or can run code (`--exec-path=`, `-p`): the
    /// command is not read-only.
    pub risky_global: Option<String>,
    /// A global option whose effect on what runs is unknown (`--config-env`,
    /// `--exec-path=DIR`, an unknown option): the command is opaque.
    pub opaque: Option<String>,
}

/// Global options that take no value and change nothing that runs.
#[rustfmt::skip]
const PLAIN_GLOBALS: &[&str] = &[
    "-P", "--no-pager", "--no-replace-objects", "--no-lazy-fetch", "--no-optional-locks",
    "--no-advice", "--bare", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
    "--icase-pathspecs", "--exec-path", "--html-path", "--man-path", "--info-path",
    "-v", "--version", "-h", "--help",
];

/// Global options that take a value (glued with `=` or in the next word).
#[rustfmt::skip]
const VALUED_GLOBALS: &[&str] = &[
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source",
    "--config-env", "--list-cmds",
];

/// Parses git's global options (everything before the subcommand).
pub fn parse(argv: &[String]) -> Git {
    let mut g = Git::default();
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if !a.starts_with('-') {
            g.sub = Some(i);
            break;
        }
        let (name, glued) = match a.split_once('=') {
            Some((n, v)) if a.starts_with("--") => (n, Some(v.to_string())),
            _ => (a, None),
        };
        let value = if VALUED_GLOBALS.contains(&name) && glued.is_none() {
            i += 1;
            argv.get(i).cloned()
        } else {
            glued.clone()
        };
        match name {
            "-C" | "--git-dir" | "--work-tree" => g.paths.extend(value),
            "-c" => push_config(&mut g, value.as_deref().unwrap_or("")),
            // `-ckey=value` is not git syntax; read it as `-c` anyway, failing closed.
            n if n.starts_with("-c") && !n.starts_with("--") => push_config(&mut g, &n[2..]),
            "--namespace" | "--super-prefix" | "--attr-source" | "--list-cmds" => {}
            "--exec-path" if glued.is_some() => {
                g.opaque = Some(format!(
                    "`{a}` makes git run its programs from another directory"
                ));
            }
            "--config-env" => {
                g.opaque = Some(format!("`{a}` sets configuration from the environment"));
            }
            "-p" | "--paginate" => g.risky_global = Some(a.to_string()),
            n if PLAIN_GLOBALS.contains(&n) => {}
            _ => g.opaque = Some(format!("git option `{a}` is not one the engine knows")),
        }
        i += 1;
    }
    g
}

fn push_config(g: &mut Git, kv: &str) {
    let (k, v) = kv.split_once('=').unwrap_or((kv, "true"));
    g.config.push((k.to_ascii_lowercase(), v.to_string()));
}

/// Commands a git command line runs besides git itself: `-c` values that are commands,
/// and the subcommand's alias (`git -c alias.p='!git push' p` runs `git push`;
/// `git -c alias.p=push p` is `git push`).
pub fn embedded(argv: &[String]) -> Vec<Embedded> {
    let g = parse(argv);
    let mut out = Vec::new();
    if let Some(why) = &g.opaque {
        out.push(Embedded::Opaque(why.clone()));
    }
    for (k, v) in &g.config {
        match config_effect(k, v) {
            ConfigEffect::Shell(script) => out.push(Embedded::Script {
                via: format!("(git -c {k})"),
                script,
            }),
            ConfigEffect::Opaque(why) => out.push(Embedded::Opaque(why)),
            ConfigEffect::Safe | ConfigEffect::Unknown => {}
        }
    }
    out.extend(subcommand_runs(&g, argv));
    out.extend(alias_of(&g, argv));
    out
}

/// Subcommand options whose value is a command git runs: `--long` (and a short form).
#[rustfmt::skip]
const COMMAND_OPTIONS: &[(&str, Option<&str>)] = &[
    ("exec", Some("-x")), ("extcmd", None), ("upload-pack", None), ("receive-pack", None),
    ("tool-cmd", None),
];

/// Commands a subcommand's own options run: `submodule foreach CMD`, `rebase -x CMD`,
/// `bisect run CMD`, `difftool -x CMD`, `--upload-pack=CMD`, and `ext::` URLs.
fn subcommand_runs(g: &Git, argv: &[String]) -> Vec<Embedded> {
    let Some(sub) = g.sub else {
        return Vec::new();
    };
    let rest = &argv[sub + 1..];
    let via = |what: &str| format!("(git {} {what})", argv[sub]);
    let mut out = Vec::new();
    match argv[sub].as_str() {
        "submodule" if rest.first().is_some_and(|a| a == "foreach") => {
            let cmd: Vec<&String> = rest[1..]
                .iter()
                .skip_while(|a| a.starts_with('-'))
                .collect();
            if !cmd.is_empty() {
                let script = cmd.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
                out.push(Embedded::Script {
                    via: via("foreach"),
                    script,
                });
            }
        }
        "bisect" if rest.first().is_some_and(|a| a == "run") && rest.len() > 1 => {
            out.push(Embedded::Command {
                via: via("run"),
                argv: rest[1..].to_vec(),
            });
        }
        _ => {}
    }
    for (i, a) in rest.iter().enumerate() {
        let value = |long: &str, short: Option<&str>| -> Option<String> {
            if let Some(v) = a.strip_prefix(&format!("--{long}=")) {
                return Some(v.to_string());
            }
            let separate = a == &format!("--{long}") || short.is_some_and(|s| a == s);
            separate.then(|| rest.get(i + 1).cloned()).flatten()
        };
        if let Some(script) = COMMAND_OPTIONS.iter().find_map(|&(l, s)| value(l, s)) {
            out.push(Embedded::Script {
                via: via(a.split('=').next().unwrap_or(a)),
                script,
            });
        }
        // `git grep -O<cmd>` / `--open-files-in-pager=<cmd>` runs cmd on the matches;
        // bare `-O` runs the configured pager.
        if argv[sub] == "grep" {
            let pager = a
                .strip_prefix("--open-files-in-pager")
                .map(|v| v.strip_prefix('=').unwrap_or(v))
                .or_else(|| a.strip_prefix("-O"));
            match pager {
                Some("") => out.push(Embedded::Opaque(
                    "`git grep -O` runs the configured pager".into(),
                )),
                Some(cmd) => out.push(Embedded::Script {
                    via: via("-O"),
                    script: cmd.to_string(),
                }),
                None => {}
            }
        }
        if a.starts_with("ext::") {
            out.push(Embedded::Opaque(format!(
                "`{a}` makes git run a transport command"
            )));
        }
    }
    out
}

/// What the subcommand's alias runs, if it is one: shell source (`!…`) or git.
fn alias_of(g: &Git, argv: &[String]) -> Option<Embedded> {
    let sub = g.sub?;
    let name = argv[sub].to_ascii_lowercase();
    let (_, value) = g
        .config
        .iter()
        .rev()
        .find(|(k, _)| k == &format!("alias.{name}"))?;
    let via = format!("(git alias {name})");
    if let Some(shell) = value.strip_prefix('!') {
        // git runs `sh -c '<alias> "$@"' <alias> ARGS…`.
        let mut script = shell.to_string();
        for a in &argv[sub + 1..] {
            script.push(' ');
            script.push_str(&quote(a));
        }
        return Some(Embedded::Script { via, script });
    }
    let mut out = vec!["git".to_string()];
    out.extend(value.split_whitespace().map(String::from));
    out.extend(argv[sub + 1..].iter().cloned());
    Some(Embedded::Command { via, argv: out })
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `git` with its global options removed (`git -C . -c k=v push` → `git push`), for
/// matching deny and ask rules; `None` when there is nothing to remove.
pub fn canonical(argv: &[String]) -> Option<Vec<String>> {
    let g = parse(argv);
    let sub = g.sub?;
    (sub > 1).then(|| [&["git".to_string()], &argv[sub..]].concat())
}

/// Read-only git: global options limited to harmless ones, `-c` only with safe keys, a
/// read-only subcommand, and only known-good flags for it.
pub fn read_only(argv: &[String]) -> bool {
    let g = parse(argv);
    if g.opaque.is_some() || g.risky_global.is_some() {
        return false;
    }
    if g.config
        .iter()
        .any(|(k, v)| config_effect(k, v) != ConfigEffect::Safe)
    {
        return false;
    }
    let Some(sub) = g.sub else {
        return false;
    };
    let rest: Vec<&str> = argv[sub + 1..].iter().map(String::as_str).collect();
    // Writing to a file or running a program, whatever the subcommand.
    if rest
        .iter()
        .any(|a| ANYWHERE_UNSAFE.iter().any(|bad| a.starts_with(bad)))
    {
        return false;
    }
    let sub = argv[sub].as_str();
    if READ_SUBS.contains(&sub) {
        return true;
    }
    if let Some((_, ok)) = READ_ONLY_WITH.iter().find(|(s, _)| *s == sub) {
        return rest.iter().all(|a| {
            ok.iter()
                .any(|o| a == o || o.ends_with('=') && a.starts_with(o))
        });
    }
    let has = |list: &[&str]| rest.iter().any(|a| list.contains(a));
    match sub {
        "grep" => grep_read_only(&rest),
        "reflog" => rest
            .first()
            .is_none_or(|a| *a == "show" || a.starts_with('-')),
        "stash" => rest.first().is_some_and(|a| *a == "list" || *a == "show"),
        "config" => {
            has(&["--get", "--list", "-l", "--get-all", "--get-regexp"])
                && !has(&["--add", "--unset", "--unset-all", "--replace-all", "-e"])
                && !rest.iter().any(|a| a.starts_with("--edit"))
        }
        _ => false,
    }
}

/// Options that write a file or run a program, whatever the subcommand (as prefixes).
#[rustfmt::skip]
const ANYWHERE_UNSAFE: &[&str] = &[
    "--output", "--ext-diff", "--textconv", "--exec", "--paginate", "--open-files-in-pager", "-O",
];

/// Subcommands read-only with any arguments (but [`ANYWHERE_UNSAFE`]).
#[rustfmt::skip]
const READ_SUBS: &[&str] = &[
    "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog",
    "ls-tree", "cat-file", "merge-base", "whatchanged", "rev-list", "show-ref", "count-objects",
    "name-rev", "cherry", "var", "version", "check-ignore", "diff-tree", "diff-files",
    "diff-index",
];

/// Subcommands read-only when every argument is one of these (`…=`: with a glued value).
/// Listing only: a positional (a new branch name) or a mutating flag is not.
#[rustfmt::skip]
const READ_ONLY_WITH: &[(&str, &[&str])] = &[
    ("branch", &["-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l",
        "--show-current", "--merged", "--no-merged", "--contains", "--format=", "--sort="]),
    ("tag", &["-l", "--list"]),
    ("remote", &["-v"]),
];

/// `git grep` runs a pager with `-O`/`--open-files-in-pager`; only known flags count.
#[rustfmt::skip]
const GREP: Spec = Spec {
    short: "aiIvwEFGPnlLcohHzqrWp0",
    short_val: "efABCm",
    long: &[
        "cached", "untracked", "no-index", "recurse-submodules", "text", "ignore-case",
        "word-regexp", "invert-match", "full-name", "extended-regexp", "basic-regexp",
        "fixed-strings", "perl-regexp", "line-number", "column", "files-with-matches",
        "name-only", "files-without-match", "count", "null", "heading", "break",
        "show-function", "function-context", "all-match", "quiet", "only-matching",
        "color?", "no-color", "max-depth=", "after-context=", "before-context=", "context=",
        "max-count=", "threads=", "and", "or", "not", "exclude-standard", "no-exclude-standard",
    ],
    numeric: true,
    ..Spec::NONE
};

fn grep_read_only(rest: &[&str]) -> bool {
    let args: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
    flags::parse(&GREP, &args, flags::Until::End).is_ok()
}

/// Why a git command is dangerous, if it is (global options skipped).
pub fn dangerous(argv: &[String]) -> Option<&'static str> {
    let g = parse(argv);
    let sub_at = g.sub?;
    let sub = argv[sub_at].as_str();
    let rest: Vec<&str> = argv[sub_at + 1..].iter().map(String::as_str).collect();
    let rest = rest.as_slice();
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
