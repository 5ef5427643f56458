//! What the engine knows about individual programs. The facts live in one table
//! (`table`), which generic code reads: `wrappers`, `read_only`, `writes`, `runners`.
//! Programs with a syntax of their own have modules (`git`, `find`, `sed`, `programs` for
//! options and program text that run commands); `dangerous` asks in every mode but
//! bypassPermissions. Here: the commands a command runs besides itself (`embedded`) and
//! the spellings a deny rule must see (`match_forms`).

mod dangerous;
mod find;
mod flags;
pub mod git;
mod git_config;
mod git_history;
pub mod git_repo;
mod programs;
mod read_only;
mod runners;
mod search;
mod sed;
mod shells;
mod table;
mod wrappers;
mod writes;

pub use dangerous::dangerous;
pub use read_only::{is_read_only, path_operands};
pub use runners::{part_runs_hidden, rule_may_run_hidden, runner_programs};
pub use search::scopes as search_scopes;
pub use wrappers::{Effects, INTERPRETERS, SHELLS, Unwrap, unwrap, wrappers};
pub use writes::{Writes, writes};

use super::shell::Part;

/// A command that a command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Embedded {
    /// An argv (`find -exec rm {} ;` runs `rm {}`; a git alias runs `git push`).
    Command {
        /// How it is run, in parentheses so that no allow rule on the outer program
        /// matches it as a wrapper (`(find -exec)`, `(git alias p)`).
        via: String,
        /// The command.
        argv: Vec<String>,
    },
    /// Shell source (`git -c core.pager='…'`, `GIT_SSH_COMMAND='…'`, `alias.x=!…`).
    Script {
        /// How it is run.
        via: String,
        /// The source.
        script: String,
    },
    /// Something runs that we cannot see (`core.hooksPath`, `LD_PRELOAD`).
    Opaque(String),
}

/// Environment variables whose value is a command some program runs.
#[rustfmt::skip]
const COMMAND_VARS: &[&str] = &[
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL",
    "GIT_SEQUENCE_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS",
    "GIT_PROXY_COMMAND", "LESSOPEN", "LESSCLOSE", "MANPAGER", "SYSTEMD_PAGER", "BROWSER",
    "PROMPT_COMMAND",
];

/// The shell source a command-valued variable runs. `less` runs `LESSOPEN` through the
/// shell with `%s` replaced by the file name; a leading `|` (or `||`) makes it an input
/// pipe and a `-` after it lets it read stdin. `LESSCLOSE` gets two file names.
fn command_var_script(name: &str, value: &str) -> String {
    let file = "\"$1\"";
    match name {
        "LESSOPEN" => {
            let v = value.trim_start_matches('|');
            v.strip_prefix('-').unwrap_or(v).replace("%s", file)
        }
        "LESSCLOSE" => value.replace("%s", file),
        _ => value.to_string(),
    }
}

/// Environment variables that make programs load code we cannot see (besides the
/// `GIT_CONFIG*`, `LD_*` and `DYLD_*` families).
#[rustfmt::skip]
const CODE_VARS: &[&str] = &[
    "GIT_EXEC_PATH", "GIT_DIR", "GIT_TEMPLATE_DIR", "BASH_ENV", "ENV", "ZDOTDIR",
    "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "PERL5LIB", "RUBYOPT", "NODE_OPTIONS",
    "SHELLOPTS", "BASHOPTS", "IFS", "PATH",
];

fn loads_code(name: &str) -> bool {
    ["GIT_CONFIG", "LD_", "DYLD_"]
        .iter()
        .any(|p| name.starts_with(p))
        || CODE_VARS.contains(&name)
}

