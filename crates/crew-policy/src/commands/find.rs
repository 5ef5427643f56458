//! `find`: read-only when every expression is on the allow-list (tests and printing to
//! stdout); its `-exec`/`-execdir`/`-ok`/`-okdir` commands are commands of their own,
//! checked like any other part (`find . -exec rm {} \;` runs `rm`).

use super::Embedded;

/// Expressions without an argument that only test or print to stdout.
#[rustfmt::skip]
const NULLARY: &[&str] = &[
    "-print", "-print0", "-ls", "-prune", "-empty", "-executable", "-readable", "-writable",
    "-true", "-false", "-not", "!", "-a", "-o", "-and", "-or", "(", ")", ",", "-depth",
    "-xdev", "-mount", "-nouser", "-nogroup", "-quit", "-daystart", "-noleaf", "-follow",
    "-ignore_readdir_race", "-noignore_readdir_race", "-d",
];
/// Expressions with one argument.
#[rustfmt::skip]
const UNARY: &[&str] = &[
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
    "-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum", "-maxdepth", "-mindepth",
    "-regextype", "-used", "-lname", "-ilname", "-fstype", "-context", "-printf", "-newer",
    "-anewer", "-cnewer", "-samefile",
];
/// Expressions that run a command.
#[rustfmt::skip]
const EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// Whether `find` only reads: global options `-L -H -P`, then start paths, then only
/// allow-listed expressions.
pub fn read_only(argv: &[String]) -> bool {
    let word = |i: usize| argv.get(i).map(String::as_str);
    let mut i = 1;
    while matches!(word(i), Some("-L" | "-H" | "-P")) {
        i += 1;
    }
    while word(i).is_some_and(|a| !a.starts_with('-') && !matches!(a, "(" | "!")) {
        i += 1;
    }
    while let Some(a) = word(i) {
        if NULLARY.contains(&a) {
            i += 1;
        } else if UNARY.contains(&a) || a.starts_with("-newer") && a.len() > 6 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// The commands `find` runs with `-exec` and friends.
pub fn embedded(argv: &[String]) -> Vec<Embedded> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if !EXEC.contains(&a) {
            i += 1;
            continue;
        }
        let begin = i + 1;
        let end = (begin..argv.len())
            .find(|&e| argv[e] == ";" || (argv[e] == "+" && e > begin && argv[e - 1] == "{}"))
            .unwrap_or(argv.len());
        if end > begin {
            out.push(Embedded::Command {
                via: format!("(find {a})"),
                argv: argv[begin..end].to_vec(),
            });
        }
        i = end + 1;
    }
    out
}
