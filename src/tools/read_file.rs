//! `read_file`: a text file as numbered lines (`cat -n` style), a window at a time.
//! Binary files are refused rather than dumped; very long lines and very long outputs
//! are cut with a note saying how to see the rest.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::beneath::Beneath;
use super::cached_read;
use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};

/// Lines returned when the call gives no limit.
pub const DEFAULT_LIMIT: usize = 2000;

/// Characters kept of one line; the rest is replaced by a marker.
pub const MAX_LINE_CHARS: usize = 2000;

/// Characters of output after which no further lines are added (below the executor's
/// 30,000-character cut, so the model gets a clean "read on from here" note instead).
pub const MAX_OUTPUT_CHARS: usize = 25_000;

/// Bytes inspected for NUL bytes to recognise binary files.
const BINARY_PROBE_BYTES: usize = 8192;

/// The `read_file` tool.
pub struct ReadFile {
    def: Definition,
}

impl ReadFile {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "read_file".into(),
                description: "Read a UTF-8 text file. Returns numbered lines (cat -n style), 2000 lines by default; use offset and limit for long files. Refuses binary files.".into(),
                input_schema: schema::object(&[("path", json!({"type": "string", "description": "Path of the file, absolute or relative to the working directory."})), ("offset", json!({"type": "integer", "minimum": 1, "description": "1-based line to start at."})), ("limit", json!({"type": "integer", "minimum": 1, "description": "Number of lines to read (default 2000)."}))], &["path"]),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Read, [RuleName::Read], TargetSpec::reads("path"))),
            },
        }
    }
}

impl Default for ReadFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let path: String = required(&input, "path")?;
        let offset = field::<usize>(&input, "offset")?.unwrap_or(1).max(1);
        let limit = field::<usize>(&input, "limit")?
            .unwrap_or(DEFAULT_LIMIT)
            .max(1);
        let resolved = ctx.resolve(&path);
        let beneath = Beneath::reads(&ctx, RuleName::Read);
        // Resolving and opening the path are the lookups the engine's check of the same
        // path already made on this thread; the bytes are read here only when the page
        // cache holds them, and on the blocking pool otherwise.
        let opened = beneath.open(&resolved, &path)?;
        if opened.meta.is_dir() {
            return Err(is_a_directory(&path));
        }
        if let Some(bytes) = cached_read::cached_bytes(&opened.file, opened.meta.len()) {
            return read_from(&bytes[..], &path, offset, limit);
        }
        let file = BufReader::new(opened.file);
        tokio::task::spawn_blocking(move || read_from(file, &path, offset, limit))
            .await
            .map_err(|e| ToolError::Failed(format!("reading was interrupted: {e}")))?
    }
}

/// Reads lines `offset..offset+limit` (1-based) of `resolved`, opened by path (for a
/// private copy, not an agent's path: the tool opens beneath its roots); `shown` names it
/// in messages as the model wrote it.
pub(crate) fn read_window(
    resolved: &Path,
    shown: &str,
    offset: usize,
    limit: usize,
) -> Result<String, ToolError> {
    let meta = std::fs::metadata(resolved).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::Failed(format!(
            "file not found: `{shown}` ({}). Check the path, or use find_files to locate it",
            resolved.display()
        )),
        _ => ToolError::Failed(format!("cannot read `{shown}`: {e}")),
    })?;
    if meta.is_dir() {
        return Err(is_a_directory(shown));
    }
    let file = File::open(resolved)
        .map_err(|e| ToolError::Failed(format!("cannot open `{shown}`: {e}")))?;
    read_from(BufReader::new(file), shown, offset, limit)
}

fn is_a_directory(shown: &str) -> ToolError {
    ToolError::Failed(format!(
        "`{shown}` is a directory, not a file; use find_files to list its contents"
    ))
}

