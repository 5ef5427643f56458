//! The SOCKS5 side of the proxy (RFC 1928): no authentication, the CONNECT command only,
//! with IPv4, IPv6 and domain-name targets (`socks5h://`, where the proxy resolves the
//! name). A target that is not listed gets reply `02` (connection not allowed by ruleset)
//! and the refusal is logged with the host and the setting to change.

use std::net::{Ipv4Addr, Ipv6Addr};

use tokio::net::TcpStream;

use super::proxy::{self, ConnectError, Rules};

/// The protocol version byte that starts every SOCKS5 message.
pub(super) const VERSION: u8 = 5;

const NO_AUTH: u8 = 0;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CMD_CONNECT: u8 = 1;
const ATYP_V4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_V6: u8 = 4;

/// Reply codes (RFC 1928 §6).
const SUCCEEDED: u8 = 0;
const GENERAL_FAILURE: u8 = 1;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const CONNECTION_REFUSED: u8 = 5;
const TTL_EXPIRED: u8 = 6;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 8;

/// Runs the greeting and the request; on success returns the upstream connection (no
/// bytes are pending after a SOCKS5 reply).
pub(super) async fn handshake(
    client: &mut TcpStream,
    rules: &Rules,
) -> Option<(TcpStream, Vec<u8>)> {
    let mut head = [0u8; 2];
    proxy::read_exact(client, &mut head).await?;
    let mut methods = vec![0u8; head[1] as usize];
    proxy::read_exact(client, &mut methods).await?;
    if head[0] != VERSION || !methods.contains(&NO_AUTH) {
        let _ = proxy::write_all(client, &[VERSION, NO_ACCEPTABLE_METHOD]).await;
        return None;
    }
    proxy::write_all(client, &[VERSION, NO_AUTH]).await?;

    let mut req = [0u8; 4];
    proxy::read_exact(client, &mut req).await?;
    if req[0] != VERSION {
        return None;
    }
    let host = match req[3] {
        ATYP_V4 => {
            let mut a = [0u8; 4];
            proxy::read_exact(client, &mut a).await?;
            Ipv4Addr::from(a).to_string()
        }
        ATYP_V6 => {
            let mut a = [0u8; 16];
            proxy::read_exact(client, &mut a).await?;
            Ipv6Addr::from(a).to_string()
        }
        ATYP_DOMAIN => {
            let mut len = [0u8; 1];
            proxy::read_exact(client, &mut len).await?;
            let mut name = vec![0u8; len[0] as usize];
            proxy::read_exact(client, &mut name).await?;
            match String::from_utf8(name) {
                Ok(n) if !n.is_empty() => n.to_ascii_lowercase(),
                _ => {
                    reply(client, GENERAL_FAILURE).await;
                    return None;
                }
            }
        }
        _ => {
            reply(client, ADDRESS_TYPE_NOT_SUPPORTED).await;
            return None;
        }
    };
    let mut port = [0u8; 2];
    proxy::read_exact(client, &mut port).await?;
    let port = u16::from_be_bytes(port);
    if req[1] != CMD_CONNECT {
        reply(client, COMMAND_NOT_SUPPORTED).await;
        return None;
    }
    if port == 0 || !rules.check(&host, port).await {
        reply(client, NOT_ALLOWED).await;
        return None;
    }
    match proxy::connect(&host, port).await {
        Ok(upstream) => {
            reply(client, SUCCEEDED).await;
            Some((upstream, Vec::new()))
        }
        Err(e) => {
            tracing::info!("sandbox proxy: cannot reach {host}:{port}: {e}");
            reply(
                client,
                match e {
                    ConnectError::Refused(_) => CONNECTION_REFUSED,
                    ConnectError::Unreachable(_) => HOST_UNREACHABLE,
                    ConnectError::TimedOut => TTL_EXPIRED,
                },
            )
            .await;
            None
        }
    }
}

/// Sends a reply with an unspecified bound address.
async fn reply(client: &mut TcpStream, code: u8) {
    let _ = proxy::write_all(client, &[VERSION, code, 0, ATYP_V4, 0, 0, 0, 0, 0, 0]).await;
}
