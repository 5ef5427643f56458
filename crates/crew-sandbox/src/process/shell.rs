//! Building the `bash -c` child: a scrubbed environment, its own session (so it has no
//! controlling terminal and leads its own process group), and, when confined, the
//! mount and PID namespaces and Landlock set up between `fork` and `exec`.
//!
//! The spawned process is the command's guardian (`lifeline`): it leads the session and
//! process group, waits for its child and exits with its status, and kills the whole
//! group if crew dies first. With a PID namespace the guardian's child is an intermediate
//! that stays outside it: it waits for the shell (PID 1 inside) and exits with its
//! status. Killing the group kills them all; the shell dies with the intermediate, and
//! every process of the namespace with the shell.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::ProcessError;
use super::lifeline;
use crate::hidden::{HiddenSet, HideScope};
use crate::landlock::{self, KernelSupport, PreparedLandlock};
use crate::limits::{self, PreparedLimits};
use crate::mount_ns::PreparedMounts;
use crate::net::{self, CommandNetwork, NetworkPolicy};
use crate::profile::NetworkAccess;
use crate::protect::Protected;
use crate::{CommandSandbox, SandboxProfile};
use crate::{Guard, env};
use crate::{extra, layers};
use crew_policy::walk::WalkFilter;

/// A shell command ready to spawn, and the guard to finish once it has ended.
#[derive(Debug)]
pub struct ShellCommand {
    /// The command; stdout/stderr may still be redirected before spawning.
    pub cmd: Command,
    /// Restores protected files the command changed; call [`Guard::finish`] after it ends.
    pub guard: Guard,
    /// The read end of the guardian's report pipe (non-blocking): after the command has
    /// been waited for, [`ShellCommand::left_running`] says whether the guardian had to end
    /// processes it left running. `None` when the command runs unguarded.
    pub report: Option<OwnedFd>,
}

impl ShellCommand {
    /// Whether the guardian reported ending processes the command left running (in its
    /// group or escaped from it). Meaningful once the command has been waited for.
    pub fn left_running(&self) -> bool {
        left_running(self.report.as_ref())
    }
}

/// Reads the guardian's report from `report` (see [`ShellCommand::report`]).
pub(super) fn left_running(report: Option<&OwnedFd>) -> bool {
    let mut byte = [0u8; 1];
    report.is_some_and(|fd| {
        matches!(nix::unistd::read(fd, &mut byte), Ok(1)) && byte[0] == lifeline::LEFTOVERS
    })
}

/// Builds `bash -c COMMAND` in `cwd` with stdin from /dev/null, stdout and stderr piped,
/// as the leader of a new session (and so of a new process group), without secrets in
/// its environment, confined as `sandbox` and its profile say. A command no human
/// approved is refused when a layer its profile needs is missing here
/// ([`layers::Layers::refusal`]).
pub fn shell_command(
    command: &str,
    cwd: &Path,
    sandbox: &CommandSandbox,
) -> Result<ShellCommand, ProcessError> {
    shell_command_with(command, cwd, sandbox, landlock::kernel_support())
}

/// [`shell_command`] that also hides what `walk` (the session's `Read` deny rules, home
/// and results directory) says a confined command may not see; without it, the
/// credential stores, crew's home and the escape sockets are hidden all the same.
pub fn shell_command_hiding(
    command: &str,
    cwd: &Path,
    sandbox: &CommandSandbox,
    walk: Option<&std::sync::Arc<WalkFilter>>,
) -> Result<ShellCommand, ProcessError> {
    build(command, cwd, sandbox, landlock::kernel_support(), walk)
}

/// [`shell_command`] with the kernel's Landlock support given explicitly, so the
/// fail-closed refusal can be exercised on kernels that do have Landlock.
pub fn shell_command_with(
    command: &str,
    cwd: &Path,
    sandbox: &CommandSandbox,
    support: KernelSupport,
) -> Result<ShellCommand, ProcessError> {
    build(command, cwd, sandbox, support, None)
}

