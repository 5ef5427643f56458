//! Shell command parsing for the permission engine: turns a `run_command` string into the
//! simple commands ("parts") it would run, with a real bash parser (brush-parser), so that
//! `rm -r -f /`, `bash -c 'rm -rf /'`, `a && b`, `x | sh` and `$(…)` are all seen.
//!
//! Wrappers that run another command (`sudo`, `env`, `timeout`, `nice`, `nohup`, `xargs`,
//! `bash|sh|zsh -c '…'`, `eval`, …) are unwrapped recursively; compound commands (`&&`,
//! `||`, `;`, `|`, `&`, subshells, groups, `if`/`for`/`while`/`case`, function bodies) are
//! flattened; command substitutions are parsed and contribute parts of their own.
//! Commands a command runs besides itself (`find -exec`, git aliases and command-valued
//! settings) and shell source fed to a shell's stdin (`echo 'x' | bash`, `bash <<< 'x'`)
//! become parts too (`unwrap.rs`, `stdin.rs`).
//!
//! Each part also carries its words as bash would expand them (`expand.rs`, `glob.rs`)
//! and the directory it runs in (`cwd.rs`): the blacklist and the path checks judge those.

mod arith;
mod assigns;
mod cwd;
mod expand;
mod glob;
mod inner;
mod loops;
mod part;
mod simple;
mod stdin;
mod unwrap;
mod walk;
mod words;

use cwd::State;
pub use cwd::{Dir, Env};
pub use expand::Arg;
pub use part::{Part, Redirect, Script};

use brush_parser::ParserOptions;
use loops::LOOP_PASSES;

pub use stdin::Feed;

/// How deep wrappers and substitutions may nest before the command counts as unparseable.
const MAX_DEPTH: usize = 8;

/// The command could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse the command as shell: {0}")]
pub struct ShellError(pub String);

/// Parses a command line into its parts, with no cwd or home to expand against.
pub fn parse(command: &str) -> Result<Script, ShellError> {
    parse_in(command, &Env::default())
}

/// Parses a command line into its parts, expanding words against `env` (the caller's cwd
/// for relative globs, the home for `~`).
pub fn parse_in(command: &str, env: &Env) -> Result<Script, ShellError> {
    let mut ctx = Ctx {
        opts: ParserOptions::default(),
        script: Script::default(),
        next_pipeline: 0,
        functions: Vec::new(),
        state: State::default(),
        env: env.clone(),
        loop_passes: LOOP_PASSES,
        may_declare_int: assigns::may_declare_int(command),
    };
    ctx.parse_into(command, 0, &Inherit::default())?;
    // A function that calls itself in a pipe or the background forks without bound.
    let Ctx {
        mut script,
        functions,
        ..
    } = ctx;
    for (name, range) in &functions {
        let recursive = script.parts[range.clone()]
            .iter()
            .any(|p| p.program() == name && (p.background || p.piped));
        if recursive {
            script.fork_bomb = true;
        }
    }
    Ok(script)
}

/// What nested parts inherit from the construct that contains them.
#[derive(Debug, Clone, Default)]
struct Inherit {
    wrappers: Vec<String>,
    substituted: bool,
    piped: bool,
    privileged: bool,
    background: bool,
    parent: Option<usize>,
    dynamic: bool,
    /// What stdin holds for commands in this construct (a pipe, a here-string on a group).
    stdin: Option<Feed>,
    /// Inside a function body: its stdin is whatever the caller feeds it.
    in_function: bool,
}

struct Ctx {
    opts: ParserOptions,
    script: Script,
    next_pipeline: usize,
    /// Functions defined, with the range of parts their bodies produced.
    functions: Vec<(String, std::ops::Range<usize>)>,
    /// The directory and variables at the point being parsed.
    state: State,
    env: Env,
    /// Extra passes loops may still spend on their pins (`loops.rs`).
    loop_passes: usize,
    /// The command may give some variable the integer attribute (`assigns.rs`).
    may_declare_int: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(cmd: &str) -> Vec<String> {
        parse(cmd)
            .unwrap()
            .parts
            .iter()
            .filter(|p| !p.argv.is_empty())
            .map(Part::text)
            .collect()
    }

    #[test]
    fn compounds_are_split() {
        assert_eq!(
            texts("a && b || c; d | e & f"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(
            texts("(cd x && make) && { echo ok; }"),
            ["cd x", "make", "echo ok"]
        );
        assert_eq!(texts("if test -f x; then rm x; fi"), ["test -f x", "rm x"]);
    }

    #[test]
    fn quotes_are_removed_and_flags_kept_in_order() {
        assert_eq!(texts(r#"rm "-r" '-f' /"#), ["rm -r -f /"]);
        assert_eq!(texts(r#"echo "a b"\ c"#), ["echo a b c"]);
    }

    #[test]
    fn wrappers_are_unwrapped_recursively() {
        let s =
            parse("sudo -u root timeout 5 nice -n 10 bash -c 'env A=1 rm -rf / && ls'").unwrap();
        let rm = s.parts.iter().find(|p| p.program() == "rm").unwrap();
        assert_eq!(rm.text(), "rm -rf /");
        assert!(rm.privileged);
        assert!(
            rm.full_text()
                .starts_with("sudo -u root timeout 5 nice -n 10 bash -c")
        );
        assert!(s.parts.iter().any(|p| p.text() == "ls"));
        assert_eq!(texts("xargs -n1 rm -f"), ["rm -f"]);
        assert!(parse("xargs rm").unwrap().parts[0].dynamic);
        assert_eq!(texts(r#"eval "rm -rf /""#), ["rm -rf /"]);
        assert_eq!(texts("sh -lc 'git status'"), ["git status"]);
        assert_eq!(texts("nohup make &"), ["make"]);
    }

    #[test]
    fn substitutions_are_parsed_and_mark_dynamic() {
        let s = parse("echo $(rm -rf /) `id` $HOME ~").unwrap();
        let echo = &s.parts[0];
        assert!(echo.dynamic);
        assert_eq!(echo.text(), "echo $(…) $(…) ~ ~");
        assert!(
            s.parts
                .iter()
                .any(|p| p.text() == "rm -rf /" && p.parent == Some(0))
        );
        assert!(s.parts.iter().any(|p| p.text() == "id"));
    }

    #[test]
    fn redirects_pipes_and_background() {
        let s = parse("cat a > /dev/sda 2>&1 | tee b &").unwrap();
        assert!(
            s.parts[0]
                .redirects
                .iter()
                .any(|r| r.write && r.target == "/dev/sda")
        );
        assert!(s.parts[0].piped && s.parts[1].piped);
        assert_eq!(s.parts[1].pipe_pos, 1);
        assert!(s.parts[1].background);
    }

    #[test]
    fn fork_bombs_are_flagged() {
        assert!(parse(":(){ :|:& };:").unwrap().fork_bomb);
        assert!(parse("bomb() { bomb | bomb & }; bomb").unwrap().fork_bomb);
        assert!(!parse("f() { echo hi; }; f").unwrap().fork_bomb);
    }

    #[test]
    fn broken_shell_is_an_error() {
        for bad in ["echo 'unclosed", "a && && b", "$(", "if then fi"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
