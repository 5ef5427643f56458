//! Every command crew starts dies with crew, even when crew is killed with SIGKILL and
//! can clean nothing up; and nothing a command starts outlives it, even a process that
//! left its process group.
//!
//! crew holds the write end of one pipe, the lifeline, for as long as it lives; no other
//! process keeps it (it is close-on-exec, and the guardians below close it). Between
//! `fork` and `exec`, [`guard`] forks once more: the child goes on to exec the command,
//! and the parent stays behind as the command's guardian — the leader of its process
//! group, which crew waits for as before, and a child subreaper, so every orphan below it
//! (a `setsid` daemon, a double fork) is re-parented to it rather than to init. The
//! guardian waits for three things at once: its child's exit (through a pidfd), the
//! lifeline's hang-up, which the kernel reports the moment crew's last descriptor closes,
//! however crew died, and crew's kill request ([`request_kill`], a signal read through a
//! signalfd and obeyed only when crew sent it). Whichever comes first, it ends every
//! descendant (`reaper`: SIGTERM and a grace after a normal exit, SIGKILL at once
//! otherwise), then exits the way its command did, or dies of SIGKILL.
//!
//! crew must therefore never SIGKILL a live guardian's group itself: the guardian would
//! die before it could end the processes outside the group. `GroupChild` asks instead,
//! and kills the group only once the guardian is gone. A command that kills its own
//! guardian first still escapes; a confined command's PID namespace catches even that.
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

use super::reaper;

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
/// before the fork, and optionally the write end of a pipe on which the guardian reports
/// (one byte, [`LEFTOVERS`]) that it ended processes the command left running. Returns in
/// the child, which goes on to exec the command; the parent becomes the guardian and never
/// returns.
pub fn guard(lifeline: RawFd, report: Option<RawFd>) -> Result<(), Errno> {
    // SAFETY: between fork and exec of a process that has one thread; both sides only make
    // system calls afterwards.
    let guardian = nix::unistd::getpid();
    // The kill request is blocked before the fork, so a command that signals its own group
    // at once cannot reach the guardian before it reads requests from a signalfd (the
    // default action would end it, and the command with it); the command gets it unblocked.
    let mut request = nix::sys::signal::SigSet::empty();
    request.add(nix::sys::signal::Signal::SIGUSR1);
    request.thread_block()?;
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Child => {
            request.thread_unblock()?;
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
        nix::unistd::ForkResult::Parent { child } => {
            watch(child.as_raw(), lifeline, report.unwrap_or(-1))
        }
    }
}

/// The byte a guardian writes on its report pipe when it ended processes its command left
/// running (in its group or escaped from it).
pub const LEFTOVERS: u8 = b'L';

/// The signal with which crew asks a guardian to end its command and everything below it
/// at once ([`request_kill`]); from any other sender it is ignored.
const KILL_REQUEST: libc::c_int = libc::SIGUSR1;

/// Asks the guardian `pid` to kill its command and every descendant now (SIGKILL, no
/// grace), then exit as killed. Only for a guardian crew has not reaped (so the pid is
/// still its own). Returns whether the request was sent.
pub fn request_kill(pid: libc::pid_t) -> bool {
    // SAFETY: plain system calls. SIGCONT first: a stopped guardian could not act.
    unsafe { libc::kill(pid, libc::SIGCONT) == 0 && libc::kill(pid, KILL_REQUEST) == 0 }
}

/// Sends crew's kill request to every process of group `pgid`: its guardian kills every
/// descendant at once (SIGKILL), escaped ones included; a member that does not handle the
/// signal dies of it. For a caller that knows only the group (not the guardian's child
/// handle); the group must still exist, as for any `killpg`.
pub fn request_group_kill(pgid: libc::pid_t) -> Result<(), Errno> {
    // SAFETY: plain system calls. SIGCONT first: a stopped guardian could not act.
    unsafe {
        if libc::killpg(pgid, libc::SIGCONT) != 0 || libc::killpg(pgid, KILL_REQUEST) != 0 {
            return Err(Errno::last());
        }
    }
    Ok(())
}

/// The guardian: a subreaper that keeps only the lifeline (and the report pipe) open,
/// then waits for the child's exit, the lifeline's hang-up or crew's kill request,
/// whichever comes first; each ends every descendant before the guardian exits.
fn watch(child: libc::pid_t, lifeline: RawFd, report: RawFd) -> ! {
    // SAFETY: plain system calls on no memory but the locals below.
    unsafe {
        let crew = libc::getppid();
        // crew's signal handlers (tokio's SIGCHLD pipe among them) are not ours.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        // Signals sent to the group are for the command: the guardian ends when it ends
        // (and so the SIGTERM-then-grace of a group kill works as without a guardian).
        // Only SIGKILL ends the guardian first, and its command dies with it.
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Orphans below us come to us, not to init, so we can end them all.
        reaper::become_subreaper();
        close_all_but(lifeline, report);
        let requests = kill_requests();
        let pidfd = libc::syscall(libc::SYS_pidfd_open, child, 0) as RawFd;
        // Whether crew asked for the kill (or died), waiting at most `timeout_ms`.
        let urgent = |timeout_ms: libc::c_int| {
            let mut fds = [pollin(lifeline), pollin(requests)];
            libc::poll(fds.as_mut_ptr(), 2, timeout_ms) > 0
                && (fds[0].revents != 0 || (fds[1].revents != 0 && from_crew(requests, crew)))
        };
        loop {
            let mut fds = [pollin(lifeline), pollin(requests), pollin(pidfd)];
            // Without a pidfd (a kernel before 5.3), look for the child's exit every 50 ms.
            let (count, timeout) = if pidfd >= 0 { (3, -1) } else { (2, 50) };
            let ready = libc::poll(fds.as_mut_ptr(), count, timeout);
            if ready < 0 && Errno::last() != Errno::EINTR {
                // Cannot watch: fall back to waiting for the child alone.
                let status = reap(child, 0).unwrap_or(0);
                finish(status, report, urgent);
            }
            if fds[0].revents != 0 || (fds[1].revents != 0 && from_crew(requests, crew)) {
                // crew is gone, or wants the command gone: nothing may outlive it.
                reaper::end_all(0, |_| true);
                libc::kill(0, libc::SIGKILL);
                libc::_exit(137);
            }
            let ended = if pidfd >= 0 && fds[2].revents != 0 {
                reap(child, 0)
            } else if pidfd < 0 {
                reap(child, libc::WNOHANG)
            } else {
                None
            };
            if let Some(status) = ended {
                finish(status, report, urgent);
            }
        }
    }
}

