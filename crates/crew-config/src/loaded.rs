//! The one list of what crew loads from a project as code or policy (issue 26): the
//! project's `.mcp.json`; in `.crew/` and `.claude/` the `settings*.json` files and the
//! `agents/`, `skills/`, `commands/`, `hooks/`, `plugins/` and `output-styles/`
//! directories; and every file inside the project that a configured hook, MCP server or
//! status-line command runs (the words of its command line that name a file in the
//! project: `sh .claude/hooks/post.sh`, `node scripts/mcp.js`, `./lint.sh`).
//!
//! Agents never write these without a human (the file tools and command write targets ask,
//! and nobody answering means no), confined commands see them through read-only binds
//! (`sandbox::protect` takes its list from [`sandbox_paths`]), and the trust pin
//! (`crewmaster::trust`) digests them. Everything else in those folders — `.crew/demo-report.md`,
//! memory files such as `CLAUDE.md`, `.claude/CLAUDE.md`, `AGENTS.md` — stays an ordinary
//! project file.

use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The settings directories of a project (ours, then Claude Code's).
pub const SETTINGS_DIRS: [&str; 2] = [".crew", ".claude"];

/// The directories inside a settings directory whose files crew loads as code or policy.
pub const CODE_DIRS: [&str; 6] = [
    "agents",
    "skills",
    "commands",
    "hooks",
    "plugins",
    "output-styles",
];

/// The project's MCP server list.
pub const MCP_FILE: &str = ".mcp.json";

/// The settings files crew reads from a settings directory.
pub const SETTINGS_FILES: [&str; 2] = ["settings.json", "settings.local.json"];

/// The settings files of `root` that may configure hooks, MCP servers or a status line.
pub fn config_files(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SETTINGS_DIRS
        .iter()
        .flat_map(|d| SETTINGS_FILES.iter().map(move |f| root.join(d).join(f)))
        .collect();
    out.push(root.join(MCP_FILE));
    out
}

/// What `path` (lexical or real) is when crew loads it as code or policy by its name
/// alone, wherever it is (a worktree's copy included): `.mcp.json`, a settings file, or
/// something in one of the [`CODE_DIRS`] of `.crew`/`.claude` (or that directory itself).
pub fn by_name(path: &Path) -> Option<&'static str> {
    let comps: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    if comps.last() == Some(&MCP_FILE) {
        return Some("the project's MCP server list (.mcp.json), whose servers crew starts");
    }
    for (i, c) in comps.iter().enumerate() {
        if !SETTINGS_DIRS.contains(c) {
            continue;
        }
        match comps.get(i + 1) {
            Some(name) if CODE_DIRS.contains(name) => {
                return Some(
                    "in a folder of agent definitions, skills, commands, hooks, plugins or output styles, which crew loads as code or instructions",
                );
            }
            Some(name)
                if i + 2 == comps.len()
                    && name.starts_with("settings")
                    && name.ends_with(".json") =>
            {
                return Some("a settings file");
            }
            _ => {}
        }
    }
    None
}

/// The protected paths below one root that a confined command must not change, existing
/// or not: `.mcp.json`, each settings directory's settings files (the existing
/// `settings*.json` too) and its [`CODE_DIRS`], and [`run_files`]. The settings
/// directories themselves are not in the list: their other files stay writable.
pub fn sandbox_paths(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join(MCP_FILE)];
    for dir in SETTINGS_DIRS {
        let d = root.join(dir);
        for f in SETTINGS_FILES {
            out.push(d.join(f));
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.starts_with("settings") && name.ends_with(".json") {
                    out.push(e.path());
                }
            }
        }
        for c in CODE_DIRS {
            out.push(d.join(c));
        }
    }
    out.extend(run_files(root));
    out.sort();
    out.dedup();
    out
}

