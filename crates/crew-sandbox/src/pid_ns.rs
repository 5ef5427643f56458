//! A private PID namespace for a confined command, with a fresh `/proc`.
//!
//! Two leaks close with it. A command could read other processes' `/proc/<pid>/environ`,
//! crew's own among them (`/proc/$PPID/environ` holds the provider keys the scrubbed
//! environment withholds). And a command could leave a daemon behind (double fork and
//! `setsid` leave the process group) that outlives the command and crew, and re-plants a
//! protected file after the snapshot restore. Inside its own namespace the command sees
//! only its own processes in `/proc`, and when the namespace's first process (the shell)
//! exits, the kernel kills every process left in it.
//!
//! `unshare(CLONE_NEWPID)` moves only the children of the caller into the namespace, so
//! [`split`] forks between `fork` and `exec`: the child becomes PID 1 of the namespace,
//! mounts `/proc` and returns to exec the shell; the intermediate process stays outside,
//! waits for it and exits with its status, so the parent sees the shell's status and the
//! intermediate's pid leads the process group as before. Everything here is a plain
//! system call on data prepared beforehand: no allocation, no locks.

use std::ffi::CStr;
use std::os::unix::process::CommandExt;
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sys::signal::{SigHandler, Signal, raise, signal};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, fork};

use super::mount_ns::PreparedMounts;
use super::protect::Protected;

/// Forks off the namespace's first process. Call after `unshare` with `CLONE_NEWPID` (and
/// a mount namespace), from `pre_exec`. Returns only in the child, which is PID 1 of the
/// new namespace with its own `/proc` mounted; the intermediate process waits for it and
/// exits with its status, never returning.
pub fn split() -> Result<(), Errno> {
    // SAFETY: between fork and exec of a process that has one thread; both sides only make
    // system calls afterwards.
    match unsafe { fork() }? {
        ForkResult::Child => {
            // If the intermediate is killed (the group kill on timeout or cancel sends
            // SIGTERM, which PID 1 would ignore), the shell dies with it, and with the
            // shell the whole namespace. (Only an intermediate killed in the instant
            // between the fork and this line would leave the shell running to its end,
            // still confined.)
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // A process group of its own: the group kill's SIGTERM then reaches only the
            // intermediate, whose death kills the shell (and so the whole namespace) at
            // once. Were the shell in the group, the SIGTERM would also end the command it
            // is running and the shell, as PID 1 ignoring SIGTERM, would go on with the
            // rest of its script until the SIGKILL arrived.
            nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0))?;
            mount_proc()?;
            Ok(())
        }
        ForkResult::Parent { child } => wait_and_exit(child),
    }
}

/// Mounts a `/proc` that shows only the namespace's processes.
fn mount_proc() -> Result<(), Errno> {
    mount(
        Some(c"proc"),
        c"/proc",
        Some(c"proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&CStr>,
    )
}

/// The intermediate process: closes every descriptor (so the output pipes and the
/// spawner's exec-status pipe belong to the shell alone), waits for the shell and ends the
/// way it ended.
fn wait_and_exit(child: nix::unistd::Pid) -> ! {
    close_all();
    let code = loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => break code,
            Ok(WaitStatus::Signaled(_, sig, _)) => {
                // Die of the same signal, so the parent sees it; if that does not end us
                // (a signal that only stops), report it as a shell would.
                // SAFETY: resetting a disposition to its default in a one-thread process.
                let _ = unsafe { signal(sig, SigHandler::SigDfl) };
                let _ = raise(sig);
                break 128 + sig as i32;
            }
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => break 127,
        }
    };
    // SAFETY: `_exit` ends the process without running anything of the parent's.
    unsafe { nix::libc::_exit(code) }
}

/// Closes every descriptor: `close_range` (Linux 5.9+), else one by one up to the limit.
/// A descriptor left open here would hold the spawner's exec-status pipe, and so the
/// spawn itself, until the command ends.
fn close_all() {
    use nix::libc;
    // SAFETY: raw system calls on no memory of ours.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) == 0 {
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
        for fd in 0..max {
            libc::close(fd);
        }
    }
}

/// Whether PID namespaces with a fresh `/proc` work here (on top of the mount namespace),
/// probed once per process by running `sh` as PID 1 of one.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        if !super::mount_ns::available() {
            return false;
        }
        let Ok(prepared) =
            PreparedMounts::prepare(&Protected::default(), &super::hidden::HiddenSet::default())
        else {
            return false;
        };
        let prepared = prepared.with_pid_namespace();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "test \"$$\" = 1"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `apply` only makes system calls on data prepared above.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
        let ok = cmd.status().is_ok_and(|s| s.success());
        if !ok {
            tracing::warn!(
                "PID namespaces are not available: confined commands can see other processes in \
                 /proc, and a daemon they start is not killed when they end"
            );
        }
        ok
    })
}
