//! Large tool results leave the conversation. A result above [`OFFLOAD_ABOVE_BYTES`] is
//! saved whole to `~/.crew/projects/<slug>/<session>/results/<call-id>.txt` and the model
//! is shown its head, its tail, its size and that path, which `read_file` may always read
//! (with offset and limit). Results above [`SAVE_ABOVE_BYTES`] are saved too (and shown
//! whole), so that micro-compaction (`micro.rs`) can later replace them in requests by a
//! stub naming the file. This replaces plain truncation for every tool, MCP tools
//! included: the executor applies it to whatever a tool returns.

pub use crate::sandbox::results_budget as budget;
pub use crate::sandbox::results_budget::create_new;
mod truncate;
/// Micro-compaction lives with the requests it shapes (`crew_provider::micro`).
pub use crate::provider::micro;
pub use truncate::{truncate, truncate_with};

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Results longer than this many bytes are offloaded: saved whole, shown as a preview.
pub const OFFLOAD_ABOVE_BYTES: usize = 30_000;

/// Results at least this long are saved to a file (and shown whole when they are not
/// offloaded), so micro-compaction can point at the file later (defined beside it).
pub use crate::provider::micro::SAVE_ABOVE_BYTES;

/// Bytes of an offloaded result's head shown to the model.
pub const PREVIEW_HEAD_BYTES: usize = 4_000;

/// Bytes of an offloaded result's tail shown to the model.
pub const PREVIEW_TAIL_BYTES: usize = 2_000;

/// The longest call id kept in a file name; longer (or odd) ids are shortened.
const MAX_ID_CHARS: usize = 64;

/// A session's `results` directory, where offloaded tool results are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsDir {
    dir: PathBuf,
}

impl ResultsDir {
    /// The `results` directory of a session directory.
    pub fn of_session(session_dir: &Path) -> Self {
        Self {
            dir: session_dir.join("results"),
        }
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Creates the directory (owner-only) and returns its canonical path, which the
    /// permission engine lets read tools read below.
    pub fn ensure(&self) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        self.dir.canonicalize()
    }

    /// A path for call `call_id`'s result that does not exist yet: `<id>.txt`, else
    /// `<id>-2.txt`, `<id>-3.txt`… (a resumed session may reuse an id). The id comes from
    /// the model: anything but `[A-Za-z0-9_-]` is replaced, so it can never leave the
    /// directory.
    pub fn fresh_path(&self, call_id: &str) -> PathBuf {
        let stem = file_stem(call_id);
        let mut n = 1u32;
        loop {
            let name = if n == 1 {
                format!("{stem}.txt")
            } else {
                format!("{stem}-{n}.txt")
            };
            let path = self.dir.join(name);
            if !path.exists() || n >= 10_000 {
                return path;
            }
            n += 1;
        }
    }

    /// Creates a new file for call `call_id`'s result (never replacing one).
    pub fn create(&self, call_id: &str) -> std::io::Result<(PathBuf, File)> {
        self.ensure()?;
        for _ in 0..8 {
            let path = self.fresh_path(call_id);
            match create_new(&path) {
                Ok(file) => return Ok((path, file)),
                // Another call took the name between the check and the create.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "no free file name for call `{call_id}` in {}",
                self.dir.display()
            ),
        ))
    }
}

/// A file-name-safe stem for a call id.
fn file_stem(call_id: &str) -> String {
    let clean: String = call_id
        .chars()
        .take(MAX_ID_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "call".to_string()
    } else {
        clean
    }
}

/// What the model is shown for a result: the text itself, or its preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The text for the conversation.
    pub text: String,
    /// Where the whole result is saved, if it is.
    pub saved_to: Option<PathBuf>,
}

/// Applies the offloading rules to a finished tool's text (blocking file I/O: call it
/// off the async threads). Without a results directory, or when saving fails, a long
/// result is cut in the middle as before, and the note says why.
pub fn offload(results: Option<&ResultsDir>, call_id: &str, text: String) -> Shown {
    if text.len() < SAVE_ABOVE_BYTES {
        return Shown {
            text,
            saved_to: None,
        };
    }
    let saved = results.map(|r| save(r, call_id, &text));
    match saved {
        Some(Ok(path)) if text.len() > OFFLOAD_ABOVE_BYTES => Shown {
            text: preview_of(&text, &path),
            saved_to: Some(path),
        },
        Some(Ok(path)) => Shown {
            text,
            saved_to: Some(path),
        },
        Some(Err(e)) if text.len() > OFFLOAD_ABOVE_BYTES => {
            let note = format!("the full result could not be saved ({e})");
            Shown {
                text: truncate_with(&text, OFFLOAD_ABOVE_BYTES, &note),
                saved_to: None,
            }
        }
        _ if text.len() > OFFLOAD_ABOVE_BYTES => Shown {
            text: truncate(&text, OFFLOAD_ABOVE_BYTES),
            saved_to: None,
        },
        _ => Shown {
            text,
            saved_to: None,
        },
    }
}

