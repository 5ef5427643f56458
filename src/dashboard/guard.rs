//! Who may use the dashboard: a pure decision over a request's method, URI and headers.
//! The dashboard is not a way in, so every request must
//!
//! - name a host the server answers as (`127.0.0.1:PORT`, `localhost:PORT`, the bound
//!   address): a page on another name that resolves here (DNS rebinding) is refused;
//! - come from no other origin (`Origin`, `Sec-Fetch-Site`), so another site's page can
//!   neither read nor post;
//! - carry the per-run token: in the query of the printed URL (a GET), in the cookie that
//!   URL sets, or in the `X-Crew-Token` header. A request that changes state must carry it
//!   in the header, which a cross-site form cannot set (CSRF).
//!
//! Without the token the answer is 401, with a bad host or origin 403; never a page.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, Method, StatusCode, Uri, header};

/// The header state-changing requests carry the token in.
pub(super) const TOKEN_HEADER: &str = "x-crew-token";

/// The cookie the printed URL sets.
pub(super) const COOKIE: &str = "crew_dashboard";

/// The server's token and the address it answers on.
#[derive(Clone)]
pub(super) struct Guard {
    token: String,
    bound: SocketAddr,
}

/// How a request showed the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// In the query (the printed URL): the answer sets the cookie.
    Query,
    /// In the cookie.
    Cookie,
    /// In the header.
    Header,
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refusal {
    /// No token, or a wrong one.
    #[error("this dashboard needs its token: open the URL crew printed")]
    NoToken,
    /// The Host header names another host (or none).
    #[error("host `{0}` is not this dashboard's")]
    Host(String),
    /// The request comes from another site's page.
    #[error("requests from `{0}` are not accepted")]
    Origin(String),
    /// A state-changing request without the token in its header.
    #[error("a request that changes something needs the token in the X-Crew-Token header")]
    NoTokenHeader,
}

impl Refusal {
    /// The status it is answered with.
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Refusal::NoToken => StatusCode::UNAUTHORIZED,
            _ => StatusCode::FORBIDDEN,
        }
    }
}

