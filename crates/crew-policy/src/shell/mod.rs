//! Shell command parsing for the permission engine: a recognizer, not a model of bash.
//! A real bash parser (brush-parser) turns a `run_command` string into the simple
//! commands ("parts") it would run, so that `rm -r -f /`, `bash -c 'rm -rf /'`, `a && b`,
//! `x | sh` and `$(…)` are all seen.
//!
//! Only a small literal subset is analysed: words and quotes (and a leading `~`); `&&`,
//! `||`, `;` and `|`; literal redirects; a leading literal `cd DIR`; known wrappers with
//! known options, unwrapped recursively; and what a command runs besides itself
//! (`find -exec`, git aliases) as parts of their own. Everything else makes the part
//! opaque (`Part::opaque`): expansions, substitutions (whose commands still become parts),
//! globs, assignments, background jobs, compound commands, functions and what follows an
//! alias, other `cd`s, shells reading stdin. Opaque parts are decided by rule and mode
//! alone; the OS sandbox confines what they do.

mod part;
mod simple;
mod unwrap;
mod walk;
mod words;

pub use part::{Arg, Dir, Env, Part, Redirect, Script, program};

use brush_parser::ParserOptions;

/// How deep wrappers and substitutions may nest before the command counts as unparseable.
const MAX_DEPTH: usize = 8;

/// The command could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse the command as shell: {0}")]
pub struct ShellError(pub String);

/// Parses a command line into its parts, with no cwd or home to read words against.
pub fn parse(command: &str) -> Result<Script, ShellError> {
    parse_in(command, &Env::default())
}

/// Parses a command line into its parts, entering a leading `cd DIR` from `env.cwd` and
/// expanding `~` to `env.home`.
pub fn parse_in(command: &str, env: &Env) -> Result<Script, ShellError> {
    let mut ctx = Ctx {
        opts: ParserOptions::default(),
        script: Script::default(),
        next_pipeline: 0,
        functions: Vec::new(),
        env: env.clone(),
        dir: Dir::Initial,
    };
    ctx.parse_into(command, 0, &Inherit::default())?;
    let Ctx {
        mut script,
        functions,
        ..
    } = ctx;
    // A function that calls itself in a pipe or the background forks without bound.
    for (name, range) in &functions {
        let recursive = script.parts[range.clone()]
            .iter()
            .any(|p| p.program() == name && (p.background || p.piped));
        if recursive {
            script.fork_bomb = true;
        }
    }
    // After an alias or a function is defined, any later word may be that name.
    let renames = script
        .parts
        .iter()
        .position(|p| p.program() == "alias")
        .into_iter()
        .chain(functions.iter().map(|(_, r)| r.start))
        .min();
    if let Some(start) = renames {
        for p in &mut script.parts[start..] {
            p.opaque
                .get_or_insert_with(|| "an alias or function may rename what runs".into());
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
    /// Inside a construct outside the literal subset: why its parts are opaque.
    opaque: Option<String>,
    /// Not at the top level of the command (inside a compound, a substitution, a
    /// pipeline, a nested script): a `cd` here is not a leading `cd`.
    nested: bool,
}

struct Ctx {
    opts: ParserOptions,
    script: Script,
    next_pipeline: usize,
    /// Functions defined, with the range of parts their bodies produced.
    functions: Vec<(String, std::ops::Range<usize>)>,
    env: Env,
    /// The directory parts run in from here on.
    dir: Dir,
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
        assert!(echo.opaque.is_some());
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
    #[rustfmt::skip]
    fn the_literal_subset_is_read() {
        let env = Env { cwd: None, home: Some("/home/u".into()) };
        for cmd in [
            "git log --oneline -5", "ls -la src && grep -rn main src | wc -l", "git -C . status",
            "sort f | uniq -c", "cargo build && git diff", "a; b || c",
            r#"grep -n "a b" 'c d' e\ f > out 2>&1 < in"#, "timeout 5 nice -n 3 git status",
            "bash -c 'git status'", "find . -name '*.rs'", "[ -f x ]", "cat ~/x", "cd src && ls",
            "echo {}",
        ] {
            let s = parse_in(cmd, &env).unwrap();
            assert!(s.parts.iter().all(|p| p.opaque.is_none()), "{cmd}: {:?}", s.parts);
            assert!(s.parts.iter().all(|p| p.args.iter().all(|a| a.known)), "{cmd}");
        }
    }

    #[test]
    #[rustfmt::skip]
    fn everything_else_is_opaque() {
        for cmd in [
            "echo $X", "echo \"$X\"", "echo ${X:-$(id)}", "echo $(id)", "echo `id`",
            "echo $((1+2))", "x=$((1+2))", "x=1", "A=1 git status", "ls *.rs", "ls src/?.rs",
            "ls [ab]", "echo {a,b}", "echo {1..3}", "cat <(ls)", "ls > $OUT",
            "cat <<EOF\n$(id)\nEOF", "make &", "(ls)", "{ ls; }", "if true; then ls; fi",
            "for f in a b; do ls $f; done", "while true; do ls; done", "case x in x) ls;; esac",
            "[[ -f x ]]", "(( x++ ))", "f() { ls; }; f",
            "shopt -s expand_aliases; alias g=git; g push", "ls ~root", "echo 'git push' | bash",
        ] {
            let s = parse(cmd).unwrap();
            assert!(s.parts.iter().any(|p| p.opaque.is_some()), "{cmd}: {:?}", s.parts);
        }
        // After an alias is defined, every later word may be it.
        let s = parse("alias g=git; g push").unwrap();
        assert!(s.parts[1].opaque.is_some());
    }

    #[test]
    #[rustfmt::skip]
    fn only_a_leading_literal_cd_is_followed() {
        let tmp = std::env::temp_dir().canonicalize().unwrap();
        let env = Env { cwd: Some(tmp.clone()), home: None };
        let s = parse_in("cd . && ls", &env).unwrap();
        assert_eq!(s.parts[1].dir, Dir::Known(tmp.clone()));
        for cmd in [
            "ls && cd . && ls", "cd $X && ls", "cd - && ls", "cd /no/such/dir && ls",
            "pushd . && ls", "bash -c 'cd . && ls'",
        ] {
            let s = parse_in(cmd, &env).unwrap();
            let last = s.parts.last().unwrap();
            assert_eq!(last.dir, Dir::Unknown, "{cmd}");
        }
    }

    #[test]
    fn broken_shell_is_an_error() {
        for bad in ["echo 'unclosed", "a && && b", "$(", "if then fi"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
