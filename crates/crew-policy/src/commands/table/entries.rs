//! The entries of the program table (`table.rs` says what each field means).

use super::super::flags::Spec;
use super::{BASE, Operand, Operands, Program, Read, Runs, Wrap, read, runs, spec, wrap, write};

/// `env`'s options (its own grammar: `-S` runs source, `-C` changes directory).
#[rustfmt::skip]
pub(in crate::commands) const ENV: Spec = spec("i0v", "uCS", &[
    "ignore-environment", "null", "debug", "ignore-signal?", "default-signal?", "block-signal?",
    "list-signal-handling", "unset=", "chdir=", "split-string=",
]);
/// `watch`'s options.
#[rustfmt::skip]
pub(in crate::commands) const WATCH: Spec = spec("bcdegptwxC", "nq", &[
    "beep", "color", "no-color", "differences?", "errexit", "chgexit", "precise", "no-title",
    "no-wrap", "exec", "interval=", "equexit=", "no-rerun",
]);
/// `su`'s options (`-c` runs source).
#[rustfmt::skip]
pub(in crate::commands) const SU: Spec = spec("lmpPf", "csgGw", &[
    "login", "preserve-environment", "pty", "fast", "command=", "session-command=", "shell=",
    "group=", "supp-group=", "whitelist-environment=",
]);
const ALWAYS: Runs = Runs::Always;