/// A fresh random token (256 bits, hex).
pub(super) fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so timing tells nothing about the token.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Guard {
    /// A guard for the server bound at `bound`, with `token`.
    pub(super) fn new(token: String, bound: SocketAddr) -> Guard {
        Guard { token, bound }
    }

    /// The token.
    pub(super) fn token(&self) -> &str {
        &self.token
    }

    /// Whether `host` (a Host header's value, or an origin's host) is this server: the
    /// bound port, on `localhost`, a loopback address, or the bound address (any IP
    /// address when bound to all interfaces). Names other than `localhost` are refused:
    /// that is what DNS rebinding needs.
    fn is_us(&self, host: &str) -> bool {
        let Some((name, port)) = host.rsplit_once(':') else {
            return false;
        };
        if port.parse::<u16>().ok() != Some(self.bound.port()) {
            return false;
        }
        if name.eq_ignore_ascii_case("localhost") {
            return true;
        }
        let name = name.trim_start_matches('[').trim_end_matches(']');
        match name.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip == self.bound.ip() || self.bound.ip().is_unspecified(),
            Err(_) => false,
        }
    }

    /// Decides `request`; says how it showed the token when it is admitted.
    pub(super) fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<Shown, Refusal> {
        let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
        let host = text(header::HOST).unwrap_or("");
        if !self.is_us(host) {
            return Err(Refusal::Host(host.to_string()));
        }
        if let Some(origin) = text(header::ORIGIN) {
            let ours = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .is_some_and(|h| self.is_us(h));
            if !ours {
                return Err(Refusal::Origin(origin.to_string()));
            }
        }
        if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
            && site == "cross-site"
        {
            return Err(Refusal::Origin(format!("a cross-site page ({site})")));
        }
        let in_header = headers
            .get(TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| same(t, &self.token));
        let reads = matches!(*method, Method::GET | Method::HEAD);
        if !reads {
            return if in_header {
                Ok(Shown::Header)
            } else if self.in_query(uri) || self.in_cookie(headers) {
                Err(Refusal::NoTokenHeader)
            } else {
                Err(Refusal::NoToken)
            };
        }
        if in_header {
            Ok(Shown::Header)
        } else if self.in_query(uri) {
            Ok(Shown::Query)
        } else if self.in_cookie(headers) {
            Ok(Shown::Cookie)
        } else {
            Err(Refusal::NoToken)
        }
    }

    fn in_query(&self, uri: &Uri) -> bool {
        uri.query().is_some_and(|q| {
            form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == "token" && same(&v, &self.token))
        })
    }

    fn in_cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .any(|(k, v)| k == COOKIE && same(v, &self.token))
    }

    /// The `Set-Cookie` value that lets the browser keep the token: HttpOnly (scripts on
    /// the page cannot read it) and SameSite=Strict (other sites' requests do not carry it).
    pub(super) fn cookie(&self) -> String {
        format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", self.token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new("t0k".into(), "127.0.0.1:4100".parse().unwrap())
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    fn check(method: Method, uri: &str, pairs: &[(&'static str, &str)]) -> Result<Shown, Refusal> {
        guard().check(&method, &uri.parse().unwrap(), &headers(pairs))
    }

    #[test]
    fn the_token_may_come_by_query_cookie_or_header_for_reads_and_only_by_header_for_writes() {
        let host = ("host", "127.0.0.1:4100");
        assert_eq!(check(Method::GET, "/?token=t0k", &[host]), Ok(Shown::Query));
        let cookie = ("cookie", "a=b; crew_dashboard=t0k");
        assert_eq!(check(Method::GET, "/", &[host, cookie]), Ok(Shown::Cookie));
        assert_eq!(check(Method::GET, "/", &[host]), Err(Refusal::NoToken));
        assert_eq!(
            check(Method::GET, "/?token=t0x", &[host]),
            Err(Refusal::NoToken)
        );
        assert_eq!(
            check(Method::POST, "/api/answer", &[host, cookie]),
            Err(Refusal::NoTokenHeader)
        );
        let header = ("x-crew-token", "t0k");
        assert_eq!(
            check(Method::POST, "/api/answer", &[host, header]),
            Ok(Shown::Header)
        );
    }

    #[test]
    fn hosts_and_origins_other_than_this_server_are_refused() {
        let header = ("x-crew-token", "t0k");
        for ok in ["127.0.0.1:4100", "localhost:4100", "[::1]:4100"] {
            assert!(
                check(Method::GET, "/", &[("host", ok), header]).is_ok(),
                "{ok}"
            );
        }
        for bad in ["evil.example:4100", "127.0.0.1:80", "10.0.0.1:4100", ""] {
            assert_eq!(
                check(Method::GET, "/", &[("host", bad), header]),
                Err(Refusal::Host(bad.into()))
            );
        }
        let host = ("host", "127.0.0.1:4100");
        assert!(
            check(
                Method::POST,
                "/",
                &[host, header, ("origin", "http://localhost:4100")]
            )
            .is_ok()
        );
        assert_eq!(
            check(
                Method::POST,
                "/",
                &[host, header, ("origin", "http://evil.example")]
            ),
            Err(Refusal::Origin("http://evil.example".into()))
        );
        assert!(
            check(
                Method::GET,
                "/",
                &[host, header, ("sec-fetch-site", "cross-site")]
            )
            .is_err()
        );
    }

    #[test]
    fn a_server_bound_to_all_interfaces_answers_to_addresses_but_not_names() {
        let g = Guard::new("t".into(), "0.0.0.0:9".parse().unwrap());
        assert!(g.is_us("192.168.1.20:9"));
        assert!(!g.is_us("attacker.example:9"));
    }
}
