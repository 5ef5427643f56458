//! Commands that read everything below a directory: recursive searches (`grep -r`, `rg`,
//! `git grep`) and git commands that print file contents of the whole repository
//! (`git show`, `git diff`, `git log -p`, `git cat-file`). Naming only the directory, they
//! reach files that a Read deny rule or a credential location protects; the caller
//! (`check.rs`) makes them not a read when such a file may lie below a scope.
//! Also git's object paths (`HEAD:path`, `:path`), which name files like any operand.

use crate::shell::Part;

use super::{git, read_only};

/// The directories (or files) a part reads everything below, as words relative to the
/// cwd (`.` is the cwd; for git also relative to the repository root), or `None` when it
/// is not such a command. Words that name nothing are for the caller to skip.
pub fn scopes(part: &Part) -> Option<Vec<String>> {
    match part.program() {
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "ack-grep" => search_scopes(part),
        "git" => super::git_history::scopes(&part.argv),
        "diff" => diff_scopes(&part.argv),
        _ => None,
    }
}

/// `diff -r A B` reads everything below both directories.
fn diff_scopes(argv: &[String]) -> Option<Vec<String>> {
    let args = &argv[1..];
    let recursive = args.iter().any(|a| {
        a == "--recursive" || (a.starts_with('-') && !a.starts_with("--") && a.contains('r'))
    });
    recursive.then(|| non_options(args))
}

/// The words of `args` that are not options.
fn non_options(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| !a.starts_with('-'))
        .cloned()
        .collect()
}

fn search_scopes(part: &Part) -> Option<Vec<String>> {
    let prog = part.program();
    let args = &part.argv[1..];
    let p = read_only::parsed(part);
    let seen = |o: &str| p.as_ref().is_some_and(|p| p.seen.iter().any(|s| s == o));
    let recursive = !matches!(prog, "grep" | "egrep" | "fgrep")
        || ["-r", "-R", "--recursive", "--dereference-recursive"]
            .iter()
            .any(|o| seen(o))
        || args.iter().any(|a| a.ends_with("recurse"));
    if !recursive {
        return None;
    }
    // Unparsed (an option we do not know): every word may be a directory.
    let Some(p) = &p else {
        let mut out = non_options(args);
        out.push(".".into());
        return Some(out);
    };
    let pattern_given = ["-e", "--regexp", "-f", "--file"].iter().any(|o| seen(o));
    let files = if pattern_given {
        &p.operands[..]
    } else {
        p.operands.get(1..).unwrap_or_default()
    };
    // With no file operand, a recursive search reads the cwd; every operand may be a
    // directory (the pattern too, if it names one: over-reporting is safe).
    let mut out = p.operands.clone();
    if files.is_empty() {
        out.push(".".into());
    }
    Some(out)
}

/// The file an object name like `HEAD:path`, `main:./path` or `:path` (the index)
/// names, relative to the repository (`./` relative to the cwd; taken from the cwd
/// either way). `None` for words that are not object paths (`:/message` searches
/// commit messages and is a path too, failing closed: `/message` is outside the project).
pub fn object_path(word: &str) -> Option<&str> {
    if word.starts_with('-') || word.contains("://") {
        return None;
    }
    let (rev, path) = word.split_once(':')?;
    // `:0:path`, `:1:path`: index stages.
    let path = match (rev, path.split_once(':')) {
        ("", Some((stage, p))) if stage.len() == 1 && stage.chars().all(|c| c.is_ascii_digit()) => {
            p
        }
        _ => path,
    };
    Some(if path.is_empty() { "." } else { path })
}

/// The object paths among a git command's arguments after the subcommand.
pub fn object_paths(argv: &[String]) -> Vec<String> {
    let g = git::parse(argv);
    let Some(sub) = g.sub else {
        return Vec::new();
    };
    // `git config a.b x:y`, `git remote add o host:path`: not objects, and not reads.
    if matches!(
        argv[sub].as_str(),
        "config" | "remote" | "clone" | "push" | "fetch" | "pull"
    ) {
        return Vec::new();
    }
    argv[sub + 1..]
        .iter()
        .filter_map(|a| object_path(a))
        .map(String::from)
        .collect()
}
