//! The `crew` command lines the docs show, checked against the binary's own `--help`: each
//! subcommand they name must exist, and each `--flag` must be one some subcommand takes.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// What `crew --help` and every subcommand's `--help` list.
#[derive(Debug, Default)]
pub struct Surface {
    /// The top-level subcommands (`tasks`, `mcp`, …).
    pub subcommands: BTreeSet<String>,
    /// Every long flag of `crew` and of any subcommand.
    pub flags: BTreeSet<String>,
}

/// The subcommands a `--help` text lists under `Commands:`.
fn commands_of(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags (`--name`) a text holds, as words.
pub fn flags_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2 && w.as_bytes()[2].is_ascii_lowercase())
        .map(|w| w.trim_end_matches('-').to_string())
}

/// `crew ARGS… --help`, as text.
fn help(crew: &Path, args: &[&str]) -> String {
    let out = Command::new(crew)
        .args(args)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("running {} {args:?} --help: {e}", crew.display()));
    assert!(
        out.status.success(),
        "{} {args:?} --help failed: {out:?}",
        crew.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asks the binary for every subcommand and flag it has.
pub fn surface(crew: &Path) -> Surface {
    let mut surface = Surface::default();
    let top = help(crew, &[]);
    surface.flags.extend(flags_of(&top));
    for sub in commands_of(&top) {
        let text = help(crew, &[&sub]);
        surface.flags.extend(flags_of(&text));
        for subsub in commands_of(&text) {
            surface
                .flags
                .extend(flags_of(&help(crew, &[&sub, &subsub])));
        }
        surface.subcommands.insert(sub);
    }
    surface
}

/// The `crew …` command lines of a Markdown file, with their line numbers: code spans
/// that start with `crew `, and lines of fenced blocks that do (after a `$ ` prompt).
pub fn command_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let l = line.trim_start().trim_start_matches("$ ");
            if l.starts_with("crew ") || l == "crew" {
                out.push((
                    i + 1,
                    l.split(" # ").next().unwrap_or(l).trim_end().to_string(),
                ));
            }
            continue;
        }
        for (k, span) in line.split('`').enumerate() {
            if k % 2 == 1 && span.starts_with("crew ") {
                out.push((i + 1, span.to_string()));
            }
        }
    }
    out
}

/// What is wrong with one command line: an unknown subcommand or flag.
pub fn problems(surface: &Surface, line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let first = line.split_whitespace().nth(1).unwrap_or("");
    if !first.is_empty()
        && first.chars().all(|c| c.is_ascii_lowercase())
        && !surface.subcommands.contains(first)
    {
        out.push(format!("`{line}`: crew has no subcommand `{first}`"));
    }
    for flag in flags_of(line) {
        if !surface.flags.contains(&flag) {
            out.push(format!("`{line}`: no crew subcommand takes `{flag}`"));
        }
    }
    out
}

#[test]
fn flags_and_commands_are_read_from_help_texts() {
    let help = "Usage: crew [OPTIONS]\n\nCommands:\n  tasks  Background tasks\n  help   Print this\n\nOptions:\n  -p, --print <TASK>\n      --max-turns <N>\n";
    assert_eq!(commands_of(help), ["tasks"]);
    let flags: Vec<String> = flags_of(help).collect();
    assert_eq!(flags, ["--print", "--max-turns"]);
    let surface = Surface {
        subcommands: ["tasks".to_string()].into(),
        flags: flags.into_iter().collect(),
    };
    assert!(problems(&surface, "crew tasks --max-turns 3").is_empty());
    assert!(problems(&surface, "crew -p \"/review\" --print x").is_empty());
    let found = problems(&surface, "crew task list --json [--max-turns N]");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("no subcommand `task`"), "{found:?}");
    assert!(found[1].contains("`--json`"), "{found:?}");
    let lines = command_lines(
        "run `crew tasks list` or\n```sh\n$ crew team show   # hi\ncrewless\n```\n`crewmaster x`\n",
    );
    assert_eq!(
        lines,
        [
            (1, "crew tasks list".to_string()),
            (3, "crew team show".to_string())
        ]
    );
}
