//! Programs that run programs: the one table of commands whose visible words do not say
//! what they will run (interpreters given code, build tools reading a makefile, package
//! runners fetching and running a package, `xargs`, `find -exec`, `env -S`, `eval`,
//! `source`, aliases). While any Bash deny or ask rule exists, such a part is opaque for
//! it: the rule cannot see what runs, so the part asks (and is denied under dontAsk).
//! Auto mode's rule suspension reads the same table: a wildcard allow rule on one of
//! these programs would let the classifier's blind spot run anything.

use super::super::shell::Part;

/// When a program runs programs it does not show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Whatever its arguments (an interpreter running a script, `make`, `npx`), except
    /// asking for its version or help.
    Always,
    /// Through one of these subcommands (`npm exec`, `uv run`).
    Subcommands(&'static [&'static str]),
    /// Through one of these options (`find -exec`, `env -S`).
    Options(&'static [&'static str]),
}

/// The table: program name and when it runs programs it does not show.
#[rustfmt::skip]
pub const RUNNERS: &[(&str, Runs)] = &[
    // Interpreters: inline code (`-c`, `-e`, `-E`, `-p`, `-r`), a script file, a module or
    // stdin all run code the rule cannot read.
    ("python", Runs::Always), ("python2", Runs::Always), ("python3", Runs::Always),
    ("pypy", Runs::Always), ("pypy3", Runs::Always), ("perl", Runs::Always),
    ("ruby", Runs::Always), ("node", Runs::Always), ("nodejs", Runs::Always),
    ("deno", Runs::Always), ("bun", Runs::Always), ("php", Runs::Always), ("lua", Runs::Always),
    ("luajit", Runs::Always), ("Rscript", Runs::Always), ("julia", Runs::Always),
    ("tclsh", Runs::Always), ("osascript", Runs::Always), ("pwsh", Runs::Always),
    ("powershell", Runs::Always),
    // awk's `system()` and pipes in a literal program are parts of their own; a program
    // read from a file is not seen.
    ("awk", Runs::Options(&["-f", "--file"])), ("gawk", Runs::Options(&["-f", "--file"])),
    ("mawk", Runs::Options(&["-f", "--file"])), ("nawk", Runs::Options(&["-f", "--file"])),
    // Shells left as a part of their own run a script file or stdin (`bash -c 'literal'`
    // became parts of its own; `bash -c "$X"` did not).
    ("sh", Runs::Always), ("bash", Runs::Always), ("zsh", Runs::Always), ("dash", Runs::Always),
    ("ksh", Runs::Always), ("mksh", Runs::Always), ("ash", Runs::Always), ("fish", Runs::Always),
    ("csh", Runs::Always), ("tcsh", Runs::Always),
    // Shell builtins that run text as commands or define new names for them.
    ("eval", Runs::Always), ("source", Runs::Always), (".", Runs::Always),
    ("alias", Runs::Always), ("trap", Runs::Always),
    // Builtins that evaluate their arguments as arithmetic, where an array subscript in
    // a value (`a[$(cmd)]`) runs a command.
    ("let", Runs::Always), ("declare", Runs::Always), ("typeset", Runs::Always),
    ("local", Runs::Always), ("printf", Runs::Options(&["-v"])),
    // Build tools: the makefile (any, `-f /dev/stdin`) holds the commands.
    ("make", Runs::Always), ("gmake", Runs::Always), ("bmake", Runs::Always),
    ("just", Runs::Always),
    // Wrappers whose command is not all on the line.
    ("xargs", Runs::Always), ("parallel", Runs::Always),
    ("find", Runs::Options(&["-exec", "-execdir", "-ok", "-okdir"])),
    ("env", Runs::Options(&["-S", "--split-string"])),
    // Package runners: they fetch a package and run it, or run any command given.
    ("npx", Runs::Always), ("pnpx", Runs::Always), ("bunx", Runs::Always),
    ("uvx", Runs::Always),
    ("npm", Runs::Subcommands(&["exec", "x"])),
    ("pnpm", Runs::Subcommands(&["dlx", "exec"])),
    ("yarn", Runs::Subcommands(&["dlx", "exec"])),
    ("uv", Runs::Subcommands(&["run", "tool"])),
    ("pipx", Runs::Subcommands(&["run"])),
    ("poetry", Runs::Subcommands(&["run"])),
];

/// Builtins that take variable names, whose subscripts bash evaluates.
const NAME_TAKERS: &[&str] = &[
    "read",
    "unset",
    "printf",
    "export",
    "readonly",
    "test",
    "[",
    "mapfile",
    "readarray",
    "wait",
    "getopts",
    "declare",
    "typeset",
    "local",
    "let",
];

/// Arguments that only print a version or help.
const HARMLESS: &[&str] = &["--version", "-V", "--help", "-h"];

