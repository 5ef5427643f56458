//! The proxy against real local servers (an echo server and a tiny HTTP server on
//! 127.0.0.1), through each protocol it speaks, with the target listed and not listed.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::AllowList;
use super::proxy::{Refusals, Rules, serve};

/// An echo server; returns its port.
async fn echo_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    port
}

/// An HTTP server answering every request with the request head it got as the body.
async fn http_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body = String::from_utf8_lossy(&buf).into_owned();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    port
}

/// Starts the proxy with `allowed`; returns its port and the refusals it records.
async fn proxy(allowed: &[String]) -> (u16, Refusals) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let refusals = Refusals::default();
    let rules = Rules {
        allow: Arc::new(AllowList::parse(allowed).unwrap()),
        refusals: refusals.clone(),
        ask: None,
        saves: Default::default(),
    };
    tokio::spawn(serve(l, rules));
    (port, refusals)
}

async fn read_all(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn plain_http_reaches_a_listed_host_in_origin_form_and_a_host_header_cannot_lie() {
    let web = http_server().await;
    let (p, refusals) = proxy(&[format!("localhost:{web}")]).await;
    let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    let req = format!(
        "GET http://localhost:{web}/hello?x=1 HTTP/1.1\r\nHost: evil.example\r\n\
         Proxy-Authorization: Basic eA==\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let resp = read_all(&mut s).await;
    assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
    assert!(resp.contains("GET /hello?x=1 HTTP/1.1\r\n"), "{resp}");
    assert!(
        resp.contains(&format!("Host: localhost:{web}\r\n")),
        "{resp}"
    );
    assert!(!resp.contains("evil.example"), "{resp}");
    assert!(!resp.contains("Proxy-Authorization"), "{resp}");
    assert!(refusals.list().is_empty());
}

#[tokio::test]
async fn plain_http_to_an_unlisted_host_or_port_is_refused_with_403_naming_host_and_setting() {
    let web = http_server().await;
    let (p, refusals) = proxy(&[format!("localhost:{}", web.wrapping_add(1).max(1))]).await;
    for target in [
        format!("http://localhost:{web}/"),
        format!("http://127.0.0.1:{web}/"),
        format!("HTTP://LOCALHOST:{web}/"),
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let resp = read_all(&mut s).await;
        assert!(
            resp.starts_with("HTTP/1.1 403 Forbidden"),
            "{target}: {resp}"
        );
        assert!(resp.contains("sandbox.network.allowedDomains"), "{resp}");
        assert!(resp.contains(&format!(":{web}")), "{resp}");
    }
    let list = refusals.list();
    assert!(list.contains(&format!("localhost:{web}")), "{list:?}");
    assert!(list.contains(&format!("127.0.0.1:{web}")), "{list:?}");
}

#[tokio::test]
async fn origin_form_and_other_schemes_are_not_proxied() {
    let (p, _) = proxy(&["localhost".to_string()]).await;
    for line in [
        "GET / HTTP/1.1",
        "GET https://localhost/ HTTP/1.1",
        "GET ftp://localhost/ HTTP/1.1",
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
        s.write_all(format!("{line}\r\nHost: localhost\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let resp = read_all(&mut s).await;
        assert!(resp.starts_with("HTTP/1.1 400"), "{line}: {resp}");
    }
}

#[tokio::test]
async fn connect_tunnels_to_a_listed_host_and_refuses_others() {
    let echo = echo_server().await;
    let (p, refusals) = proxy(&[format!("localhost:{echo}")]).await;
    let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    // The first tunnelled bytes come in the same packet as the head.
    s.write_all(format!("CONNECT localhost:{echo} HTTP/1.1\r\nHost: x\r\n\r\nping").as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 39 + 4];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&buf),
        "HTTP/1.1 200 Connection Established\r\n\r\nping"
    );
    s.write_all(b"pong").await.unwrap();
    let mut back = [0u8; 4];
    s.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"pong");

    for target in [
        format!("127.0.0.1:{echo}"),
        format!("localhost:{}", echo ^ 1),
        format!("[::1]:{echo}"),
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
        s.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let resp = read_all(&mut s).await;
        assert!(resp.starts_with("HTTP/1.1 403"), "{target}: {resp}");
        assert!(resp.contains("sandbox.network.allowedDomains"), "{resp}");
    }
    assert_eq!(refusals.list().len(), 3, "{:?}", refusals.list());
}

/// A SOCKS5 CONNECT request for `target` (`addr` is the ATYP byte and address).
async fn socks_connect(proxy: u16, addr: &[u8], port: u16) -> (TcpStream, [u8; 10]) {
    let mut s = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    s.write_all(&[5, 2, 2, 0]).await.unwrap();
    let mut choice = [0u8; 2];
    s.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 0], "no-auth chosen");
    let mut req = vec![5, 1, 0];
    req.extend_from_slice(addr);
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).await.unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.unwrap();
    (s, reply)
}

