//! Who may talk to `crew mcp serve --listen`: a request must name the bound address (or
//! `localhost`) in `Host`, carry no foreign `Origin` (a web page the user has open cannot
//! drive the server, not even through DNS rebinding), and carry the server's bearer
//! token, compared in constant time. The token is random (256 bits), printed once on
//! stderr and written to a file only its owner can read (mode 600), so another local user
//! who can reach the port still cannot use it.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngCore;

/// The credential and the names a listener answers to.
#[derive(Clone)]
pub(crate) struct Guard {
    token: Arc<str>,
    hosts: Arc<[String]>,
    /// Bound to every interface (`0.0.0.0`, `::`): any IP literal with the port is this
    /// server (a rebinding page's Host is a domain name, never an IP literal).
    any_ip_port: Option<u16>,
}

impl Guard {
    /// A guard for a listener bound to `bound`, requiring `token`.
    pub(crate) fn new(bound: SocketAddr, token: &str) -> Self {
        Self {
            token: token.into(),
            hosts: allowed_hosts(bound).into(),
            any_ip_port: bound.ip().is_unspecified().then_some(bound.port()),
        }
    }

    /// The `host:port` authorities a request may name, for rmcp's own Host check;
    /// `None` when that check must be off (bound to every interface: this guard checks).
    pub(crate) fn hosts(&self) -> Option<&[String]> {
        self.any_ip_port.is_none().then_some(&self.hosts)
    }

    fn host_allowed(&self, host: &str) -> bool {
        self.hosts.iter().any(|a| a.eq_ignore_ascii_case(host))
            || self
                .any_ip_port
                .is_some_and(|port| host.parse::<SocketAddr>().is_ok_and(|a| a.port() == port))
    }

    /// Why a request with these headers is refused, or `None` to let it through.
    pub(crate) fn refuse(&self, headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let Some(host) = host.filter(|h| self.host_allowed(h)) else {
            return Some((
                StatusCode::FORBIDDEN,
                "the Host header does not name this server's address",
            ));
        };
        if let Some(origin) = headers.get(header::ORIGIN) {
            // Same origin only: the page must come from this very server.
            let ok = origin
                .to_str()
                .ok()
                .is_some_and(|o| o.eq_ignore_ascii_case(&format!("http://{host}")));
            if !ok {
                return Some((
                    StatusCode::FORBIDDEN,
                    "requests from another origin are refused",
                ));
            }
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|t| same(t.trim().as_bytes(), self.token.as_bytes())) {
            return Some((
                StatusCode::UNAUTHORIZED,
                "send `Authorization: Bearer <token>` with the token crew mcp serve printed (also in its token file)",
            ));
        }
        None
    }

    /// The axum middleware: refused requests get the status and the reason as text.
    pub(crate) async fn check(self, request: Request, next: Next) -> Response {
        match self.refuse(request.headers()) {
            None => next.run(request).await,
            Some((status, why)) => {
                let mut response = (status, why).into_response();
                if status == StatusCode::UNAUTHORIZED {
                    response.headers_mut().insert(
                        header::WWW_AUTHENTICATE,
                        header::HeaderValue::from_static("Bearer"),
                    );
                }
                response
            }
        }
    }
}

/// `127.0.0.1:PORT`, `localhost:PORT` (and `[::1]:PORT` for IPv6) for a loopback
/// address; the address itself for another.
fn allowed_hosts(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts = vec![bound.to_string()];
    if bound.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
    }
    hosts.dedup();
    hosts
}

/// Equal bytes, in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A new random token: 32 bytes as 64 hex digits.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `token` to `path`, a new file of mode 600 (an existing file there is replaced;
/// a symlink planted there makes this fail rather than write through it).
pub(crate) fn write_token(path: &Path, token: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot replace {}", path.display())),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("--token-file {}: cannot create it", path.display()))?;
    file.write_all(format!("{token}\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The default token file of a server on `port` for the project at `project_root`.
pub(crate) fn default_token_file(project_root: &Path, port: u16) -> Option<PathBuf> {
    Some(
        crate::store::project_dir(project_root)?
            .join("mcp-serve")
            .join(format!("{port}.token")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_the_token_the_bound_host_and_no_foreign_origin_pass() {
        let guard = Guard::new("127.0.0.1:4100".parse().unwrap(), "t0ken");
        let ok = [
            ("host", "127.0.0.1:4100"),
            ("authorization", "Bearer t0ken"),
        ];
        assert!(guard.refuse(&headers(&ok)).is_none());
        let local = [
            ("host", "localhost:4100"),
            ("authorization", "Bearer t0ken"),
        ];
        assert!(guard.refuse(&headers(&local)).is_none());
        let same_origin = [
            ("host", "127.0.0.1:4100"),
            ("origin", "http://127.0.0.1:4100"),
            ("authorization", "Bearer t0ken"),
        ];
        assert!(guard.refuse(&headers(&same_origin)).is_none());
        for bad in [
            vec![("host", "127.0.0.1:4100")],
            vec![("host", "127.0.0.1:4100"), ("authorization", "Bearer t0ke")],
            vec![
                ("host", "127.0.0.1:4100"),
                ("authorization", "Bearer t0kenX"),
            ],
            vec![("host", "127.0.0.1:4100"), ("authorization", "Basic t0ken")],
            vec![("host", "127.0.0.1:4100"), ("authorization", "t0ken")],
            vec![
                ("host", "evil.example:4100"),
                ("authorization", "Bearer t0ken"),
            ],
            vec![
                ("host", "127.0.0.1:4101"),
                ("authorization", "Bearer t0ken"),
            ],
            vec![("authorization", "Bearer t0ken")],
            vec![
                ("host", "127.0.0.1:4100"),
                ("origin", "http://evil.example"),
                ("authorization", "Bearer t0ken"),
            ],
            vec![
                ("host", "127.0.0.1:4100"),
                ("origin", "null"),
                ("authorization", "Bearer t0ken"),
            ],
        ] {
            assert!(guard.refuse(&headers(&bad)).is_some(), "{bad:?} passed");
        }
    }

    #[test]
    fn bound_to_every_interface_any_ip_literal_with_the_port_is_the_host() {
        let guard = Guard::new("0.0.0.0:4100".parse().unwrap(), "t0ken");
        assert!(guard.hosts().is_none());
        let auth = ("authorization", "Bearer t0ken");
        for ok in ["10.0.0.5:4100", "127.0.0.1:4100", "[::1]:4100"] {
            assert!(
                guard.refuse(&headers(&[("host", ok), auth])).is_none(),
                "{ok}"
            );
        }
        for bad in ["evil.example:4100", "10.0.0.5:4101", "10.0.0.5"] {
            assert!(
                guard.refuse(&headers(&[("host", bad), auth])).is_some(),
                "{bad}"
            );
        }
        let cross = [
            ("host", "10.0.0.5:4100"),
            ("origin", "http://127.0.0.1:4100"),
            auth,
        ];
        assert!(guard.refuse(&headers(&cross)).is_some());
    }

    #[test]
    fn tokens_are_random_and_the_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/1.token");
        write_token(&path, &a).unwrap();
        write_token(&path, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{b}\n"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
