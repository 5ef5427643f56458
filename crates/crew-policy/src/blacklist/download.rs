//! Download and run: whether what a downloader (`curl`, `wget`, `nc`, …) prints reaches
//! a program that runs it as code, for the blacklist (`blacklist.rs`).

use super::super::commands;
use super::super::shell::{Part, Script};

/// Files that are a program's own stdin.
const STDIN_FILES: &[&str] = &["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

/// Programs that run the code in a file given as their first operand (or read from
/// stdin without one): shells and interpreters, `python3.12` spelt with its version.
fn runs_scripts(prog: &str) -> bool {
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    commands::INTERPRETERS.contains(&prog)
        || commands::INTERPRETERS.contains(&base)
        || commands::runs_code(prog)
        || matches!(
            base,
            "python" | "pypy" | "perl" | "ruby" | "node" | "php" | "lua"
        )
}

/// Whether a part runs, as a program, what arrives on its stdin: a shell or interpreter
/// with no script operand, with `-s`, or with `-`/`/dev/stdin` as its script; `xargs sh`
/// (the words become its script); or a program computed at run time, which may be one.
fn runs_stdin(p: &Part) -> bool {
    if p.args.first().is_some_and(|a| !a.known) || p.argv.first().is_some_and(|a| a.contains('$')) {
        return true;
    }
    if !runs_scripts(p.program()) {
        return false;
    }
    // `xargs sh -c`: the words read from stdin become the script or its arguments.
    if p.open {
        return true;
    }
    let args = p.argv.get(1..).unwrap_or_default();
    let inline = args
        .iter()
        .any(|a| matches!(a.as_str(), "-c" | "-e" | "-E" | "--eval" | "-m"));
    if inline {
        return false;
    }
    match args
        .iter()
        .find(|a| !a.starts_with('-') || STDIN_FILES.contains(&a.as_str()))
    {
        None => true,
        Some(first) => STDIN_FILES.contains(&first.as_str()) || args.iter().any(|a| a == "-s"),
    }
}

/// Whether a part runs `file` as a script: `sh x.sh`, `./x.sh`, `source x.sh`.
fn runs_file(p: &Part, file: &str) -> bool {
    let norm = |s: &str| s.trim_start_matches("./").to_string();
    let file = norm(file);
    if p.argv.first().is_some_and(|a| norm(a) == file) {
        return true;
    }
    if !runs_scripts(p.program()) {
        return false;
    }
    let mut args = p.argv.iter().skip(1).skip_while(|a| a.starts_with('-'));
    args.next().is_some_and(|a| norm(a) == file)
}

/// How the output of the downloader at `index` reaches a program that runs it, if it
/// does: a later member of its pipeline that runs stdin (through `tee`, `cat` or any
/// other member in between); a substitution into a shell (`sh -c "$(curl …)"`,
/// `bash <(curl …)`, `source <(curl …)`); either of those for a command it is
/// substituted into (`echo "$(curl …)" | sh`); or a file it saves that a later part
/// runs (`curl -o x.sh … && sh x.sh`, `wget -O x; ./x`).
pub(super) fn runs(script: &Script, index: usize) -> Option<&'static str> {
    let mut at = index;
    loop {
        let part = &script.parts[at];
        // Inside a subshell or a group (`( curl … | sh )`) the parser numbers every
        // member 0: any later piped part of the same pipeline counts (fail closed).
        let piped = part.piped
            && script.parts.iter().skip(at + 1).any(|p| {
                p.pipeline == part.pipeline
                    && p.piped
                    && p.pipe_pos >= part.pipe_pos
                    && p.parent == part.parent
                    && runs_stdin(p)
            });
        if piped {
            return Some("piped into a shell");
        }
        let Some(parent) = part.parent.filter(|_| part.substituted) else {
            break;
        };
        let outer = &script.parts[parent];
        let shell = runs_scripts(outer.program())
            || outer.argv.is_empty() && !outer.wrappers.is_empty()
            || outer.args.first().is_some_and(|a| !a.known);
        if shell {
            return Some("substituted into a shell");
        }
        at = parent;
    }
    let part = &script.parts[index];
    let mut saved: Vec<String> = part
        .redirects
        .iter()
        .filter(|r| r.write)
        .map(|r| r.target.clone())
        .collect();
    let w = commands::writes(&part.argv);
    saved.extend(
        w.targets
            .iter()
            .map(|&(i, from)| part.argv[i][from..].to_string()),
    );
    if w.cwd {
        // `curl -O URL`, `wget URL`: saved under the URL's last component.
        saved.extend(
            part.argv
                .iter()
                .skip(1)
                .filter(|a| a.contains("://"))
                .filter_map(|u| {
                    u.split(['?', '#'])
                        .next()?
                        .rsplit('/')
                        .next()
                        .map(String::from)
                }),
        );
    }
    saved.retain(|f| !f.is_empty() && f != "/dev/null" && !f.starts_with('&'));
    let runs_saved = script
        .parts
        .iter()
        .skip(index + 1)
        .any(|p| saved.iter().any(|f| runs_file(p, f)));
    runs_saved.then_some("saved to a file that is then run")
}
