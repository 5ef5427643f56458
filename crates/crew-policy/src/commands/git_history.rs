//! Git commands that print file contents from the object store or the work tree
//! (issue 25 item 3): `show`, `diff`, `cat-file`, `blame`, `archive` …, and the log family
//! with a patch or a content search (`-p`, `-L…`, `-S`); `--stat` and the like print none.
//!
//! `scopes` says which paths such a command may print: its pathspecs after `--`, the files
//! of `-L`, the object paths of `show REV:path`, else everything (`.`). The OS sandbox
//! cannot hide a blob in `.git/objects`, so the caller asks before any of these runs while
//! a Read deny rule may match below a scope.

use super::git;
use super::search::object_path;

/// Options of the log family that print (or search) blob contents, as written.
#[rustfmt::skip]
const PATCH_OPTIONS: &[&str] = &[
    "-c", "-m", "--cc", "--dd", "--binary", "--full-diff", "--function-context", "--pickaxe-all",
    "--pickaxe-regex",
];

/// Such options that take a glued value (`--unified=5`), as prefixes.
#[rustfmt::skip]
const PATCH_PREFIXES: &[&str] = &[
    "--patch", "--unified", "--word-diff", "--color-words", "--diff-merges", "--remerge-diff",
    "--line-range",
];

/// Options of the log family that make it print (or search) blob contents.
fn prints_patch(a: &str) -> bool {
    let short = a.strip_prefix('-').filter(|s| !s.starts_with('-'));
    short.is_some_and(|s| s.starts_with(['p', 'u', 'U', 'W', 'L', 'S', 'G']))
        || PATCH_OPTIONS.contains(&a)
        || PATCH_PREFIXES.iter().any(|p| a.starts_with(p))
}

/// Whether `git SUB REST…` prints file contents (or reveals them through a search).
pub fn prints_content(sub: &str, rest: &[String]) -> bool {
    let patch = || {
        rest.iter()
            .take_while(|a| *a != "--")
            .any(|a| prints_patch(a))
    };
    match sub {
        "grep" | "diff" | "diff-index" | "diff-files" | "difftool" | "show" | "cat-file"
        | "archive" | "blame" | "annotate" | "format-patch" | "fast-export" | "unpack-file"
        | "range-diff" | "merge-tree" | "diff-pairs" => true,
        "log" | "whatchanged" | "diff-tree" | "reflog" => patch(),
        "stash" => match rest.first().map(String::as_str) {
            Some("show") => true,
            Some("list") => patch(),
            _ => false,
        },
        _ => false,
    }
}

/// The files named by `-L<range>:<file>` (`-L1,5:src/a.rs`, `-L:main:src/a.rs`).
fn line_range_files(rest: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        let value = match a {
            "-L" => {
                i += 1;
                rest.get(i).map(String::as_str)
            }
            _ => a.strip_prefix("-L"),
        };
        if let Some(v) = value {
            // A range without a file: it cannot be told what it prints.
            let file = v.rsplit_once(':').map_or("", |(_, file)| file);
            out.push(if file.is_empty() { "." } else { file }.to_string());
        }
        i += 1;
    }
    out
}

/// The paths a git command that prints contents may print, as words relative to the
/// cwd (object paths relative to the repository root); `None` when it prints none.
pub fn scopes(argv: &[String]) -> Option<Vec<String>> {
    let g = git::parse(argv);
    let sub = g.sub?;
    let name = argv[sub].as_str();
    let rest = &argv[sub + 1..];
    if !prints_content(name, rest) {
        return None;
    }
    let lines = line_range_files(rest);
    let other_patch = rest
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| prints_patch(a) && !a.starts_with("-L"));
    let log_family = matches!(name, "log" | "whatchanged" | "diff-tree" | "reflog");
    if log_family && !lines.is_empty() && !other_patch {
        return Some(lines);
    }
    let mut out = lines;
    // Pathspecs after `--` limit what is printed; so do object paths alone
    // (`git show HEAD:src/x`), which are checked as paths (`object_paths`).
    if let Some(dd) = rest.iter().position(|a| a == "--") {
        let specs = &rest[dd + 1..];
        if !specs.is_empty() {
            out.extend(specs.iter().cloned());
            return Some(out);
        }
    }
    let operands: Vec<&String> = rest.iter().filter(|a| !a.starts_with('-')).collect();
    let only_objects = matches!(name, "show" | "cat-file")
        && operands.iter().any(|a| object_path(a).is_some())
        && operands
            .iter()
            .all(|a| object_path(a).is_some() || is_type_word(a));
    if only_objects {
        // Object paths name files from the repository root: the caller resolves them
        // from there too.
        out.extend(
            operands
                .iter()
                .filter_map(|a| object_path(a))
                .map(String::from),
        );
        return Some(out);
    }
    out.push(".".into());
    Some(out)
}

fn is_type_word(a: &str) -> bool {
    matches!(a, "blob" | "tree" | "commit" | "tag")
}
