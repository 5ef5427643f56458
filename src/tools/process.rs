//! Child processes in their own process group, killed as a group.
//!
//! A shell command may start grandchildren (`make -j`, `sleep 300 &`) that outlive the
//! shell and keep its pipes open. Each command therefore runs as the leader of a new
//! process group; on timeout, cancellation, drop, or after the shell exits, the whole
//! group is terminated (SIGTERM, a short grace, then SIGKILL). `run_command` uses
//! [`run_in_group`]; background tasks can build on [`shell_command`], [`GroupChild`] and
//! [`terminate_group`].

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::CommandSandbox;
use super::landlock::{self, KernelSupport, NOT_ENFORCED_ERRNO, PreparedLandlock, SandboxError};

mod capture;

pub use capture::Capture;

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long output is still read after the shell exited or was killed, for data
/// already in the pipes; a process that escaped the group cannot hold us longer.
pub const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Bytes kept of each of stdout and stderr (head and tail; the middle is cut).
pub const OUTPUT_CAP_BYTES: usize = 20_000;

/// Why a command could not be run to completion.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// `bash` could not be started.
    #[error(
        "could not start `bash` in {cwd}: {source}. Check that bash is installed and that the working directory exists"
    )]
    Spawn {
        /// The working directory the command was to run in.
        cwd: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The OS sandbox refused or failed to confine the command.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The command ran past its time limit; its whole process group was killed.
    #[error(
        "the command did not finish within {} s; its whole process group ({pgid}) was killed. \
         Use a larger timeout_ms (at most 600000) or run long jobs in the background",
        limit.as_secs_f64()
    )]
    TimedOut {
        /// The limit that was exceeded.
        limit: Duration,
        /// The group that was killed.
        pgid: Pid,
        /// What the command printed before it was killed.
        output: Box<ProcessOutput>,
    },
    /// The caller cancelled; the whole process group was killed.
    #[error("the command was cancelled; its whole process group ({pgid}) was killed")]
    Cancelled {
        /// The group that was killed.
        pgid: Pid,
        /// What the command printed before it was killed.
        output: Box<ProcessOutput>,
    },
    /// Waiting for the child failed.
    #[error("waiting for the command failed: {0}")]
    Wait(std::io::Error),
}

/// What a finished (or killed) command left behind.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// How the shell ended; `None` when it was killed and could not be reaped.
    pub status: Option<ExitStatus>,
    /// Captured standard output (capped).
    pub stdout: Capture,
    /// Captured standard error (capped).
    pub stderr: Capture,
    /// The process group the command ran in.
    pub pgid: Pid,
    /// Processes of the group were still running after the shell exited and were killed.
    pub leftovers_killed: bool,
    /// A process kept the output pipes open past the drain grace; reading was stopped.
    pub output_abandoned: bool,
}

impl ProcessOutput {
    /// The shell's exit code, if it exited normally.
    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// The signal that ended the shell, if any.
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }
}

/// Builds `bash -c COMMAND` in `cwd` with stdin from /dev/null, stdout and stderr piped,
/// as the leader of a new process group, confined by `sandbox`. The caller may still
/// redirect stdout/stderr before spawning it with [`GroupChild::spawn`].
pub fn shell_command(
    command: &str,
    cwd: &Path,
    sandbox: &CommandSandbox,
) -> Result<Command, ProcessError> {
    shell_command_with(command, cwd, sandbox, landlock::kernel_support())
}

/// [`shell_command`] with the kernel's Landlock support given explicitly, so the
/// fail-closed refusal can be exercised on kernels that do have Landlock.
pub fn shell_command_with(
    command: &str,
    cwd: &Path,
    sandbox: &CommandSandbox,
    support: KernelSupport,
) -> Result<Command, ProcessError> {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let CommandSandbox::Landlock { writable_roots } = sandbox {
        let tmp = landlock::sandbox_temp_dir();
        cmd.env("TMPDIR", &tmp).env("TMP", &tmp).env("TEMP", &tmp);
        let mut prepared = PreparedLandlock::prepare(writable_roots, support)?;
        // SAFETY: the closure runs between fork and exec; `apply` only makes system
        // calls on a ruleset built beforehand and does not allocate or take locks.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
    }
    Ok(cmd)
}

/// A spawned process-group leader. Dropping it kills the whole group (SIGKILL), so an
/// aborted task leaves no processes behind.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    pgid: Pid,
    armed: bool,
}

