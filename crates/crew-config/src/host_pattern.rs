//! One entry of `sandbox.network.allowedDomains`: an exact name (`github.com`), a suffix
//! (`*.npmjs.org`, subdomains only) or an IP address, with an optional `:port`
//! (`localhost:8080`, `[::1]:8080`). Names compare case-insensitively, without a trailing
//! dot. An entry without a port allows every port of that host. The settings loader
//! validates each entry with it; the sandbox's proxy matches connections against the list
//! of them (`sandbox::net::allow`).

use std::fmt;

/// An `allowedDomains` entry that cannot be used; the message says what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{entry}`: {reason}")]
pub struct PatternError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it and what to write instead.
    pub reason: &'static str,
}

/// Which host names an entry covers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// Exactly this name or address (lowercase, no trailing dot, no brackets).
    Exact(String),
    /// Any name ending in this suffix, which starts with a dot (`*.example.com` →
    /// `.example.com`): subdomains only, not `example.com` itself.
    Suffix(String),
}

/// One allowed host, with an optional port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    port: Option<u16>,
}

impl HostPattern {
    /// Parses one entry.
    pub fn parse(entry: &str) -> Result<Self, PatternError> {
        let err = |reason| PatternError {
            entry: entry.to_string(),
            reason,
        };
        let text = entry.trim();
        if text.is_empty() {
            return Err(err(
                "an empty entry; write a host name such as `github.com`",
            ));
        }
        if text.contains("://") || text.contains('/') {
            return Err(err(
                "write a host name with an optional port (`example.com`, `example.com:8080`), \
                 not a URL or a path",
            ));
        }
        let (host, port) = split_port(text).map_err(err)?;
        let host = normalize(host);
        if host == "*" {
            return Err(err(
                "`*` would let every host through; list the hosts (`*.example.com` covers \
                 subdomains)",
            ));
        }
        let host = if let Some(suffix) = host.strip_prefix("*.") {
            if suffix.is_empty() || suffix.contains('*') {
                return Err(err("write a suffix as `*.example.com`"));
            }
            HostMatch::Suffix(format!(".{suffix}"))
        } else {
            if host.is_empty() || host.contains('*') {
                return Err(err(
                    "a wildcard may only start an entry, as in `*.example.com`",
                ));
            }
            if !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
            {
                return Err(err(
                    "a host name has only letters, digits, `.`, `-` and `_` (write \
                     internationalised names in their `xn--` form)",
                ));
            }
            HostMatch::Exact(host)
        };
        Ok(Self { host, port })
    }

    /// Whether `host:port` is covered.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = normalize(host);
        match &self.host {
            HostMatch::Exact(h) => *h == host,
            HostMatch::Suffix(s) => host.len() > s.len() && host.ends_with(s.as_str()),
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Exact(h) if h.contains(':') => write!(f, "[{h}]")?,
            HostMatch::Exact(h) => f.write_str(h)?,
            HostMatch::Suffix(s) => write!(f, "*{s}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// Splits `host[:port]`; a bracketed IPv6 address keeps its colons (`[::1]:80`), and an
/// unbracketed one (`::1`) has no port.
fn split_port(text: &str) -> Result<(&str, Option<u16>), &'static str> {
    const BAD_PORT: &str = "the port after `:` must be a number from 1 to 65535";
    if let Some(rest) = text.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err("an IPv6 address in brackets needs its closing `]`");
        };
        return match after.strip_prefix(':') {
            None if after.is_empty() => Ok((host, None)),
            None => Err("after `]` only `:PORT` may follow"),
            Some(p) => Ok((host, Some(port_number(p).ok_or(BAD_PORT)?))),
        };
    }
    match text.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => Ok((text, None)),
        Some((host, p)) => Ok((host, Some(port_number(p).ok_or(BAD_PORT)?))),
        None => Ok((text, None)),
    }
}

fn port_number(text: &str) -> Option<u16> {
    text.parse::<u16>().ok().filter(|p| *p != 0)
}

/// A host name as entries compare it: lowercase, no trailing dot, no IPv6 brackets.
pub fn normalize(host: &str) -> String {
    let h = host.trim();
    let h = h
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(h);
    h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase()
}
