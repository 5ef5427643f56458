//! A small getopt-style option parser driven by allow-lists: a program's known options,
//! which of them take a value, and which values name files. Anything not listed makes
//! the parse fail, so callers fail closed ("not read-only", "opaque wrapper").
//!
//! Long option table entries use a tiny notation: `name` takes no value, `name=` takes
//! one (`--name=v` or `--name v`), `name?` takes an optional glued value (`--color`,
//! `--color=auto`), `name@` takes one value that names a file, `name+` takes two values
//! (`jq --arg k v`), `name+@` two values of which the second names a file.

/// The options a program accepts.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Short flags without a value (`-l`, clustered as `-la`).
    pub short: &'static str,
    /// Short options with a value, glued (`-n5`) or in the next word (`-n 5`).
    pub short_val: &'static str,
    /// Short options whose value names a file (`-f FILE`, `-fFILE`).
    pub short_path: &'static str,
    /// Long options, in the notation of the module comment.
    pub long: &'static [&'static str],
    /// Whether `-NUM` is a flag (`head -5`, `grep -3`, `nice -10`).
    pub numeric: bool,
}

impl Spec {
    /// A spec with no options at all.
    pub const NONE: Spec = Spec {
        short: "",
        short_val: "",
        short_path: "",
        long: &[],
        numeric: false,
    };
}

/// What a successful parse found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Operands (non-option words), in order.
    pub operands: Vec<String>,
    /// Values of options that name files.
    pub paths: Vec<String>,
    /// Options seen, as written up to any `=` (`-n`, `--lines`), for per-program checks.
    pub seen: Vec<String>,
    /// Index in `args` where parsing stopped because `stop_at_operand` was set.
    pub stopped_at: Option<usize>,
}

/// Why a parse failed: the option that is not on the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

/// Parses `args` (without the program name). With `stop_at_operand`, parsing stops at
/// the first operand (for wrappers: the wrapped command starts there); otherwise
/// options and operands may interleave (GNU style) until `--`.
pub fn parse(spec: &Spec, args: &[String], stop_at_operand: bool) -> Result<Parsed, Unknown> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let a = args[i].as_str();
        if ended || a == "-" || !a.starts_with('-') {
            if stop_at_operand {
                out.stopped_at = Some(i);
                return Ok(out);
            }
            out.operands.push(a.to_string());
            i += 1;
            continue;
        }
        if a == "--" {
            ended = true;
            i += 1;
            if stop_at_operand {
                out.stopped_at = Some(i);
                return Ok(out);
            }
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            i = long_option(spec, long, args, i, &mut out)?;
            continue;
        }
        i = short_cluster(spec, &a[1..], args, i, &mut out)?;
    }
    if stop_at_operand {
        out.stopped_at = Some(args.len());
    }
    Ok(out)
}

fn long_option(
    spec: &Spec,
    long: &str,
    args: &[String],
    i: usize,
    out: &mut Parsed,
) -> Result<usize, Unknown> {
    let (name, glued) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    let entry = spec
        .long
        .iter()
        .find(|e| e.trim_end_matches(['=', '?', '@', '+']) == name)
        .ok_or_else(|| Unknown(format!("--{name}")))?;
    out.seen.push(format!("--{name}"));
    let kind = &entry[name.len()..];
    let value_at = |k: usize| {
        args.get(k)
            .cloned()
            .ok_or_else(|| Unknown(format!("--{name}")))
    };
    match kind {
        "" if glued.is_some() => Err(Unknown(format!("--{name}="))),
        "" | "?" => Ok(i + 1),
        "=" | "@" => {
            let (v, next) = match glued {
                Some(v) => (v.to_string(), i + 1),
                None => (value_at(i + 1)?, i + 2),
            };
            if kind == "@" {
                out.paths.push(v);
            }
            Ok(next)
        }
        "+" | "+@" => {
            let (second, next) = match glued {
                Some(_) => (value_at(i + 1)?, i + 2),
                None => {
                    value_at(i + 1)?;
                    (value_at(i + 2)?, i + 3)
                }
            };
            if kind == "+@" {
                out.paths.push(second);
            }
            Ok(next)
        }
        _ => Err(Unknown(format!("--{name}"))),
    }
}

