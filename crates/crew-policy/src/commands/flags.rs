//! A small getopt-style option parser driven by allow-lists (a program's known options,
//! which take a value, which values name files): the one grammar of the program table.
//! Strictly (`parse`), anything not listed fails the parse, so callers fail closed;
//! leniently (`lenient`, for finding written files), it is remembered and taken as a flag.
//!
//! Long option table entries use a tiny notation: `name` takes no value, `name=` takes
//! one (`--name=v` or `--name v`), `name?` takes an optional glued value (`--color`,
//! `--color=auto`), `name@` takes one value that names a file, `name>` one that names a
//! file it writes, `name+` takes two values (`jq --arg k v`), `name+@` two values of
//! which the second names a file.

/// The options a program accepts.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Short flags without a value (`-l`, clustered as `-la`).
    pub short: &'static str,
    /// Short options with a value, glued (`-n5`) or in the next word (`-n 5`).
    pub short_val: &'static str,
    /// Short options whose value names a file (`-f FILE`, `-fFILE`).
    pub short_path: &'static str,
    /// Short options whose value names a file the program writes (`sort -o FILE`).
    pub short_out: &'static str,
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
        short_out: "",
        long: &[],
        numeric: false,
    };
}

/// What a successful parse found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Operands (non-option words), in order.
    pub operands: Vec<String>,
    /// Where each operand is in `args`.
    pub operand_at: Vec<usize>,
    /// Values of options that name files.
    pub paths: Vec<String>,
    /// Values of options that name written files: (index in `args`, byte offset where
    /// the name starts: `--output=f`, `-of`).
    pub outputs: Vec<(usize, usize)>,
    /// Every option value: (the option as written up to any `=`, its value, the index in
    /// `args` after it).
    pub values: Vec<(String, String, usize)>,
    /// The first option not on the list (a lenient parse only).
    pub unknown: Option<String>,
    /// Options seen, as written up to any `=` (`-n`, `--lines`), for per-program checks.
    pub seen: Vec<String>,
    /// Index in `args` where parsing stopped because `stop_at_operand` was set.
    pub stopped_at: Option<usize>,
}

impl Parsed {
    /// The value of the last of these options given (`-C`, `--chdir`), and the index
    /// after it.
    pub fn value(&self, names: &[&str]) -> Option<(&str, usize)> {
        let v = self
            .values
            .iter()
            .rev()
            .find(|(o, ..)| names.contains(&o.as_str()));
        v.map(|(_, v, next)| (v.as_str(), *next))
    }
}

/// Why a parse failed: the option that is not on the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

/// Where a parse of a command's arguments stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// At the end: options and operands may interleave (GNU style) until `--`.
    End,
    /// At the first operand (for wrappers: the wrapped command starts there).
    FirstOperand,
}

/// What a parse does with an option that is not on the allow-list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnUnknown {
    /// The parse fails, naming it.
    Fail,
    /// It is remembered in `Parsed::unknown` and taken as a flag; a missing value ends
    /// the parse.
    Remember,
}

/// Parses `args` (without the program name), up to `until`.
pub fn parse(spec: &Spec, args: &[String], until: Until) -> Result<Parsed, Unknown> {
    run(spec, args, until, OnUnknown::Fail)
}

/// Parses `args` leniently: an unknown option is remembered in `Parsed::unknown` and
/// taken as a flag; a missing value ends the parse.
pub fn lenient(spec: &Spec, args: &[String]) -> Parsed {
    run(spec, args, Until::End, OnUnknown::Remember).unwrap_or_default()
}

fn run(
    spec: &Spec,
    args: &[String],
    until: Until,
    on_unknown: OnUnknown,
) -> Result<Parsed, Unknown> {
    let lenient = on_unknown == OnUnknown::Remember;
    let stop_at_operand = until == Until::FirstOperand;
    let cx = Cx {
        spec,
        args,
        lenient,
    };
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
            out.operand_at.push(i);
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
        let step = match a.strip_prefix("--") {
            Some(long) => long_option(&cx, long, i, &mut out),
            None => short_cluster(&cx, &a[1..], i, &mut out),
        };
        i = match step {
            Ok(next) => next,
            // Lenient: a value is missing at the end.
            Err(_) if lenient => args.len(),
            Err(e) => return Err(e),
        };
    }
    if stop_at_operand {
        out.stopped_at = Some(args.len());
    }
    Ok(out)
}

struct Cx<'a> {
    spec: &'a Spec,
    args: &'a [String],
    lenient: bool,
}

impl Cx<'_> {
    /// The value at `k`, or the error naming `opt`.
    fn value_at(&self, k: usize, opt: &str) -> Result<String, Unknown> {
        self.args.get(k).cloned().ok_or_else(|| Unknown(opt.into()))
    }

    /// Whether an option not on a list of that kind is only remembered (a lenient
    /// parse; with an empty list, not even that).
    fn tolerate(&self, list_empty: bool, opt: &str, out: &mut Parsed) -> bool {
        if self.lenient && !list_empty {
            out.unknown.get_or_insert_with(|| opt.to_string());
        }
        self.lenient
    }
}

