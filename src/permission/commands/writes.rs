//! Which files a command writes by naming them: `cp`/`mv`/`install`/`ln` destinations,
//! `tee`, `touch`, `mkdir`, `rm` operands, `sort -o`, `sed -i` files, `dd of=`, `curl -o`,
//! `git … --output`, `tar -C` and the like. The caller (`check/writes.rs`) judges each
//! target as a write: sandbox roots, protected paths, write rules and the mode. Redirects
//! are the caller's too (they are on the part, not in its words).
//!
//! The option parser here is lenient on purpose: it only has to find the words that name
//! written files. An option it does not know is remembered (`Writes::unknown`), so that
//! nothing counts as "only edits files" on a guess.

mod own;

/// What a command writes, as indexes into the words it was given (0 is the program).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// Words that name files or directories the command creates, changes or removes:
    /// (index of the word, byte offset where the name starts: `--output=f`, `-of`, `of=f`).
    pub targets: Vec<(usize, usize)>,
    /// It also writes into its working directory (`ln -s x`, `curl -O`, `tar x`).
    pub cwd: bool,
    /// Its only effect is creating, copying or moving files (`mkdir`, `touch`, `cp`,
    /// `mv`) and every option is known: acceptEdits may let it through.
    pub edits_only: bool,
    /// An option the parser does not know (its value, if any, may be a target).
    pub unknown: Option<String>,
}

/// How a program's operands relate to what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Every operand is written (`touch`, `mkdir`, `rm`, `tee`).
    All,
    /// The last operand is the destination (`cp`, `install`), unless a target-directory
    /// option names it; with one operand the copy lands in the cwd (`ln -s x`).
    Dest,
    /// Every operand is written: the sources are removed, the destination created (`mv`).
    SourcesAndDest,
    /// The first operand is a mode or owner, the rest are changed (`chmod`, `chown`),
    /// unless `--reference` gives the mode.
    AfterFirst,
    /// The second operand is an output file (`uniq IN OUT`).
    Second,
    /// Operands are not written (`sort`, `curl`): only option values are.
    None,
}

/// One program's options, as far as finding its targets needs.
struct Prog {
    names: &'static [&'static str],
    /// Short flags without a value.
    short: &'static str,
    /// Short options with a value.
    short_val: &'static str,
    /// Long options without a value.
    long: &'static [&'static str],
    /// Long options with a value.
    long_val: &'static [&'static str],
    /// Options (short letters and long names) whose value is a written file; for a
    /// `Dest` program, a target directory that replaces the last operand.
    target_short: &'static str,
    target_long: &'static [&'static str],
    operands: Operands,
    /// Creating, copying or moving files is all it does.
    edits_only: bool,
}

