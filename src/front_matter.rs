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

/// The front matter `yaml` as a mapping, read as leniently as Claude Code reads it: valid
/// YAML as YAML, and otherwise key by key, where a key whose value does not parse (an
/// unquoted value with `: ` inside, `[a] [b]`, continuation lines not indented) takes its
/// text as written, lines joined by spaces and surrounding quotes dropped. Only a head that
/// has no `key:` lines at all is an error.
pub(crate) fn lenient(yaml: &str) -> Result<serde_yaml_ng::Mapping, FrontMatterError> {
    let strict = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml);
    match strict {
        Ok(serde_yaml_ng::Value::Mapping(map)) => return Ok(map),
        Ok(serde_yaml_ng::Value::Null) => return Ok(serde_yaml_ng::Mapping::new()),
        _ => {}
    }
    let mut map = serde_yaml_ng::Mapping::new();
    for (key, chunk) in top_level_keys(yaml) {
        let value = match serde_yaml_ng::from_str::<serde_yaml_ng::Mapping>(&chunk) {
            Ok(parsed) => parsed.into_iter().next().map(|(_, v)| v),
            Err(_) => None,
        };
        let value = value.unwrap_or_else(|| serde_yaml_ng::Value::String(as_written(&chunk, &key)));
        map.insert(serde_yaml_ng::Value::String(key), value);
    }
    if map.is_empty() {
        // Not even `key: value` lines: report what YAML said, or that it is no mapping.
        strict?;
        return Err(<serde_yaml_ng::Error as serde::de::Error>::custom(
            "expected `key: value` lines",
        )
        .into());
    }
    Ok(map)
}

/// The head's top-level entries: each `key:` line at the start of a line with the lines
/// after it up to the next one. Inside a tag such as `<example>` … `</example>` (Claude
/// Code's agent descriptions hold their examples so, with `Context:`, `user:` and
/// `assistant:` lines) a `word:` line continues the value.
fn top_level_keys(yaml: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut open_tags = 0usize;
    for line in yaml.lines() {
        let key = line.split_once(':').map(|(k, _)| k).filter(|k| {
            open_tags == 0
                && !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        });
        open_tags = tags_open_after(open_tags, line);
        match (key, out.last_mut()) {
            (Some(key), _) => out.push((key.to_string(), format!("{line}\n"))),
            (None, Some((_, chunk))) => {
                chunk.push_str(line);
                chunk.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// How many `<tag>`s are open after `line`, `open` before it: each `<name>` opens one and
/// each `</name>` closes one (`name` a word, as in `<example>` or `<commentary>`).
fn tags_open_after(open: usize, line: &str) -> usize {
    let mut open = open;
    let mut rest = line;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let closing = rest.starts_with('/');
        let name = rest.trim_start_matches('/');
        let len = name
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(name.len());
        let is_tag =
            len > 0 && name.as_bytes()[0].is_ascii_alphabetic() && name[len..].starts_with('>');
        if is_tag {
            open = if closing {
                open.saturating_sub(1)
            } else {
                open + 1
            };
        }
    }
    open
}

/// The value of `key`'s entry as plain text: what follows `key:`, continuation lines
/// joined with single spaces, one pair of surrounding quotes dropped.
fn as_written(chunk: &str, key: &str) -> String {
    let rest = chunk.trim_start().strip_prefix(key).unwrap_or(chunk);
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let joined = rest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let unquoted = joined
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| joined.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')));
    unquoted.unwrap_or(&joined).to_string()
}

/// The keys of `map` that are not in `known`, for a warning each.
pub(crate) fn unknown_keys(map: &serde_yaml_ng::Mapping, known: &[&str]) -> Vec<String> {
    map.keys()
        .filter_map(|k| k.as_str())
        .filter(|k| !known.contains(k))
        .map(str::to_string)
        .collect()
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
    fn front_matter_that_is_not_yaml_is_read_key_by_key() {
        // Shapes found in the wild: a colon inside an unquoted value, a value continued
        // on an unindented line, a bracketed hint, tools as a list or a comma string.
        let head = "name: code reviewer\ndescription: Use this agent when: the user asks\nfor a review. Examples: none\nargument-hint: [pr] [priority]\ntools:\n  - Read\n  - Grep\nmodel: sonnet\n";
        assert!(serde_yaml_ng::from_str::<serde_yaml_ng::Value>(head).is_err());
        let map = lenient(head).unwrap();
        let get = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_string);
        assert_eq!(get("name").as_deref(), Some("code reviewer"));
        assert_eq!(
            get("description").as_deref(),
            Some("Use this agent when: the user asks for a review. Examples: none")
        );
        assert_eq!(get("argument-hint").as_deref(), Some("[pr] [priority]"));
        assert_eq!(get("model").as_deref(), Some("sonnet"));
        let tools: Vec<&str> = map["tools"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(tools, ["Read", "Grep"]);
        // Valid YAML is read as YAML; a head with no `key:` at all is still an error.
        let map = lenient("description: \"quoted: fine\"\ntools: Read, Grep\n").unwrap();
        assert_eq!(map["description"].as_str(), Some("quoted: fine"));
        assert_eq!(map["tools"].as_str(), Some("Read, Grep"));
        assert!(lenient("- just\n- a list\n").is_err());
        assert_eq!(unknown_keys(&map, &["description"]), ["tools"]);
    }

    #[test]
    fn lines_inside_example_tags_continue_the_description() {
        // Claude Code's agent descriptions: examples in tags, with `Context:`, `user:` and
        // `assistant:` lines that are not fields.
        let head = "name: hunter\ndescription: Use this agent when errors may be swallowed. Examples:\n\n<example>\nContext: The user added a retry loop.\nuser: \"Check my error handling\"\nassistant: \"I'll use the hunter agent.\"\n<commentary>Catch blocks need review.</commentary>\n</example>\nmodel: inherit\nContext: stray\n";
        let map = lenient(head).unwrap();
        let description = map["description"].as_str().unwrap();
        assert!(
            description.starts_with("Use this agent when errors may be swallowed. Examples: <example> Context: The user added")
                && description.ends_with("</commentary> </example>"),
            "{description}"
        );
        assert_eq!(map["model"].as_str(), Some("inherit"));
        // Outside the tags a `word:` line is a field again (and gets its warning).
        assert_eq!(
            unknown_keys(&map, &["name", "description", "model"]),
            ["Context"]
        );
        assert_eq!(
            tags_open_after(0, "a <b>x</b> <i> a < b <br/> <https://x>"),
            1
        );
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