/// A `pollfd` waiting for input on `fd` (a negative `fd` is skipped by `poll`).
fn pollin(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Blocks [`KILL_REQUEST`] and returns a signalfd that reads it, or -1 (then the signal is
/// left unblocked, and its default action ends the guardian: the command dies with it).
///
/// # Safety
/// Only in the guardian (a forked, single-threaded process).
unsafe fn kill_requests() -> RawFd {
    // SAFETY: plain system calls on locals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, KILL_REQUEST);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return -1;
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
        fd
    }
}

/// Reads the pending kill requests; whether one came from `crew` (a command signalling its
/// own group is not crew).
///
/// # Safety
/// Only in the guardian, on the descriptor from [`kill_requests`].
unsafe fn from_crew(requests: RawFd, crew: libc::pid_t) -> bool {
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    let mut asked = false;
    loop {
        // SAFETY: reads one `signalfd_siginfo` into a zeroed local of that type.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let n = unsafe {
            libc::read(
                requests,
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size,
            )
        };
        if n != size as isize {
            return asked;
        }
        asked |= info.ssi_pid as libc::pid_t == crew;
    }
}

/// Ends what the command left running (SIGTERM and a grace, then SIGKILL), says so on the
/// report pipe, and exits the way the command ended.
///
/// # Safety
/// Only in the guardian.
unsafe fn finish(status: libc::c_int, report: RawFd, urgent: impl FnMut(libc::c_int) -> bool) -> ! {
    // SAFETY: plain system calls.
    unsafe {
        let grace = super::KILL_GRACE.as_millis() as i64;
        if reaper::end_all(grace, urgent) && report >= 0 {
            libc::write(report, [LEFTOVERS].as_ptr().cast(), 1);
        }
        exit_as(status)
    }
}

/// Reaps the child (`options`: 0 to wait, `WNOHANG` to look); its wait status once it has
/// ended, `None` while a `WNOHANG` look finds it running.
///
/// # Safety
/// Only in the guardian (a forked, single-threaded process).
unsafe fn reap(child: libc::pid_t, options: libc::c_int) -> Option<libc::c_int> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid local.
        let r = unsafe { libc::waitpid(child, &mut status, options) };
        if r == 0 {
            return None;
        }
        if r < 0 && Errno::last() == Errno::EINTR {
            continue;
        }
        // Reaped, or not ours to reap (then an unknown end: 127 below).
        return Some(if r < 0 { 127 << 8 } else { status });
    }
}

/// Ends the way the child ended (its wait `status`), so crew sees the command's own status.
///
/// # Safety
/// Only in the guardian.
unsafe fn exit_as(status: libc::c_int) -> ! {
    // SAFETY: resetting dispositions and ending the process, plain system calls.
    unsafe {
        if libc::WIFSIGNALED(status) {
            // Die of the same signal, so crew sees it; if that does not end us, report it
            // as a shell would.
            let sig = libc::WTERMSIG(status);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
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

/// Closes every descriptor but `keep` and `also` (-1 for none). A descriptor left open
/// here would hold the command's pipes (its output would never reach end of file) or the
/// spawner's exec-status pipe.
///
/// # Safety
/// Only in the guardian (a forked, single-threaded process).
unsafe fn close_all_but(keep: RawFd, also: RawFd) {
    let (low, high) = if also < 0 || also == keep {
        (keep, keep)
    } else {
        (keep.min(also), keep.max(also))
    };
    // SAFETY: the caller is the guardian.
    unsafe {
        close_from_to(0, low);
        close_from_to(low + 1, high);
        close_from_to(high + 1, RawFd::MAX);
    }
}

/// Closes the descriptors from `from` up to, not including, `to` (`RawFd::MAX`: all):
/// `close_range` (Linux 5.9+), else one by one up to the limit.
///
/// # Safety
/// Only in the guardian.
unsafe fn close_from_to(from: RawFd, to: RawFd) {
    if from >= to {
        return;
    }
    let last = if to == RawFd::MAX {
        u32::MAX
    } else {
        (to - 1) as u32
    };
    // SAFETY: raw system calls on no memory of ours.
    unsafe {
        if libc::syscall(libc::SYS_close_range, from as u32, last, 0u32) == 0 {
            return;
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as RawFd
        } else {
            4096
        };
        for fd in from..to.min(max) {
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
        cmd.pre_exec(move || guard(lifeline, None).map_err(std::io::Error::from));
    }
}
