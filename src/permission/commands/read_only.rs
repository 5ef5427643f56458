//! Read-only commands as allow-lists, in the spirit of codex's `is_safe_command`: for each
//! program, the options known not to write files or run programs. Any other option makes
//! the command not read-only (category Exec), so a flag we never heard of
//! (`sort --compress-program=sh`, `tree -o FILE`, `xxd -r`) cannot pass as a read.
//! Option values that name files are reported (`path_operands`) so the caller checks
//! them like any other path (`file -f ~/.ssh/id_rsa`).

use super::flags::{self, Parsed, Spec};
use super::{find, git, search};
use crate::permission::shell::Part;

/// The allow-list of each program read-only by its options alone.
#[rustfmt::skip]
pub(super) fn spec(prog: &str) -> Option<Spec> {
    let s = |short, short_val, short_path, long: &'static [&'static str]| Spec {
        short,
        short_val,
        short_path,
        long,
        ..Spec::NONE
    };
    Some(match prog {
        "ls" => s("aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw", "", &[
            "all", "almost-all", "author", "escape", "classify?", "file-type", "full-time",
            "group-directories-first", "human-readable", "si", "dereference",
            "dereference-command-line", "inode", "literal", "numeric-uid-gid", "no-group",
            "hide-control-chars", "show-control-chars", "quote-name", "recursive", "reverse",
            "size", "directory", "context", "color?", "sort=", "time=", "time-style=",
            "format=", "width=", "ignore=", "hide=", "block-size=", "indicator-style=",
            "quoting-style=", "tabsize=", "zero",
        ]),
        "cat" => s("AbeEnstTuv", "", "", &[
            "show-all", "number-nonblank", "show-ends", "number", "squeeze-blank", "show-tabs",
            "show-nonprinting",
        ]),
        "head" | "tail" => Spec {
            numeric: true,
            ..s("qvzfF", "ncs", "", &[
                "lines=", "bytes=", "quiet", "silent", "verbose", "zero-terminated", "follow?",
                "retry", "sleep-interval=", "pid=", "max-unchanged-stats=",
            ])
        },
        "wc" => s("clmwL", "", "", &[
            "bytes", "chars", "lines", "words", "max-line-length", "total=", "files0-from@",
        ]),
        "pwd" => s("LP", "", "", &["logical", "physical"]),
        "which" => s("as", "", "", &["all", "skip-alias", "skip-functions"]),
        "whoami" | "tty" | "nproc" | "arch" | "hostname" | "logname" | "groups" | "rev" => {
            s("", "", "", &["all"])
        }
        "id" => s("aGgnruzZ", "", "", &["group", "groups", "name", "real", "user", "zero", "context"]),
        "date" => s("uRI", "d", "fr", &[
            "utc", "universal", "rfc-email", "iso-8601?", "rfc-3339=", "date=", "file@",
            "reference@", "debug",
        ]),
        "uname" => s("asnrvmpio", "", "", &[
            "all", "kernel-name", "nodename", "kernel-release", "kernel-version", "machine",
            "processor", "hardware-platform", "operating-system",
        ]),
        "file" => s("bcEhikLlNnprsSv0", "eFP", "fm", &[
            "brief", "mime", "mime-type", "mime-encoding", "dereference", "no-dereference",
            "special-files", "keep-going", "raw", "no-buffer", "no-pad", "print0", "extension",
            "apple", "exclude=", "separator=", "parameter=", "files-from@", "magic-file@",
        ]),
        "stat" => s("LfFt", "c", "", &[
            "dereference", "file-system", "format=", "printf=", "terse", "cached=",
        ]),
        "du" => s("0abcDhHklLmsSxP", "Bdt", "X", &[
            "null", "all", "apparent-size", "block-size=", "bytes", "total", "dereference-args",
            "dereference", "no-dereference", "human-readable", "si", "summarize", "max-depth=",
            "exclude=", "exclude-from@", "threshold=", "one-file-system", "count-links",
            "separate-dirs", "inodes", "time?", "time-style=",
        ]),
        "df" => s("ahHiklPTvx", "Bt", "", &[
            "all", "human-readable", "si", "inodes", "local", "portability", "print-type",
            "total", "block-size=", "type=", "exclude-type=", "output?", "sync", "no-sync",
        ]),
        "tree" => s("adlfxgipusshDFqNQrtvUCAnJXc", "LPIH", "", &[
            "noreport", "dirsfirst", "filesfirst", "charset=", "prune", "filelimit=",
            "timefmt=", "du", "si", "inodes", "device", "matchdirs", "ignore-case", "gitignore",
            "sort=", "version",
        ]),
        "basename" => s("az", "s", "", &["multiple", "suffix=", "zero"]),
        "dirname" => s("z", "", "", &["zero"]),
        "realpath" => s("eLmPqsz", "", "", &[
            "canonicalize-existing", "canonicalize-missing", "logical", "physical", "quiet",
            "strip", "no-symlinks", "zero", "relative-to=", "relative-base=",
        ]),
        "readlink" => s("efmnqsvz", "", "", &[
            "canonicalize", "canonicalize-existing", "canonicalize-missing", "no-newline",
            "quiet", "silent", "verbose", "zero",
        ]),
        "cut" => s("nsz", "bcdf", "", &[
            "complement", "only-delimited", "output-delimiter=", "zero-terminated", "bytes=",
            "characters=", "fields=", "delimiter=",
        ]),
        "tr" => s("cdsCt", "", "", &["complement", "delete", "squeeze-repeats", "truncate-set1"]),
        "diff" => Spec {
            numeric: true,
            ..s("abBdeEilnNpqrsStTuwyZ", "CUxIFWDL", "XS", &[
                "brief", "report-identical-files", "context?", "unified?", "side-by-side",
                "left-column", "suppress-common-lines", "show-c-function", "show-function-line=",
                "label=", "expand-tabs", "initial-tab", "tabsize=", "suppress-blank-empty",
                "width=", "recursive", "no-dereference", "new-file", "unidirectional-new-file",
                "ignore-file-name-case", "no-ignore-file-name-case", "exclude=",
                "exclude-from@", "starting-file=", "from-file@", "to-file@", "ignore-case",
                "ignore-tab-expansion", "ignore-trailing-space", "ignore-space-change",
                "ignore-all-space", "ignore-blank-lines", "ignore-matching-lines=", "text",
                "strip-trailing-cr", "minimal", "speed-large-files", "normal", "color?",
                "ifdef=", "horizon-lines=", "no-index",
            ])
        },
        "cmp" => s("blsz", "in", "", &["print-bytes", "verbose", "quiet", "silent", "ignore-initial=", "bytes="]),
        "nl" => s("p", "bdfhilnsvw", "", &[
            "body-numbering=", "section-delimiter=", "footer-numbering=", "header-numbering=",
            "line-increment=", "join-blank-lines=", "number-format=", "no-renumber",
            "number-separator=", "starting-line-number=", "number-width=",
        ]),
        "printenv" => s("0", "", "", &["null"]),
        "env" => s("0i", "u", "", &["null", "ignore-environment", "unset="]),
        "grep" | "egrep" | "fgrep" => Spec {
            numeric: true,
            ..s("abcEFGhHiIlLnoPqrRsTuUvVwxyzZ", "ABCDdme", "f", &[
                "after-context=", "before-context=", "context?", "color?", "colour?", "count",
                "files-with-matches", "files-without-match", "include=", "exclude=",
                "exclude-dir=", "exclude-from@", "file@", "regexp=", "max-count=", "label=",
                "binary-files=", "directories=", "devices=", "line-buffered", "null",
                "null-data", "only-matching", "quiet", "silent", "recursive",
                "dereference-recursive", "text", "ignore-case", "no-ignore-case",
                "word-regexp", "line-regexp", "invert-match", "with-filename", "no-filename",
                "line-number", "byte-offset", "initial-tab", "fixed-strings", "basic-regexp",
                "extended-regexp", "perl-regexp", "no-messages", "binary",
            ])
        },
        "column" => s("tnexjJLR", "scoNWHdlr", "", &[
            "table", "json", "separator=", "output-separator=", "table-columns=",
            "table-name=", "output-width=", "fillrows", "keep-empty-lines",
        ]),
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum"
        | "b2sum" | "cksum" => s("bctwz", "al", "", &[
            "binary", "check", "tag", "text", "zero", "quiet", "status", "strict", "warn",
            "ignore-missing", "algorithm=", "length=", "untagged", "base64", "raw",
        ]),
        "tac" => s("br", "s", "", &["before", "regex", "separator="]),
        "less" | "more" => s("FRSXNiIMmnqQ", "", "", &[]),
        "seq" => Spec {
            numeric: true,
            ..s("w", "fs", "", &["equal-width", "format=", "separator="])
        },
        "comm" => s("123z", "", "", &[
            "check-order", "nocheck-order", "output-delimiter=", "total", "zero-terminated",
        ]),
        "paste" => s("sz", "d", "", &["serial", "delimiters=", "zero-terminated"]),
        "expand" | "unexpand" => Spec {
            numeric: true,
            ..s("ia", "t", "", &["initial", "all", "first-only", "tabs="])
        },
        "fold" => s("bs", "w", "", &["bytes", "spaces", "width="]),
        "od" => s("bcdfiloxsv", "AjNtSw", "", &[
            "address-radix=", "skip-bytes=", "read-bytes=", "format=", "output-duplicates",
            "strings?", "width?", "endian=",
        ]),
        "hexdump" => s("bcCdovx", "enNs", "f", &[]),
        "xxd" => s("abCEeipu", "cglosn", "", &[]),
        "strings" => s("adfw", "nteT", "", &[
            "all", "print-file-name", "bytes=", "radix=", "encoding=", "include-all-whitespace",
            "data",
        ]),
        "jq" => s("ncrjasSCMeR", "", "fL", &[
            "null-input", "compact-output", "raw-output", "join-output", "ascii-output",
            "slurp", "sort-keys", "color-output", "monochrome-output", "exit-status",
            "raw-input", "tab", "indent=", "arg+", "argjson+", "slurpfile+@", "rawfile+@",
            "from-file@", "seq", "stream", "raw-output0",
        ]),
        // `-o` writes (the writes table reads this spec too): parsed, never a read.
        "sort" => Spec {
            short_out: "o",
            ..s("bdfgiMhnRrVcCsuz", "ktS", "", &[
            "output>", "ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort",
            "ignore-nonprinting", "month-sort", "human-numeric-sort", "numeric-sort",
            "random-sort", "reverse", "version-sort", "sort=", "check?", "merge", "stable",
            "unique", "zero-terminated", "key=", "field-separator=", "buffer-size=",
            "parallel=", "batch-size=", "debug", "files0-from@", "random-source@",
        ])
        },
        "uniq" => s("cdDiuz", "fsw", "", &[
            "count", "repeated", "all-repeated?", "ignore-case", "unique", "zero-terminated",
            "skip-fields=", "skip-chars=", "check-chars=", "group?",
        ]),
        "rg" => Spec {
            numeric: false,
            ..s("abcFhHiIlLnNopqsSuUvVwxP0.", "ABCeEgtTmMjrdE", "f", &[
                "after-context=", "before-context=", "context=", "count", "count-matches",
                "color=", "colors=", "column", "no-column", "context-separator=", "files",
                "files-with-matches", "files-without-match", "fixed-strings", "follow",
                "glob=", "iglob=", "heading", "no-heading", "hidden", "ignore-case",
                "smart-case", "case-sensitive", "invert-match", "json", "line-number",
                "no-line-number", "max-count=", "max-columns=", "max-columns-preview",
                "max-depth=", "max-filesize=", "multiline", "multiline-dotall", "no-ignore",
                "no-ignore-vcs", "no-ignore-parent", "no-ignore-dot", "no-ignore-global",
                "no-messages", "null", "null-data", "only-matching", "passthru", "pretty",
                "quiet", "regexp=", "replace=", "search-zip-disabled", "sort=", "sortr=",
                "stats", "text", "threads=", "trim", "type=", "type-not=", "type-list",
                "unrestricted", "vimgrep", "with-filename", "no-filename", "word-regexp",
                "line-regexp", "file@", "encoding=", "byte-offset", "crlf", "engine=",
                "pcre2", "no-config", "binary", "hyperlink-format=", "field-match-separator=",
                "field-context-separator=", "path-separator=", "debug", "ignore-file-case-insensitive",
            ])
        },
        _ => return None,
    })
}