/// The files inside `root` that a configured hook, MCP server or status-line command of
/// `root`'s own settings (every settings file, shared or local) and `.mcp.json` runs:
/// each word of the command line (and of an MCP server's `args`) that, taken relative to
/// `root` (or after `$CLAUDE_PROJECT_DIR/`), names an existing file inside `root`.
/// Canonical paths, sorted. Files that a command such as `npm run lint` or `make fmt`
/// reaches indirectly cannot be listed; project hooks run sandboxed for that reason.
pub fn run_files(root: &Path) -> Vec<PathBuf> {
    match std::fs::canonicalize(root) {
        Ok(real_root) => run_files_real(&real_root),
        Err(_) => Vec::new(),
    }
}

/// [`run_files`] of a root that is already its own real location (canonical), as the
/// permission engine's cached roots are: no `canonicalize` of the root on each call.
pub fn run_files_real(real_root: &Path) -> Vec<PathBuf> {
    let mut out = BTreeSet::new();
    for file in config_files(real_root) {
        for word in config_words(&file).iter() {
            if let Some(p) = project_file(real_root, word) {
                out.insert(p);
            }
        }
    }
    out.into_iter().collect()
}

/// What identifies one version of a file: device, inode, length, modification and change
/// times (nanoseconds). A rewrite changes at least the change time.
type Version = (u64, u64, u64, i64, i64, i64, i64);

/// Each settings file's version and the words of its command lines.
type WordCache = HashMap<PathBuf, (Version, Arc<Vec<String>>)>;

/// How many settings files' words are remembered.
const MAX_CACHED: usize = 256;

/// The words of every command line in one settings or `.mcp.json` file, parsed once per
/// version of the file (every write decision asks; the file rarely changes). Empty when
/// the file is missing or not JSON.
fn config_words(file: &Path) -> Arc<Vec<String>> {
    static CACHE: Mutex<Option<WordCache>> = Mutex::new(None);
    let Ok(meta) = std::fs::metadata(file) else {
        return Arc::default();
    };
    let version = (
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    );
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some((seen, words)) = cache.get(file)
        && *seen == version
    {
        return words.clone();
    }
    let parsed: Vec<String> = std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|value| {
            command_lines(&value)
                .iter()
                .flat_map(|l| words(l))
                .collect()
        })
        .unwrap_or_default();
    let parsed = Arc::new(parsed);
    if cache.len() >= MAX_CACHED {
        cache.clear();
    }
    cache.insert(file.to_path_buf(), (version, parsed.clone()));
    parsed
}

/// The command lines in one settings or `.mcp.json` value: every hook's `command`, the
/// status line's `command`, and each MCP server's `command` followed by its `args`.
pub fn command_lines(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(events) = value.get("hooks").and_then(Value::as_object) {
        for groups in events.values() {
            for group in groups.as_array().into_iter().flatten() {
                for h in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(c) = h.get("command").and_then(Value::as_str) {
                        out.push(c.to_string());
                    }
                }
            }
        }
    }
    if let Some(c) = value
        .get("statusLine")
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str)
    {
        out.push(c.to_string());
    }
    if let Some(servers) = value.get("mcpServers").and_then(Value::as_object) {
        for s in servers.values() {
            let mut line: Vec<String> = Vec::new();
            if let Some(c) = s.get("command").and_then(Value::as_str) {
                line.push(c.to_string());
            }
            for a in s
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(a) = a.as_str() {
                    // Arguments are words already; quote them so spaces stay inside.
                    line.push(format!("'{}'", a.replace('\'', "")));
                }
            }
            if !line.is_empty() {
                out.push(line.join(" "));
            }
        }
    }
    out
}

/// The words of a command line, roughly as the shell splits them: whitespace and the
/// operators `; | & < > ( ) \``, with quotes removed. `--opt=value` also yields `value`.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    // The word after a redirect is a file read or written, not run (`>> hook.log`).
    let mut redirect = false;
    let end = |cur: &mut String, redirect: &mut bool, out: &mut Vec<String>| {
        if !cur.is_empty() {
            let w = std::mem::take(cur);
            if !std::mem::take(redirect) {
                out.push(w);
            }
        }
    };
    for ch in line.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => cur.push(ch),
            None if ch == '\'' || ch == '"' => quote = Some(ch),
            None if ch == '<' || ch == '>' => {
                end(&mut cur, &mut redirect, &mut out);
                redirect = true;
            }
            None if ch.is_whitespace() || ";|&()`".contains(ch) => {
                end(&mut cur, &mut redirect, &mut out);
            }
            None => cur.push(ch),
        }
    }
    end(&mut cur, &mut redirect, &mut out);
    let extra: Vec<String> = out
        .iter()
        .filter_map(|w| w.split_once('=').map(|(_, v)| v.to_string()))
        .filter(|v| !v.is_empty())
        .collect();
    out.extend(extra);
    out
}

