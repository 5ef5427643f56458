//! `edit_file`: replaces an exact string in a file. The string must occur exactly once
//! (or `replace_all` is set), so an edit never lands somewhere the model did not look;
//! the file is rewritten atomically.

use async_trait::async_trait;
use serde_json::{Value, json};

use std::io::Read;

use super::beneath::{Beneath, Missing};
use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};

/// The `edit_file` tool.
pub struct EditFile {
    def: Definition,
}

impl EditFile {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "edit_file".into(),
                description: "Replace an exact string in a file. old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is true.".into(),
                input_schema: schema::object(&[("path", json!({"type": "string", "description": "Path of the file to edit."})), ("old_string", json!({"type": "string", "description": "Exact text to replace; must occur exactly once unless replace_all."})), ("new_string", json!({"type": "string", "description": "Replacement text."})), ("replace_all", json!({"type": "boolean", "description": "Replace every occurrence."}))], &["path", "old_string", "new_string"]),
                safety: Safety::SideEffect,
                system: false,
                timeout: None,
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Write, [RuleName::Edit], TargetSpec::writes("path"))),
            },
        }
    }
}

impl Default for EditFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for EditFile {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let path: String = required(&input, "path")?;
        let old: String = required(&input, "old_string")?;
        let new: String = required(&input, "new_string")?;
        let replace = Replace::all_if(field::<bool>(&input, "replace_all")?.unwrap_or(false));
        if old.is_empty() {
            return Err(ToolError::InvalidInput(
                "argument `old_string` is empty; give the exact text to replace \
                 (use write_file to create a file)"
                    .into(),
            ));
        }
        if old == new {
            return Err(ToolError::InvalidInput(
                "arguments `old_string` and `new_string` are identical; nothing would change"
                    .into(),
            ));
        }
        let resolved = ctx.resolve(&path);
        let beneath = Beneath::writes(&ctx);
        tokio::task::spawn_blocking(move || {
            // The directory is opened beneath the roots first, then the file inside it:
            // what is read is what gets replaced, and a path that cannot be written is
            // refused before its content is looked at.
            let parent = beneath
                .parent(&resolved, &path, Missing::Fail)
                .map_err(not_found)?;
            let opened = beneath.open_in(&parent, &path).map_err(not_found)?;
            if opened.meta.is_dir() {
                return Err(ToolError::Failed(format!(
                    "`{path}` is a directory, not a file"
                )));
            }
            let mut content = Vec::new();
            (&opened.file)
                .read_to_end(&mut content)
                .map_err(|e| ToolError::Failed(format!("cannot read `{path}`: {e}")))?;
            let content = String::from_utf8(content).map_err(|_| {
                ToolError::Failed(format!(
                    "`{path}` is not valid UTF-8 text; edit_file only edits text files"
                ))
            })?;
            let edited = apply_edit(&content, &old, &new, replace)
                .map_err(|e| ToolError::Failed(format!("`{path}`: {e}")))?;
            parent.write_atomic(edited.text.as_bytes(), &path)?;
            Ok(format!(
                "edited `{path}`: replaced {} occurrence{} at line{} {}",
                edited.lines.len(),
                if edited.lines.len() == 1 { "" } else { "s" },
                if edited.lines.len() == 1 { "" } else { "s" },
                join_lines(&edited.lines)
            ))
        })
        .await
        .map_err(|e| ToolError::Failed(format!("editing was interrupted: {e}")))?
    }
}

/// The "not found" answer for edits, pointing at write_file.
fn not_found(e: ToolError) -> ToolError {
    match e {
        ToolError::Failed(m) if m.starts_with("file not found: ") => ToolError::Failed(
            m.replace("use find_files to locate it", "use write_file to create it"),
        ),
        other => other,
    }
}

/// The result of a successful edit.
#[derive(Debug, PartialEq, Eq)]
pub struct Edited {
    /// The new file content.
    pub text: String,
    /// 1-based lines (in the old content) where replacements started.
    pub lines: Vec<usize>,
}

/// Why an edit could not be applied.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// `old_string` does not occur.
    #[error(
        "old_string was not found. It must match the file exactly, including whitespace, \
         indentation and line endings; read the file again and copy the text"
    )]
    NotFound,
    /// `old_string` occurs more than once and `replace_all` is off.
    #[error(
        "old_string occurs {count} times (at lines {}); include more surrounding lines to \
         make it unique, or set replace_all to true",
        join_lines(lines)
    )]
    Ambiguous {
        /// How many times it occurs.
        count: usize,
        /// Where (1-based lines).
        lines: Vec<usize>,
    },
}

/// Which occurrences of `old_string` an edit replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Exactly one: more than one is refused as ambiguous.
    One,
    /// Every one (`replace_all`).
    All,
}

impl Replace {
    /// [`Replace::All`] when the call sets `replace_all`.
    pub fn all_if(replace_all: bool) -> Self {
        if replace_all {
            Replace::All
        } else {
            Replace::One
        }
    }
}

/// Replaces `old` with `new` in `content`: exactly one occurrence, or all of them with
/// [`Replace::All`]. Pure, so the matching rules are tested without files.
pub fn apply_edit(
    content: &str,
    old: &str,
    new: &str,
    replace: Replace,
) -> Result<Edited, EditError> {
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    let lines = line_numbers(content, &starts);
    match starts.len() {
        0 => Err(EditError::NotFound),
        1 => Ok(Edited {
            text: content.replacen(old, new, 1),
            lines,
        }),
        count if replace == Replace::One => Err(EditError::Ambiguous { count, lines }),
        _ => Ok(Edited {
            text: content.replace(old, new),
            lines,
        }),
    }
}

/// The 1-based line of each byte offset (offsets ascending).
fn line_numbers(content: &str, offsets: &[usize]) -> Vec<usize> {
    let bytes = content.as_bytes();
    let mut line = 1;
    let mut pos = 0;
    offsets
        .iter()
        .map(|&o| {
            line += bytes[pos..o].iter().filter(|&&b| b == b'\n').count();
            pos = o;
            line
        })
        .collect()
}

pub(crate) fn join_lines(lines: &[usize]) -> String {
    const SHOWN: usize = 20;
    let mut s: Vec<String> = lines.iter().take(SHOWN).map(|l| l.to_string()).collect();
    if lines.len() > SHOWN {
        s.push(format!("… {} more", lines.len() - SHOWN));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_match_is_replaced() {
        let e = apply_edit("a\nfoo\nb\n", "foo", "bar", Replace::One).unwrap();
        assert_eq!(e.text, "a\nbar\nb\n");
        assert_eq!(e.lines, vec![2]);
    }

    #[test]
    fn several_matches_are_refused_with_their_lines() {
        let err = apply_edit("x\nfoo\ny\nfoo\n", "foo", "bar", Replace::One).unwrap_err();
        assert_eq!(
            err,
            EditError::Ambiguous {
                count: 2,
                lines: vec![2, 4]
            }
        );
        assert!(err.to_string().contains("2 times (at lines 2, 4)"));
    }

    #[test]
    fn replace_all_replaces_every_match() {
        let e = apply_edit("foo foo\nfoo", "foo", "b", Replace::All).unwrap();
        assert_eq!(e.text, "b b\nb");
        assert_eq!(e.lines, vec![1, 1, 2]);
    }

    #[test]
    fn a_missing_string_hints_at_whitespace() {
        let err = apply_edit("    indented", "  indented\t", "x", Replace::One).unwrap_err();
        assert_eq!(err, EditError::NotFound);
        assert!(err.to_string().contains("whitespace"));
    }
}
