//! Dangerous commands: allowed by no prefix rule, they ask in every mode but
//! bypassPermissions and are denied under dontAsk (design.md §3). Matched on the command
//! as it runs (basename, git's global options skipped), not as it is spelled.

use super::{git, has_short_or_long};
use crate::shell::Part;

/// Why a part is dangerous (ask in every mode but bypassPermissions), if it is.
pub fn dangerous(part: &Part) -> Option<&'static str> {
    let args: Vec<&str> = part.argv.iter().skip(1).map(String::as_str).collect();
    if part
        .argv
        .first()
        .is_some_and(|a| a.contains("$VAR") || a.contains("$("))
    {
        return Some("the program to run is computed at run time");
    }
    match part.program() {
        "git" => git::dangerous(&part.argv),
        "rm" if part.dynamic
            && (has_short_or_long(&args, 'r', "--recursive")
                || has_short_or_long(&args, 'R', "--recursive")) =>
        {
            Some("recursive removal of targets computed at run time")
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => Some("stops the machine"),
        "kill" if args.contains(&"-1") => Some("kills every process"),
        "pkill" | "killall" => Some("kills processes by name"),
        "crontab" if args.contains(&"-r") => Some("removes the crontab"),
        "npm" | "cargo" | "yarn" | "pnpm" | "twine" | "gem" if args.first() == Some(&"publish") => {
            Some("publishes a package")
        }
        "terraform" | "tofu" if args.first() == Some(&"destroy") => Some("destroys infrastructure"),
        "kubectl" if args.first() == Some(&"delete") => Some("deletes cluster resources"),
        "docker" | "podman" if args.contains(&"prune") => Some("prunes containers or images"),
        _ => None,
    }
}
