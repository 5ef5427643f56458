//! The forward proxy crew runs outside the sandbox for sandboxed commands: one listener
//! that speaks plain HTTP in absolute form, HTTP `CONNECT` and SOCKS5 (told apart by the
//! first byte), and lets a connection through only to a host the [`AllowList`] names.
//! Every refusal is logged and recorded in [`Refusals`], so the command's result can say
//! which host was blocked and which setting would allow it.
//!
//! Plain functions and types over tokio sockets, with no tie to the permission engine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::allow::{AllowList, refusal_message};
use super::ask::{self, HostAsker};
use super::{http, socks};

/// How long the proxy waits for an upstream connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send its request head or SOCKS5 handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// The hosts the proxy refused, in order (`host:port`, each once).
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<Mutex<Vec<String>>>);

impl Refusals {
    /// Records a refusal of `host:port` (once per target) and logs it.
    pub fn record(&self, host: &str, port: u16) {
        let target = format!("{host}:{port}");
        if let Ok(mut list) = self.0.lock()
            && !list.contains(&target)
        {
            // Logged once per target, so a command retrying in a loop cannot flood the log.
            tracing::warn!("{}", refusal_message(host, port));
            list.push(target);
        }
    }

    /// The refused targets so far.
    pub fn list(&self) -> Vec<String> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// What a connection handler needs: the list, where refusals go, and who to ask about an
/// unlisted host (interactive sessions only).
#[derive(Clone)]
pub struct Rules {
    /// The hosts that may be reached.
    pub allow: Arc<AllowList>,
    /// Where refusals are recorded.
    pub refusals: Refusals,
    /// Asked about a host the list does not name; `None`: refused (headless, dontAsk).
    pub ask: Option<Arc<dyn HostAsker>>,
    /// The "always" answers to save once the command has ended.
    pub saves: ask::Deferred,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("allow", &self.allow)
            .field("refusals", &self.refusals)
            .field("ask", &self.ask.is_some())
            .finish()
    }
}

impl Rules {
    /// Whether `host:port` may be reached: listed, allowed earlier in the session, or
    /// allowed now by the asker. A refusal is recorded.
    pub(super) async fn check(&self, host: &str, port: u16) -> bool {
        if self.allow.allows(host, port) || ask::session_allows(host, port) {
            return true;
        }
        let ok = match &self.ask {
            Some(asker) => ask::decide(asker, &self.saves, host, port).await,
            None => false,
        };
        if !ok {
            self.refusals.record(host, port);
        }
        ok
    }

    /// How long a client's handshake may take: longer while a human may be asked.
    fn handshake_limit(&self) -> Duration {
        match self.ask {
            Some(_) => HANDSHAKE_TIMEOUT + ask::ASK_TIMEOUT,
            None => HANDSHAKE_TIMEOUT,
        }
    }
}

/// Accepts connections on `listener` until the returned future is dropped; every
/// connection in progress ends with it (they run in a [`JoinSet`] owned by this future).
pub async fn serve(listener: TcpListener, rules: Rules) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let rules = rules.clone();
                    connections.spawn(async move { handle(stream, rules).await });
                }
                Err(e) => {
                    tracing::warn!("the sandbox's network proxy stopped accepting: {e}");
                    return;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves one client connection.
pub async fn handle(mut client: TcpStream, rules: Rules) {
    let _ = client.set_nodelay(true);
    let mut first = [0u8; 1];
    let Ok(Ok(1)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, client.peek(&mut first)).await else {
        return;
    };
    let limit = rules.handshake_limit();
    let served = if first[0] == socks::VERSION {
        tokio::time::timeout(limit, socks::handshake(&mut client, &rules)).await
    } else {
        tokio::time::timeout(limit, http::handshake(&mut client, &rules)).await
    };
    let Ok(Some((mut upstream, pending))) = served else {
        return;
    };
    if !pending.is_empty() && upstream.write_all(&pending).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Why an upstream connection failed, for the client's error reply.
#[derive(Debug)]
pub(super) enum ConnectError {
    /// The name did not resolve, or no address answered.
    Unreachable(std::io::Error),
    /// The host answered with a refusal.
    Refused(std::io::Error),
    /// No answer in time.
    TimedOut,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Unreachable(e) | ConnectError::Refused(e) => write!(f, "{e}"),
            ConnectError::TimedOut => write!(f, "no answer within {} s", CONNECT_TIMEOUT.as_secs()),
        }
    }
}

/// Whether `host` names the local machine itself: `localhost`, a `.localhost` name, or
/// a loopback address.
fn names_loopback(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost"
        || h.ends_with(".localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Connects to an allowed `host:port` from crew's own network. A listed *name* that
/// resolves to a loopback or unspecified address (`*.example.com` whose DNS an attacker
/// controls, pointed at 127.0.0.1) does not reach crew's own machine: only an entry that
/// names the machine itself (`localhost`, `127.0.0.1`) does.
pub(super) async fn connect(host: &str, port: u16) -> Result<TcpStream, ConnectError> {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let local = names_loopback(host);
    let resolved =
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(addrs)) => addrs.collect::<Vec<_>>(),
            Ok(Err(e)) => return Err(ConnectError::Unreachable(e)),
            Err(_) => return Err(ConnectError::TimedOut),
        };
    let addrs: Vec<_> = resolved
        .into_iter()
        .filter(|a| local || !(a.ip().is_loopback() || a.ip().is_unspecified()))
        .collect();
    if addrs.is_empty() {
        return Err(ConnectError::Unreachable(std::io::Error::other(format!(
            "{host} resolves to no address the proxy may reach (a name other than localhost \
             never reaches this machine's loopback)"
        ))));
    }
    match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addrs[..])).await {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(s)
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err(ConnectError::Refused(e))
        }
        Ok(Err(e)) => Err(ConnectError::Unreachable(e)),
        Err(_) => Err(ConnectError::TimedOut),
    }
}

/// Reads exactly `buf.len()` bytes.
pub(super) async fn read_exact<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Option<()> {
    r.read_exact(buf).await.ok().map(|_| ())
}

/// Writes all of `bytes`.
pub(super) async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, bytes: &[u8]) -> Option<()> {
    w.write_all(bytes).await.ok()
}
