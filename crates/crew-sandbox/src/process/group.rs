//! Process groups: a spawned group leader that is killed as a group when dropped, and
//! the helpers that signal, probe and terminate a group.
//!
//! The leader is normally the command's guardian (`lifeline`), which ends every
//! descendant, inside the group or escaped from it, before it exits. A live guardian is
//! therefore asked to kill ([`super::lifeline::request_kill`]) rather than killed with its
//! group: SIGKILL would end it before it could end the processes outside the group. The
//! group itself is SIGKILLed only once the guardian is gone, for whatever is left.

use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::{KILL_GRACE, ProcessError};

/// How long a guardian asked to kill may take before its group is killed instead.
const KILL_BOUND: Duration = Duration::from_secs(5);
use crate::landlock::{NOT_ENFORCED_ERRNO, SandboxError};
use crate::limits::LIMITS_ERRNO;
use crate::mount_ns::MOUNT_NS_ERRNO;
use crate::net::NET_NS_ERRNO;

/// A spawned process-group leader. Dropping it kills the whole group (SIGKILL), so an
/// aborted task leaves no processes behind.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    pgid: Pid,
    armed: bool,
    /// The leader is a guardian (commands are guarded whenever the lifeline exists).
    guarded: bool,
}

impl GroupChild {
    /// Spawns `cmd`, which must have been built with [`shell_command`](super::shell_command)
    /// or [`guard_command`](super::guard_command) (so it leads its own process group under a
    /// guardian), and takes charge of its group.
    pub fn spawn(cmd: &mut Command, cwd: &Path) -> Result<Self, ProcessError> {
        let child = cmd.spawn().map_err(|source| {
            if source.raw_os_error() == Some(NOT_ENFORCED_ERRNO) {
                ProcessError::Sandbox(SandboxError::NotEnforced)
            } else if source.raw_os_error() == Some(MOUNT_NS_ERRNO) {
                ProcessError::Sandbox(SandboxError::MountNamespace(source))
            } else if source.raw_os_error() == Some(NET_NS_ERRNO) {
                ProcessError::Sandbox(SandboxError::NetworkNamespace(source))
            } else if source.raw_os_error() == Some(LIMITS_ERRNO) {
                ProcessError::Sandbox(SandboxError::Limits(source))
            } else {
                ProcessError::Spawn {
                    cwd: cwd.to_path_buf(),
                    source,
                }
            }
        })?;
        let pid = child.id().ok_or_else(|| {
            ProcessError::Wait(std::io::Error::other("the child exited before it was seen"))
        })?;
        // The child is its group's leader, so its pid is the group id.
        let pgid = Pid::from_raw(pid as i32);
        Ok(Self {
            child,
            pgid,
            armed: true,
            guarded: super::lifeline::lifeline().is_some(),
        })
    }

    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> Pid {
        self.pgid
    }