impl GroupChild {
    /// Spawns `cmd`, which must have been built with [`shell_command`] (or otherwise set
    /// `process_group(0)`), and takes charge of its group.
    pub fn spawn(cmd: &mut Command, cwd: &Path) -> Result<Self, ProcessError> {
        let child = cmd.spawn().map_err(|source| {
            if source.raw_os_error() == Some(NOT_ENFORCED_ERRNO) {
                ProcessError::Sandbox(SandboxError::NotEnforced)
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

    /// Terminates the whole group (SIGTERM, grace, SIGKILL) and reaps the leader.
    pub async fn terminate(&mut self) -> Option<ExitStatus> {
        terminate_group(self.pgid, KILL_GRACE).await;
        let status = self.child.wait().await.ok();
        self.armed = false;
        status
    }

    /// Stops the drop guard, once the group is known to be gone.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if self.armed {
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

/// Runs `bash -c COMMAND` in `cwd` in its own process group under `sandbox`, capturing
/// capped stdout and stderr. On timeout or when `cancel` fires, the whole group is
/// killed and an error carrying the partial output is returned. When the shell exits,
/// processes it left running in its group are killed too, so nothing outlives the call.
/// A non-zero exit code is a normal result.
pub async fn run_in_group(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    sandbox: &CommandSandbox,
) -> Result<ProcessOutput, ProcessError> {
    let mut cmd = shell_command(command, cwd, sandbox)?;
    run_command_in_group(&mut cmd, cwd, timeout, cancel).await
}

/// [`run_in_group`] for a command built by [`shell_command`] or [`shell_command_with`].
pub async fn run_command_in_group(
    cmd: &mut Command,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    let mut group = GroupChild::spawn(cmd, cwd)?;
    let stdout = Arc::new(Mutex::new(Capture::new(OUTPUT_CAP_BYTES)));
    let stderr = Arc::new(Mutex::new(Capture::new(OUTPUT_CAP_BYTES)));
    let mut readers = Readers(Vec::new());
    if let Some(out) = group.child_mut().stdout.take() {
        readers.0.push(spawn_reader(out, Arc::clone(&stdout)));
    }
    if let Some(err) = group.child_mut().stderr.take() {
        readers.0.push(spawn_reader(err, Arc::clone(&stderr)));
    }
    let pgid = group.pgid();

    let waited = group.wait_or_kill(Some(timeout), cancel).await;
    let mut leftovers_killed = false;
    match &waited {
        // The shell is gone; whatever it left running in its group must not outlive it.
        Ok(_) if group_alive(pgid) => {
            terminate_group(pgid, KILL_GRACE).await;
            leftovers_killed = true;
        }
        Err(Ended::Wait(_)) => terminate_group(pgid, KILL_GRACE).await,
        // Timed out or cancelled: `wait_or_kill` already killed the group.
        _ => {}
    }
    group.disarm();
    let output_abandoned = !readers.drain().await;
    let snapshot = |c: &Arc<Mutex<Capture>>| {
        c.lock()
            .map(|c| c.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    };
    let mut output = ProcessOutput {
        status: None,
        stdout: snapshot(&stdout),
        stderr: snapshot(&stderr),
        pgid,
        leftovers_killed,
        output_abandoned,
    };
    match waited {
        Ok(status) => {
            output.status = Some(status);
            Ok(output)
        }
        Err(Ended::TimedOut) => Err(ProcessError::TimedOut {
            limit: timeout,
            pgid,
            output: Box::new(output),
        }),
        Err(Ended::Cancelled) => Err(ProcessError::Cancelled {
            pgid,
            output: Box::new(output),
        }),
        Err(Ended::Wait(e)) => Err(ProcessError::Wait(e)),
    }
}

/// Copies a pipe into `capture` until end of file.
fn spawn_reader<R>(mut pipe: R, capture: Arc<Mutex<Capture>>) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => match capture.lock() {
                    Ok(mut c) => c.push(&buf[..n]),
                    Err(poisoned) => poisoned.into_inner().push(&buf[..n]),
                },
            }
        }
    })
}

/// The pipe readers of one command; aborted when dropped, so a cancelled call does not
/// leave them waiting on a pipe held open by an escaped process.
struct Readers(Vec<JoinHandle<()>>);

impl Readers {
    /// Waits up to [`DRAIN_GRACE`] for the readers to reach end of file; returns whether
    /// all did (the rest are aborted on drop).
    async fn drain(&mut self) -> bool {
        let all = futures::future::join_all(self.0.iter_mut());
        tokio::time::timeout(DRAIN_GRACE, all).await.is_ok()
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        for r in &self.0 {
            r.abort();
        }
    }
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

    #[tokio::test]
    async fn exit_code_and_streams_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_in_group(
            "echo out; echo err >&2; exit 3",
            dir.path(),
            Duration::from_secs(30),
            &CancellationToken::new(),
            &CommandSandbox::None,
        )
        .await
        .unwrap();
        assert_eq!(out.exit_code(), Some(3));
        assert_eq!(out.stdout.text(), "out\n");
        assert_eq!(out.stderr.text(), "err\n");
        assert!(!out.leftovers_killed);
    }

    #[tokio::test]
    async fn missing_cwd_is_a_spawn_error_naming_it() {
        let err = run_in_group(
            "true",
            Path::new("/no/such/dir/crew"),
            Duration::from_secs(30),
            &CancellationToken::new(),
            &CommandSandbox::None,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("/no/such/dir/crew"), "{err}");
    }

    #[test]
    fn kill_group_of_a_missing_group_is_ok() {
        // Pid 0x3fff_fff0 is above pid_max, so no such group can exist.
        let pgid = Pid::from_raw(0x3fff_fff0);
        assert!(kill_group(pgid, Signal::SIGTERM).is_ok());
        assert!(!group_alive(pgid));
    }
}
