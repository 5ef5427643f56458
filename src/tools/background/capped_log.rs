//! A background command's log, written by crew from the command's pipes: each chunk as it
//! comes (stdout and stderr interleaved), as far as the caps on kept results allow
//! (`offload::budget`); past them the output is still read, so the command never blocks
//! on a full pipe, and dropped, with one line in the log saying where and why it stopped.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

use crate::offload::budget::Allowance;

/// The log file and what may still be written to it.
#[derive(Clone)]
pub(super) struct CappedLog {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    file: File,
    allowance: Allowance,
    noted: bool,
}

impl CappedLog {
    /// The log `file`, kept at `path` (whose session's budget it draws on).
    pub(super) fn new(file: File, path: &Path) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                file,
                allowance: Allowance::for_file(path),
                noted: false,
            })),
        }
    }

    /// Copies `pipe` into the log until end of file.
    pub(super) fn copy_from<R>(&self, mut pipe: R) -> JoinHandle<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let log = self.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => log.write(&buf[..n]),
                }
            }
        })
    }

    fn write(&self, bytes: &[u8]) {
        let mut inner = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let n = inner.allowance.grant(bytes.len() as u64) as usize;
        if n > 0 {
            let _ = inner.file.write_all(&bytes[..n]);
        }
        if let Some(cut) = inner.allowance.cut()
            && !inner.noted
        {
            inner.noted = true;
            let _ = write!(
                inner.file,
                "\n[… the output past this point is not kept: {cut} …]\n"
            );
        }
    }
}