/// The table.
#[rustfmt::skip]
pub(in crate::commands) const PROGRAMS: &[Program] = &[
    // Read-only by their options alone.
    read(&["ls"], "aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw", "", &[
        "all", "almost-all", "author", "escape", "classify?", "file-type", "full-time",
        "group-directories-first", "human-readable", "si", "dereference",
        "dereference-command-line", "inode", "literal", "numeric-uid-gid", "no-group",
        "hide-control-chars", "show-control-chars", "quote-name", "recursive", "reverse",
        "size", "directory", "context", "color?", "sort=", "time=", "time-style=",
        "format=", "width=", "ignore=", "hide=", "block-size=", "indicator-style=",
        "quoting-style=", "tabsize=", "zero",
    ]),
    read(&["cat"], "AbeEnstTuv", "", "", &[
        "show-all", "number-nonblank", "show-ends", "number", "squeeze-blank", "show-tabs",
        "show-nonprinting",
    ]),
    read(&["head", "tail"], "qvzfF", "ncs", "", &[
        "lines=", "bytes=", "quiet", "silent", "verbose", "zero-terminated", "follow?",
        "retry", "sleep-interval=", "pid=", "max-unchanged-stats=",
    ]).numeric(),
    read(&["wc"], "clmwL", "", "", &[
        "bytes", "chars", "lines", "words", "max-line-length", "total=", "files0-from@",
    ]),
    read(&["pwd"], "LP", "", "", &["logical", "physical"]),
    read(&["which"], "as", "", "", &["all", "skip-alias", "skip-functions"]),
    read(&["whoami", "tty", "nproc", "arch", "logname", "groups", "rev"], "", "", "", &["all"]),
    // `hostname NAME` sets the host name; `date MMDDhhmm` sets the clock.
    read(&["hostname"], "", "", "", &["all"]).operands(Operand::None),
    read(&["id"], "aGgnruzZ", "", "", &["group", "groups", "name", "real", "user", "zero", "context"]),
    read(&["date"], "uRI", "d", "fr", &[
        "utc", "universal", "rfc-email", "iso-8601?", "rfc-3339=", "date=", "file@",
        "reference@", "debug",
    ]).operands(Operand::Format),
    read(&["uname"], "asnrvmpio", "", "", &[
        "all", "kernel-name", "nodename", "kernel-release", "kernel-version", "machine",
        "processor", "hardware-platform", "operating-system",
    ]),
    read(&["file"], "bcEhikLlNnprsSv0", "eFP", "fm", &[
        "brief", "mime", "mime-type", "mime-encoding", "dereference", "no-dereference",
        "special-files", "keep-going", "raw", "no-buffer", "no-pad", "print0", "extension",
        "apple", "exclude=", "separator=", "parameter=", "files-from@", "magic-file@",
    ]),
    read(&["stat"], "LfFt", "c", "", &[
        "dereference", "file-system", "format=", "printf=", "terse", "cached=",
    ]),
    read(&["du"], "0abcDhHklLmsSxP", "Bdt", "X", &[
        "null", "all", "apparent-size", "block-size=", "bytes", "total", "dereference-args",
        "dereference", "no-dereference", "human-readable", "si", "summarize", "max-depth=",
        "exclude=", "exclude-from@", "threshold=", "one-file-system", "count-links",
        "separate-dirs", "inodes", "time?", "time-style=",
    ]),
    read(&["df"], "ahHiklPTvx", "Bt", "", &[
        "all", "human-readable", "si", "inodes", "local", "portability", "print-type",
        "total", "block-size=", "type=", "exclude-type=", "output?", "sync", "no-sync",
    ]),
    read(&["tree"], "adlfxgipusshDFqNQrtvUCAnJXc", "LPIH", "", &[
        "noreport", "dirsfirst", "filesfirst", "charset=", "prune", "filelimit=",
        "timefmt=", "du", "si", "inodes", "device", "matchdirs", "ignore-case", "gitignore",
        "sort=", "version",
    ]),
    read(&["basename"], "az", "s", "", &["multiple", "suffix=", "zero"]),
    read(&["dirname"], "z", "", "", &["zero"]),
    read(&["realpath"], "eLmPqsz", "", "", &[
        "canonicalize-existing", "canonicalize-missing", "logical", "physical", "quiet",
        "strip", "no-symlinks", "zero", "relative-to=", "relative-base=",
    ]),
    read(&["readlink"], "efmnqsvz", "", "", &[
        "canonicalize", "canonicalize-existing", "canonicalize-missing", "no-newline",
        "quiet", "silent", "verbose", "zero",
    ]),
    read(&["cut"], "nsz", "bcdf", "", &[
        "complement", "only-delimited", "output-delimiter=", "zero-terminated", "bytes=",
        "characters=", "fields=", "delimiter=",
    ]),
    read(&["tr"], "cdsCt", "", "", &["complement", "delete", "squeeze-repeats", "truncate-set1"]),
    read(&["diff"], "abBdeEilnNpqrsStTuwyZ", "CUxIFWDL", "XS", &[
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
    ]).numeric(),
    read(&["cmp"], "blsz", "in", "", &["print-bytes", "verbose", "quiet", "silent", "ignore-initial=", "bytes="]),
    read(&["nl"], "p", "bdfhilnsvw", "", &[
        "body-numbering=", "section-delimiter=", "footer-numbering=", "header-numbering=",
        "line-increment=", "join-blank-lines=", "number-format=", "no-renumber",
        "number-separator=", "starting-line-number=", "number-width=",
    ]),
    read(&["printenv"], "0", "", "", &["null"]),
        read(&["grep", "egrep", "fgrep"], "abcEFGhHiIlLnoPqrRsTuUvVwxyzZ", "ABCDdme", "f", &[
        "after-context=", "before-context=", "context?", "color?", "colour?", "count",
        "files-with-matches", "files-without-match", "include=", "exclude=",
        "exclude-dir=", "exclude-from@", "file@", "regexp=", "max-count=", "label=",
        "binary-files=", "directories=", "devices=", "line-buffered", "null",
        "null-data", "only-matching", "quiet", "silent", "recursive",
        "dereference-recursive", "text", "ignore-case", "no-ignore-case",
        "word-regexp", "line-regexp", "invert-match", "with-filename", "no-filename",
        "line-number", "byte-offset", "initial-tab", "fixed-strings", "basic-regexp",
        "extended-regexp", "perl-regexp", "no-messages", "binary",
    ]).numeric(),
    read(&["column"], "tnexjJLR", "scoNWHdlr", "", &[
        "table", "json", "separator=", "output-separator=", "table-columns=",
        "table-name=", "output-width=", "fillrows", "keep-empty-lines",
    ]),
    read(&["md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum"], "bctwz", "al", "", &[
        "binary", "check", "tag", "text", "zero", "quiet", "status", "strict", "warn",
        "ignore-missing", "algorithm=", "length=", "untagged", "base64", "raw",
    ]),
    read(&["tac"], "br", "s", "", &["before", "regex", "separator="]),
    // `less +'!cmd' f` runs a pager command at start-up.
    read(&["less", "more"], "FRSXNiIMmnqQ", "", "", &[]).operands(Operand::NoPlus),
    read(&["seq"], "w", "fs", "", &["equal-width", "format=", "separator="]).numeric(),
    read(&["comm"], "123z", "", "", &[
        "check-order", "nocheck-order", "output-delimiter=", "total", "zero-terminated",
    ]),
    read(&["paste"], "sz", "d", "", &["serial", "delimiters=", "zero-terminated"]),
    read(&["expand", "unexpand"], "ia", "t", "", &["initial", "all", "first-only", "tabs="]).numeric(),
    read(&["fold"], "bs", "w", "", &["bytes", "spaces", "width="]),
    read(&["od"], "bcdfiloxsv", "AjNtSw", "", &[
        "address-radix=", "skip-bytes=", "read-bytes=", "format=", "output-duplicates",
        "strings?", "width?", "endian=",
    ]),
    read(&["hexdump"], "bcCdovx", "enNs", "f", &[]),
    // A second operand is the output file of `xxd IN OUT` and `uniq IN OUT`.
    read(&["xxd"], "abCEeipu", "cglosn", "", &[]).operands(Operand::AtMostOne),
    read(&["strings"], "adfw", "nteT", "", &[
        "all", "print-file-name", "bytes=", "radix=", "encoding=", "include-all-whitespace",
        "data",
    ]),
    read(&["jq"], "ncrjasSCMeR", "", "fL", &[
        "null-input", "compact-output", "raw-output", "join-output", "ascii-output",
        "slurp", "sort-keys", "color-output", "monochrome-output", "exit-status",
        "raw-input", "tab", "indent=", "arg+", "argjson+", "slurpfile+@", "rawfile+@",
        "from-file@", "seq", "stream", "raw-output0",
    ]),
    // `-o` writes: parsed, never a read.
    read(&["sort"], "bdfgiMhnRrVcCsuz", "ktS", "", &[
        "output>", "ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort",
        "ignore-nonprinting", "month-sort", "human-numeric-sort", "numeric-sort",
        "random-sort", "reverse", "version-sort", "sort=", "check?", "merge", "stable",
        "unique", "zero-terminated", "key=", "field-separator=", "buffer-size=",
        "parallel=", "batch-size=", "debug", "files0-from@", "random-source@",
    ]).out("o").writes(Operands::None, false),
    read(&["uniq"], "cdDiuz", "fsw", "", &[
        "count", "repeated", "all-repeated?", "ignore-case", "unique", "zero-terminated",
        "skip-fields=", "skip-chars=", "check-chars=", "group?",
    ]).operands(Operand::AtMostOne).writes(Operands::Second, false),
    read(&["rg"], "abcFhHiIlLnNopqsSuUvVwxP0.", "ABCeEgtTmMjrdE", "f", &[
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
    ]),
    // Whatever their arguments (`printf -v 'a[$(cmd)]'` evaluates a subscript).
    Program { names: &["sleep", "true", "false", "test", "[", "echo", "type", "expr"], read: Read::AnyArgs, ..BASE },
    Program { names: &["printf"], read: Read::AnyArgs, runs: Some(Runs::Options(&["-v"])), ..BASE },
    // Writers: option values that name written files are `>` options (for a `Dest`
    // program, a target directory that replaces the last operand).
    write(&["cp"], "abdfHilLnPprRsTuvxZ", "S", "t", &["archive", "attributes-only", "backup?",
        "copy-contents", "dereference", "force", "interactive", "link", "no-dereference",
        "no-clobber", "preserve?", "parents", "recursive", "reflink?", "remove-destination",
        "strip-trailing-slashes", "symbolic-link", "no-target-directory", "update?",
        "verbose", "one-file-system", "context?", "debug", "keep-directory-symlink",
        "no-preserve=", "sparse=", "suffix=", "target-directory>"], Operands::Dest, true),
    write(&["mv"], "bfinTuvZ", "S", "t", &["backup?", "force", "interactive", "no-clobber",
        "no-copy", "strip-trailing-slashes", "no-target-directory", "update?", "verbose",
        "context?", "debug", "exchange", "suffix=", "target-directory>"],
        Operands::SourcesAndDest, true),
    write(&["install"], "bcCdDpsvTZ", "gmoS", "t", &["backup?", "compare", "directory",
        "preserve-timestamps", "strip", "no-target-directory", "verbose", "preserve-context",
        "context?", "debug", "group=", "mode=", "owner=", "strip-program=", "suffix=",
        "target-directory>"], Operands::Dest, false),
    write(&["ln"], "bdfFinLPrsTv", "S", "t", &["backup?", "directory", "force", "interactive",
        "logical", "no-dereference", "physical", "relative", "symbolic", "no-target-directory",
        "verbose", "suffix=", "target-directory>"], Operands::Dest, false),
    write(&["tee"], "aip", "", "", &["append", "ignore-interrupts", "output-error?"],
        Operands::All, false),
    write(&["touch"], "acfhm", "dtr", "", &["no-create", "no-dereference", "date=",
        "reference=", "time="], Operands::All, true),
    write(&["mkdir"], "pvZ", "m", "", &["parents", "verbose", "context?", "mode="],
        Operands::All, true),
    write(&["rmdir"], "pv", "", "", &["ignore-fail-on-non-empty", "parents", "verbose"],
        Operands::All, false),
    write(&["rm", "unlink", "shred", "mkfifo", "mknod"], "dfiIrRvuxzZ", "mns", "", &["force",
        "interactive?", "one-file-system", "no-preserve-root", "preserve-root?", "recursive",
        "dir", "verbose", "remove?", "exact", "zero", "iterations=", "size=",
        "random-source=", "mode=", "context="], Operands::All, false),
    write(&["truncate"], "co", "rs", "", &["no-create", "io-blocks", "reference=", "size="],
        Operands::All, false),
    write(&["chmod", "chown", "chgrp", "chattr", "setfacl"], "cfvRhHLP", "", "", &["changes",
        "silent", "quiet", "verbose", "dereference", "no-dereference", "no-preserve-root",
        "preserve-root", "recursive", "from=", "reference="], Operands::AfterFirst, false),
    // Only the options whose values matter; the rest are taken as flags.
    write(&["curl"], "", "AbCdEeFHhKmPQrTtUuwXxYyz", "cDo", &["output>", "output-dir>",
        "dump-header>", "cookie-jar>", "trace>", "trace-ascii>", "stderr>", "libcurl>",
        "etag-save>", "hsts>", "alt-svc>", "data=", "header=", "user-agent=", "user=",
        "request=", "url=", "config=", "cookie=", "form=", "referer=", "proxy=", "max-time=",
        "connect-timeout=", "retry=", "range=", "cert=", "key=", "cacert="],
        Operands::None, false),
    write(&["wget"], "", "tTwlDeUAR", "aOoP", &["output-document>", "output-file>",
        "append-output>", "directory-prefix>", "save-cookies>", "tries=", "timeout=", "wait=",
        "level=", "domains=", "execute=", "user-agent=", "accept=", "reject=", "header=",
        "load-cookies=", "post-data=", "user=", "password="], Operands::None, false),
    // Wrappers: the command follows their options. `sudo -l`, `-v`, `-e` (sudoedit) are
    // not in its spec: they become opaque.
    wrap(&["sudo"], spec("AbEHiKknPSsBN", "ugCDhprtUTR", &[
        "askpass", "background", "preserve-env?", "set-home", "login", "remove-timestamp",
        "reset-timestamp", "non-interactive", "preserve-groups", "stdin", "shell", "bell",
        "no-update", "user=", "group=", "close-from=", "chdir=", "host=", "prompt=", "role=",
        "type=", "other-user=", "command-timeout=", "chroot=",
    ]), true),
    wrap(&["doas"], spec("ns", "uC", &[]), true),
    wrap(&["nice"], spec("", "n", &["adjustment="]), false).numeric(),
    wrap(&["nohup", "builtin"], Spec::NONE, false),
    wrap(&["setsid"], spec("cfw", "", &["ctty", "fork", "wait"]), false),
    wrap(&["time"], Spec { short_path: "o", ..spec("apqvV", "f", &[
        "append", "portability", "quiet", "verbose", "format=", "output@",
    ]) }, false),
    wrap(&["timeout"], spec("fpv", "ks", &[
        "foreground", "preserve-status", "verbose", "kill-after=", "signal=",
    ]), false).positional(1),
    wrap(&["stdbuf"], spec("", "ioe", &["input=", "output=", "error="]), false),
    wrap(&["ionice"], spec("t", "cn", &["ignore", "class=", "classdata="]), false),
    wrap(&["exec"], spec("cl", "a", &[]), false),
    wrap(&["command"], spec("p", "", &[]), false),
    wrap(&["xargs"], Spec { short_path: "a", ..spec("0rtpxo", "ILnPsdE", &[
        "null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty", "replace?",
        "eof?", "max-args=", "max-lines?", "max-procs=", "max-chars=", "delimiter=",
        "process-slot-var=", "arg-file@", "show-limits",
    ]) }, false).runs(ALWAYS),
    wrap(&["flock"], spec("sxeunoFv", "wEc", &[
        "shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose", "timeout=",
        "conflict-exit-code=", "command=",
    ]), false).positional(1),
    // Wrappers with a grammar of their own (`wrappers`, `shells`).
    Program { names: &["env"], spec: ENV, read: Read::Options(Operand::Any), wrap: Wrap::Own,
        runs: Some(Runs::Options(&["-S", "--split-string"])), ..BASE },
    Program { names: &["watch"], spec: WATCH, wrap: Wrap::Own, ..BASE },
    Program { names: &["su"], spec: SU, wrap: Wrap::Own, ..BASE },
    Program { names: &["busybox", "toybox", "coreutils"], wrap: Wrap::Own, ..BASE },
    // Shell builtins that run text as commands.
    runs(&["eval", "source", "."], ALWAYS).own(),
    // Shells left as a part of their own run a script file or stdin (`bash -c 'literal'`
    // became parts of its own; `bash -c "$X"` did not).
    runs(&["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"], ALWAYS).own(),
    runs(&["csh", "tcsh"], ALWAYS),
    // Programs that run a command in ways we do not model; always opaque.
    Program { names: &[
        "strace", "ltrace", "chroot", "unshare", "nsenter", "setpriv", "runuser", "chrt",
        "taskset", "numactl", "prlimit", "systemd-run", "firejail", "bwrap", "fakeroot", "proot",
        "faketime", "torsocks", "proxychains", "proxychains4", "script", "expect", "sg",
        "newgrp", "pkexec", "at", "batch", "catchsegv", "valgrind", "gdb", "rlwrap", "unbuffer",
    ], wrap: Wrap::Opaque, ..BASE },
    Program { names: &["parallel"], wrap: Wrap::Opaque, runs: Some(ALWAYS), ..BASE },
    // Interpreters: inline code (`-c`, `-e`, `-E`, `-p`, `-r`), a script file, a module or
    // stdin all run code the rule cannot read.
    runs(&[
        "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno",
        "bun", "php", "lua", "luajit", "Rscript", "julia", "tclsh", "osascript", "pwsh",
        "powershell",
    ], ALWAYS),
    // awk's `system()` and pipes in a literal program make it opaque (`programs`); a
    // program read from a file is not seen.
    runs(&["awk", "gawk", "mawk", "nawk"], Runs::Options(&["-f", "--file"])),
    // Builtins that define names for commands or run them later, or evaluate their
    // arguments as arithmetic, where an array subscript in a value (`a[$(cmd)]`) runs a
    // command.
    runs(&["alias", "trap", "let", "declare", "typeset", "local"], ALWAYS),
    // Build tools: the makefile (any, `-f /dev/stdin`) holds the commands.
    runs(&["make", "gmake", "bmake", "just"], ALWAYS),
    runs(&["find"], Runs::Options(&["-exec", "-execdir", "-ok", "-okdir"])),
    // Package runners: they fetch a package and run it, or run any command given.
    runs(&["npx", "pnpx", "bunx", "uvx"], ALWAYS),
    runs(&["npm"], Runs::Subcommands(&["exec", "x"])),
    runs(&["pnpm", "yarn"], Runs::Subcommands(&["dlx", "exec"])),
    runs(&["uv"], Runs::Subcommands(&["run", "tool"])),
    runs(&["pipx", "poetry"], Runs::Subcommands(&["run"])),
];