/// What a command runs besides itself: `find -exec` commands, git's command-valued
/// settings and aliases, and commands given through environment variables (`env` are
/// the assignments in effect for the command).
pub fn embedded(argv: &[String], env: &[(String, String)]) -> Vec<Embedded> {
    let mut out = Vec::new();
    for (name, value) in env {
        if COMMAND_VARS.contains(&name.as_str()) {
            out.push(Embedded::Script {
                via: format!("({name}=)"),
                script: command_var_script(name, value),
            });
        } else if loads_code(name) {
            out.push(Embedded::Opaque(format!(
                "`{name}=…` makes programs load code the engine cannot see"
            )));
        }
    }
    let prog = super::shell::program(argv);
    match prog {
        "find" => out.extend(find::embedded(argv)),
        "git" => out.extend(git::embedded(argv)),
        // `alias p='git push'` (run later where aliases expand), `trap 'git push' EXIT`:
        // shell source stored now and run later, judged now.
        "alias" => out.extend(argv[1..].iter().filter_map(|a| {
            let (name, value) = a.split_once('=')?;
            Some(Embedded::Script {
                via: format!("(alias {name})"),
                script: value.to_string(),
            })
        })),
        // `export PAGER='git push'`: run later by whatever reads the variable.
        "export" | "declare" | "typeset" | "readonly" | "local" => {
            out.extend(argv[1..].iter().filter_map(|a| {
                let (name, value) = a.split_once('=')?;
                COMMAND_VARS.contains(&name).then(|| Embedded::Script {
                    via: format!("({name}=)"),
                    script: command_var_script(name, value),
                })
            }))
        }
        "trap" => {
            out.extend(
                argv.get(1)
                    .filter(|a| !a.starts_with('-'))
                    .map(|script| Embedded::Script {
                        via: "(trap)".into(),
                        script: script.clone(),
                    }),
            )
        }
        _ => out.extend(programs::embedded(prog, argv)),
    }
    out
}

/// Other spellings of a part's command that deny and ask rules must also see: the
/// program's basename (`/usr/bin/git push` → `git push`) and git without its global
/// options (`git -C . -c k=v push` → `git push`). Allow rules never look at these, so
/// they cannot widen what an allow rule grants.
pub fn match_forms(part: &Part) -> Vec<String> {
    let mut forms = Vec::new();
    let Some(first) = part.argv.first() else {
        return forms;
    };
    if part.program() == first && part.program() != "git" {
        return forms;
    }
    let mut argv = part.argv.clone();
    let base = part.program().to_string();
    if base != *first {
        argv[0] = base;
        forms.push(argv.join(" "));
    }
    if part.program() == "git"
        && let Some(g) = git::canonical(&argv)
    {
        forms.push(g.join(" "));
    }
    // Push plumbing: `git send-pack`/`git http-push` push like `git push`.
    if part.program() == "git" {
        let mut more = Vec::new();
        for f in std::iter::once(argv.join(" ")).chain(forms.iter().cloned()) {
            for plumbing in [" send-pack", " http-push"] {
                if let Some(at) = f.find(plumbing) {
                    more.push(format!("{} push{}", &f[..at], &f[at + plumbing.len()..]));
                }
            }
        }
        forms.extend(more);
    }
    forms
}

/// Every program the engine knows to run code or another command it is given: each
/// wrapper [`unwrap`] handles, each interpreter, each other code runner. The one table of
/// them; auto mode's rule suspension reads it.
pub fn code_running_programs() -> impl Iterator<Item = &'static str> {
    wrappers()
        .chain(INTERPRETERS.iter().copied())
        .chain(runner_programs())
}

/// Whether `program` (a bare name) runs code whatever its first argument: one of
/// [`code_running_programs`], except those that do only through some subcommands
/// (`npm exec`, see `runners::Runs::Subcommands`).
pub fn runs_code(program: &str) -> bool {
    match runners::runner(program) {
        Some(runners::Runs::Subcommands(_)) => false,
        Some(_) => true,
        None => {
            INTERPRETERS.contains(&program)
                || table::program(program).is_some_and(|p| p.wrap != table::Wrap::No)
        }
    }
}

/// Whether `args` hold the short flag `c` (alone or in a cluster) or `long`.
pub fn has_short_or_long(args: &[&str], c: char, long: &str) -> bool {
    args.iter()
        .any(|a| *a == long || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c)))
}

#[cfg(test)]
mod tests;