fn short_cluster(
    spec: &Spec,
    cluster: &str,
    args: &[String],
    i: usize,
    out: &mut Parsed,
) -> Result<usize, Unknown> {
    if spec.numeric && cluster.chars().all(|c| c.is_ascii_digit()) {
        out.seen.push(format!("-{cluster}"));
        return Ok(i + 1);
    }
    for (at, c) in cluster.char_indices() {
        let rest = &cluster[at + c.len_utf8()..];
        let takes = spec.short_val.contains(c);
        let path = spec.short_path.contains(c);
        out.seen.push(format!("-{c}"));
        if takes || path {
            let (v, next) = if rest.is_empty() {
                let v = args.get(i + 1).ok_or_else(|| Unknown(format!("-{c}")))?;
                (v.clone(), i + 2)
            } else {
                (rest.to_string(), i + 1)
            };
            if path {
                out.paths.push(v);
            }
            return Ok(next);
        }
        if !spec.short.contains(c) {
            return Err(Unknown(format!("-{c}")));
        }
    }
    Ok(i + 1)
}

/// Splits a word of an unknown program into the parts that may name files: operands as
/// they are, `--opt=value` values, and whatever follows the first letter of a short flag
/// (`-o/tmp/x`, `-f~/.ssh/id_rsa`, `-oFILE`): we cannot know which flags take values, and
/// over-reporting is safe, since every candidate is only checked.
pub fn path_candidates(word: &str) -> Option<&str> {
    if let Some(long) = word.strip_prefix("--") {
        return long.split_once('=').map(|(_, v)| v);
    }
    if let Some(short) = word.strip_prefix('-') {
        let mut chars = short.char_indices();
        chars.next()?;
        return chars.next().map(|(i, _)| &short[i..]);
    }
    match word.split_once('=') {
        Some((k, v)) if !k.contains('/') => Some(v),
        _ => Some(word),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        short: "lav",
        short_val: "n",
        short_path: "f",
        long: &["all", "lines=", "file@", "color?", "arg+", "slurp+@"],
        numeric: true,
    };

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn known_options_parse_and_paths_are_reported() {
        let p = parse(
            &SPEC,
            &args("-la -n5 x -fFILE --lines 3 --file=/etc/y -- -z"),
            false,
        )
        .unwrap();
        assert_eq!(p.operands, ["x", "-z"]);
        assert_eq!(p.paths, ["FILE", "/etc/y"]);
        let p = parse(
            &SPEC,
            &args("-f ~/.ssh/id_rsa --color --color=auto -5"),
            false,
        )
        .unwrap();
        assert_eq!(p.paths, ["~/.ssh/id_rsa"]);
        let p = parse(&SPEC, &args("--arg k v --slurp n f.json y"), false).unwrap();
        assert_eq!(
            (p.paths, p.operands),
            (vec!["f.json".into()], vec!["y".into()])
        );
    }

    #[test]
    fn unknown_options_fail() {
        for bad in [
            "-o x",
            "-lo",
            "--output=x",
            "--all=1",
            "--compress-prog=sh",
            "-n",
        ] {
            assert!(parse(&SPEC, &args(bad), false).is_err(), "{bad}");
        }
    }

    #[test]
    fn stop_at_operand_for_wrappers() {
        let p = parse(&SPEC, &args("-n 5 cmd -x"), true).unwrap();
        assert_eq!(p.stopped_at, Some(2));
        let p = parse(&SPEC, &args("-l -- -cmd"), true).unwrap();
        assert_eq!(p.stopped_at, Some(2));
    }

    #[test]
    fn candidates_of_unknown_programs() {
        assert_eq!(path_candidates("-o/tmp/x"), Some("/tmp/x"));
        assert_eq!(path_candidates("-f~/.ssh/id_rsa"), Some("~/.ssh/id_rsa"));
        assert_eq!(path_candidates("--output=o"), Some("o"));
        assert_eq!(path_candidates("-l"), None);
        assert_eq!(path_candidates("src"), Some("src"));
    }
}