#[rustfmt::skip]
const PROGS: &[Prog] = &[
    Prog {
        names: &["cp"], short: "abdfHilLnPprRsTuvxZ", short_val: "St",
        long: &["archive", "attributes-only", "backup", "copy-contents", "dereference", "force",
            "interactive", "link", "no-dereference", "no-clobber", "preserve", "parents",
            "recursive", "reflink", "remove-destination", "strip-trailing-slashes",
            "symbolic-link", "no-target-directory", "update", "verbose", "one-file-system",
            "context", "debug", "keep-directory-symlink"],
        long_val: &["no-preserve", "sparse", "suffix", "target-directory"],
        target_short: "t", target_long: &["target-directory"], operands: Operands::Dest,
        edits_only: true,
    },
    Prog {
        names: &["mv"], short: "bfinTuvZ", short_val: "St",
        long: &["backup", "force", "interactive", "no-clobber", "no-copy",
            "strip-trailing-slashes", "no-target-directory", "update", "verbose", "context",
            "debug", "exchange"],
        long_val: &["suffix", "target-directory"],
        target_short: "t", target_long: &["target-directory"],
        operands: Operands::SourcesAndDest, edits_only: true,
    },
    Prog {
        names: &["install"], short: "bcCdDpsvTZ", short_val: "gmoSt",
        long: &["backup", "compare", "directory", "preserve-timestamps", "strip",
            "no-target-directory", "verbose", "preserve-context", "context", "debug"],
        long_val: &["group", "mode", "owner", "strip-program", "suffix", "target-directory"],
        target_short: "t", target_long: &["target-directory"], operands: Operands::Dest,
        edits_only: false,
    },
    Prog {
        names: &["ln"], short: "bdfFinLPrsTv", short_val: "St",
        long: &["backup", "directory", "force", "interactive", "logical", "no-dereference",
            "physical", "relative", "symbolic", "no-target-directory", "verbose"],
        long_val: &["suffix", "target-directory"],
        target_short: "t", target_long: &["target-directory"], operands: Operands::Dest,
        edits_only: false,
    },
    Prog {
        names: &["tee"], short: "aip", short_val: "",
        long: &["append", "ignore-interrupts", "output-error"], long_val: &[],
        target_short: "", target_long: &[], operands: Operands::All, edits_only: false,
    },
    Prog {
        names: &["touch"], short: "acfhm", short_val: "dtr",
        long: &["no-create", "no-dereference"], long_val: &["date", "reference", "time"],
        target_short: "", target_long: &[], operands: Operands::All, edits_only: true,
    },
    Prog {
        names: &["mkdir"], short: "pvZ", short_val: "m",
        long: &["parents", "verbose", "context"], long_val: &["mode"],
        target_short: "", target_long: &[], operands: Operands::All, edits_only: true,
    },
    Prog {
        names: &["rmdir"], short: "pv", short_val: "",
        long: &["ignore-fail-on-non-empty", "parents", "verbose"], long_val: &[],
        target_short: "", target_long: &[], operands: Operands::All, edits_only: false,
    },
    Prog {
        names: &["rm", "unlink", "shred", "mkfifo", "mknod"], short: "dfiIrRvuxzZ",
        short_val: "mns",
        long: &["force", "interactive", "one-file-system", "no-preserve-root",
            "preserve-root", "recursive", "dir", "verbose", "remove", "exact", "zero"],
        long_val: &["iterations", "size", "random-source", "mode", "context"],
        target_short: "", target_long: &[], operands: Operands::All, edits_only: false,
    },
    Prog {
        names: &["truncate"], short: "co", short_val: "rs",
        long: &["no-create", "io-blocks"], long_val: &["reference", "size"],
        target_short: "", target_long: &[], operands: Operands::All, edits_only: false,
    },
    Prog {
        names: &["chmod", "chown", "chgrp", "chattr", "setfacl"], short: "cfvRhHLP",
        short_val: "",
        long: &["changes", "silent", "quiet", "verbose", "dereference", "no-dereference",
            "no-preserve-root", "preserve-root", "recursive"],
        long_val: &["from", "reference"],
        target_short: "", target_long: &[], operands: Operands::AfterFirst, edits_only: false,
    },
    Prog {
        names: &["uniq"], short: "cdDiuz", short_val: "fsw",
        long: &["count", "repeated", "all-repeated", "ignore-case", "unique",
            "zero-terminated", "group"],
        long_val: &["skip-fields", "skip-chars", "check-chars"],
        target_short: "", target_long: &[], operands: Operands::Second, edits_only: false,
    },
    Prog {
        names: &["sort"], short: "bcCdfghiMmnRrsuVz", short_val: "kStTo",
        long: &["ignore-leading-blanks", "dictionary-order", "ignore-case",
            "general-numeric-sort", "ignore-nonprinting", "month-sort", "human-numeric-sort",
            "numeric-sort", "random-sort", "reverse", "version-sort", "check", "merge",
            "stable", "unique", "zero-terminated", "debug"],
        long_val: &["sort", "random-source", "batch-size", "compress-program", "files0-from",
            "key", "output", "buffer-size", "field-separator", "temporary-directory",
            "parallel"],
        target_short: "o", target_long: &["output"], operands: Operands::None,
        edits_only: false,
    },
    Prog {
        // Only the options whose values matter; the rest are taken as flags.
        names: &["curl"], short: "", short_val: "AbCcDdEeFHhKmoPQrTtUuwXxYyz",
        long: &[], long_val: &["output", "output-dir", "dump-header", "cookie-jar", "trace",
            "trace-ascii", "stderr", "libcurl", "etag-save", "hsts", "alt-svc", "data",
            "header", "user-agent", "user", "request", "url", "config", "cookie", "form",
            "referer", "proxy", "max-time", "connect-timeout", "retry", "range", "cert",
            "key", "cacert"],
        target_short: "cDo", target_long: &["output", "output-dir", "dump-header",
            "cookie-jar", "trace", "trace-ascii", "stderr", "libcurl", "etag-save", "hsts",
            "alt-svc"],
        operands: Operands::None, edits_only: false,
    },
    Prog {
        names: &["wget"], short: "", short_val: "aOoPtTwlDeUAR",
        long: &[], long_val: &["output-document", "output-file", "append-output",
            "directory-prefix", "tries", "timeout", "wait", "level", "domains", "execute",
            "user-agent", "accept", "reject", "header", "save-cookies", "load-cookies",
            "post-data", "user", "password"],
        target_short: "aOoP", target_long: &["output-document", "output-file",
            "append-output", "directory-prefix", "save-cookies"],
        operands: Operands::None, edits_only: false,
    },
];

fn prog(name: &str) -> Option<&'static Prog> {
    PROGS.iter().find(|p| p.names.contains(&name))
}

