//! The HTTP side of the proxy: `CONNECT host:port` (a tunnel, for HTTPS) and plain
//! requests in absolute form (`GET http://host:port/path HTTP/1.1`), which are passed on
//! in origin form with `Host` set to the target (so a request cannot name one host to the
//! proxy and another to the server) and `Connection: close` (so every request on a
//! connection goes to the host that was checked). Anything else gets an error response
//! that says what the proxy accepts; a host that is not listed gets `403` with the
//! refusal message.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::allow::refusal_message;
use super::proxy::{self, ConnectError, Rules};

/// The longest request head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;

/// Reads the request head and answers it; on success returns the upstream connection and
/// the bytes still to send to it (the rewritten head, or bytes the client sent after a
/// `CONNECT` head).
pub(super) async fn handshake(
    client: &mut TcpStream,
    rules: &Rules,
) -> Option<(TcpStream, Vec<u8>)> {
    let (head, rest) = match read_head(client).await {
        Ok(v) => v,
        Err(status) => {
            reply(client, status, "the request head is malformed or too long").await;
            return None;
        }
    };
    let Some(request) = Request::parse(&head) else {
        reply(client, 400, "the request line is malformed").await;
        return None;
    };
    let target = if request.method.eq_ignore_ascii_case("CONNECT") {
        split_authority(request.target, None)
    } else if let Some(rest) = strip_prefix_ignore_case(request.target, "http://") {
        let (authority, _) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        split_authority(authority, Some(80))
    } else {
        reply(
            client,
            400,
            "this is crew's sandbox proxy: send `CONNECT host:port` or a request in absolute \
             form (`GET http://host/path`)",
        )
        .await;
        return None;
    };
    let Some((host, port)) = target else {
        reply(client, 400, "the target has no valid host and port").await;
        return None;
    };
    if !rules.check(&host, port).await {
        reply(client, 403, &refusal_message(&host, port)).await;
        return None;
    }
    let upstream = match proxy::connect(&host, port).await {
        Ok(s) => s,
        Err(e) => {
            let status = match e {
                ConnectError::TimedOut => 504,
                _ => 502,
            };
            reply(client, status, &format!("cannot reach {host}:{port}: {e}")).await;
            return None;
        }
    };
    if request.method.eq_ignore_ascii_case("CONNECT") {
        proxy::write_all(client, b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
        Some((upstream, rest))
    } else {
        let mut out = request.origin_form(&host, port);
        out.extend_from_slice(&rest);
        Some((upstream, out))
    }
}

/// A parsed request head (borrowing the head text).
struct Request<'a> {
    method: &'a str,
    target: &'a str,
    version: &'a str,
    headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Request<'a> {
    fn parse(head: &'a str) -> Option<Self> {
        let mut lines = head.split("\r\n");
        let mut parts = lines.next()?.split(' ');
        let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some()
            || method.is_empty()
            || !method.bytes().all(|b| b.is_ascii_alphabetic())
            || !version.starts_with("HTTP/1.")
        {
            return None;
        }
        let mut headers = Vec::new();
        for line in lines.filter(|l| !l.is_empty()) {
            let (name, value) = line.split_once(':')?;
            // A name with spaces or an obs-fold line is a smuggling device; refuse it.
            if name.is_empty() || name.contains([' ', '\t']) {
                return None;
            }
            headers.push((name, value.trim()));
        }
        Some(Self {
            method,
            target,
            version,
            headers,
        })
    }

    /// The request as the origin server gets it: path only, `Host` from the checked
    /// target, no proxy headers, `Connection: close`.
    fn origin_form(&self, host: &str, port: u16) -> Vec<u8> {
        let after_scheme = &self.target["http://".len()..];
        let path = match after_scheme.find(['/', '?']) {
            Some(i) if after_scheme[i..].starts_with('?') => format!("/{}", &after_scheme[i..]),
            Some(i) => after_scheme[i..].to_string(),
            None => "/".to_string(),
        };
        let shown = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let host_header = if port == 80 {
            shown
        } else {
            format!("{shown}:{port}")
        };
        let mut out = format!(
            "{} {path} {}\r\nHost: {host_header}\r\n",
            self.method, self.version
        );
        for (name, value) in &self.headers {
            let dropped = [
                "host",
                "connection",
                "proxy-connection",
                "proxy-authorization",
                "keep-alive",
            ];
            if dropped.iter().any(|d| name.eq_ignore_ascii_case(d)) {
                continue;
            }
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("Connection: close\r\n\r\n");
        out.into_bytes()
    }
}

/// `host:port` (or `[v6]:port`); `default_port` when none is written.
fn split_authority(authority: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    // Credentials in the authority (`user@host`) are not ours to pass on.
    let authority = authority.rsplit('@').next()?;
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        match after.strip_prefix(':') {
            Some(p) => (host, p.parse().ok()?),
            None if after.is_empty() => (host, default_port?),
            None => return None,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, p.parse().ok()?),
            Some(_) => return None,
            None => (authority, default_port?),
        }
    };
    if host.is_empty() || port == 0 {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Reads up to the blank line that ends the head; returns the head (as text, without the
/// blank line) and whatever followed it. `Err(status)` for a head that is too long or
/// not text.
async fn read_head(client: &mut TcpStream) -> Result<(String, Vec<u8>), u16> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.map_err(|_| 400u16)?;
        if n == 0 {
            return Err(400);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = from + i;
            let rest = buf[end + 4..].to_vec();
            buf.truncate(end);
            let head = String::from_utf8(buf).map_err(|_| 400u16)?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(431);
        }
    }
}

