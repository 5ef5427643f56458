//! How memory files are shown to the model (pure): a section of the system prompt for the
//! files an agent starts with, and a `<system-reminder>` block appended to a tool result
//! for a subdirectory's files. Each file is wrapped in a `<memory-file path=…>` element;
//! [`injected_paths`] reads those back from a conversation, so what an agent was given
//! is known from its conversation alone.

use std::path::{Path, PathBuf};

use super::MemoryFile;
use crate::protocol::{ContentBlock, Message};

/// The opening of each file's element; [`injected_paths`] looks for it.
const OPEN: &str = "<memory-file path=\"";

/// The system prompt section for `files` (empty when there are none).
pub fn prompt_section(files: &[MemoryFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Memory files\n\n\
The user's and the project's instructions (CLAUDE.md, AGENTS.md, CREW.md and the files they \
import) follow. Follow them: they take precedence over the defaults above, but not over the user's \
own messages or the permission engine.\n",
    );
    for f in files {
        out.push('\n');
        out.push_str(&element(f));
    }
    out
}

/// The block appended to a tool result when the agent first touched a file in a
/// directory below its cwd (empty when `files` is).
pub fn reminder(files: &[MemoryFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\n<system-reminder>\nMemory files of the directory you just worked in, loaded now \
because you touched a file there for the first time. Follow them for work in that directory:\n",
    );
    for f in files {
        out.push_str(&element(f));
    }
    out.push_str("</system-reminder>");
    out
}

fn element(f: &MemoryFile) -> String {
    let mut attrs = format!("scope=\"{}\"", f.scope.as_str());
    if let Some(by) = &f.imported_by {
        attrs.push_str(&format!(" imported-by=\"{}\"", escape(by)));
    }
    let mut text = f.text.trim_end().to_string();
    text.push('\n');
    format!(
        "{OPEN}{}\" {attrs}>\n{text}</memory-file>\n",
        escape(&f.path)
    )
}

/// A path as an attribute value: `"` and newlines would end or break the element.
fn escape(path: &Path) -> String {
    path.display()
        .to_string()
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
}

fn unescape(s: &str) -> String {
    s.replace("&#10;", "\n")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The paths of the memory files injected into `conversation`'s tool results.
pub fn injected_paths(conversation: &[Message]) -> Vec<PathBuf> {
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
fn paths_in(text: &str, out: &mut Vec<PathBuf>) {
    // Ours is appended last: text before it is the tool's output.
    let Some(start) = text.rfind("<system-reminder>") else {
        return;
    };
    for line in text[start..].lines() {
        if let Some(rest) = line.strip_prefix(OPEN)
            && let Some(end) = rest.find('"')
        {
            out.push(PathBuf::from(unescape(&rest[..end])));
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
        let block = reminder(&files);
        assert!(block.contains("<system-reminder>") && block.ends_with("</system-reminder>"));
        assert!(block.contains("use axum\n</memory-file>"));
        let conv = vec![Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::ok(
                "1",
                format!("file text{block}"),
            ))],
        }];
        assert_eq!(
            injected_paths(&conv),
            [
                PathBuf::from("/r/api/AGENTS.md"),
                PathBuf::from("/r/api/q\"x.md")
            ]
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
        assert_eq!(prompt_section(&[]), "");
        assert_eq!(reminder(&[]), "");
        let s = prompt_section(&[file("/r/CLAUDE.md", "rules\n\n")]);
        assert!(s.starts_with("# Memory files"));
        assert!(s.ends_with("rules\n</memory-file>\n"));
    }
}
