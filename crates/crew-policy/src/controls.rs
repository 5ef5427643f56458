//! crew's own controls are the user's, not the agent's (design invariant 11): a command
//! that changes crew's trust, settings, MCP or worker configuration (`crew trust DIR`,
//! `crew mcp add`, `crew worktrees merge` …) is denied in every mode, before any rule,
//! beside the blacklist. Only the read forms pass (`list`, `get`, `show`, `check`, `diff`,
//! `logs`, `trust --list`, `help`).
//!
//! A part runs crew when its program is named `crew`, or is the running binary (by
//! identity, or a byte-for-byte copy). A control whose program cannot be resolved is
//! denied too (fail closed); the OS keeps crew's configuration read-only in every sandbox
//! profile for what the engine cannot see (an interpreter calling crew).

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::shell::{Part, Script};

/// crew's subcommands and, for each, the subcommands that only read (`None`: the
/// subcommand itself only reads, whatever follows).
const SUBCOMMANDS: &[(&str, Option<&[&str]>)] = &[
    ("agents", Some(&["list"])),
    ("hooks", Some(&["list"])),
    ("permissions", Some(&["check", "list"])),
    ("sessions", Some(&["list"])),
    ("worktrees", Some(&["list", "diff"])),
    ("tasks", Some(&["list", "logs"])),
    ("team", Some(&["show"])),
    ("skills", Some(&["list"])),
    ("commands", Some(&["list"])),
    ("memory", Some(&["show"])),
    ("mcp", Some(&["list", "get"])),
    ("workers", Some(&["list"])),
    ("worker", Some(&[])),
    ("trust", Some(&[])),
    ("help", None),
];

/// Why `script` runs one of crew's own controls, naming it; `None` when no part does.
/// `cwd` is the caller's real cwd (for a relative program path in a part that did not
/// `cd`).
pub fn check(script: &Script, cwd: Option<&Path>) -> Option<String> {
    script.parts.iter().find_map(|part| check_part(part, cwd))
}

fn check_part(part: &Part, cwd: Option<&Path>) -> Option<String> {
    let program = part.argv.first()?;
    let control = control(&part.argv[1..])?;
    let why = match runs_crew(part, program, cwd) {
        Runs::Crew => "",
        Runs::Unknown => {
            " (its program cannot be resolved before it runs, so it is treated as crew)"
        }
        Runs::Other => return None,
    };
    Some(format!(
        "`{}` changes crew's own {control}{why}; crew's trust, settings, MCP servers and \
         workers are the user's to change, never an agent's, in every permission mode; ask \
         the user to run it",
        part.text()
    ))
}

/// What crew's arguments `args` change, when they are not a read: the subcommand is the
/// first word naming one; its own subcommand is the next word that is not an option.
fn control(args: &[String]) -> Option<String> {
    // After `--`, words belong to something else (a server's command line).
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let args = &args[..end];
    let (at, reads) = args.iter().enumerate().find_map(|(i, a)| {
        SUBCOMMANDS
            .iter()
            .find(|(name, _)| name == a)
            .map(|(_, reads)| (i, *reads))
    })?;
    let top = args[at].as_str();
    let reads = reads?;
    let rest = &args[at + 1..];
    if top == "trust" {
        // `crew trust --list` only reads; `crew trust [DIR]` and `--revoke` change trust.
        return if rest.len() == 1 && rest[0] == "--list" {
            None
        } else {
            Some("trust (`crew trust`)".into())
        };
    }
    let sub = rest.iter().find(|a| !a.starts_with('-'));
    match sub {
        Some(s) if reads.contains(&s.as_str()) => None,
        Some(s) => Some(format!("configuration (`crew {top} {s}`)")),
        None => Some(format!("configuration (`crew {top}`)")),
    }
}

/// Whether a part's program is crew.
enum Runs {
    Crew,
    Other,
    Unknown,
}

