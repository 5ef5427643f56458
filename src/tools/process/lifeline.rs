//! Every command crew starts dies with crew, even when crew is killed with SIGKILL and
//! can clean nothing up.
//!
//! crew holds the write end of one pipe, the lifeline, for as long as it lives; no other
//! process keeps it (it is close-on-exec, and the guardians below close it). Between
//! `fork` and `exec`, [`guard`] forks once more: the child goes on to exec the command,
//! and the parent stays behind as the command's guardian — the leader of its process
//! group, which crew waits for and kills as before. The guardian waits for two things
//! at once: its child's exit (through a pidfd), on which it exits the same way, and the
//! lifeline's hang-up, which the kernel reports the moment crew's last descriptor closes,
//! however crew died. Then it kills its whole process group with SIGKILL (itself
//! included), so no command, nor anything the command left in its group, outlives crew.
//! (A process that left the group with `setsid` is caught by the PID namespace of a
//! confined command instead: the namespace dies with the group.)
//!
//! `PR_SET_PDEATHSIG` alone would not do: it fires when the *thread* that forked exits,
//! and tokio's blocking threads come and go, so a command forked from one would be killed
//! in mid-run; and it reaches only the direct child, not the command's own children.
//!
//! Everything the guardian does after the fork is a plain system call: no allocation, no
//! locks.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::libc;

/// The read end of the lifeline (crew keeps the write end open until it exits), or
/// `None` if the pipe could not be made (commands then run unguarded, as before).
pub fn lifeline() -> Option<RawFd> {
    static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
    LIFELINE
        .get_or_init(|| match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
            Ok(ends) => Some(ends),
            Err(e) => {
                tracing::warn!(
                    "cannot make the lifeline pipe ({e}): commands may outlive a killed crew"
                );
                None
            }
        })
        .as_ref()
        .map(|(read, _write)| read.as_raw_fd())
}

/// Forks the command's guardian. Call from `pre_exec`, after the child leads its own
/// process group (`setsid` or `process_group(0)`), with [`lifeline`]'s descriptor read
/// before the fork. Returns in the child, which goes on to exec the command; the parent
/// becomes the guardian and never returns.
pub fn guard(lifeline: RawFd) -> Result<(), Errno> {
    // SAFETY: between fork and exec of a process that has one thread; both sides only make
    // system calls afterwards.
    let guardian = nix::unistd::getpid();
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Child => {
            // The guardian is one thread, so this fires exactly when it dies: killed
            // alone (`kill_on_drop`), its command goes with it. Had it died before this
            // line, the command would now belong to another parent: end at once.
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            if nix::unistd::getppid() != guardian {
                // SAFETY: ends this forked child without running anything of crew's.
                unsafe { libc::_exit(137) }
            }
            Ok(())
        }
        nix::unistd::ForkResult::Parent { child } => watch(child.as_raw(), lifeline),
    }
}

/// The guardian: keeps only the lifeline open, then waits for the child's exit or the
/// lifeline's hang-up, whichever comes first.
fn watch(child: libc::pid_t, lifeline: RawFd) -> ! {
    // SAFETY: plain system calls on no memory but the locals below.
    unsafe {
        // crew's signal handlers (tokio's SIGCHLD pipe among them) are not ours.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        // Signals sent to the group are for the command: the guardian ends when it ends
        // (and so the SIGTERM-then-grace of a group kill works as without a guardian).
        // Only SIGKILL ends the guardian first, and its command dies with it.
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        close_all_but(lifeline);
        let pidfd = libc::syscall(libc::SYS_pidfd_open, child, 0) as RawFd;
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: lifeline,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Without a pidfd (a kernel before 5.3), look for the child's exit every 50 ms.
            let (count, timeout) = if pidfd >= 0 { (2, -1) } else { (1, 50) };
            let ready = libc::poll(fds.as_mut_ptr(), count, timeout);
            if ready < 0 && Errno::last() != Errno::EINTR {
                // Cannot watch: fall back to waiting for the child alone.
                exit_as(child, 0);
            }
            if fds[0].revents != 0 {
                // crew is gone: nothing may outlive it.
                libc::kill(0, libc::SIGKILL);
                libc::_exit(137);
            }
            if pidfd >= 0 && fds[1].revents != 0 {
                exit_as(child, 0);
            }
            if pidfd < 0 {
                exit_as(child, libc::WNOHANG);
            }
        }
    }
}

/// Reaps the child (`options`: 0 to wait, `WNOHANG` to look) and, once it has ended,
/// ends the way it ended, so crew sees the command's own status. Returns if a `WNOHANG`
/// look found it still running.
///
/// # Safety
/// Only in the guardian (a forked, single-threaded process).
unsafe fn exit_as(child: libc::pid_t, options: libc::c_int) {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid local.
        let r = unsafe { libc::waitpid(child, &mut status, options) };
        if r == 0 {
            return;
        }
        if r < 0 && Errno::last() == Errno::EINTR {
            continue;
        }
        break;
    }
    // SAFETY: resetting a disposition and ending the process, plain system calls.
    unsafe {
        if libc::WIFSIGNALED(status) {
            // Die of the same signal, so crew sees it; if that does not end us, report it
            // as a shell would.
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
            libc::_exit(128 + sig);
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(127);
    }
}

/// Closes every descriptor but `keep`: `close_range` (Linux 5.9+), else one by one up to
/// the limit. A descriptor left open here would hold the command's pipes (its output
/// would never reach end of file) or the spawner's exec-status pipe.
///
/// # Safety
/// Only in the guardian (a forked, single-threaded process).
unsafe fn close_all_but(keep: RawFd) {
    let keep = keep as libc::c_uint;
    // SAFETY: raw system calls on no memory of ours.
    unsafe {
        let below = keep == 0 || libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) == 0;
        let above = libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) == 0;
        if below && above {
            return;
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            4096
        };
        for fd in (0..max).filter(|fd| *fd as libc::c_uint != keep) {
            libc::close(fd);
        }
    }
}

/// Adds the guardian to `cmd` (which must lead its own process group: `process_group(0)`),
/// for commands not built by [`shell_command`](super::shell_command), which guards its own.
pub fn guard_command(cmd: &mut tokio::process::Command) {
    let Some(lifeline) = lifeline() else { return };
    // SAFETY: the closure only forks and makes system calls (see `guard`).
    unsafe {
        cmd.pre_exec(move || guard(lifeline).map_err(std::io::Error::from));
    }
}
