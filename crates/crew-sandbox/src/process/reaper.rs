//! Ending every descendant of the guardian, wherever it went: a process that left the
//! command's process group (`setsid`, `setpgid`, a double-forked daemon) is still a
//! descendant. The guardian is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so an orphan
//! below it is re-parented to it, not to init; "no child left" (`waitpid` says `ECHILD`)
//! therefore means "no descendant left".
//!
//! [`end_all`] walks the tree through `/proc/<pid>/task/<tid>/children`: each process is
//! stopped before its children are read (a stopped process cannot fork), then the frozen
//! tree is killed, everything is reaped, and the round repeats until nothing is left or a
//! bound passes (a process of another user cannot be killed).
//!
//! The guardian is a forked copy of a multi-threaded process that never execs, so
//! everything here is a plain system call on stack buffers: no allocation, no locks.

use std::os::fd::RawFd;

use nix::libc;

/// Pids one walk holds at once; a larger tree takes more rounds.
const MAX_PIDS: usize = 2048;

/// How long killing may take before the guardian gives up on what it cannot kill.
const KILL_BOUND_MS: i64 = 3_000;

/// Makes this process a child subreaper; false if the kernel refused.
pub(super) fn become_subreaper() -> bool {
    // SAFETY: a plain system call.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// Ends every descendant and returns whether there was any. With `grace_ms` > 0 they
/// first get SIGTERM (and SIGCONT, so a stopped one sees it) and up to `grace_ms` to go,
/// cut short when `urgent` says so (crew asked for a kill, or died); then what is left is
/// frozen and killed with SIGKILL.
///
/// # Safety
/// Only in the guardian (a forked, single-threaded process).
pub(super) unsafe fn end_all(grace_ms: i64, mut urgent: impl FnMut(libc::c_int) -> bool) -> bool {
    // SAFETY: the caller is the guardian.
    unsafe {
        if !reap_all() {
            return false;
        }
        if grace_ms > 0 {
            walk(&[libc::SIGTERM, libc::SIGCONT]);
            let deadline = now_ms() + grace_ms;
            while reap_all() {
                let left = deadline - now_ms();
                if left <= 0 || urgent(left.min(20) as libc::c_int) {
                    break;
                }
            }
        }
        let deadline = now_ms() + KILL_BOUND_MS;
        while reap_all() && now_ms() < deadline {
            walk(&[libc::SIGSTOP]);
            walk(&[libc::SIGKILL]);
            if reap_all() {
                libc::poll(std::ptr::null_mut(), 0, 1);
            }
        }
        true
    }
}

/// Reaps every child that has ended; whether any child is left.
///
/// # Safety
/// Only in the guardian.
unsafe fn reap_all() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid local.
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG | libc::__WALL) };
        if r > 0 {
            continue;
        }
        if r == 0 {
            return true;
        }
        if nix::errno::Errno::last() == nix::errno::Errno::EINTR {
            continue;
        }
        return false;
    }
}

/// Sends `signals` to every descendant, each process before its children are read.
///
/// # Safety
/// Only in the guardian.
unsafe fn walk(signals: &[libc::c_int]) {
    let mut stack = [0 as libc::pid_t; MAX_PIDS];
    let mut len = 0;
    // SAFETY: plain system calls; the guardian has one thread, so its tid is its pid.
    unsafe {
        let me = libc::getpid();
        children_of(me, &mut stack, &mut len);
        while len > 0 {
            len -= 1;
            let pid = stack[len];
            for &sig in signals {
                libc::kill(pid, sig);
            }
            children_of(pid, &mut stack, &mut len);
        }
    }
}

