//! A capped capture of a process's output stream: keeps the head and the tail (where
//! build errors and summaries usually are) and counts what was cut in between. With a
//! spill file, a stream that outgrows the cap is also written whole to that file as it
//! is read (`offload`), so a command printing 20 MB never holds it in memory.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crate::results_budget::{Allowance, Cut};

/// Bytes of one output stream, kept up to a cap.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
    lines: u64,
    spill: Spill,
}

/// Where a stream that outgrows its cap goes whole.
#[derive(Debug, Clone, Default)]
enum Spill {
    /// Nowhere: the middle is cut.
    #[default]
    None,
    /// To this file, created when the cap is first passed.
    Pending(PathBuf),
    /// Being written, as far as the caps on kept results allow.
    Open(PathBuf, Arc<File>, Allowance),
    /// Writing failed; the middle is cut, and the note says why.
    Failed(PathBuf, String),
}

impl Capture {
    /// A capture keeping at most `cap` bytes: the first 60 % and the last 40 %.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap * 3 / 5;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            ..Self::default()
        }
    }

    /// A capture like [`Capture::new`] that writes the whole stream to `path` (created
    /// new, owner-only) once it outgrows `cap`.
    pub fn spilling(cap: usize, path: PathBuf) -> Self {
        Self {
            spill: Spill::Pending(path),
            ..Self::new(cap)
        }
    }

    /// Where the whole stream was saved, when it outgrew the cap and was saved.
    pub fn saved_to(&self) -> Option<&std::path::Path> {
        match &self.spill {
            Spill::Open(path, ..) => Some(path),
            _ => None,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        self.spill(bytes);
        self.keep(bytes);
    }

    /// Writes `bytes` to the spill file, opening it (with everything kept so far, which
    /// is everything read so far) when they would overflow the cap.
    fn spill(&mut self, bytes: &[u8]) {
        let cap = (self.head_cap + self.tail_cap) as u64;
        if let Spill::Pending(path) = &self.spill
            && self.total + bytes.len() as u64 > cap
        {
            let path = path.clone();
            let mut allowance = Allowance::for_file(&path);
            let opened = crate::results_budget::create_new(&path).and_then(|f| {
                let (a, b) = self.tail.as_slices();
                for part in [&self.head[..], a, b] {
                    write_allowed(&f, &mut allowance, part)?;
                }
                Ok(f)
            });
            self.spill = match opened {
                Ok(f) => Spill::Open(path, Arc::new(f), allowance),
                Err(e) => Spill::Failed(path, e.to_string()),
            };
        }
        if let Spill::Open(path, file, allowance) = &mut self.spill
            && let Err(e) = write_allowed(file, allowance, bytes)
        {
            self.spill = Spill::Failed(path.clone(), e.to_string());
        }
    }

    fn keep(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(bytes[bytes.len() - self.tail_cap..].iter().copied());
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes.iter().copied());
    }

    /// Total bytes the stream produced.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Bytes dropped from the middle.
    pub fn cut_bytes(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text (invalid UTF-8 replaced), with a marker where bytes were cut.
    pub fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let cut = self.cut_bytes();
        if cut == 0 {
            let tail: Vec<u8> = self.tail.iter().copied().collect();
            return format!("{head}{}", String::from_utf8_lossy(&tail));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let note = match &self.spill {
            Spill::Open(path, _, allowance) => match allowance.cut() {
                None => format!(
                    "{cut} bytes not shown; all {} bytes ({} lines) are saved in {}: read_file that path with offset and limit (in lines) to see any part",
                    self.total,
                    self.lines,
                    path.display()
                ),
                Some(why) => format!(
                    "{cut} bytes not shown; of {} bytes ({} lines), the first {} are saved in {} (read_file it with offset and limit): {why}",
                    self.total,
                    self.lines,
                    allowance.granted(),
                    path.display()
                ),
            },
            Spill::Failed(path, e) => format!(
                "{cut} bytes of {} cut from the middle; saving them to {} failed: {e}",
                self.total,
                path.display()
            ),
            _ => format!("{cut} bytes of {} cut from the middle", self.total),
        };
        format!("{head}\n[… {note} …]\n{}", String::from_utf8_lossy(&tail))
    }

    /// Why the saved copy stops short of the whole stream, if it does.
    pub fn saved_cut(&self) -> Option<Cut> {
        match &self.spill {
            Spill::Open(_, _, allowance) => allowance.cut(),
            _ => None,
        }
    }

    /// Whether nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// Writes as much of `bytes` to `file` as `allowance` grants; the rest is discarded.
fn write_allowed(file: &File, allowance: &mut Allowance, bytes: &[u8]) -> std::io::Result<()> {
    let n = allowance.grant(bytes.len() as u64) as usize;
    if n > 0 {
        (&*file).write_all(&bytes[..n])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Capture::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.text(), "hello world");
        assert_eq!(c.cut_bytes(), 0);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_the_cut() {
        let mut c = Capture::new(10);
        for chunk in b"0123456789abcdefghij".chunks(3) {
            c.push(chunk);
        }
        // head: 6 bytes, tail: 4 bytes, 10 cut.
        assert_eq!(c.total_bytes(), 20);
        assert_eq!(c.cut_bytes(), 10);
        let text = c.text();
        assert!(text.starts_with("012345\n"), "{text}");
        assert!(text.ends_with("\nghij"), "{text}");
        assert!(text.contains("10 bytes of 20 cut"), "{text}");
    }

    #[test]
    fn a_spilling_capture_saves_the_whole_stream_once_it_outgrows_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.txt");
        let mut small = Capture::spilling(10, path.clone());
        small.push(b"0123456789");
        assert!(small.saved_to().is_none() && !path.exists());
        let mut c = Capture::spilling(10, path.clone());
        let mut all = Vec::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            all.extend_from_slice(line.as_bytes());
            c.push(line.as_bytes());
        }
        assert_eq!(c.saved_to(), Some(path.as_path()));
        assert_eq!(std::fs::read(&path).unwrap(), all);
        let text = c.text();
        assert!(text.contains("(1000 lines) are saved in"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        // An existing file is never replaced: the capture cuts and says why.
        let mut again = Capture::spilling(10, path.clone());
        again.push(&all);
        assert!(again.saved_to().is_none());
        assert!(again.text().contains("failed"), "{}", again.text());
        assert_eq!(std::fs::read(&path).unwrap(), all);
    }

    #[test]
    fn a_single_big_push_fills_the_tail_from_its_end() {
        let mut c = Capture::new(10);
        c.push(b"0123456789abcdefghij");
        assert!(c.text().ends_with("ghij"));
        assert_eq!(c.cut_bytes(), 10);
    }
}