    /// The underlying child, e.g. to take its stdout.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for the leader to exit, or kills the group when `timeout` passes or
    /// `cancel` fires. Returns the exit status, or which of the two ended it.
    pub async fn wait_or_kill(
        &mut self,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<ExitStatus, Ended> {
        let sleep = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let ended = tokio::select! {
            status = self.child.wait() => return status.map_err(Ended::Wait),
            () = sleep => Ended::TimedOut,
            () = cancel.cancelled() => Ended::Cancelled,
        };
        self.terminate().await;
        Err(ended)
    }

    /// Terminates the whole group (SIGTERM, grace, SIGKILL) and reaps the leader. A
    /// guardian ends what its command left running, in the group or not, before it exits;
    /// if it has not exited within the grace, it is asked to kill everything at once.
    pub async fn terminate(&mut self) -> Option<ExitStatus> {
        if !self.guarded {
            terminate_group(self.pgid, KILL_GRACE).await;
            let status = self.child.wait().await.ok();
            self.armed = false;
            return status;
        }
        // The guardian ignores SIGTERM; its command gets it, and when the command has
        // ended the guardian ends the rest (with the same grace) and exits.
        let _ = kill_group(self.pgid, Signal::SIGTERM);
        let mut status = tokio::time::timeout(KILL_GRACE, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        if status.is_none() && self.request_kill() {
            status = tokio::time::timeout(KILL_BOUND, self.child.wait())
                .await
                .ok()
                .and_then(Result::ok);
        }
        // Whatever is left in the group (a guardian that did not answer, or one the command
        // killed) goes now.
        if group_alive(self.pgid) {
            let _ = kill_group(self.pgid, Signal::SIGKILL);
        }
        if status.is_none() {
            status = self.child.wait().await.ok();
        }
        self.armed = false;
        status
    }

    /// Asks a live guardian to kill its command and every descendant at once; false when
    /// there is no guardian to ask (unguarded, or it has already exited).
    fn request_kill(&mut self) -> bool {
        // Not yet reaped, so the pid is still the guardian's.
        self.guarded
            && matches!(self.child.try_wait(), Ok(None))
            && super::lifeline::request_kill(self.pgid.as_raw())
    }

    /// Stops the drop guard, once the group is known to be gone.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        // A live guardian kills everything itself; killing its group would end it first.
        if self.armed && !self.request_kill() {
            let _ = kill_group(self.pgid, Signal::SIGKILL);
        }
    }
}

/// What stopped [`GroupChild::wait_or_kill`] before the leader exited on its own.
#[derive(Debug)]
pub enum Ended {
    /// The time limit passed; the group was killed.
    TimedOut,
    /// The token fired; the group was killed.
    Cancelled,
    /// Waiting failed.
    Wait(std::io::Error),
}

/// Sends `signal` to every process in group `pgid`. A group that no longer exists is
/// not an error.
pub fn kill_group(pgid: Pid, signal: Signal) -> Result<(), Errno> {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Kills group `pgid` and everything its command started outside it: with a guardian
/// leading the group (whenever the lifeline exists), every member gets crew's kill request
/// and the guardian SIGKILLs every descendant; otherwise the group gets SIGKILL. A group
/// that no longer exists is not an error.
pub fn kill_group_and_escapees(pgid: Pid) -> Result<(), Errno> {
    if super::lifeline::lifeline().is_none() {
        return kill_group(pgid, Signal::SIGKILL);
    }
    match super::lifeline::request_group_kill(pgid.as_raw()) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether group `pgid` still has a live (non-zombie) member. Zombies are ignored:
/// they run nothing and are reaped by their parent or by init in their own time.
pub fn group_alive(pgid: Pid) -> bool {
    if killpg(pgid, None) == Err(Errno::ESRCH) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok())
            && std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|stat| parse_stat(&stat))
                .is_some_and(|(state, pgrp)| pgrp == pgid.as_raw() && state != 'Z')
    })
}

/// `(state, pgrp)` from a `/proc/PID/stat` line; the command name may hold spaces and
/// parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Terminates group `pgid`: SIGTERM, up to `grace` for it to go, then SIGKILL.
pub async fn terminate_group(pgid: Pid, grace: Duration) {
    if kill_group(pgid, Signal::SIGTERM).is_err() {
        let _ = kill_group(pgid, Signal::SIGKILL);
        return;
    }
    let deadline = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < deadline {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = kill_group(pgid, Signal::SIGKILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_stat_handles_odd_command_names() {
        let line = "1234 (we (ird) name) S 1 777 777 0 -1";
        assert_eq!(parse_stat(line), Some(('S', 777)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn kill_group_of_a_missing_group_is_ok() {
        // Pid 0x3fff_fff0 is above pid_max, so no such group can exist.
        let pgid = Pid::from_raw(0x3fff_fff0);
        assert!(kill_group(pgid, Signal::SIGTERM).is_ok());
        assert!(!group_alive(pgid));
    }
}