/// What `words` (a command's words, the program first, as bash expanded them) write.
pub fn writes(words: &[String]) -> Writes {
    let Some(first) = words.first() else {
        return Writes::default();
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    match name {
        "dd" => return own::dd(words),
        "sed" | "gsed" => return own::sed(words),
        "git" => return own::git(words),
        "tar" | "gtar" | "bsdtar" => return own::tar(words),
        _ => {}
    }
    let Some(p) = prog(name) else {
        return Writes::default();
    };
    let parsed = parse(p, words);
    let mut out = Writes {
        targets: parsed.targets.clone(),
        cwd: false,
        edits_only: p.edits_only && parsed.unknown.is_none(),
        unknown: parsed.unknown.clone(),
    };
    let ops = &parsed.operands;
    match p.operands {
        Operands::All | Operands::SourcesAndDest => out.targets.extend(ops.iter().map(|&i| (i, 0))),
        Operands::Dest if parsed.targets.is_empty() => match ops.as_slice() {
            [] => {}
            // `ln -s x`, `cp x` (an error): the link or copy lands in the cwd.
            [_] => out.cwd = true,
            [.., last] => out.targets.push((*last, 0)),
        },
        Operands::Dest => {}
        Operands::AfterFirst => {
            let by_reference = parsed.seen_long.iter().any(|l| l == "reference");
            // `chmod -x f`: the mode was taken as an option.
            let mode_as_option = parsed.mode_like;
            let skip = usize::from(!by_reference && !mode_as_option);
            out.targets.extend(ops.iter().skip(skip).map(|&i| (i, 0)));
        }
        Operands::Second => out.targets.extend(ops.get(1).map(|&i| (i, 0))),
        Operands::None => {}
    }
    // `install -d DIR…` creates every operand.
    if name == "install" && parsed.seen_short.contains('d') {
        out.targets = ops.iter().map(|&i| (i, 0)).collect();
        out.targets.extend(&parsed.targets);
    }
    // `curl -O URL` and `wget URL` save into the cwd (or `--output-dir`/`-P`).
    if name == "wget" || name == "curl" && parsed.remote_name {
        out.cwd = parsed.targets.is_empty() || name == "curl";
    }
    out.targets.sort_unstable();
    out.targets.dedup();
    out
}

#[derive(Debug, Default)]
struct Parsed {
    operands: Vec<usize>,
    targets: Vec<(usize, usize)>,
    seen_short: String,
    seen_long: Vec<String>,
    unknown: Option<String>,
    /// A short cluster that reads as a mode (`-x`, `-rwx`) for `chmod`.
    mode_like: bool,
    /// `curl -O` / `--remote-name`.
    remote_name: bool,
}

fn parse(p: &Prog, words: &[String]) -> Parsed {
    let mut out = Parsed::default();
    let mut i = 1;
    let mut ended = false;
    while i < words.len() {
        let w = words[i].as_str();
        if ended || w == "-" || !w.starts_with('-') {
            out.operands.push(i);
            i += 1;
            continue;
        }
        if w == "--" {
            ended = true;
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, glued) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            out.seen_long.push(name.to_string());
            if matches!(name, "remote-name" | "remote-name-all") {
                out.remote_name = true;
            }
            let valued = p.long_val.contains(&name);
            if !valued && !p.long.is_empty() && !p.long.contains(&name) {
                out.unknown.get_or_insert_with(|| w.to_string());
            }
            if valued && !glued {
                if p.target_long.contains(&name) && i + 1 < words.len() {
                    out.targets.push((i + 1, 0));
                }
                i += 2;
                continue;
            }
            if valued && p.target_long.contains(&name) {
                // A glued value: `--output=f`.
                out.targets.push((i, name.len() + 3));
            }
            i += 1;
            continue;
        }
        let cluster = &w[1..];
        if p.names.contains(&"chmod")
            && cluster.chars().all(|c| "rwxXstugoa".contains(c))
            && !cluster.is_empty()
        {
            out.mode_like = true;
            i += 1;
            continue;
        }
        let mut next = i + 1;
        for (j, c) in cluster.char_indices() {
            out.seen_short.push(c);
            if c == 'O' && p.names.contains(&"curl") {
                out.remote_name = true;
            }
            if p.short_val.contains(c) {
                let glued = j + c.len_utf8() < cluster.len();
                if p.target_short.contains(c) {
                    if glued {
                        out.targets.push((i, 1 + j + c.len_utf8()));
                    } else if i + 1 < words.len() {
                        out.targets.push((i + 1, 0));
                    }
                }
                if !glued {
                    next = i + 2;
                }
                break;
            }
            if !p.short.contains(c) && !p.short.is_empty() {
                out.unknown.get_or_insert_with(|| w.to_string());
            }
        }
        i = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// The texts of what `s` writes (plus `.` for its cwd).
    fn targets(s: &str) -> Vec<String> {
        let words = w(s);
        let t = writes(&words);
        let mut out: Vec<String> = t
            .targets
            .iter()
            .map(|&(i, from)| words[i][from..].to_string())
            .collect();
        if t.cwd {
            out.push(".".into());
        }
        out
    }

    #[test]
    fn destinations_of_copies_moves_and_links() {
        assert_eq!(
            targets("cp README.md /home/u/.profile"),
            ["/home/u/.profile"]
        );
        assert_eq!(targets("cp -r a b dest"), ["dest"]);
        assert_eq!(targets("cp -t dir a b"), ["dir"]);
        assert_eq!(targets("cp --target-directory=dir a"), ["dir"]);
        assert_eq!(targets("cp -S .bak a b"), ["b"]);
        assert_eq!(targets("mv a b"), ["a", "b"]);
        assert_eq!(targets("install -m 644 f /home/u/.y"), ["/home/u/.y"]);
        assert_eq!(targets("install -d a b"), ["a", "b"]);
        assert_eq!(targets("ln -sf target link"), ["link"]);
        assert_eq!(targets("ln -s /etc/passwd"), ["."]);
        assert_eq!(targets("cp -- -x y"), ["y"]);
    }

    #[test]
    fn every_operand_of_creators_and_removers() {
        assert_eq!(targets("tee -a x y"), ["x", "y"]);
        assert_eq!(targets("touch -d 2020-01-01 m"), ["m"]);
        assert_eq!(targets("touch -r ref m"), ["m"]);
        assert_eq!(targets("mkdir -p -m 700 a/b"), ["a/b"]);
        assert_eq!(targets("rm -rf build"), ["build"]);
        assert_eq!(targets("truncate -s 0 log"), ["log"]);
        assert_eq!(targets("chmod 600 a b"), ["a", "b"]);
        assert_eq!(targets("chmod -x a"), ["a"]);
        assert_eq!(targets("chown --reference=r a"), ["a"]);
        assert_eq!(targets("uniq -c in out"), ["out"]);
        assert!(targets("uniq -c in").is_empty());
    }

    #[test]
    fn output_options() {
        assert_eq!(targets("sort -o out f"), ["out"]);
        assert_eq!(targets("sort -oout f"), ["out"]);
        assert_eq!(targets("sort --output=out f"), ["out"]);
        assert_eq!(targets("sort -rn -k 2 f"), Vec::<String>::new());
        assert_eq!(targets("sed -i s/a/b/ f g"), ["f", "g"]);
        assert_eq!(targets("sed -i.bak -e s/a/b/ f"), ["f"]);
        assert_eq!(targets("sed --in-place s/a/b/ f"), ["f"]);
        assert!(targets("sed -n 1p f").is_empty());
        assert_eq!(targets("dd if=/dev/zero of=/home/u/x bs=1"), ["/home/u/x"]);
        assert_eq!(targets("curl -sSLo out https://x"), ["out"]);
        assert_eq!(targets("curl -o out https://x"), ["out"]);
        assert_eq!(targets("curl --output=out https://x"), ["out"]);
        assert_eq!(targets("curl -O https://x/y"), ["."]);
        assert!(targets("curl -H a:b https://x").is_empty());
        assert_eq!(targets("wget -O out https://x"), ["out"]);
        assert_eq!(targets("wget https://x"), ["."]);
        assert_eq!(targets("git diff --output=/tmp/x"), ["/tmp/x"]);
        assert_eq!(targets("git format-patch -o out HEAD~1"), ["out"]);
        assert_eq!(targets("git clone https://x dir"), ["dir"]);
        assert_eq!(targets("git worktree add ../wt"), ["../wt"]);
        assert_eq!(targets("tar xzf a.tgz -C /home/u"), ["/home/u"]);
        assert_eq!(targets("tar -xf a.tar"), ["."]);
        assert_eq!(targets("tar czf out.tgz src"), ["out.tgz"]);
        assert_eq!(targets("tar --create --file=out.tar src"), ["out.tar"]);
        assert!(targets("tar tf a.tar").is_empty());
        assert!(targets("git status --short").is_empty());
        assert!(targets("ls -la").is_empty());
    }

    #[test]
    fn only_known_editors_with_known_options_only_edit() {
        assert!(writes(&w("mkdir -p a")).edits_only);
        assert!(writes(&w("touch m")).edits_only);
        assert!(writes(&w("cp -r a b")).edits_only);
        assert!(writes(&w("mv a b")).edits_only);
        assert!(!writes(&w("cp --frobnicate a b")).edits_only);
        assert!(!writes(&w("rm a")).edits_only);
        assert!(!writes(&w("tee a")).edits_only);
        assert!(!writes(&w("ln -s a b")).edits_only);
    }
}
