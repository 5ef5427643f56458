//! A capped capture of a process's output stream: keeps the head and the tail (where
//! build errors and summaries usually are) and counts what was cut in between.

use std::collections::VecDeque;

/// Bytes of one output stream, kept up to a cap.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
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
            total: 0,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
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
        format!(
            "{head}\n[… {cut} bytes of {} cut from the middle …]\n{}",
            self.total,
            String::from_utf8_lossy(&tail)
        )
    }

    /// Whether nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
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
    fn a_single_big_push_fills_the_tail_from_its_end() {
        let mut c = Capture::new(10);
        c.push(b"0123456789abcdefghij");
        assert!(c.text().ends_with("ghij"));
        assert_eq!(c.cut_bytes(), 10);
    }
}
