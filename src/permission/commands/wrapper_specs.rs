//! The option grammar of each wrapper `wrappers::unwrap` knows: which options take a value,
//! so that the wrapped command is found where the wrapper itself would find it.

use super::flags::Spec;

#[rustfmt::skip]
pub(super) const SUDO: Spec = Spec {
    short: "AbEHiKknPSsBN",
    short_val: "ugCDhprtUTR",
    long: &[
        "askpass", "background", "preserve-env?", "set-home", "login", "remove-timestamp",
        "reset-timestamp", "non-interactive", "preserve-groups", "stdin", "shell", "bell",
        "no-update", "user=", "group=", "close-from=", "chdir=", "host=", "prompt=", "role=",
        "type=", "other-user=", "command-timeout=", "chroot=",
    ],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const DOAS: Spec = Spec {
    short: "ns",
    short_val: "uC",
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const NICE: Spec = Spec {
    short_val: "n",
    long: &["adjustment="],
    numeric: true,
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const NOHUP: Spec = Spec::NONE;
#[rustfmt::skip]
pub(super) const SETSID: Spec = Spec {
    short: "cfw",
    long: &["ctty", "fork", "wait"],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const TIME: Spec = Spec {
    short: "apqvV",
    short_val: "f",
    short_path: "o",
    long: &[
        "append", "portability", "quiet", "verbose", "format=", "output@",
    ],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const TIMEOUT: Spec = Spec {
    short: "fpv",
    short_val: "ks",
    long: &[
        "foreground", "preserve-status", "verbose", "kill-after=", "signal=",
    ],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const STDBUF: Spec = Spec {
    short_val: "ioe",
    long: &["input=", "output=", "error="],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const IONICE: Spec = Spec {
    short: "t",
    short_val: "cn",
    long: &["ignore", "class=", "classdata="],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const EXEC: Spec = Spec {
    short: "cl",
    short_val: "a",
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const COMMAND: Spec = Spec {
    short: "p",
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const XARGS: Spec = Spec {
    short: "0rtpxo",
    short_val: "ILnPsdE",
    short_path: "a",
    long: &[
        "null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty", "replace?",
        "eof?", "max-args=", "max-lines?", "max-procs=", "max-chars=", "delimiter=",
        "process-slot-var=", "arg-file@", "show-limits",
    ],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const ENV: Spec = Spec {
    short: "i0v",
    short_val: "uCS",
    long: &[
        "ignore-environment", "null", "debug", "ignore-signal?", "default-signal?",
        "block-signal?", "list-signal-handling", "unset=", "chdir=", "split-string=",
    ],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const FLOCK: Spec = Spec {
    short: "sxeunoFv",
    short_val: "wEc",
    long: &[
        "shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose", "timeout=",
        "conflict-exit-code=", "command=",
    ],
    ..Spec::NONE
};
#[rustfmt::skip]
pub(super) const WATCH: Spec = Spec {
    short: "bcdegptwxC",
    short_val: "nq",
    long: &[
        "beep", "color", "no-color", "differences?", "errexit", "chgexit", "precise",
        "no-title", "no-wrap", "exec", "interval=", "equexit=", "no-rerun",
    ],
    ..Spec::NONE
};
