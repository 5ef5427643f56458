//! YAML front matter of Markdown files (agent definitions, skills, slash commands): the
//! split into the YAML head and the body, and the tool lists those heads carry
//! (`tools`, `allowed-tools`), mapped from Claude Code's names to ours.

use std::collections::BTreeSet;

use serde::Deserialize;

/// The largest agent, skill or command file read (a cloned repository decides what these
/// files are).
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Why a definition file (agent, skill or command) could not be read or split. The
/// callers add the file's name; the text says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum FrontMatterError {
    /// A directory, FIFO or device where a file was expected.
    #[error("not a regular file")]
    NotAFile,
    /// Reading failed (or the text is not UTF-8).
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// Over [`MAX_FILE_BYTES`].
    #[error("larger than {} KiB; shorten it", MAX_FILE_BYTES / 1024)]
    TooLarge,
    /// No leading `---` line.
    #[error("missing YAML front matter: the file must start with a `---` line")]
    Missing,
    /// No closing `---` line.
    #[error("unterminated front matter: add a closing `---` line")]
    Unterminated,
    /// The head is not the YAML expected.
    #[error("front matter: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// Reads a definition file: a regular file (through symbolic links; not a FIFO or a
/// device) of at most [`MAX_FILE_BYTES`] of UTF-8.
pub(crate) fn read(path: &std::path::Path) -> Result<String, FrontMatterError> {
    use std::io::Read;
    if !path.is_file() {
        return Err(FrontMatterError::NotAFile);
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(FrontMatterError::Read)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(FrontMatterError::TooLarge);
    }
    Ok(text)
}

/// Splits `---\n<yaml>\n---\n<body>` into the YAML and the trimmed body. The error says
/// what is wrong and what to do.
pub(crate) fn split(text: &str) -> Result<(&str, &str), FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---").ok_or(FrontMatterError::Missing)?;
    let end = rest.find("\n---").ok_or(FrontMatterError::Unterminated)?;
    let yaml = &rest[..end];
    let body = rest[end + 4..].trim_start_matches(['-']).trim();
    Ok((yaml, body))
}

/// Splits optional front matter: a file without a leading `---` is all body (Claude Code's
/// slash commands need no front matter).
pub(crate) fn split_optional(text: &str) -> Result<(Option<&str>, &str), FrontMatterError> {
    let trimmed = text.strip_prefix('\u{feff}').unwrap_or(text);
    if trimmed.starts_with("---") {
        split(trimmed).map(|(yaml, body)| (Some(yaml), body))
    } else {
        Ok((None, trimmed.trim()))
    }
}

/// The value of a one-line `key:` in `yaml` as written (quotes dropped), and the YAML
/// without that line.
pub(crate) fn take_raw(yaml: &str, key: &str) -> (Option<String>, String) {
    let mut value = None;
    let mut rest = String::with_capacity(yaml.len());
    for line in yaml.lines() {
        match line.strip_prefix(key).and_then(|l| l.strip_prefix(':')) {
            Some(v) if value.is_none() => {
                let v = v.trim();
                let v = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                    .unwrap_or(v);
                value = Some(v.to_string()).filter(|v| !v.is_empty());
            }
            _ => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    (value, rest)
}

/// A tool list as written: `Read, Grep`, `Read Grep`, `Bash(git add:*), Read` or a YAML
/// list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum ToolList {
    /// One string, comma or space separated.
    Text(String),
    /// A YAML list.
    List(Vec<String>),
}

impl ToolList {
    /// The registry names of the listed tools. Claude Code's names (`Read`, `Grep`,
    /// `Task`) map to ours through `tool_name`, the tool catalog's mapping, handed in so
    /// that this module never imports the catalog (`ToolList::names`,
    /// `crate::tools::rule_names`, passes the built-in tools' one); a `Bash(git:*)`
    /// pattern narrows to its tool (`run_command`) — the gate filters by name only, the
    /// permission engine judges the command. Names that are no tool stay as written
    /// (they allow nothing).
    pub(crate) fn names_with(&self, tool_name: &dyn Fn(&str) -> &str) -> BTreeSet<String> {
        let items: Vec<String> = match self {
            ToolList::Text(s) => items(s),
            ToolList::List(v) => v.iter().flat_map(|s| items(s)).collect(),
        };
        items
            .iter()
            .map(|item| {
                let bare = item.split('(').next().unwrap_or(item).trim();
                tool_name(bare).to_string()
            })
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// Splits on commas and white space outside parentheses (`Bash(git add:*)` is one item).
fn items(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for ch in s.chars() {
        match ch {
            '(' => {
                depth += 1;
                cur.push(ch);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(ch);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
            }
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: ToolList) -> Vec<String> {
        list.names().into_iter().collect()
    }

    #[test]
    fn lists_map_claude_code_names_and_patterns() {
        let list = ToolList::Text("Read, Grep Bash(git add:*), Bash(git status:*)".into());
        assert_eq!(names(list), ["read_file", "run_command", "search_code"]);
        let list = ToolList::List(vec!["read_file".into(), "Glob".into(), " ".into()]);
        assert_eq!(names(list), ["find_files", "read_file"]);
        let list = ToolList::Text("Skill, mcp__gh__issues, Nope".into());
        assert_eq!(names(list), ["Nope", "mcp__gh__issues", "skill"]);
    }

    #[test]
    fn reads_only_small_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.md");
        std::fs::write(&big, "x".repeat(MAX_FILE_BYTES as usize + 1)).unwrap();
        assert!(read(&big).unwrap_err().to_string().contains("KiB"));
        assert!(
            read(dir.path())
                .unwrap_err()
                .to_string()
                .contains("regular")
        );
        assert!(read(std::path::Path::new("/dev/zero")).is_err());
        std::fs::write(&big, "ok").unwrap();
        assert_eq!(read(&big).unwrap(), "ok");
    }

    #[test]
    fn splits_front_matter_and_body() {
        assert_eq!(
            split("---\na: 1\n---\n\nBody\n").ok(),
            Some(("\na: 1", "Body"))
        );
        assert!(split("Body").unwrap_err().to_string().contains("---"));
        assert!(
            split("---\na: 1\n")
                .unwrap_err()
                .to_string()
                .contains("closing")
        );
        assert_eq!(
            split_optional("Just text\n").ok(),
            Some((None, "Just text"))
        );
        assert_eq!(
            split_optional("---\ndescription: d\n---\nX").ok(),
            Some((Some("\ndescription: d"), "X"))
        );
    }
}
