//! The fallback network fence where network namespaces are unavailable (an
//! AppArmor-restricted distribution, a container's seccomp profile): Landlock's TCP rules
//! (ABI 4, Linux 6.7+). A command may then connect over TCP only to the proxy's port on
//! the host's loopback, and bind a TCP port only with `allowLocalBinding`. It is weaker
//! than the namespace, and docs/security.md says how: Landlock rules name ports, not addresses
//! (a host elsewhere on the proxy's port could be reached), UDP is not covered before
//! ABI 10, and the host's abstract Unix sockets stay reachable.

use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError,
};

/// What the Landlock ruleset must add for the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFence {
    /// The proxy's port on the host's loopback, the one port a command may connect to;
    /// `None`: no TCP connection at all.
    pub proxy_port: Option<u16>,
    /// Whether commands may bind TCP ports (`allowLocalBinding`).
    pub allow_bind: bool,
}

impl TcpFence {
    /// Declares the TCP rights the ruleset handles (so everything not granted is denied);
    /// UDP too where the kernel knows it (best effort, ABI 10).
    pub fn handle(&self, ruleset: Ruleset) -> Result<Ruleset, RulesetError> {
        let mut tcp: landlock::BitFlags<AccessNet> = AccessNet::ConnectTcp.into();
        if !self.allow_bind {
            tcp |= AccessNet::BindTcp;
        }
        ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(tcp)?
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessNet::from_all(ABI::V10) & !AccessNet::from_all(ABI::V4))
    }

    /// Grants the one connection the command may make.
    pub fn grant(&self, created: RulesetCreated) -> Result<RulesetCreated, RulesetError> {
        match self.proxy_port {
            Some(port) => created.add_rule(NetPort::new(port, AccessNet::ConnectTcp)),
            None => Ok(created),
        }
    }
}

/// Whether the kernel's Landlock restricts TCP connect and bind (ABI 4), probed once.
pub fn supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::from_all(ABI::V4))
            .and_then(|r| r.create())
            .is_ok()
    })
}
