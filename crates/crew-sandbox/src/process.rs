//! Child processes in their own process group, killed as a group.
//!
//! A shell command may start grandchildren (`make -j`, `sleep 300 &`) that outlive the
//! shell and keep its pipes open. Each command therefore runs as the leader of a new
//! session and process group (no controlling terminal); on timeout, cancellation, drop, or after the shell exits, the whole
//! group is terminated (SIGTERM, a short grace, then SIGKILL), and so is every process
//! the command started that left the group (`setsid`, a double fork): the guardian that
//! leads the group is their subreaper and ends them all before it exits. `run_command` uses
//! [`run_in_group`]; background tasks can build on [`shell_command`], [`GroupChild`] and
//! [`terminate_group`]. How the child is built (environment, session, confinement) is in
//! `process/shell.rs`. Every command dies with crew, even a crew killed with SIGKILL:
//! its group is led by a guardian that watches crew's lifeline (`process/lifeline.rs`).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::CommandSandbox;
use super::landlock::SandboxError;

mod capture;
mod group;
mod lifeline;
mod reaper;
mod shell;

pub use capture::Capture;
pub use group::{
    Ended, GroupChild, group_alive, kill_group, kill_group_and_escapees, terminate_group,
};
pub use lifeline::guard_command;
pub use shell::{ShellCommand, shell_command, shell_command_hiding, shell_command_with};

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long output is still read after the shell exited or was killed, for data
/// already in the pipes; a process that escaped the group cannot hold us longer.
pub const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Bytes kept of each of stdout and stderr (head and tail; the middle is cut).
pub const OUTPUT_CAP_BYTES: usize = 20_000;

/// Bytes kept of each stream when the whole stream is saved to a file: the preview.
pub const SAVED_PREVIEW_BYTES: usize = 6_000;

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
    /// Processes the command left running when its shell exited (in its group, or
    /// escaped from it with `setsid`) were killed.
    pub leftovers_killed: bool,
    /// A process kept the output pipes open past the drain grace; reading was stopped.
    pub output_abandoned: bool,
    /// The loud report when the command changed protected files and they were restored.
    pub protected_restored: Option<String>,
    /// The `host:port` targets the sandbox's network proxy refused.
    pub network_refused: Vec<String>,
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
    run_in_group_saving(command, cwd, timeout, cancel, sandbox, None, None).await
}

/// [`run_in_group`], writing a stream that outgrows its preview whole to a file as it is
/// read: stdout to `save_to`, stderr beside it (`<name>.stderr.txt`). Memory stays at
/// the preview size however much the command prints. A confined command is also hidden
/// what `walk` (the session's `Read` deny rules) denies ([`shell_command_hiding`]).
pub async fn run_in_group_saving(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    sandbox: &CommandSandbox,
    save_to: Option<&Path>,
    walk: Option<&Arc<crew_policy::walk::WalkFilter>>,
) -> Result<ProcessOutput, ProcessError> {
    let mut shell = shell_command_hiding(command, cwd, sandbox, walk)?;
    let captures = match save_to {
        Some(path) => (
            Capture::spilling(SAVED_PREVIEW_BYTES, path.to_path_buf()),
            Capture::spilling(SAVED_PREVIEW_BYTES, path.with_extension("stderr.txt")),
        ),
        None => (
            Capture::new(OUTPUT_CAP_BYTES),
            Capture::new(OUTPUT_CAP_BYTES),
        ),
    };
    let ran = run_with_captures(&mut shell.cmd, cwd, timeout, cancel, captures).await;
    let left_running = shell.left_running();
    // Restore protected files however the command ended (it may have been killed).
    let restored = shell.guard.finish();
    let refused = shell.guard.network_refusals();
    match ran {
        Ok(mut out) => {
            out.protected_restored = restored;
            out.network_refused = refused;
            out.leftovers_killed |= left_running;
            Ok(out)
        }
        Err(ProcessError::TimedOut {
            limit,
            pgid,
            mut output,
        }) => {
            output.protected_restored = restored;
            output.network_refused = refused;
            Err(ProcessError::TimedOut {
                limit,
                pgid,
                output,
            })
        }
        Err(ProcessError::Cancelled { pgid, mut output }) => {
            output.protected_restored = restored;
            output.network_refused = refused;
            Err(ProcessError::Cancelled { pgid, output })
        }
        Err(e) => Err(e),
    }
}

/// [`run_in_group`] for a command built by [`shell_command`] or [`shell_command_with`]
/// (the caller finishes its guard).
pub async fn run_command_in_group(
    cmd: &mut Command,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    let captures = (
        Capture::new(OUTPUT_CAP_BYTES),
        Capture::new(OUTPUT_CAP_BYTES),
    );
    run_with_captures(cmd, cwd, timeout, cancel, captures).await
}

async fn run_with_captures(
    cmd: &mut Command,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    (stdout, stderr): (Capture, Capture),
) -> Result<ProcessOutput, ProcessError> {
    let mut group = GroupChild::spawn(cmd, cwd)?;
    let stdout = Arc::new(Mutex::new(stdout));
    let stderr = Arc::new(Mutex::new(stderr));
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
        protected_restored: None,
        network_refused: Vec::new(),
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
        let mut buf = vec![0u8; 64 * 1024];
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
}