/// The canonical file inside `real_root` that `word` names, if any.
fn project_file(real_root: &Path, word: &str) -> Option<PathBuf> {
    let mut w = word;
    for var in [
        "$CLAUDE_PROJECT_DIR",
        "${CLAUDE_PROJECT_DIR}",
        "$CREW_PROJECT_DIR",
        "${CREW_PROJECT_DIR}",
    ] {
        if let Some(rest) = w.strip_prefix(var) {
            w = rest.trim_start_matches('/');
            if w.is_empty() {
                return None;
            }
            break;
        }
    }
    if w.is_empty() || w.starts_with('-') || w.starts_with('$') || w.starts_with('~') {
        return None;
    }
    let real = std::fs::canonicalize(real_root.join(w)).ok()?;
    (real.starts_with(real_root) && real.is_file()).then_some(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_crew_loads_and_leaves_memory_and_reports_alone() {
        for p in [
            "/p/.mcp.json",
            "/p/.crew/agents/general-purpose.md",
            "/p/.claude/agents/x.md",
            "/p/.claude/skills/s/SKILL.md",
            "/p/.crew/commands/c.md",
            "/p/.claude/hooks/post.sh",
            "/p/.claude/plugins/p/x.js",
            "/p/.crew/output-styles/o.md",
            "/p/.crew/hooks",
            "/p/.claude/settings.json",
            "/p/.crew/settings.local.json",
            "/home/u/.crew/worktrees/s/a/.claude/hooks/post.sh",
            ".claude/hooks/post.sh",
        ] {
            assert!(by_name(Path::new(p)).is_some(), "{p}");
        }
        for p in [
            "/p/.crew/demo-report.md",
            "/p/CLAUDE.md",
            "/p/.claude/CLAUDE.md",
            "/p/AGENTS.md",
            "/p/src/agents/x.rs",
            "/p/.crew/notes/settings.json",
            "/p/mcp.json",
        ] {
            assert_eq!(by_name(Path::new(p)), None, "{p}");
        }
    }

    #[test]
    fn run_files_are_the_project_files_a_command_line_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for f in [
            "lint.sh",
            "scripts/mcp.js",
            ".claude/hooks/post.sh",
            "tool.py",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"hooks":{"PostToolUse":[{"matcher":"*","hooks":[
                {"type":"command","command":"sh .claude/hooks/post.sh >> tool.py 2>&1 < lint.sh"},
                {"type":"command","command":"cd \"$CLAUDE_PROJECT_DIR\" && ./lint.sh --fix; npm run lint"}]}]},
               "statusLine":{"command":"python3 ${CLAUDE_PROJECT_DIR}/tool.py"}}"#,
        )
        .unwrap();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers":{"s":{"command":"node","args":["scripts/mcp.js","/etc/passwd"]}}}"#,
        )
        .unwrap();
        let got = run_files(&root);
        let want: Vec<PathBuf> = [
            ".claude/hooks/post.sh",
            "lint.sh",
            "scripts/mcp.js",
            "tool.py",
        ]
        .iter()
        .map(|f| root.join(f))
        .collect();
        let mut want = want;
        want.sort();
        assert_eq!(got, want);
        let all = sandbox_paths(&root);
        assert!(all.contains(&root.join(".mcp.json")));
        assert!(all.contains(&root.join(".crew/agents")));
        assert!(all.contains(&root.join("lint.sh")));
        assert!(!all.contains(&root.join(".crew")));
    }
}