fn save(results: &ResultsDir, call_id: &str, text: &str) -> std::io::Result<PathBuf> {
    let (path, mut file) = results.create(call_id)?;
    let mut allowance = budget::Allowance::for_file(&path);
    let n = allowance.grant(text.len() as u64) as usize;
    file.write_all(&text.as_bytes()[..n])?;
    if let Some(cut) = allowance.cut() {
        write!(file, "\n[… {} bytes not kept: {cut} …]\n", text.len() - n)?;
    }
    Ok(path)
}

/// The preview of an offloaded text saved at `path`.
fn preview_of(text: &str, path: &Path) -> String {
    let head = &text[..floor_char(text, PREVIEW_HEAD_BYTES)];
    let tail = &text[ceil_char(text, text.len().saturating_sub(PREVIEW_TAIL_BYTES))..];
    let lines = text.lines().count() as u64;
    preview(head, tail, text.len() as u64, lines, path)
}

/// The text shown for an offloaded result: size, path and how to read it, then the head
/// and the tail.
pub fn preview(head: &str, tail: &str, bytes: u64, lines: u64, path: &Path) -> String {
    format!(
        "[result offloaded: {bytes} bytes, {lines} lines, saved in full to {path}; \
read_file that path with offset and limit (in lines) to see any part of it]\n\
--- first {} bytes ---\n{head}\n[… {} bytes not shown …]\n--- last {} bytes ---\n{tail}",
        head.len(),
        bytes.saturating_sub((head.len() + tail.len()) as u64),
        tail.len(),
        path = path.display(),
    )
}

/// The largest char boundary of `s` at or below `i`.
fn floor_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_stay_whole_and_unsaved() {
        let dir = tempfile::tempdir().unwrap();
        let r = ResultsDir::of_session(dir.path());
        let shown = offload(Some(&r), "c1", "short".into());
        assert_eq!(shown.text, "short");
        assert_eq!(shown.saved_to, None);
        assert!(!r.path().exists());
    }

    #[test]
    fn mid_size_results_are_shown_whole_and_saved() {
        let dir = tempfile::tempdir().unwrap();
        let r = ResultsDir::of_session(dir.path());
        let text = "x".repeat(SAVE_ABOVE_BYTES + 10);
        let shown = offload(Some(&r), "c1", text.clone());
        assert_eq!(shown.text, text);
        let path = shown.saved_to.unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }

    #[test]
    fn large_results_become_a_preview_naming_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let r = ResultsDir::of_session(dir.path());
        let text: String = (0..20_000).map(|i| format!("line {i} é\n")).collect();
        let shown = offload(Some(&r), "toolu_01", text.clone());
        let path = shown.saved_to.clone().unwrap();
        assert_eq!(path, r.path().join("toolu_01.txt"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(shown.text.len() < PREVIEW_HEAD_BYTES + PREVIEW_TAIL_BYTES + 500);
        assert!(shown.text.contains(&path.display().to_string()));
        assert!(
            shown
                .text
                .contains(&format!("{} bytes, 20000 lines", text.len()))
        );
        assert!(shown.text.contains("line 0 é\n"));
        assert!(shown.text.contains("line 19999 é"));
        // The same id again (a resumed session) never replaces the first file.
        let again = offload(Some(&r), "toolu_01", text.clone());
        assert_eq!(again.saved_to.unwrap(), r.path().join("toolu_01-2.txt"));
    }

    #[test]
    fn hostile_call_ids_stay_inside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let r = ResultsDir::of_session(dir.path());
        let text = "y".repeat(OFFLOAD_ABOVE_BYTES + 1);
        for id in ["../../escape", "/etc/passwd", "", "a/../../b"] {
            let path = offload(Some(&r), id, text.clone()).saved_to.unwrap();
            assert_eq!(path.parent().unwrap(), r.path(), "{id}");
        }
        assert!(!dir.path().join("escape.txt").exists());
    }

    #[test]
    fn without_a_directory_large_results_are_cut_as_before() {
        let text = "z".repeat(OFFLOAD_ABOVE_BYTES * 2);
        let shown = offload(None, "c", text);
        assert!(shown.saved_to.is_none());
        assert!(shown.text.contains("characters cut"));
    }
}
