//! The hosts a sandboxed command may reach through the proxy: the entries of
//! `sandbox.network.allowedDomains`, each an exact name (`github.com`), a suffix
//! (`*.npmjs.org`, subdomains only) or an IP address, with an optional `:port`
//! (`localhost:8080`, `[::1]:8080`). Names compare case-insensitively, without a trailing
//! dot. An entry without a port allows every port of that host.
//!
//! One entry's parse, [`HostPattern`], belongs to the settings (`config::host_pattern`,
//! re-exported here); this file holds the list and the proxy's refusal texts.

use crew_config::host_pattern::normalize;
pub use crew_config::host_pattern::{HostPattern, PatternError};

/// The parsed `allowedDomains` list. Empty: the proxy lets nothing through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    patterns: Vec<HostPattern>,
}

impl AllowList {
    /// Parses every entry; the first bad one is the error.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, PatternError> {
        let patterns = entries
            .iter()
            .map(|e| HostPattern::parse(e.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { patterns })
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `host:port` is listed.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.patterns.iter().any(|p| p.matches(host, port))
    }

    /// The entries, as they would be written back.
    pub fn patterns(&self) -> &[HostPattern] {
        &self.patterns
    }
}

/// The message a refused connection gets (the HTTP 403 body, the log line): it names the
/// host and the setting to change.
pub fn refusal_message(host: &str, port: u16) -> String {
    let h = normalize(host);
    let shown = if h.contains(':') { format!("[{h}]") } else { h };
    format!(
        "crew's sandbox refused a connection to {shown}:{port}: the host is not in \
         sandbox.network.allowedDomains. To allow it, add \"{shown}\" (every port) or \
         \"{shown}:{port}\" to sandbox.network.allowedDomains in ~/.crew/settings.json or \
         .crew/settings.local.json"
    )
}

/// The note a command's result carries when the proxy refused some of its connections
/// (`host:port` each), so a failure caused by the sandbox says so; `None` when none was.
pub fn refused_note(refused: &[String]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    Some(format!(
        "note: the sandbox blocked network connections to {}: not in \
         sandbox.network.allowedDomains. If the command needs them, add the hosts there in \
         ~/.crew/settings.json or .crew/settings.local.json",
        refused.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_suffixes_and_ports_match_as_documented() {
        let list = AllowList::parse(&[
            "GitHub.com",
            "*.npmjs.org",
            "localhost:8080",
            "[::1]:9000",
            "10.0.0.1",
        ])
        .unwrap();
        assert!(list.allows("github.com", 443));
        assert!(list.allows("GITHUB.COM.", 80));
        assert!(
            !list.allows("api.github.com", 443),
            "an exact name is not a suffix"
        );
        assert!(!list.allows("evilgithub.com", 443));
        assert!(list.allows("registry.npmjs.org", 443));
        assert!(list.allows("a.b.npmjs.org", 443));
        assert!(
            !list.allows("npmjs.org", 443),
            "`*.` covers subdomains only"
        );
        assert!(!list.allows("npmjs.org.evil.com", 443));
        assert!(!list.allows("evilnpmjs.org", 443));
        assert!(list.allows("localhost", 8080));
        assert!(
            !list.allows("localhost", 8081),
            "the port is part of the entry"
        );
        assert!(list.allows("::1", 9000));
        assert!(list.allows("[::1]", 9000));
        assert!(!list.allows("::1", 9001));
        assert!(list.allows("10.0.0.1", 22));
        assert!(
            !list.allows("127.0.0.1", 8080),
            "an address is not its name"
        );
        assert!(!AllowList::default().allows("localhost", 80));
    }

    #[test]
    fn bad_entries_are_errors_that_say_what_to_write() {
        for bad in [
            "",
            "*",
            "https://github.com",
            "github.com/path",
            "git*hub.com",
            "*.",
            "host:0",
            "host:99999",
            "host:http",
            "[::1",
            "[::1]x",
            "exa mple.com",
        ] {
            let e = HostPattern::parse(bad).unwrap_err();
            assert_eq!(e.entry, bad);
            assert!(!e.reason.is_empty());
        }
        let e = AllowList::parse(&["ok.com", "https://x"]).unwrap_err();
        assert_eq!(e.entry, "https://x");
    }

    #[test]
    fn entries_print_back_as_written() {
        for e in ["github.com", "*.npmjs.org", "localhost:8080", "[::1]:9000"] {
            assert_eq!(HostPattern::parse(e).unwrap().to_string(), e);
        }
    }

    #[test]
    fn the_refusal_names_the_host_and_the_setting() {
        let m = refusal_message("Evil.example", 443);
        assert!(m.contains("evil.example:443"), "{m}");
        assert!(m.contains("sandbox.network.allowedDomains"), "{m}");
        assert!(refusal_message("::1", 80).contains("[::1]:80"));
    }
}
