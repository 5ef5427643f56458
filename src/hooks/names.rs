//! Tool names and arguments as hooks see them. Hook scripts written for Claude Code test
//! `tool_name == "Bash"` and read `tool_input.file_path`; ours are `run_command` and
//! `path`. A tool's names for matching are its own, its aliases (`Task` for `agent`) and
//! its own settings rule name (`Bash`, `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Agent`),
//! all read from the tool's definition; `tool_name` sent to a hook is the Claude Code
//! name where one exists. File tools' inputs carry `file_path` beside `path` — as in
//! Claude Code an absolute path, resolved against the calling agent's directory — and an
//! `updatedInput` may use either.

use std::path::Path;

use serde_json::Value;

/// Every name a matcher may use for the tool called `name` (ours first).
pub(crate) fn tool_names(name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    if let Some(def) = crate::tools::builtin_definition(name) {
        if def.name != name {
            out.push(def.name.clone());
        }
        out.extend(def.aliases.iter().cloned());
        if let Some(rule) = def
            .permission
            .as_ref()
            .and_then(crate::permission::PermissionSpec::own_rule_name)
        {
            out.push(rule.as_str().to_string());
        }
        if def.name == "edit_file" {
            out.push("MultiEdit".into());
        }
    }
    out.dedup();
    out
}

/// The name sent as `tool_name`: Claude Code's (its settings rule name, else its first
/// alias), or ours when it has none (MCP tools are named alike).
pub(crate) fn claude_name(name: &str) -> String {
    let Some(def) = crate::tools::builtin_definition(name) else {
        return name.to_string();
    };
    def.permission
        .as_ref()
        .and_then(crate::permission::PermissionSpec::own_rule_name)
        .map(|r| r.as_str().to_string())
        .or_else(|| def.aliases.first().cloned())
        .unwrap_or_else(|| def.name.clone())
}

/// Whether the tool's `path` argument is what Claude Code calls `file_path`.
fn takes_file_path(name: &str) -> bool {
    matches!(name, "read_file" | "write_file" | "edit_file")
}

/// A file tool's `path` as Claude Code's `file_path`: absolute, the relative path joined
/// onto the agent's directory (as the tool itself resolves it) and `.`/`..` dropped by
/// name, without touching the disk. `None` when the path is not a string.
fn file_path(path: &Value, cwd: &Path) -> Option<Value> {
    let raw = path.as_str()?;
    let p = Path::new(raw);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let abs = crate::permission::sandbox::lexical(&abs);
    Some(Value::String(abs.to_string_lossy().into_owned()))
}

/// The arguments as sent in `tool_input`: ours, plus for file tools Claude Code's
/// absolute `file_path` (resolved against `cwd`, the calling agent's directory).
pub(crate) fn hook_input(name: &str, arguments: &Value, cwd: &Path) -> Value {
    let mut v = arguments.clone();
    if takes_file_path(name)
        && let Some(obj) = v.as_object_mut()
        && let Some(path) = obj.get("path").and_then(|p| file_path(p, cwd))
    {
        obj.entry("file_path").or_insert(path);
    }
    v
}

/// An `updatedInput` turned back into our arguments: a file tool's `file_path` becomes
/// `path`. A hook may have changed either (it was shown both): the one that differs from
/// what it was shown wins, `file_path` when both do. A `file_path` the hook left as shown
/// (absolute) keeps the model's `path` as it was.
pub(crate) fn from_hook_input(name: &str, original: &Value, updated: Value, cwd: &Path) -> Value {
    let mut v = updated;
    if takes_file_path(name)
        && let Some(obj) = v.as_object_mut()
        && let Some(fp) = obj.remove("file_path")
    {
        let before = original.get("path");
        let shown = before.and_then(|p| file_path(p, cwd));
        let fp_changed = shown.as_ref() != Some(&fp) && before != Some(&fp);
        let path_changed = obj.get("path").is_some_and(|p| Some(p) != before);
        if fp_changed || !path_changed {
            let keep = if fp_changed {
                fp
            } else {
                before.cloned().unwrap_or(fp)
            };
            obj.insert("path".into(), keep);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_code_names_come_from_the_definitions() {
        assert_eq!(claude_name("run_command"), "Bash");
        assert_eq!(claude_name("write_file"), "Write");
        assert_eq!(claude_name("agent"), "Agent");
        assert_eq!(claude_name("mcp__gh__x"), "mcp__gh__x");
        let agent = tool_names("agent");
        assert!(agent.contains(&"Task".to_string()) && agent.contains(&"Agent".to_string()));
        assert!(tool_names("find_files").contains(&"Glob".to_string()));
        assert!(tool_names("search_code").contains(&"Grep".to_string()));
        assert!(tool_names("edit_file").contains(&"Edit".to_string()));
    }

    #[test]
    fn file_path_is_absolute_against_the_agents_directory() {
        let cwd = Path::new("/work/proj/sub");
        let args = json!({"path": "a.txt", "content": "x"});
        let shown = hook_input("write_file", &args, cwd);
        assert_eq!(shown["file_path"], "/work/proj/sub/a.txt");
        // Ours stays as the model wrote it.
        assert_eq!(shown["path"], "a.txt");
        let up = hook_input("read_file", &json!({"path": "../b/./c.rs"}), cwd);
        assert_eq!(up["file_path"], "/work/proj/b/c.rs");
        let abs = hook_input("edit_file", &json!({"path": "/etc/hosts"}), cwd);
        assert_eq!(abs["file_path"], "/etc/hosts");
        let cmd = hook_input("run_command", &json!({"command": "ls"}), cwd);
        assert_eq!(cmd, json!({"command": "ls"}));
    }

    #[test]
    fn file_path_both_ways() {
        let cwd = Path::new("/p");
        let original = json!({"path": "a.txt", "content": "x"});
        // A hook that echoes what it was shown changes nothing.
        let echoed = hook_input("write_file", &original, cwd);
        let back = from_hook_input("write_file", &original, echoed, cwd);
        assert_eq!(back, original);
        let back = from_hook_input(
            "write_file",
            &original,
            json!({"file_path": "/tmp/b", "path": "a.txt", "content": "x"}),
            cwd,
        );
        assert_eq!(back, json!({"path": "/tmp/b", "content": "x"}));
        // Only `path` changed: it is kept.
        let back = from_hook_input(
            "write_file",
            &original,
            json!({"file_path": "/p/a.txt", "path": "/tmp/c", "content": "x"}),
            cwd,
        );
        assert_eq!(back["path"], "/tmp/c");
        // A hook that wrote only a (relative) `file_path` of its own.
        let back = from_hook_input(
            "write_file",
            &original,
            json!({"file_path": "final.txt", "content": "x"}),
            cwd,
        );
        assert_eq!(back, json!({"path": "final.txt", "content": "x"}));
    }
}