/// How `program` (a bare name) runs programs, if it is in the table.
pub fn runner(program: &str) -> Option<Runs> {
    RUNNERS.iter().find(|(p, _)| *p == program).map(|(_, r)| *r)
}

/// Every program in the table.
pub fn runner_programs() -> impl Iterator<Item = &'static str> {
    RUNNERS.iter().map(|(p, _)| *p)
}

/// Why `argv` (wrappers removed) runs a program its words do not show, if it does.
pub fn hidden_program(argv: &[String]) -> Option<String> {
    let first = argv.first()?;
    let program = first.rsplit('/').next().unwrap_or(first);
    let args = argv.get(1..).unwrap_or_default();
    // A builtin given a variable name expands an array subscript in it, and a
    // substitution there runs (`read 'a[$(cmd)]'`, `unset 'a[`cmd`]'`).
    let subscript = |a: &String| a.contains('[') && a.contains(['$', '`']);
    if NAME_TAKERS.contains(&program) && args.iter().any(subscript) {
        return Some(format!(
            "`{program}` evaluates a subscript in a variable name"
        ));
    }
    let hit = match runner(program)? {
        Runs::Always => !(args.len() == 1 && HARMLESS.contains(&args[0].as_str())),
        Runs::Subcommands(subs) => args
            .iter()
            .find(|a| !a.starts_with('-'))
            .is_some_and(|a| subs.contains(&a.as_str())),
        Runs::Options(opts) => args.iter().any(|a| {
            opts.iter()
                .any(|o| a == o || (o.starts_with("--") && a.starts_with(&format!("{o}="))))
                || (opts.contains(&"-S") && a.starts_with("-S"))
        }),
    };
    hit.then(|| format!("`{program}` runs programs that its words do not show"))
}

/// Why a part runs programs a Bash deny or ask rule cannot see: its own program (see
/// [`hidden_program`]), or a wrapper around it that does (`xargs`, `env -S`, `eval`).
pub fn part_runs_hidden(part: &Part) -> Option<String> {
    if let Some(why) = hidden_program(&part.argv) {
        return Some(why);
    }
    // A shell's literal `-c` script became parts of its own, seen by every rule.
    part.wrappers.iter().find_map(|w| {
        let words: Vec<String> = w.split_whitespace().map(String::from).collect();
        let program = words.first()?.rsplit('/').next()?;
        if super::SHELLS.contains(&program) {
            return None;
        }
        hidden_program(&words)
    })
}

/// Whether a wildcard allow rule whose literal words are `words` (program first) may
/// admit a command that runs programs it does not show (auto mode suspends it).
pub fn rule_may_run_hidden(words: &[&str], wild: bool) -> bool {
    let Some(first) = words.first() else {
        return wild;
    };
    let program = first.rsplit('/').next().unwrap_or(first);
    match runner(program) {
        None => false,
        Some(Runs::Always | Runs::Options(_)) => wild,
        Some(Runs::Subcommands(subs)) => match words.get(1) {
            None => wild,
            Some(sub) => subs.contains(sub),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn programs_that_run_programs_are_seen() {
        for cmd in [
            "python3 -c x",
            "python -c x",
            "python3 script.py",
            "perl -e x",
            "perl -E x",
            "node -e x",
            "node -p x",
            "ruby -e x",
            "php -r x",
            "lua -e x",
            "bash script.sh",
            "make",
            "make -f /dev/stdin",
            "xargs git",
            "find . -exec git push ;",
            "find . -execdir x ;",
            "env -S x",
            "env --split-string=x",
            "eval x",
            "source x",
            ". x",
            "alias g=git",
            "npm exec x",
            "npm x x",
            "npx x",
            "pnpm dlx x",
            "pnpm exec x",
            "yarn dlx x",
            "yarn exec x",
            "bunx x",
            "bun x x",
            "uvx x",
            "uv run x",
            "pipx run x",
            "/usr/bin/python3 -c x",
            "let x=n",
            "read a[$(id)]",
            "unset a[`id`]",
        ] {
            assert!(hidden_program(&argv(cmd)).is_some(), "{cmd}");
        }
        for cmd in [
            "npm test",
            "npm run build",
            "uv sync",
            "find . -name x",
            "env A=1",
            "python3 --version",
            "git push",
            "ls",
        ] {
            assert!(hidden_program(&argv(cmd)).is_none(), "{cmd}");
        }
    }

    #[test]
    fn rules_that_may_admit_a_runner() {
        assert!(rule_may_run_hidden(&["npm"], true));
        assert!(rule_may_run_hidden(&["npm", "exec"], true));
        assert!(rule_may_run_hidden(&["npm", "exec"], false));
        assert!(!rule_may_run_hidden(&["npm", "test"], true));
        assert!(rule_may_run_hidden(&["python3"], true));
        assert!(!rule_may_run_hidden(&["python3", "--version"], false));
        assert!(!rule_may_run_hidden(&["cargo"], true));
    }
}
