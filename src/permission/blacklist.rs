//! The command blacklist: commands denied in every mode, before any rule (design.md §3).
//! It works on parsed parts (`shell.rs`), so flag order and spelling (`-rf`, `-fr`,
//! `-r -f`, `--recursive --force`), wrappers (`sudo`, `bash -c`) and compounds do not
//! hide a match. A fork bomb is also caught on the raw text, since it need not parse.

use super::commands::{self, has_short_or_long};
use super::shell::{Part, Script};

/// A blacklist hit: the pattern's name and a sentence for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// A short name of the pattern (`rm -rf /`, `fork bomb`, …).
    pub pattern: &'static str,
    /// Why it is refused.
    pub reason: String,
}

impl Hit {
    fn new(pattern: &'static str, reason: impl Into<String>) -> Self {
        Self {
            pattern,
            reason: reason.into(),
        }
    }
}

/// Top-level directories whose recursive removal or chmod breaks the system.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "opt",
    "proc",
    "root",
    "run",
    "sbin",
    "srv",
    "sys",
    "usr",
    "var",
    "mnt",
    "media",
    "snap",
    "nix",
    "System",
    "Library",
    "Users",
    "Applications",
];

/// Programs that download.
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch", "aria2c", "http", "https", "xh"];

/// Checks the raw text for patterns that need not parse (fork bombs).
pub fn check_raw(command: &str) -> Option<Hit> {
    let squeezed: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains(":(){:|:&};:") || squeezed.contains(":(){:|:&}") {
        return Some(Hit::new(
            "fork bomb",
            "a fork bomb exhausts the machine's processes",
        ));
    }
    None
}

/// Checks every part of a parsed command.
pub fn check(script: &Script) -> Option<Hit> {
    if script.fork_bomb {
        return Some(Hit::new(
            "fork bomb",
            "a function that spawns itself in a pipe or the background is a fork bomb",
        ));
    }
    // The directory the script has `cd`-ed into, for relative targets like `*`.
    let mut dir: Option<String> = None;
    for (i, part) in script.parts.iter().enumerate() {
        if let Some(hit) = check_part(script, i, part, dir.as_deref()) {
            return Some(hit);
        }
        if part.program() == "cd" {
            dir = part.argv.get(1).map(|d| absolute(d, dir.as_deref()));
        }
    }
    None
}

fn check_part(script: &Script, index: usize, part: &Part, dir: Option<&str>) -> Option<Hit> {
    for r in &part.redirects {
        if r.write && is_raw_disk(&r.target) {
            return Some(Hit::new(
                "> /dev/sd*",
                format!(
                    "writing to the raw disk `{}` destroys its file systems",
                    r.target
                ),
            ));
        }
    }
    let prog = part.program();
    let args: Vec<&str> = part.argv.iter().skip(1).map(String::as_str).collect();
    let (flags, targets) = split_options(&args);
    match prog {
        "rm" => {
            if args.contains(&"--no-preserve-root") {
                return Some(Hit::new(
                    "rm --no-preserve-root",
                    "`rm --no-preserve-root` exists only to delete `/`",
                ));
            }
            let recursive = has_short_or_long(&flags, 'r', "--recursive")
                || has_short_or_long(&flags, 'R', "--recursive");
            if recursive && let Some(t) = targets.iter().find(|t| catastrophic(t, dir)) {
                return Some(Hit::new(
                    "rm -rf /",
                    format!(
                        "recursive removal of `{t}` destroys the system or your home directory"
                    ),
                ));
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = has_short_or_long(&flags, 'R', "--recursive");
            // The first positional is the mode or owner.
            if recursive && let Some(t) = targets.iter().skip(1).find(|t| catastrophic(t, dir)) {
                return Some(Hit::new(
                    "chmod -R 777 /",
                    format!("recursive `{prog}` of `{t}` breaks the system's permissions"),
                ));
            }
        }
        "find" => {
            let destructive = args
                .iter()
                .any(|a| matches!(*a, "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir"));
            if destructive
                && let Some(t) = args
                    .iter()
                    .take_while(|a| !a.starts_with('-'))
                    .find(|t| catastrophic(t, dir))
            {
                return Some(Hit::new(
                    "find / -delete",
                    format!("`find {t}` with -delete/-exec can destroy the system"),
                ));
            }
        }
        "dd" => {
            if let Some(of) = args.iter().find_map(|a| a.strip_prefix("of="))
                && is_raw_disk(of)
            {
                return Some(Hit::new(
                    "dd of=/dev/sd*",
                    format!("`dd` onto the raw disk `{of}` destroys its file systems"),
                ));
            }
        }
        "tee" | "cp" | "mv" | "shred" | "wipefs" | "blkdiscard" | "sgdisk" | "fdisk" | "parted" => {
            if let Some(t) = targets.iter().find(|t| is_raw_disk(t)) {
                return Some(Hit::new(
                    "> /dev/sd*",
                    format!("`{prog}` on the raw disk `{t}` destroys its file systems"),
                ));
            }
        }
        p if p.starts_with("mkfs") || p == "mke2fs" => {
            return Some(Hit::new("mkfs", format!("`{p}` formats a file system")));
        }
        _ => {}
    }
    if DOWNLOADERS.contains(&prog) {
        // `curl … | sh`: a later member of the same pipeline runs stdin as a program.
        let piped_into_shell = script.parts.iter().skip(index + 1).any(|p| {
            p.pipeline == part.pipeline
                && p.pipe_pos > part.pipe_pos
                && p.parent == part.parent
                && commands::reads_program_from_stdin(p)
        });
        // `sh -c "$(curl …)"`, `bash <(curl …)`, `eval "$(wget -O- …)"`.
        let substituted_into_shell = part.substituted
            && part.parent.is_some_and(|p| {
                let parent = &script.parts[p];
                commands::INTERPRETERS.contains(&parent.program())
                    || parent.argv.is_empty() && !parent.wrappers.is_empty()
            });
        if piped_into_shell || substituted_into_shell {
            return Some(Hit::new(
                "curl | sh",
                format!("running a downloaded script unseen (`{prog}` into a shell)"),
            ));
        }
    }
    None
}

/// Splits arguments into options and operands (everything after `--` is an operand).
fn split_options<'a>(args: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut flags = Vec::new();
    let mut operands = Vec::new();
    let mut ended = false;
    for a in args {
        if !ended && *a == "--" {
            ended = true;
        } else if !ended && a.starts_with('-') && a.len() > 1 {
            flags.push(*a);
        } else {
            operands.push(*a);
        }
    }
    (flags, operands)
}