fn long_option(cx: &Cx<'_>, long: &str, i: usize, out: &mut Parsed) -> Result<usize, Unknown> {
    let (name, glued) = long
        .split_once('=')
        .map_or((long, None), |(n, v)| (n, Some(v)));
    let opt = format!("--{name}");
    out.seen.push(opt.clone());
    let Some(entry) = cx
        .spec
        .long
        .iter()
        .find(|e| e.trim_end_matches(['=', '?', '@', '+', '>']) == name)
    else {
        let word = &cx.args[i];
        let tolerated = cx.tolerate(cx.spec.long.is_empty(), word, out);
        return tolerated.then_some(i + 1).ok_or(Unknown(opt));
    };
    let kind = &entry[name.len()..];
    match kind {
        "" if glued.is_some() && !cx.lenient => Err(Unknown(format!("--{name}="))),
        "" | "?" => {
            out.values
                .extend(glued.map(|v| (opt, v.to_string(), i + 1)));
            Ok(i + 1)
        }
        "=" | "@" | ">" => {
            let (v, next, at) = match glued {
                Some(v) => (v.to_string(), i + 1, (i, name.len() + 3)),
                None => (cx.value_at(i + 1, &opt)?, i + 2, (i + 1, 0)),
            };
            match kind {
                "@" => out.paths.push(v.clone()),
                ">" => out.outputs.push(at),
                _ => {}
            }
            out.values.push((opt, v, next));
            Ok(next)
        }
        "+" | "+@" => {
            let (second, next) = match glued {
                Some(_) => (cx.value_at(i + 1, &opt)?, i + 2),
                None => {
                    cx.value_at(i + 1, &opt)?;
                    (cx.value_at(i + 2, &opt)?, i + 3)
                }
            };
            if kind == "+@" {
                out.paths.push(second);
            }
            Ok(next)
        }
        _ => Err(Unknown(opt)),
    }
}

fn short_cluster(cx: &Cx<'_>, cluster: &str, i: usize, out: &mut Parsed) -> Result<usize, Unknown> {
    let spec = cx.spec;
    if spec.numeric && cluster.chars().all(|c| c.is_ascii_digit()) {
        out.seen.push(format!("-{cluster}"));
        return Ok(i + 1);
    }
    for (at, c) in cluster.char_indices() {
        let rest_at = at + c.len_utf8();
        let rest = &cluster[rest_at..];
        let path = spec.short_path.contains(c);
        let written = spec.short_out.contains(c);
        out.seen.push(format!("-{c}"));
        if path || written || spec.short_val.contains(c) {
            let (v, next, at) = if rest.is_empty() {
                (cx.value_at(i + 1, &format!("-{c}"))?, i + 2, (i + 1, 0))
            } else {
                (rest.to_string(), i + 1, (i, 1 + rest_at))
            };
            if path {
                out.paths.push(v.clone());
            } else if written {
                out.outputs.push(at);
            }
            out.values.push((format!("-{c}"), v, next));
            return Ok(next);
        }
        if !spec.short.contains(c) && !cx.tolerate(spec.short.is_empty(), &cx.args[i], out) {
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

    #[rustfmt::skip]
    const SPEC: Spec = Spec {
        short: "lav", short_val: "n", short_path: "f", short_out: "w",
        long: &["all", "lines=", "file@", "color?", "arg+", "slurp+@", "out>"],
        numeric: true,
    };

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    #[rustfmt::skip]
    fn strict_parses() {
        // Arguments, operands, paths (`!` when the parse fails).
        let cases = [
            ("-la -n5 x -fFILE --lines 3 --file=/etc/y -- -z", "x -z", "FILE /etc/y"),
            ("-f ~/.ssh/id_rsa --color --color=auto -5", "", "~/.ssh/id_rsa"),
            ("--arg k v --slurp n f.json y", "y", "f.json"),
            ("-o x", "!", ""), ("-lo", "!", ""), ("--output=x", "!", ""), ("--all=1", "!", ""),
            ("--compress-prog=sh", "!", ""), ("-n", "!", ""),
        ];
        for (a, operands, paths) in cases {
            let got = parse(&SPEC, &args(a), Until::End)
                .map(|p| (p.operands.join(" "), p.paths.join(" ")))
                .unwrap_or(("!".into(), String::new()));
            assert_eq!(got, (operands.into(), paths.into()), "{a}");
        }
        let p = parse(&SPEC, &args("-w o x --out=p"), Until::End).unwrap();
        assert_eq!((p.outputs, p.operand_at), (vec![(1, 0), (3, 6)], vec![2]));
        assert_eq!(parse(&SPEC, &args("-n 5 cmd -x"), Until::FirstOperand).unwrap().stopped_at, Some(2));
        assert_eq!(parse(&SPEC, &args("-l -- -cmd"), Until::FirstOperand).unwrap().stopped_at, Some(2));
    }

    #[test]
    fn lenient_parse_finds_outputs_past_unknown_options() {
        let a = args("-xw o1 -lwo2 --frob --out o3 --out=o4 --color=x -z -n");
        let p = lenient(&SPEC, &a);
        let at: Vec<&str> = p.outputs.iter().map(|&(i, f)| &a[i][f..]).collect();
        assert_eq!(at, ["o1", "o2", "o3", "o4"]);
        assert_eq!(p.unknown.as_deref(), Some("-xw"));
        assert!(parse(&SPEC, &a, Until::End).is_err());
    }

    #[test]
    #[rustfmt::skip]
    fn candidates_of_unknown_programs() {
        let cases = [("-o/tmp/x", Some("/tmp/x")), ("-f~/.ssh/id_rsa", Some("~/.ssh/id_rsa")),
            ("--output=o", Some("o")), ("-l", None), ("src", Some("src")), ("K=v", Some("v"))];
        for (word, want) in cases {
            assert_eq!(path_candidates(word), want, "{word}");
        }
    }
}
