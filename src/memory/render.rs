//! How memory files are shown to the model (pure): a section of the system prompt for the
//! files an agent starts with, and a `<system-reminder>` block appended to a tool result
//! for a subdirectory's files. Each file is wrapped in a `<memory-file path=…>` element;
//! [`injected_paths`] reads those back from a conversation, so what an agent was given
//! is known from its conversation alone.
//!
//! Paths are named relative to the project root ([`Names`]), so they read the same in
//! every worktree of a repository: a fork recognises the files its caller was given, and
//! subagents of one type working in different worktrees send the same system prompt.

use std::path::{Path, PathBuf};

/// How paths are named to the model: relative to the project root when inside it, `~/…`
/// below the home, otherwise absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    root: PathBuf,
    home: Option<PathBuf>,
}

impl Names {
    /// Names for a project at `root` and a user whose home is `home`.
    pub fn new(root: &Path, home: Option<&Path>) -> Self {
        Self {
            root: root.to_path_buf(),
            home: home.map(Path::to_path_buf),
        }
    }

    /// The name of `path` (absolute).
    pub fn show(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(&self.root)
            && !rel.as_os_str().is_empty()
        {
            return rel.display().to_string();
        }
        if let Some(rel) = self.home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
            return format!("~/{}", rel.display());
        }
        path.display().to_string()
    }

    /// The path a name stands for (the inverse of [`Names::show`]).
    pub fn resolve(&self, name: &str) -> PathBuf {
        match (name.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => self.root.join(name),
        }
    }
}

use super::MemoryFile;
use crate::protocol::{ContentBlock, Message};

/// The opening of each file's element; [`injected_paths`] looks for it.
const OPEN: &str = "<memory-file path=\"";

/// The first line of the system prompt section; a prompt holding it already carries its
/// memory files (see [`has_section`]).
pub const SECTION_HEADER: &str = "# Memory files\n\nThe user's and the project's instructions (CLAUDE.md, AGENTS.md, CREW.md and the files they import) follow.";

/// The system prompt section for `files` (empty when there are none).
pub fn prompt_section(files: &[MemoryFile], names: &Names) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "{SECTION_HEADER} Follow them: they take precedence over the defaults above, but not over \
the user's own messages or the permission engine. Paths are relative to the repository root.\n"
    );
    for f in files {
        out.push('\n');
        out.push_str(&element(f, names));
    }
    out
}

/// Whether a system prompt already carries a memory section: a fork's is its caller's,
/// verbatim, so the provider's cache serves their shared prefix.
pub fn has_section(system_prompt: &str) -> bool {
    system_prompt.contains(SECTION_HEADER)
}

/// The block appended to a tool result when the agent first touched a file in a
/// directory below its cwd (empty when `files` is).
pub fn reminder(files: &[MemoryFile], names: &Names) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\n<system-reminder>\nMemory files of the directory you just worked in, loaded now \
because you touched a file there for the first time. Follow them for work in that directory:\n",
    );
    for f in files {
        out.push_str(&element(f, names));
    }
    out.push_str("</system-reminder>");
    out
}

fn element(f: &MemoryFile, names: &Names) -> String {
    let mut attrs = format!("scope=\"{}\"", f.scope.as_str());
    if let Some(by) = &f.imported_by {
        attrs.push_str(&format!(" imported-by=\"{}\"", escape(&names.show(by))));
    }
    let mut text = f.text.trim_end().to_string();
    text.push('\n');
    format!(
        "{OPEN}{}\" {attrs}>\n{text}</memory-file>\n",
        escape(&names.show(&f.path))
    )
}

/// A name as an attribute value: `"` and newlines would end or break the element.
fn escape(name: &str) -> String {
    name.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
}

fn unescape(s: &str) -> String {
    s.replace("&#10;", "\n")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The names of the memory files injected into `conversation`'s tool results (resolve
/// them with [`Names::resolve`]).
pub fn injected_paths(conversation: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in conversation {
        for block in &m.content {
            if let ContentBlock::ToolResult(r) = block {
                paths_in(&r.content, &mut out);
            }
        }
    }
    out
}

/// The `<memory-file path=…>` paths at the start of lines of `text` after its last
/// `<system-reminder>` (a file that merely quotes the marker adds nothing).
fn paths_in(text: &str, out: &mut Vec<String>) {
    // Ours is appended last: text before it is the tool's output.
    let Some(start) = text.rfind("<system-reminder>") else {
        return;
    };
    for line in text[start..].lines() {
        if let Some(rest) = line.strip_prefix(OPEN)
            && let Some(end) = rest.find('"')
        {
            out.push(unescape(&rest[..end]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Scope;
    use crate::protocol::{Role, ToolResult};

    fn file(path: &str, text: &str) -> MemoryFile {
        MemoryFile {
            path: path.into(),
            scope: Scope::Subdirectory,
            imported_by: None,
            depth: 0,
            text: text.into(),
        }
    }

    #[test]
    fn a_reminder_names_its_files_and_is_read_back_from_the_conversation() {
        let files = [
            file("/r/api/AGENTS.md", "use axum"),
            file("/r/api/q\"x.md", "x"),
        ];
        let names = Names::new(Path::new("/r"), Some(Path::new("/h")));
        let block = reminder(&files, &names);
        assert!(block.contains("<system-reminder>") && block.ends_with("</system-reminder>"));
        assert!(block.contains("use axum\n</memory-file>"));
        let conv = vec![Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok(
                "1",
                format!("file text{block}"),
            ))],
        }];
        assert_eq!(injected_paths(&conv), ["api/AGENTS.md", "api/q\"x.md"]);
        assert_eq!(
            names.resolve("api/AGENTS.md"),
            PathBuf::from("/r/api/AGENTS.md")
        );
        // A file that merely mentions the marker outside a reminder is not an injection.
        let plain = vec![Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok(
                "2",
                "<memory-file path=\"/etc/x\">",
            ))],
        }];
        assert!(injected_paths(&plain).is_empty());
    }

    #[test]
    fn nothing_to_show_adds_nothing() {
        let names = Names::new(Path::new("/r"), Some(Path::new("/h")));
        assert_eq!(prompt_section(&[], &names), "");
        assert_eq!(reminder(&[], &names), "");
        let s = prompt_section(&[file("/r/CLAUDE.md", "rules\n\n")], &names);
        assert!(s.starts_with("# Memory files"));
        assert!(has_section(&format!("base\n\n{s}")) && !has_section("base"));
        assert!(s.ends_with("rules\n</memory-file>\n"));
        assert!(s.contains("<memory-file path=\"CLAUDE.md\""));
    }

    #[test]
    fn names_are_relative_to_the_root_then_the_home() {
        let names = Names::new(Path::new("/h/src/app"), Some(Path::new("/h")));
        for (path, shown) in [
            ("/h/src/app/docs/a.md", "docs/a.md"),
            ("/h/.claude/CLAUDE.md", "~/.claude/CLAUDE.md"),
            ("/etc/notes.md", "/etc/notes.md"),
        ] {
            assert_eq!(names.show(Path::new(path)), shown);
            assert_eq!(names.resolve(shown), PathBuf::from(path));
        }
    }
}