/// Reads lines `offset..offset+limit` (1-based) of the open `reader` (a file behind a
/// buffer, or bytes already read); `shown` names it.
fn read_from(
    mut reader: impl BufRead,
    shown: &str,
    offset: usize,
    limit: usize,
) -> Result<String, ToolError> {
    let probe = reader
        .fill_buf()
        .map_err(|e| ToolError::Failed(format!("cannot read `{shown}`: {e}")))?;
    if probe[..probe.len().min(BINARY_PROBE_BYTES)].contains(&0) {
        return Err(binary(shown, "it contains NUL bytes"));
    }

    // About what the window holds: each line gains its number, a tab at most 7 bytes.
    let mut out = String::with_capacity((probe.len() * 5 / 4).min(MAX_OUTPUT_CHARS + 4096));
    let mut line_no = 0usize;
    let mut last_shown = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| ToolError::Failed(format!("cannot read `{shown}`: {e}")))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if line_no >= offset + limit || out.len() >= MAX_OUTPUT_CHARS {
            // Past the window: only count what remains.
            let rest = count_lines(&mut reader)
                .map_err(|e| ToolError::Failed(format!("cannot read `{shown}`: {e}")))?;
            line_no += rest;
            break;
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| binary(shown, &format!("line {line_no} is not valid UTF-8")))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        push_line(&mut out, line_no, text);
        last_shown = line_no;
    }
    let total = line_no;
    if total == 0 {
        return Ok(format!("(`{shown}` is empty)"));
    }
    if offset > total {
        return Err(ToolError::InvalidInput(format!(
            "argument `offset`: {offset} is past the end of `{shown}`, which has {total} lines"
        )));
    }
    if last_shown < total {
        out.push_str(&format!(
            "… {} more lines; use offset={} to read on\n",
            total - last_shown,
            last_shown + 1
        ));
    }
    Ok(out)
}

/// Appends one numbered line, cutting it at [`MAX_LINE_CHARS`].
fn push_line(out: &mut String, line_no: usize, text: &str) {
    push_number(out, line_no);
    out.push('\t');
    // A line of at most MAX_LINE_CHARS bytes has at most as many characters.
    let cut = if text.len() <= MAX_LINE_CHARS {
        None
    } else {
        text.char_indices().nth(MAX_LINE_CHARS)
    };
    match cut {
        None => out.push_str(text),
        Some((cut, _)) => {
            out.push_str(&text[..cut]);
            let more = text[cut..].chars().count();
            out.push_str(&format!(" … [line cut: {more} more characters]"));
        }
    }
    out.push('\n');
}

/// Appends `n` right-aligned in six columns (`{n:>6}`), without the formatting machinery:
/// a file's every line gets one.
fn push_number(out: &mut String, n: usize) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    out.extend(std::iter::repeat_n(
        ' ',
        6usize.saturating_sub(digits.len()),
    ));
    out.push_str(digits);
}

/// Counts the lines left in `reader`, which starts at the beginning of a line.
fn count_lines(reader: &mut impl Read) -> std::io::Result<usize> {
    let mut count = 0;
    let mut pending = false;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        count += chunk[..n].iter().filter(|&&b| b == b'\n').count();
        pending = chunk[n - 1] != b'\n';
    }
    // A last line without a newline still counts.
    Ok(count + usize::from(pending))
}

fn binary(shown: &str, why: &str) -> ToolError {
    ToolError::Failed(format!(
        "`{shown}` looks like a binary file ({why}); read_file shows text only. \
         Use run_command with a suitable tool (e.g. `file`, `xxd | head`) to inspect it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_are_right_aligned_in_six_columns_as_format_would() {
        for n in [
            0,
            1,
            9,
            10,
            99_999,
            100_000,
            999_999,
            1_000_000,
            123_456_789,
            usize::MAX,
        ] {
            let mut out = String::new();
            push_number(&mut out, n);
            assert_eq!(out, format!("{n:>6}"));
        }
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let mut out = String::new();
        let line = "é".repeat(MAX_LINE_CHARS + 5);
        push_line(&mut out, 7, &line);
        assert!(out.starts_with("     7\t"));
        assert!(out.contains("[line cut: 5 more characters]"));
    }

    #[test]
    fn count_lines_counts_a_final_unterminated_line() {
        assert_eq!(count_lines(&mut &b"a\nb\nc"[..]).unwrap(), 3);
        assert_eq!(count_lines(&mut &b"a\nb\n"[..]).unwrap(), 2);
        assert_eq!(count_lines(&mut &b""[..]).unwrap(), 0);
    }
}