fn runs_crew(part: &Part, program: &str, cwd: Option<&Path>) -> Runs {
    if part.program() == "crew" {
        return Runs::Crew;
    }
    // A program word computed at run time (`$C`, `$(command -v crew)`, `` `…` ``).
    if program.contains('$') || program.contains('`') {
        return Runs::Unknown;
    }
    let Some(path) = locate(part, program, cwd) else {
        return Runs::Unknown;
    };
    match is_running_binary(&path) {
        Some(true) => Runs::Crew,
        Some(false) => Runs::Other,
        None => Runs::Unknown,
    }
}

/// The file a part's program word runs: a path from the part's directory, or a bare name
/// looked up in `PATH` (the part's own `PATH=` when it sets one).
fn locate(part: &Part, program: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        if p.is_absolute() {
            return Some(p.to_path_buf());
        }
        return Some(part.dir.path(cwd)?.join(p));
    }
    let path: OsString = match part.env.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, v)) => v.into(),
        None => std::env::var_os("PATH")?,
    };
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The running binary's identity: device, inode and size.
fn running_binary() -> Option<&'static (u64, u64, u64)> {
    static EXE: OnceLock<Option<(u64, u64, u64)>> = OnceLock::new();
    EXE.get_or_init(|| {
        std::fs::metadata("/proc/self/exe")
            .ok()
            .map(|m| (m.dev(), m.ino(), m.len()))
    })
    .as_ref()
}

/// Whether `path` is the running binary (the same file, or a copy of its bytes); `None`
/// when it cannot be told.
fn is_running_binary(path: &Path) -> Option<bool> {
    let m = std::fs::metadata(path).ok()?;
    let &(dev, ino, len) = running_binary()?;
    if (m.dev(), m.ino()) == (dev, ino) {
        return Some(true);
    }
    if m.len() != len {
        return Some(false);
    }
    same_bytes(path, Path::new("/proc/self/exe"))
}

fn same_bytes(a: &Path, b: &Path) -> Option<bool> {
    let (mut a, mut b) = (File::open(a).ok()?, File::open(b).ok()?);
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = a.read(&mut x).ok()?;
        if n == 0 {
            return Some(b.read(&mut y[..1]).ok()? == 0);
        }
        b.read_exact(&mut y[..n]).ok()?;
        if x[..n] != y[..n] {
            return Some(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    #[rustfmt::skip]
    fn writes_are_controls_and_reads_are_not() {
        for s in [
            "trust", "trust .", "trust --revoke .", "trust --list --revoke .",
            "mcp add evil --scope user -- sh -c x", "mcp remove fs", "mcp serve",
            "--cwd /tmp mcp add x -- y", "--model agents trust .", "worker --listen 0.0.0.0:7400",
            "workers tls-settings", "team send --to lead hi", "worktrees merge w1",
            "worktrees discard w1", "tasks stop t1", "permissions allow Bash", "mcp",
        ] {
            assert!(control(&w(s)).is_some(), "{s}");
        }
        for s in [
            "trust --list", "mcp list", "mcp get fs", "permissions check read_file {}",
            "permissions list", "worktrees diff w1", "tasks logs t1", "team show", "agents list",
            "help trust", "-p hello", "", "mcp list -- trust .",
        ] {
            assert!(control(&w(s)).is_none(), "{s}");
        }
    }

    #[test]
    fn the_running_binary_is_recognised_by_identity_and_content() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(is_running_binary(&exe), Some(true));
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("hard");
        std::fs::hard_link(&exe, &link)
            .or_else(|_| std::os::unix::fs::symlink(&exe, &link))
            .unwrap();
        assert_eq!(is_running_binary(&link), Some(true));
        let copy = dir.path().join("copy");
        std::fs::copy(&exe, &copy).unwrap();
        assert_eq!(is_running_binary(&copy), Some(true));
        let other = dir.path().join("other");
        std::fs::write(&other, "#!/bin/sh\n").unwrap();
        assert_eq!(is_running_binary(&other), Some(false));
        assert_eq!(is_running_binary(&dir.path().join("missing")), None);
    }
}
