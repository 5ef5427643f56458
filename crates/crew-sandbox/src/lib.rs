//! OS-level confinement of the commands agents run, layer by layer: every command gets
//! a scrubbed environment ([`env`](mod@env)) and its own session with no controlling terminal;
//! a confined command (`CommandSandbox::Landlock`) also gets resource limits ([`limits`]), a private mount namespace
//! with the protected paths read-only ([`mount_ns`], [`protect`]) and what it may not
//! see hidden ([`hidden`]: credential stores, crew's home but its own workspace, `Read`
//! deny rules, links to them, escape sockets) and, where the kernel
//! allows, its own PID namespace with a fresh `/proc` ([`pid_ns`]), then Landlock
//! ([`landlock`]) as the outer fence, and a snapshot of the protected files that is
//! restored after it ends ([`Guard`]). Its network is loopback only, or the allow-list
//! proxy ([`net`]).
//!
//! Also the disk budget of kept tool results ([`results_budget`]): a confined command's
//! output is spilled to the session's results directory under it as it streams.
//!
//! Below the tools that run commands in it and above the permission decision
//! (`crew-policy`), whose rules and credential list say what to hide: this crate must
//! never depend on `crewmaster`, so an import that runs back up is a compile error. The
//! root crate re-exports it as `crewmaster::sandbox`.

mod cgroup_owner;
pub mod command;
pub mod env;
pub mod extra;
pub mod hidden;
pub mod hidden_scan;
pub mod hidden_veil;
pub mod landlock;
pub mod layers;
pub mod limit_settings;
pub mod limits;
pub mod mount_ns;
pub mod net;
pub mod pid_ns;
pub mod process;
pub mod profile;
pub mod protect;
pub mod results_budget;
#[cfg(test)]
mod test_kernel;
pub mod workspace_ns;

pub use command::CommandSandbox;
pub use profile::{NetworkAccess, SandboxProfile};

use std::path::PathBuf;

use protect::{Protected, Snapshot};

/// What must happen after a confined command ends: the protected files it could reach
/// without another layer stopping it are compared with their snapshot and restored.
#[derive(Debug, Default)]
pub struct Guard {
    snapshot: Option<Snapshot>,
    /// The command's network proxy, served until the guard is dropped.
    network: Option<net::ProxySession>,
    /// The command's cgroup and rlimits: its cgroup is removed when the guard is dropped,
    /// after the command's processes are gone.
    limits: Option<std::sync::Arc<limits::PreparedLimits>>,
}

impl Guard {
    /// A guard with nothing to check (unconfined commands).
    pub fn none() -> Self {
        Self::default()
    }

    /// Snapshots the protected paths below `writable_roots` that `read_only` does not
    /// already keep read-only.
    pub fn take(protected: &Protected, read_only: &[PathBuf]) -> Self {
        let snapshot = Snapshot::take(protected, read_only);
        Self {
            snapshot: (!snapshot.is_empty()).then_some(snapshot),
            limits: None,
            network: None,
        }
    }

    /// Keeps the command's network proxy serving until the guard is dropped.
    pub fn with_network(mut self, proxy: Option<net::ProxySession>) -> Self {
        self.network = proxy;
        self
    }

    /// The hosts (`host:port`) the network proxy refused so far, for the result's note.
    pub fn network_refusals(&self) -> Vec<String> {
        self.network
            .as_ref()
            .map(|p| p.refused())
            .unwrap_or_default()
    }

    /// The guard, also keeping the command's resource limits (its cgroup) alive until the
    /// guard is dropped.
    pub fn with_limits(mut self, limits: std::sync::Arc<limits::PreparedLimits>) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Restores what the command changed; returns the warning for the tool result (and
    /// logs it), or `None` when no protected file was touched.
    pub fn finish(&self) -> Option<String> {
        let lines = self
            .snapshot
            .as_ref()
            .map(Snapshot::restore)
            .unwrap_or_default();
        // After the restore, so a host a human allowed "always" meanwhile stays saved.
        if let Some(proxy) = &self.network {
            proxy.persist_approved();
        }
        if lines.is_empty() {
            return None;
        }
        for l in &lines {
            tracing::warn!("a confined command changed a protected file: {l}");
        }
        Some(format!(
            "WARNING: the command changed protected files (git hooks/config, settings), which \
             confined commands must not do. They were restored:\n- {}",
            lines.join("\n- ")
        ))
    }
}
