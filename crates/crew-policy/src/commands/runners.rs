//! Programs that run programs their words do not show (`runs` in the program table):
//! interpreters, build tools, package runners, `xargs`, `find -exec`, `eval`, aliases.
//! While any Bash deny or ask rule exists, such a part is opaque (the rule cannot see what
//! runs). Auto mode sets aside wildcard allow rules on the same programs.

use super::super::shell::Part;

pub use super::table::Runs;

/// Builtins that take variable names, whose subscripts bash evaluates.
#[rustfmt::skip]
const NAME_TAKERS: &[&str] = &[
    "read", "unset", "printf", "export", "readonly", "test", "[", "mapfile", "readarray", "wait",
    "getopts", "declare", "typeset", "local", "let",
];

/// Arguments that only print a version or help.
const HARMLESS: &[&str] = &["--version", "-V", "--help", "-h"];

/// How `program` (a bare name) runs programs, if the program table says it does.
pub fn runner(program: &str) -> Option<Runs> {
    super::table::program(program)?.runs
}

/// Every program that runs programs it does not show.
pub fn runner_programs() -> impl Iterator<Item = &'static str> {
    super::table::names(|p| p.runs.is_some())
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