/// Programs whose arguments never make them write or run anything.
fn any_args(prog: &str) -> bool {
    matches!(
        prog,
        "sleep" | "true" | "false" | "test" | "[" | "echo" | "printf" | "type" | "expr"
    )
}

/// Parses a read-only program's arguments with its allow-list.
pub(super) fn parsed(part: &Part) -> Option<Parsed> {
    let args = part.argv.get(1..)?;
    flags::parse(&spec(part.program())?, args, false).ok()
}

/// Whether a part only observes: a known read-only program with known-good options, no
/// redirection that writes, no substitution or variable, not in the background.
pub fn is_read_only(part: &Part) -> bool {
    if part.dynamic || part.background || part.privileged || part.opaque.is_some() {
        return false;
    }
    if part
        .redirects
        .iter()
        .any(|r| r.write && r.target != "/dev/null")
    {
        return false;
    }
    if part.argv.is_empty() {
        return true;
    }
    let prog = part.program();
    if any_args(prog) {
        return true;
    }
    match prog {
        "git" => return git::read_only(&part.argv),
        "find" => return find::read_only(&part.argv),
        "sed" => return sed_read_only(&part.argv[1..]),
        // cargo is never a read: even `cargo metadata` runs `build.rustc-wrapper` and
        // other programs named by the project's `.cargo/config.toml`.
        "cargo" => return false,
        _ => {}
    }
    let Some(p) = parsed(part) else {
        return false;
    };
    if !p.outputs.is_empty() {
        return false;
    }
    // `less +'!cmd' f` runs a pager command at start-up.
    if matches!(prog, "less" | "more") && p.operands.iter().any(|o| o.starts_with('+')) {
        return false;
    }
    match prog {
        // A second operand is the output file of `uniq IN OUT` and `xxd IN OUT`.
        "uniq" | "xxd" => p.operands.len() <= 1,
        // `hostname NAME` sets the host name; `date MMDDhhmm` sets the clock.
        "hostname" => p.operands.is_empty(),
        "date" => p.operands.iter().all(|o| o.starts_with('+')),
        _ => true,
    }
}

