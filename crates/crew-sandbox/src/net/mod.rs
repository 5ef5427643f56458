//! The network side of the sandbox. A sandboxed command runs in its own network namespace
//! with only loopback ([`namespace`]): it reaches nothing outside, not even a server on the
//! host's `127.0.0.1`, and no abstract Unix socket of the host (those are per namespace).
//! When `sandbox.network.allowedDomains` lists hosts, traffic leaves only through a
//! forward proxy crew runs outside the sandbox ([`proxy`], [`http`], [`socks`]) on a
//! listener inside the namespace ([`bridge`]), advertised to the command through
//! `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`; it lets through only the listed hosts
//! ([`allow`]) and refuses the rest with a message naming the host and the setting, or,
//! in an interactive session, asks a human about it once ([`ask`]).
//! Where namespaces are unavailable, Landlock's TCP rules are the fallback fence
//! ([`tcp_fence`], [`Tier`]).
//!
//! Plain functions and types with no tie to the permission engine: the settings layer
//! hands the parsed list over with [`set_policy`], once per process, as it does for the
//! environment scrub.

pub mod allow;
pub mod ask;
pub mod bridge;
pub mod http;
pub mod namespace;
pub mod proxy;
pub mod socks;
pub mod tcp_fence;
#[cfg(test)]
mod tests;

use std::io;
use std::sync::{Arc, OnceLock, RwLock};

pub use allow::{AllowList, HostPattern, PatternError};
pub use bridge::ProxySession;
pub use namespace::{NET_NS_ERRNO, PROXY_PORT, PreparedNet};
pub use tcp_fence::TcpFence;

/// What sandboxed commands may reach (`sandbox.network.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    /// The hosts the proxy lets through; empty: no proxy, loopback only.
    pub allowed: AllowList,
    /// `allowLocalBinding`: commands may listen on local ports. Inside a network namespace
    /// they always may (nobody outside can reach those ports); it matters only where the
    /// namespace is unavailable and Landlock's TCP rules are the fence.
    pub allow_local_binding: bool,
}

impl NetworkPolicy {
    /// The policy for the `sandbox.network` settings (already checked when loaded; a bad
    /// entry is still an error naming it).
    pub fn from_settings<S: AsRef<str>>(
        allowed_domains: &[S],
        allow_local_binding: bool,
    ) -> Result<Self, PatternError> {
        Ok(Self {
            allowed: AllowList::parse(allowed_domains)?,
            allow_local_binding,
        })
    }
}

static POLICY: RwLock<Option<Arc<NetworkPolicy>>> = RwLock::new(None);

/// Sets the network policy for the commands this process starts (from the settings).
/// Replaces the previous one.
pub fn set_policy(policy: NetworkPolicy) {
    if let Ok(mut p) = POLICY.write() {
        *p = Some(Arc::new(policy));
    }
}

/// The network policy in force (loopback only until [`set_policy`] is called).
pub fn policy() -> Arc<NetworkPolicy> {
    POLICY
        .read()
        .ok()
        .and_then(|p| p.clone())
        .unwrap_or_default()
}

/// Whether network namespaces with a working loopback can be made here, probed once per
/// process by starting `true` in one. Where they cannot (an AppArmor-restricted
/// distribution, a container's seccomp profile), Landlock's TCP rules (ABI 4) are the
/// only network fence left.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let Ok(prepared) = PreparedNet::loopback_only() else {
            return false;
        };
        let mut cmd = std::process::Command::new("true");
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `apply` only makes system calls on data prepared above.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || prepared.apply());
        }
        let ok = cmd.status().is_ok_and(|s| s.success());
        if !ok {
            tracing::warn!(
                "network namespaces are not available: sandboxed commands are not cut off \
                 from the network by a namespace"
            );
        }
        ok
    })
}

/// The variables that point a command at the proxy inside its namespace (every spelling
/// tools read), and those it must not inherit (`NO_PROXY` would send some hosts around
/// the proxy, which cannot work from the namespace and would only confuse).
pub fn proxy_env(port: u16) -> (Vec<(&'static str, String)>, [&'static str; 2]) {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let set = vec![
        ("HTTP_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
    ];
    (set, ["NO_PROXY", "no_proxy"])
}

/// Which layer cuts a sandboxed command off from the network on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Its own network namespace with only loopback (and the proxy inside it).
    Namespace,
    /// No namespaces: Landlock's TCP rules (ABI 4) allow only the proxy's port.
    LandlockTcp,
    /// Neither: sandboxed commands reach the network as crew does.
    Open,
}

