//! The protected-path hard check for commands (design invariant 4): a command may not
//! write `.git/hooks`, `.git/config`, a worktree's `.git` link or settings files — not
//! by a redirect, not as a named target of any command that is not read-only, and not
//! through `git config`. Which paths are protected is `sandbox::protected`.
//!
//! Besides those hard-denied paths, what crew loads as code or policy (`crew_config::loaded`: `.mcp.json`,
//! agent definitions, skills, hooks, the files hooks and MCP servers run, …) is never
//! written without a human: [`loaded_write`] names them, and the file tools and commands
//! that write them ask (so dontAsk, subagents without a human and headless runs deny them).

pub use crew_config::loaded;

use std::path::{Path, PathBuf};

use super::commands;
use super::sandbox;
use super::shell::Part;

/// Why `part` writes a protected path, naming it; `None` when it does not. `named` are
/// the paths the part names (operands and redirect targets, lexical and real), which it
/// may write unless [`only_reads`].
pub fn command_write<'a>(part: &Part, mut named: impl Iterator<Item = &'a Path>) -> Option<String> {
    if let Some(why) = git_config_write(part) {
        return Some(why);
    }
    if only_reads(part) {
        return None;
    }
    named.find_map(|p| {
        sandbox::protected(p).map(|what| {
            format!(
                "it writes {} ({what}), a protected path: git hooks and config run code \
                 later outside any sandbox, and settings decide permissions",
                p.display()
            )
        })
    })
}

/// A read-only command's operands are only read (and `cd` only moves); anything else
/// may write what it names (`cp x .git/config`, `tee`, `sed -i`, `mv`, `ln -s`, `>`).
pub fn only_reads(part: &Part) -> bool {
    commands::is_read_only(part) || matches!(part.program(), "cd" | "pushd" | "popd")
}

/// The files that configured hooks, MCP servers and status lines of `roots` run (the
/// project root and the agent's own checkout, a worktree included). The roots are real
/// (canonical) locations.
pub fn run_files(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .flat_map(|r| loaded::run_files_real(r))
        .collect()
}

/// What `real` (or its `lexical` spelling) is when crew loads it as code or policy; `run`
/// gives the [`run_files`] of the roots (asked only when the name alone does not tell).
/// `None` for an ordinary file.
pub fn loaded_write(
    real: &Path,
    lexical: &Path,
    run: &mut dyn FnMut() -> Vec<PathBuf>,
) -> Option<String> {
    if let Some(what) = loaded::by_name(real).or_else(|| loaded::by_name(lexical)) {
        return Some(what.to_string());
    }
    run().iter().any(|f| f == real).then(|| {
        "a file that a configured hook, MCP server or status line of the project runs".to_string()
    })
}

/// What a write to what crew loads as code or policy means, for the reason of its ask.
pub const LOADED_CONSEQUENCE: &str = "crew loads it as code or policy, so an agent never changes it without a human; approving it changes the project's trust pin, and the next session asks for `crew trust` again";

/// `git config` that is not a pure read (`--get`, `--list`, `get`, `list`, or one key
/// alone) writes git configuration: `core.hooksPath`, `core.fsmonitor` and aliases run
/// programs. Unknown options count as writes (fail closed).
pub fn git_config_write(part: &Part) -> Option<String> {
    if part.program() != "git" {
        return None;
    }
    // Git's global options before the subcommand, as `commands::git` reads them.
    let sub = commands::git::parse(&part.argv).sub?;
    if part.argv[sub] != "config" {
        return None;
    }
    let rest: Vec<&str> = part.argv[sub + 1..].iter().map(String::as_str).collect();
    let verdict = || {
        Some(format!(
            "`{}` writes git configuration (.git/config or another config file), a protected \
             path: settings such as core.hooksPath, core.fsmonitor or an alias make git run \
             programs later outside any sandbox",
            part.text()
        ))
    };
    #[rustfmt::skip]
    const READS: &[&str] = &[
        "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
        "--list", "-l",
    ];
    // Options that change what is read, not whether something is written.
    #[rustfmt::skip]
    const MODIFIERS: &[&str] = &[
        "--local", "--global", "--system", "--worktree", "--bool", "--int", "--bool-or-int",
        "--path", "--expiry-date", "--null", "-z", "--name-only", "--show-origin", "--show-scope",
        "--includes", "--no-includes",
    ];
    const WITH_VALUE: &[&str] = &["--file", "-f", "--blob", "--type", "--default"];
    let mut read_action = false;
    let mut positional = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        if READS.contains(a) {
            read_action = true;
        } else if WITH_VALUE.contains(a) {
            it.next();
        } else if MODIFIERS.contains(a)
            || ["--file=", "--blob=", "--type=", "--default="]
                .iter()
                .any(|p| a.starts_with(p))
        {
        } else if a.starts_with('-') {
            return verdict();
        } else {
            positional.push(*a);
        }
    }
    // `git config get|list …` (git 2.46 subcommands) read; every other subcommand writes.
    let pure_read = match positional.first() {
        Some(&"get") | Some(&"list") => true,
        Some(&("set" | "unset" | "rename-section" | "remove-section" | "edit")) => false,
        _ if read_action => true,
        _ => positional.len() == 1,
    };
    if pure_read { None } else { verdict() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(cmd: &str) -> Part {
        Part {
            argv: cmd.split_whitespace().map(String::from).collect(),
            ..Part::default()
        }
    }

    #[test]
    #[rustfmt::skip]
    fn git_config_reads_pass_and_writes_are_caught() {
        for read in [
            "git config --get user.name", "git config user.name", "git config --list",
            "git -C . config --local --get core.bare",
            "git config --file .git/config --get-regexp remote", "git config get user.name",
            "git config -l --show-origin", "git status",
        ] {
            assert_eq!(git_config_write(&part(read)), None, "{read}");
        }
        for write in [
            "git config core.hooksPath x", "git config --add core.pager cat",
            "git config --local core.fsmonitor x", "git config --file .git/config core.hooksPath x",
            "git config --unset core.hooksPath", "git config --global alias.p !sh",
            "git config set core.hooksPath x", "git -C . config core.sshCommand x",
            "git config --edit", "git config --weird-new-option k",
        ] {
            assert!(git_config_write(&part(write)).is_some(), "{write}");
        }
    }
}