/// The words of a part that may name files: for a program with an allow-list, its
/// operands and the values of its file options; otherwise every word that could be a
/// path (operands, `--opt=value` values, values glued to short flags that look like
/// paths). Substitution placeholders are skipped by the caller.
pub fn path_operands(part: &Part) -> Vec<String> {
    let args = part.argv.get(1..).unwrap_or_default();
    if let Some(p) = parsed(part) {
        let mut out = p.operands;
        out.extend(p.paths);
        out.extend(
            p.outputs
                .iter()
                .map(|&(i, from)| args[i][from..].to_string()),
        );
        return out;
    }
    let mut out: Vec<String> = args
        .iter()
        .filter_map(|a| flags::path_candidates(a))
        .map(String::from)
        .collect();
    if part.program() == "git" {
        out.extend(git::parse(&part.argv).paths);
        // `git show HEAD:secrets/key` prints `secrets/key`.
        out.extend(search::object_paths(&part.argv));
    }
    out
}

/// `sed -n '3p'`, `sed -n '1,20p'`: printing only, no other option (never `-i`), no
/// `w` or `e`.
fn sed_read_only(args: &[String]) -> bool {
    let s = super::sed::parse(args);
    s.quiet
        && !s.other_options
        && s.scripts.len() == 1
        && s.scripts[0].split(';').all(|cmd| {
            let cmd = cmd.trim();
            cmd.ends_with('p')
                && cmd[..cmd.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ',' || c == '$')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(s: &str) -> Part {
        Part {
            argv: s.split_whitespace().map(String::from).collect(),
            ..Part::default()
        }
    }

    #[test]
    fn known_good_flags_are_reads() {
        for s in [
            "ls -la src",
            "grep -rn main src",
            "wc -l",
            "sort f",
            "uniq -c",
            "head -5 README.md",
            "rg -n foo src",
            "sed -n 1,20p f",
            "tree -L 2",
            "xxd f",
            "file src/main.rs",
            "jq --arg k v .x f.json",
            "diff -u a b",
            "cat README.md",
            "date",
            "date +%Y-%m-%d",
            "date -u -d @0 +%s",
            "hostname",
        ] {
            assert!(is_read_only(&part(s)), "{s}");
        }
    }

    #[test]
    fn unknown_or_writing_flags_are_not() {
        for s in [
            "sort --compress-program=sh f",
            "sort -o out f",
            "sort --output=out f",
            "tree -o FILE",
            "tree -R -H x",
            "xxd -r -p - out",
            "xxd in out",
            "uniq in out",
            "rg --pre cat x",
            "rg -z x",
            "rg --search-zip x",
            "date -s 2020-01-01",
            "date --set=2020-01-01",
            "date 0101000030",
            "date +%s 0101000030",
            "hostname evil",
            "hostname -F f",
            "cargo metadata",
            "cargo tree",
            "cargo --version",
            "ls --frobnicate",
            "cat -Z x",
            "jq -o x",
            "less +!id f",
            "sed -n -e 1p f",
            "sed -n 1p -i f",
            "sed -nw/tmp/x 1p f",
            "nosuchprog",
        ] {
            assert!(!is_read_only(&part(s)), "{s}");
        }
    }

    #[test]
    fn file_option_values_are_paths() {
        assert!(path_operands(&part("file -f ~/.ssh/id_rsa")).contains(&"~/.ssh/id_rsa".into()));
        assert!(path_operands(&part("file -f~/.ssh/id_rsa")).contains(&"~/.ssh/id_rsa".into()));
        assert!(path_operands(&part("grep -f/etc/shadow x")).contains(&"/etc/shadow".into()));
        assert!(path_operands(&part("tree -oFILE")).contains(&"FILE".into()));
        assert!(path_operands(&part("cc -o/tmp/out x.c")).contains(&"/tmp/out".into()));
        assert!(path_operands(&part("sort --output=o f")).contains(&"o".into()));
        assert!(path_operands(&part("git -C /etc status")).contains(&"/etc".into()));
    }
}