fn build(
    command: &str,
    cwd: &Path,
    sandbox: &CommandSandbox,
    support: KernelSupport,
    walk: Option<&std::sync::Arc<WalkFilter>>,
) -> Result<ShellCommand, ProcessError> {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in env::withheld() {
        cmd.env_remove(name);
    }
    let mut guard = Guard::none();
    let mut mounts: Option<PreparedMounts> = None;
    let mut ruleset: Option<PreparedLandlock> = None;
    let mut resource_limits: Option<std::sync::Arc<PreparedLimits>> = None;
    let mut network: Option<CommandNetwork> = None;
    if let CommandSandbox::Landlock {
        writable_roots,
        profile,
    } = sandbox
        && profile.is_sandboxed()
    {
        let profile = *profile;
        let mut held = layers::probe();
        held.landlock = support == KernelSupport::Available;
        if let KernelSupport::Unavailable(why) = support
            && !profile.human_backed()
        {
            return Err(ProcessError::Sandbox(landlock::SandboxError::Unsupported(
                why.to_string(),
            )));
        }
        if let Some(why) = held.refusal(profile) {
            return Err(ProcessError::Sandbox(landlock::SandboxError::Unavailable(
                why,
            )));
        }
        let tmp = landlock::sandbox_temp_dir();
        cmd.env("TMPDIR", &tmp).env("TMP", &tmp).env("TEMP", &tmp);
        // Loopback only (the read profile), or the allow-list proxy (`sandbox::net`);
        // bypass keeps the host's network.
        let allowed = match profile.network() {
            NetworkAccess::None => Some(std::sync::Arc::new(NetworkPolicy::default())),
            NetworkAccess::AllowList => Some(net::policy()),
            NetworkAccess::Open => None,
        };
        if let Some(allowed) = allowed {
            let n = CommandNetwork::prepare(&allowed)
                .map_err(|e| ProcessError::Sandbox(landlock::SandboxError::NetworkNamespace(e)))?;
            n.configure(&mut cmd);
            network = Some(n);
        }
        // A human-backed command (approved, bypass) runs with the layers that hold.
        if held.landlock {
            let fence = network.as_ref().and_then(|n| n.fence.as_ref());
            ruleset = Some(PreparedLandlock::prepare_with_network(
                writable_roots,
                profile,
                support,
                fence,
            )?);
        }
        let mut protected = Protected::find(writable_roots);
        if profile == SandboxProfile::Read {
            // Landlock lets a read write nothing below the roots: nothing to bind or restore.
            protected.pins.clear();
            protected.existing.clear();
            protected.watched.clear();
        }
        extra::add_to(&mut protected);
        let mut read_only: Vec<PathBuf> = Vec::new();
        if held.mount_ns {
            let walk = walk
                .cloned()
                .unwrap_or_else(|| std::sync::Arc::new(WalkFilter::credentials_only()));
            let mut scope = HideScope::new(walk, writable_roots, cwd);
            scope.allow_read = extra::allow_read();
            let mut hidden = HiddenSet::for_command(&scope);
            extra::extend_hidden(&mut hidden);
            let mut prepared = PreparedMounts::prepare(&protected, &hidden)
                .and_then(|p| p.with_cwd(cwd))
                .map_err(|e| ProcessError::Sandbox(landlock::SandboxError::MountNamespace(e)))?;
            if held.pid_ns {
                prepared = prepared.with_pid_namespace();
            }
            read_only = prepared.read_only().to_vec();
            // Nothing to bind and no PID namespace: no namespace needed.
            mounts = (!prepared.is_empty()).then_some(prepared);
        }
        guard = Guard::take(&protected, &read_only);
        let prepared = PreparedLimits::prepare(&limits::current())
            .map_err(|e| ProcessError::Sandbox(landlock::SandboxError::Limits(e)))?;
        let prepared = std::sync::Arc::new(prepared);
        guard = guard.with_limits(std::sync::Arc::clone(&prepared));
        resource_limits = Some(prepared);
    }
    let (net_ns, proxy) = match network {
        Some(n) => (n.namespace, n.proxy),
        None => (None, None),
    };
    let guard = guard.with_network(proxy);
    let lifeline = lifeline::lifeline();
    // The guardian's report pipe: read end kept here, write end for the guardian only
    // (close-on-exec, so the command never holds it).
    let (report, report_write) = match lifeline
        .map(|_| nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK))
    {
        Some(Ok((read, write))) => (Some(read), Some(write)),
        // Without it the command still runs guarded; only the leftovers note is lost.
        Some(Err(e)) => {
            tracing::warn!("cannot make a guardian report pipe ({e}): leftovers go unreported");
            (None, None)
        }
        None => (None, None),
    };
    let report_fd = report_write.as_ref().map(|w| w.as_raw_fd());
    // SAFETY: the closure runs between fork and exec. `setsid`, the guardian's `fork`, the mount, PID and network
    // namespace set-up (including its `fork`, `waitpid` and `_exit`) and the Landlock `apply` only
    // make system calls on data prepared above; none allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            // A new session: no controlling terminal (no /dev/tty to inject keys into),
            // and the child leads its own process group (pgid == pid), which the group
            // kill relies on.
            nix::unistd::setsid().map_err(io::Error::from)?;
            // The leader stays behind as the guardian that kills the group if crew dies.
            if let Some(fd) = lifeline {
                // `report_write` is owned by this closure, so the descriptor is open.
                let _owned = &report_write;
                lifeline::guard(fd, report_fd)?;
            }
            // Below the guardian: the command and all it starts are counted by its cgroup.
            if let Some(l) = &resource_limits {
                l.apply()?;
            }
            if let Some(m) = &mounts {
                m.apply()?;
            }
            if let Some(n) = &net_ns {
                n.apply()?;
            }
            if let Some(r) = &mut ruleset {
                r.apply()?;
            }
            Ok(())
        });
    }
    Ok(ShellCommand { cmd, guard, report })
}
