//! What a URL for `web_fetch` may be, decided once for the engine and the tool alike:
//! `http` or `https` only, a host, no user name or password in it. The engine matches
//! rules on the host it reads here ([`FetchUrl::host`]), and the tool fetches only what
//! this accepted, so the two can never disagree on which host a call reaches.

use url::Url;

use crew_config::host_pattern::normalize;

/// A URL `web_fetch` may fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchUrl {
    url: Url,
    host: String,
    port: u16,
}

/// Why a URL cannot be fetched; each message names the `url` argument and says what to
/// send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not a URL at all.
    #[error(
        "argument `url`: `{url}` is not a URL ({reason}); send an absolute URL such as https://example.com/page"
    )]
    Malformed {
        /// The text as sent.
        url: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A scheme other than http and https (`file:`, `ftp:`, `data:` …).
    #[error(
        "argument `url`: the scheme `{scheme}` cannot be fetched; web_fetch fetches http:// and https:// URLs only (read local files with read_file)"
    )]
    Scheme {
        /// The scheme.
        scheme: String,
    },
    /// A user name or password in the URL.
    #[error(
        "argument `url`: the URL carries a user name or password (`user:pass@host`); web_fetch never sends credentials, so send the URL without them"
    )]
    Credentials,
    /// No host (`http:///path`).
    #[error("argument `url`: `{0}` names no host; send a URL such as https://example.com/page")]
    NoHost(String),
}

impl FetchUrl {
    /// Parses and checks `raw`.
    pub fn parse(raw: &str) -> Result<Self, UrlError> {
        let text = raw.trim();
        let url = Url::parse(text).map_err(|e| UrlError::Malformed {
            url: text.to_string(),
            reason: e.to_string(),
        })?;
        Self::from_url(url)
    }

    /// Checks an already parsed URL (a redirect's target, say).
    pub fn from_url(url: Url) -> Result<Self, UrlError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlError::Scheme {
                scheme: url.scheme().to_string(),
            });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlError::Credentials);
        }
        let host = match url.host_str() {
            Some(h) if !h.is_empty() => normalize(h),
            _ => return Err(UrlError::NoHost(url.to_string())),
        };
        // http and https always have a known default port.
        let port = url.port_or_known_default().unwrap_or(80);
        Ok(Self { url, host, port })
    }

    /// The URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The host, as rules compare it: lowercase, no trailing dot, IPv6 without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, the scheme's default when the URL names none.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The rule that allows fetching from this host, on every port:
    /// `WebFetch(domain:HOST)` (an IPv6 address in brackets).
    pub fn domain_rule(&self) -> String {
        format!("WebFetch(domain:{})", self.rule_host())
    }

    /// The host as a `domain:` specifier or an `allowedDomains` entry writes it.
    pub fn rule_host(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }

    /// Whether `other` reaches the same server (host and port): the only redirects the
    /// tool follows by itself, since the engine decided this host and no other.
    pub fn same_server(&self, other: &FetchUrl) -> bool {
        self.host == other.host && self.port == other.port
    }
}

impl std::fmt::Display for FetchUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.url.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_as_rules_compare_them() {
        let u = FetchUrl::parse(" https://Docs.RS./crate?x=1 ").unwrap();
        assert_eq!((u.host(), u.port()), ("docs.rs", 443));
        let u = FetchUrl::parse("http://127.0.0.1:8080/a").unwrap();
        assert_eq!((u.host(), u.port()), ("127.0.0.1", 8080));
        let u = FetchUrl::parse("http://[::1]/").unwrap();
        assert_eq!((u.host(), u.port()), ("::1", 80));
        assert_eq!(u.domain_rule(), "WebFetch(domain:[::1])");
        let u = FetchUrl::parse("http://LocalHost:8080/").unwrap();
        assert_eq!(u.domain_rule(), "WebFetch(domain:localhost)");
        // An internationalised name is compared in its punycode form.
        let u = FetchUrl::parse("https://bücher.example/").unwrap();
        assert_eq!(u.host(), "xn--bcher-kva.example");
    }

    #[test]
    fn other_schemes_credentials_and_non_urls_are_refused_naming_the_argument() {
        for (raw, want) in [
            ("file:///etc/passwd", "scheme `file`"),
            ("ftp://example.com/x", "scheme `ftp`"),
            ("data:text/html,hi", "scheme `data`"),
            ("javascript:alert(1)", "scheme `javascript`"),
            ("https://user:pass@example.com/", "user name or password"),
            ("https://user@example.com/", "user name or password"),
            ("example.com/page", "not a URL"),
            ("", "not a URL"),
            ("http://", "not a URL"),
        ] {
            let e = FetchUrl::parse(raw).unwrap_err().to_string();
            assert!(
                e.contains("argument `url`") && e.contains(want),
                "{raw}: {e}"
            );
        }
    }

    #[test]
    fn the_same_server_is_the_same_host_and_port() {
        let a = FetchUrl::parse("http://127.0.0.1:8080/a").unwrap();
        let same = FetchUrl::parse("http://127.0.0.1:8080/b?c").unwrap();
        assert!(a.same_server(&same));
        for other in [
            "http://127.0.0.1:8081/a",
            "http://localhost:8080/a",
            "https://127.0.0.1/a",
        ] {
            assert!(!a.same_server(&FetchUrl::parse(other).unwrap()), "{other}");
        }
        // http to https changes the port, so it is another server for this purpose.
        let plain = FetchUrl::parse("http://example.com/").unwrap();
        assert!(!plain.same_server(&FetchUrl::parse("https://example.com/").unwrap()));
    }
}