/// Pushes the children of every thread of `pid` onto `stack` (those that do not fit are
/// found by a later round, once re-parented to the guardian).
///
/// # Safety
/// Only in the guardian.
unsafe fn children_of(pid: libc::pid_t, stack: &mut [libc::pid_t], len: &mut usize) {
    let mut path = Path::new();
    path.push(b"/proc/");
    path.push_num(pid);
    path.push(b"/task");
    // SAFETY: `path` is NUL-terminated; the buffers are locals.
    unsafe {
        let dir = libc::open(
            path.c_str(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut buf = [0u8; 2048];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at + 19 < n as usize {
                // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                if let Some(tid) = parse_num(&buf[at + 19..(at + reclen).min(n as usize)]) {
                    let mut file = Path::new();
                    file.push(b"/proc/");
                    file.push_num(pid);
                    file.push(b"/task/");
                    file.push_num(tid);
                    file.push(b"/children");
                    read_pids(&file, stack, len);
                }
                at += reclen;
            }
        }
        libc::close(dir);
    }
}

/// Reads the space-separated pids of a `children` file onto `stack`.
///
/// # Safety
/// Only in the guardian.
unsafe fn read_pids(file: &Path, stack: &mut [libc::pid_t], len: &mut usize) {
    // SAFETY: `file` is NUL-terminated; the buffer is a local.
    unsafe {
        let fd: RawFd = libc::open(file.c_str(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 1024];
        let mut current: Option<libc::pid_t> = None;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    let d = libc::pid_t::from(b - b'0');
                    current = Some(current.unwrap_or(0).saturating_mul(10).saturating_add(d));
                } else if let Some(pid) = current.take() {
                    push(stack, len, pid);
                }
            }
        }
        if let Some(pid) = current {
            push(stack, len, pid);
        }
        libc::close(fd);
    }
}

fn push(stack: &mut [libc::pid_t], len: &mut usize, pid: libc::pid_t) {
    if pid > 0 && *len < stack.len() {
        stack[*len] = pid;
        *len += 1;
    }
}

/// The number a directory entry's NUL-terminated name spells, if it is one.
fn parse_num(name: &[u8]) -> Option<libc::pid_t> {
    let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
    let name = &name[..end];
    if name.is_empty() || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    name.iter().try_fold(0 as libc::pid_t, |n, b| {
        n.checked_mul(10)?.checked_add(libc::pid_t::from(b - b'0'))
    })
}

/// Milliseconds on the monotonic clock.
fn now_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// A NUL-terminated path built on the stack (long enough for `/proc/<pid>/task/<tid>/children`).
struct Path {
    buf: [u8; 64],
    len: usize,
}

impl Path {
    fn new() -> Self {
        Self {
            buf: [0; 64],
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            // Keep the last byte for the NUL.
            if self.len + 1 < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
    }

    fn push_num(&mut self, n: libc::pid_t) {
        let mut digits = [0u8; 12];
        let mut i = digits.len();
        let mut n = n.unsigned_abs();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    fn c_str(&self) -> *const libc::c_char {
        // `buf` starts zeroed and `push` never writes its last byte: always terminated.
        self.buf.as_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_are_built_and_parsed_without_allocating() {
        let mut p = Path::new();
        p.push(b"/proc/");
        p.push_num(4_194_304);
        p.push(b"/task/");
        p.push_num(0);
        p.push(b"/children");
        assert_eq!(&p.buf[..p.len], b"/proc/4194304/task/0/children");
        assert_eq!(p.buf[p.len], 0);
        assert_eq!(parse_num(b"123\0\0\0"), Some(123));
        assert_eq!(parse_num(b".\0"), None);
        assert_eq!(parse_num(b"..\0"), None);
        assert_eq!(parse_num(b"99999999999999\0"), None);
        // An over-long path is cut, and stays terminated.
        let mut long = Path::new();
        long.push(&[b'a'; 100]);
        assert_eq!(long.len, 63);
        assert_eq!(long.buf[63], 0);
    }

    #[test]
    fn a_children_file_is_read_whole_and_a_full_stack_drops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("children");
        std::fs::write(&file, "12 345 6789 ").unwrap();
        let mut path = Path::new();
        path.push(file.to_str().unwrap().as_bytes());
        let mut stack = [0; 2];
        let mut len = 0;
        // SAFETY: read_pids only reads the file into locals.
        unsafe { read_pids(&path, &mut stack, &mut len) };
        assert_eq!((len, stack), (2, [12, 345]));
    }
}