/// Makes `path` absolute against the script's `cd` target, lexically normalised.
fn absolute(path: &str, dir: Option<&str>) -> String {
    let joined = match dir {
        Some(d) if !path.starts_with('/') && !path.starts_with('~') => format!("{d}/{path}"),
        _ => path.to_string(),
    };
    normalize(&joined)
}

/// Lexical normalisation: collapses `//`, `.`, `..`; keeps a leading `~`.
fn normalize(path: &str) -> String {
    let (prefix, rest) = if let Some(r) = path.strip_prefix('~') {
        ("~", r)
    } else if path.starts_with('/') {
        ("/", path)
    } else {
        ("", path)
    };
    let mut out: Vec<&str> = Vec::new();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    match prefix {
        "~" if out.is_empty() => "~".into(),
        "~" => format!("~/{}", out.join("/")),
        "/" => format!("/{}", out.join("/")),
        _ => out.join("/"),
    }
}

/// Whether removing `target` recursively is catastrophic: `/`, `/*`, `~`, `~/*`, a
/// system directory (or everything in it), or `/usr/<x>`.
fn catastrophic(target: &str, dir: Option<&str>) -> bool {
    let t = absolute(target, dir);
    if !t.starts_with('/') && !t.starts_with('~') {
        return false;
    }
    // `/*`, `~/*`, `/usr/*`: the glob removes everything in the directory.
    let t = t
        .strip_suffix("/*")
        .or_else(|| t.strip_suffix("/.*"))
        .map(|s| {
            if s.is_empty() {
                "/".to_string()
            } else {
                s.to_string()
            }
        })
        .unwrap_or(t.clone());
    if t == "/" || t == "~" || t == "*" {
        return true;
    }
    let comps: Vec<&str> = t.trim_start_matches('/').split('/').collect();
    if t.starts_with('/') {
        match comps.as_slice() {
            [top] => return SYSTEM_DIRS.contains(top) || top.contains('*'),
            ["usr" | "var" | "etc" | "System" | "Library", _] => return true,
            _ => {}
        }
    }
    false
}

/// Block devices that hold file systems.
fn is_raw_disk(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "dm-", "md", "mapper/", "rdisk",
    ]
    .iter()
    .any(|p| dev.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_collapses_dots_and_keeps_tilde() {
        assert_eq!(normalize("/usr/../"), "/");
        assert_eq!(normalize("//etc/./"), "/etc");
        assert_eq!(normalize("~/"), "~");
        assert_eq!(normalize("~/a/../b"), "~/b");
    }

    #[test]
    fn catastrophic_targets() {
        for t in [
            "/", "/*", "//", "/.", "~", "~/", "~/*", "/etc", "/usr/*", "/usr/lib", "/home/",
            "/usr/..",
        ] {
            assert!(catastrophic(t, None), "{t}");
        }
        for t in ["build", "./target", "/tmp/x/y", "/home/me/proj/target", "*"] {
            assert!(!catastrophic(t, None), "{t}");
        }
        assert!(catastrophic("*", Some("/")), "cd / && rm -rf *");
    }
}