/// The test-only switch that makes [`tier`] pass over network namespaces, so the
/// Landlock tier can be exercised on a machine that has both.
pub const SIMULATE_NO_NAMESPACES_ENV: &str = "CREW_TEST_SIMULATE_NO_NETWORK_NAMESPACES";

/// The network tier of this machine (probed once).
pub fn tier() -> Tier {
    let simulated = std::env::var_os(SIMULATE_NO_NAMESPACES_ENV).is_some_and(|v| v == "1");
    if !simulated && available() {
        Tier::Namespace
    } else if tcp_fence::supported() {
        Tier::LandlockTcp
    } else {
        Tier::Open
    }
}

/// One sandboxed command's network set-up: the namespace for the child or the Landlock
/// TCP fence, the proxy session for crew (when hosts are listed) and the proxy's port.
#[derive(Debug)]
pub struct CommandNetwork {
    /// Applied in the child, after the mount namespace (the namespace tier).
    pub namespace: Option<PreparedNet>,
    /// Added to the Landlock ruleset (the Landlock tier).
    pub fence: Option<TcpFence>,
    /// Serves the proxy while the command runs; keep it until the command has ended.
    pub proxy: Option<ProxySession>,
    /// The port the command reaches the proxy on (`127.0.0.1`), when it runs.
    pub proxy_port: Option<u16>,
}

impl CommandNetwork {
    /// Prepares the network of one sandboxed command for `policy` on this machine's
    /// [`tier`], starting the proxy session when hosts are listed.
    pub fn prepare(policy: &NetworkPolicy) -> io::Result<Self> {
        // With an asker (an interactive session) the proxy runs even for an empty list,
        // so that a new host can be asked about.
        let ask = ask::asker();
        let rules = (!policy.allowed.is_empty() || ask.is_some()).then(|| proxy::Rules {
            allow: Arc::new(policy.allowed.clone()),
            refusals: proxy::Refusals::default(),
            ask,
            saves: ask::Deferred::default(),
        });
        match (tier(), rules) {
            (Tier::Namespace, None) => Ok(Self {
                namespace: Some(PreparedNet::loopback_only()?),
                fence: None,
                proxy: None,
                proxy_port: None,
            }),
            (Tier::Namespace, Some(rules)) => {
                let (namespace, ours) = PreparedNet::with_proxy()?;
                Ok(Self {
                    namespace: Some(namespace),
                    fence: None,
                    proxy: Some(ProxySession::receive(ours, rules)?),
                    proxy_port: Some(PROXY_PORT),
                })
            }
            (Tier::LandlockTcp, rules) => {
                let (proxy, proxy_port) = match rules {
                    Some(rules) => {
                        // The listener and its task need crew's runtime (present whenever
                        // crew starts a command; a bare library caller gets an error).
                        tokio::runtime::Handle::try_current().map_err(|_| {
                            io::Error::other(
                                "the sandbox's network proxy needs crew's async runtime",
                            )
                        })?;
                        let std = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
                        std.set_nonblocking(true)?;
                        let port = std.local_addr()?.port();
                        let listener = tokio::net::TcpListener::from_std(std)?;
                        (Some(ProxySession::serve(listener, rules)), Some(port))
                    }
                    None => (None, None),
                };
                Ok(Self {
                    namespace: None,
                    fence: Some(TcpFence {
                        proxy_port,
                        allow_bind: policy.allow_local_binding,
                    }),
                    proxy,
                    proxy_port,
                })
            }
            (Tier::Open, _) => {
                static WARNED: OnceLock<()> = OnceLock::new();
                WARNED.get_or_init(|| {
                    tracing::warn!(
                        "neither network namespaces nor Landlock TCP rules (Linux 6.7+) are \
                         available: sandboxed commands are not cut off from the network"
                    )
                });
                Ok(Self {
                    namespace: None,
                    fence: None,
                    proxy: None,
                    proxy_port: None,
                })
            }
        }
    }

    /// Sets the proxy variables on `cmd` when the proxy runs.
    pub fn configure(&self, cmd: &mut tokio::process::Command) {
        let Some(port) = self.proxy_port else {
            return;
        };
        let (set, removed) = proxy_env(port);
        for (k, v) in set {
            cmd.env(k, v);
        }
        for k in removed {
            cmd.env_remove(k);
        }
    }
}
