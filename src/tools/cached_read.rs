//! A small file's bytes read on the async runtime when the kernel can give them without
//! waiting: `preadv2(RWF_NOWAIT)` reads only what the page cache holds and answers
//! `EAGAIN` instead of going to the disk. A file tool then answers from the executor's
//! own poll, with no hand-off to the blocking pool and back; any file that would wait
//! (not cached, on a file system without `RWF_NOWAIT`, larger than [`MAX_BYTES`]) is
//! read on the blocking pool as before.

use std::fs::File;
use std::io::IoSliceMut;

use rustix::io::{Errno, ReadWriteFlags};

/// Files larger than this are always read on the blocking pool.
pub(crate) const MAX_BYTES: u64 = 256 * 1024;

/// All of `file` (of `len` bytes by its metadata) if the page cache holds all of it;
/// `None` when reading it could wait, or it changed size, or anything failed (the
/// blocking read then tries again and reports the error).
pub(crate) fn cached_bytes(file: &File, len: u64) -> Option<Vec<u8>> {
    if len > MAX_BYTES {
        return None;
    }
    // One byte more than the metadata says: a file seen to have grown since is read the
    // slow way.
    let mut buf = vec![0u8; usize::try_from(len).ok()? + 1];
    let mut filled = 0;
    loop {
        let read = rustix::io::preadv2(
            file,
            &mut [IoSliceMut::new(&mut buf[filled..])],
            filled as u64,
            ReadWriteFlags::NOWAIT,
        );
        match read {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled == buf.len() {
                    return None;
                }
                // All the metadata promised, and not the byte past it: what the file
                // held when it was opened, without a second read to see its end.
                if filled == buf.len() - 1 {
                    break;
                }
            }
            Err(Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    buf.truncate(filled);
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_cached_file_is_read_whole_and_a_large_or_grown_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        // Just written: in the page cache.
        let file = File::open(&path).unwrap();
        assert_eq!(cached_bytes(&file, 8).as_deref(), Some(&b"one\ntwo\n"[..]));
        // Grown since its metadata was read: not this way.
        let mut more = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        more.write_all(b"three\n").unwrap();
        assert_eq!(cached_bytes(&file, 8), None);
        // Over the limit: never this way.
        assert_eq!(cached_bytes(&file, MAX_BYTES + 1), None);
        // Empty.
        let empty = dir.path().join("e");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(
            cached_bytes(&File::open(&empty).unwrap(), 0),
            Some(Vec::new())
        );
    }
}
