//! How a `WebFetch` rule matches the host a fetch reaches. Its specifier is
//! `domain:HOST`, with HOST written as a `sandbox.network.allowedDomains` entry
//! (`example.com` exactly, `*.example.com` its subdomains only, an optional `:port`; names
//! compare case-insensitively), since the two form one list; `domain:*` covers every
//! host, as `WebFetch` alone does.

use crew_config::host_pattern::HostPattern;

use super::matcher::Matcher;
use super::{RuleError, pattern_err};

/// The matcher of a `WebFetch` specifier (`domain:HOST`).
pub(super) fn domain_matcher(rule: &str, spec: &str) -> Result<Matcher, RuleError> {
    let Some(host) = spec.strip_prefix("domain:").map(str::trim) else {
        return Err(pattern_err(
            rule,
            "a WebFetch rule takes `domain:HOST`, as in `WebFetch(domain:example.com)` or \
             `WebFetch(domain:*.example.com)` for its subdomains",
        ));
    };
    if host == "*" {
        return Ok(Matcher::Any);
    }
    HostPattern::parse(host)
        .map(Matcher::Host)
        .map_err(|e| pattern_err(rule, e))
}

/// Whether a `WebFetch` rule's matcher covers `host:port`.
pub(super) fn host_matches(m: &Matcher, host: &str, port: u16) -> bool {
    match m {
        Matcher::Any => true,
        Matcher::Host(p) => p.matches(host, port),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::rule;
    use super::super::{Layer, Rule, RuleError, RuleKind, Subject};

    #[test]
    fn web_fetch_rules_match_hosts_as_allowed_domains_entries_do() {
        let host = |r: &str, host: &str, port: u16| rule(r).matches(&Subject::Host { host, port });
        assert!(host("WebFetch(domain:example.com)", "example.com", 443));
        assert!(host("WebFetch(domain:Example.COM)", "example.com", 80));
        assert!(!host(
            "WebFetch(domain:example.com)",
            "www.example.com",
            443
        ));
        assert!(!host(
            "WebFetch(domain:example.com)",
            "example.com.evil.net",
            443
        ));
        assert!(!host(
            "WebFetch(domain:example.com)",
            "evilexample.com",
            443
        ));
        assert!(host(
            "WebFetch(domain:*.example.com)",
            "docs.example.com",
            443
        ));
        assert!(!host("WebFetch(domain:*.example.com)", "example.com", 443));
        assert!(host("WebFetch(domain:127.0.0.1)", "127.0.0.1", 8080));
        assert!(host("WebFetch(domain:localhost:8080)", "localhost", 8080));
        assert!(!host("WebFetch(domain:localhost:8080)", "localhost", 8081));
        for whole in ["WebFetch", "WebFetch(domain:*)", "web_fetch", "WebFetch(*)"] {
            assert!(host(whole, "anything.example", 443), "{whole}");
        }
        // A WebFetch rule is about hosts only, and other rules never match a host.
        assert!(!rule("WebFetch").matches(&Subject::command("curl example.com")));
        assert!(!host("Bash", "example.com", 443));
        assert!(!host("Read", "example.com", 443));
    }

    #[test]
    fn a_web_fetch_rule_takes_a_domain_only() {
        for bad in [
            "WebFetch(x)",
            "WebFetch(domain:)",
            "WebFetch(domain:https://a.com)",
        ] {
            let e = Rule::parse(bad, RuleKind::Deny, Layer::User, None).unwrap_err();
            assert!(matches!(e, RuleError::Pattern { .. }), "{bad}: {e:?}");
        }
        let e = Rule::parse("WebFetch(x)", RuleKind::Deny, Layer::User, None).unwrap_err();
        assert!(
            e.to_string().contains("WebFetch(domain:example.com)"),
            "{e}"
        );
    }
}