fn domain(name: &str) -> Vec<u8> {
    let mut v = vec![3, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    v
}

#[tokio::test]
async fn socks5_connects_listed_names_and_addresses_and_refuses_the_rest() {
    let echo = echo_server().await;
    let (p, refusals) = proxy(&[format!("localhost:{echo}"), "127.0.0.2".into()]).await;

    // A listed name (socks5h: the proxy resolves it).
    let (mut s, reply) = socks_connect(p, &domain("LocalHost"), echo).await;
    assert_eq!(reply[1], 0, "succeeded");
    s.write_all(b"hi").await.unwrap();
    let mut back = [0u8; 2];
    s.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"hi");

    // The same server by address is not listed; nor another port; nor IPv6 loopback.
    for (addr, port) in [
        (vec![1, 127, 0, 0, 1], echo),
        (domain("localhost"), echo ^ 1),
        (
            [vec![4], std::net::Ipv6Addr::LOCALHOST.octets().to_vec()].concat(),
            echo,
        ),
    ] {
        let (mut s, reply) = socks_connect(p, &addr, port).await;
        assert_eq!(reply[1], 2, "connection not allowed by ruleset: {addr:?}");
        assert_eq!(read_all(&mut s).await, "", "closed after the refusal");
    }
    // A listed address goes through to the connect (nothing listens there: refused).
    let (_s, reply) = socks_connect(p, &[1, 127, 0, 0, 2], 9).await;
    assert_eq!(
        reply[1], 5,
        "connection refused by the host, not by the rules"
    );
    assert_eq!(refusals.list().len(), 3, "{:?}", refusals.list());
}

#[tokio::test]
async fn socks5_refuses_bind_udp_and_authentication_only_clients() {
    let echo = echo_server().await;
    let (p, _) = proxy(&[format!("localhost:{echo}")]).await;
    // BIND (2) and UDP ASSOCIATE (3) are not supported, even to a listed host.
    for cmd in [2u8, 3] {
        let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
        s.write_all(&[5, 1, 0]).await.unwrap();
        let mut choice = [0u8; 2];
        s.read_exact(&mut choice).await.unwrap();
        let mut req = vec![5, cmd, 0];
        req.extend_from_slice(&domain("localhost"));
        req.extend_from_slice(&echo.to_be_bytes());
        s.write_all(&req).await.unwrap();
        let mut reply = [0u8; 10];
        s.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply[1], 7, "command not supported");
    }
    // A client that offers only username/password gets "no acceptable method".
    let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    s.write_all(&[5, 1, 2]).await.unwrap();
    let mut choice = [0u8; 2];
    s.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 0xff]);
}

#[tokio::test]
async fn an_empty_list_lets_nothing_through() {
    let echo = echo_server().await;
    let (p, refusals) = proxy(&[]).await;
    let (_s, reply) = socks_connect(p, &domain("localhost"), echo).await;
    assert_eq!(reply[1], 2);
    assert_eq!(refusals.list(), [format!("localhost:{echo}")]);
}

/// A name from `/etc/hosts`, other than `localhost`, that points at a loopback address.
fn loopback_alias() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    hosts.lines().find_map(|l| {
        let mut words = l.split('#').next()?.split_whitespace();
        let ip: std::net::IpAddr = words.next()?.parse().ok()?;
        if !ip.is_loopback() {
            return None;
        }
        words
            .find(|w| !w.eq_ignore_ascii_case("localhost") && !w.ends_with(".localhost"))
            .map(str::to_string)
    })
}

#[tokio::test]
async fn a_listed_name_that_resolves_to_loopback_does_not_reach_this_machine() {
    let echo = echo_server().await;
    // `localhost` itself does (the tests rely on it) ...
    let (p, _) = proxy(&[format!("localhost:{echo}")]).await;
    let (_s, reply) = socks_connect(p, &domain("localhost"), echo).await;
    assert_eq!(reply[1], 0);
    // ... another name pointing at 127.0.0.1 does not, though it is listed.
    let Some(alias) = loopback_alias() else {
        eprintln!("no loopback alias in /etc/hosts: only `localhost` was checked");
        return;
    };
    let (p, refusals) = proxy(&[format!("{alias}:{echo}")]).await;
    let (_s, reply) = socks_connect(p, &domain(&alias), echo).await;
    assert_eq!(reply[1], 4, "host unreachable for {alias}");
    let mut s = TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    s.write_all(format!("CONNECT {alias}:{echo} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let resp = read_all(&mut s).await;
    assert!(resp.starts_with("HTTP/1.1 502"), "{resp}");
    assert!(resp.contains("loopback"), "{resp}");
    assert!(
        refusals.list().is_empty(),
        "listed, so not a refusal of the list"
    );
}