/// Sends an error response with `body` and closes.
async fn reply(client: &mut TcpStream, status: u16, body: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        504 => "Gateway Timeout",
        _ => "Error",
    };
    let body = format!("{body}\n");
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = proxy::write_all(client, text.as_bytes()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("Example.com:443", None),
            Some(("example.com".into(), 443))
        );
        assert_eq!(
            split_authority("example.com", Some(80)),
            Some(("example.com".into(), 80))
        );
        assert_eq!(split_authority("example.com", None), None);
        assert_eq!(
            split_authority("[::1]:8080", None),
            Some(("::1".into(), 8080))
        );
        assert_eq!(
            split_authority("u:p@host:81", None),
            Some(("host".into(), 81))
        );
        assert_eq!(split_authority("host:0", None), None);
        assert_eq!(split_authority("host:x", None), None);
        assert_eq!(split_authority(":80", None), None);
    }

    #[test]
    fn absolute_requests_go_out_in_origin_form_with_the_checked_host() {
        let head = "GET http://localhost:8080/a/b?q=1 HTTP/1.1\r\nHost: evil.example\r\n\
                    Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic x\r\nAccept: */*";
        let r = Request::parse(head).unwrap();
        let out = String::from_utf8(r.origin_form("localhost", 8080)).unwrap();
        assert!(
            out.starts_with("GET /a/b?q=1 HTTP/1.1\r\nHost: localhost:8080\r\n"),
            "{out}"
        );
        assert!(out.contains("Accept: */*\r\n"));
        assert!(!out.to_ascii_lowercase().contains("evil"), "{out}");
        assert!(!out.to_ascii_lowercase().contains("proxy-"), "{out}");
        assert!(out.ends_with("Connection: close\r\n\r\n"));
        let r = Request::parse("GET http://h?x HTTP/1.0").unwrap();
        assert!(
            String::from_utf8(r.origin_form("h", 80))
                .unwrap()
                .starts_with("GET /?x HTTP/1.0\r\nHost: h\r\n")
        );
    }

    #[test]
    fn malformed_heads_are_refused() {
        for bad in [
            "GET",
            "GET http://h/ HTTP/2",
            "GET http://h/ HTTP/1.1 extra",
            "G3T http://h/ HTTP/1.1",
            "GET http://h/ HTTP/1.1\r\nBad Name: x",
            "GET http://h/ HTTP/1.1\r\n folded",
        ] {
            assert!(Request::parse(bad).is_none(), "{bad:?}");
        }
    }
}
