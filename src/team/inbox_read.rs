//! Reading inbox files: the line scanner (complete lines only; a torn last line is left
//! alone), the cursor check, `stat` stamps that tell a changed file, and atomic JSON writes.

use std::fs::{File, Metadata};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use serde::Serialize;

use super::error::{Result, TeamError, io_at};
use super::inbox::Envelope;
use super::inbox_file::Cursor;

/// A file's identity and version as `stat(2)` shows it: a file rewritten through a rename
/// gets a new inode, one changed in place a new length or time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    ino: u64,
    len: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Stamp {
    pub(crate) fn of(meta: &Metadata) -> Self {
        Self {
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
        }
    }
}

/// The complete messages found after some offset, each with the offset just past it.
pub(crate) struct Scan {
    /// Each message with the offset just past its line.
    pub(crate) messages: Vec<(Envelope, u64)>,
    /// Just past the last complete line; bytes beyond it are a torn append.
    pub(crate) end: u64,
}

pub(crate) fn check_cursor(path: &Path, cursor: Cursor, len: u64) -> Result<()> {
    if cursor.offset > len {
        return Err(TeamError::CorruptLine {
            path: path.to_path_buf(),
            line: cursor.delivered + 1,
            reason: format!(
                "the cursor says {} bytes were delivered but the file has {len}; the inbox was cut, restore it or delete its .cursor",
                cursor.offset
            ),
        });
    }
    Ok(())
}

/// Reads the complete lines in `offset..len`, the first of which must be message `index`.
pub(crate) fn scan(path: &Path, file: &File, offset: u64, index: u64, len: u64) -> Result<Scan> {
    check_cursor(
        path,
        Cursor {
            delivered: index,
            offset,
        },
        len,
    )?;
    let mut bytes = vec![0; (len - offset) as usize];
    file.read_exact_at(&mut bytes, offset)
        .map_err(io_at(path))?;
    let mut messages = Vec::new();
    let mut end = offset;
    let mut rest = bytes.as_slice();
    while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
        let expected = index + messages.len() as u64;
        let bad = |reason: String| TeamError::CorruptLine {
            path: path.to_path_buf(),
            line: expected + 1,
            reason,
        };
        let envelope: Envelope = serde_json::from_slice(&rest[..newline])
            .map_err(|e| bad(format!("not a message ({e})")))?;
        if envelope.index != expected {
            return Err(bad(format!(
                "holds message {} where {expected} belongs",
                envelope.index
            )));
        }
        end += newline as u64 + 1;
        messages.push((envelope, end));
        rest = &rest[newline + 1..];
    }
    Ok(Scan { messages, end })
}

/// Writes `value` as JSON, atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec(value).map_err(|source| TeamError::Corrupt {
        path: path.to_path_buf(),
        source,
    })?;
    crate::store::write_atomic(path, &bytes).map_err(io_at(path))
}
