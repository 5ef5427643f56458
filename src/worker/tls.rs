//! TLS between a lead and its workers, on ractor_cluster's encrypted transport.
//!
//! - A worker started with `--tls-cert/--tls-key` accepts TLS 1.3 only: its own accept
//!   loop runs each handshake in its own task, with a deadline, and hands the encrypted
//!   stream to the node server, so the cookie handshake runs inside TLS. A plaintext
//!   client (or one that does not trust the certificate) is refused and logged.
//! - With `--tls-ca` as well, the worker demands a client certificate signed by that CA
//!   (mutual TLS).
//! - A lead with a worker CA (`--worker-ca` / `workerTls.ca`) connects to every worker
//!   over TLS and verifies its certificate against that CA and the host it was given;
//!   it never falls back to plaintext. `--worker-cert/--worker-key` give it a client
//!   certificate for workers that demand one.
//!
//! Certificates and keys are PEM files. A key file others may read is refused, like the
//! cookie file. Errors name the flag and the file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor_cluster::{NetworkStream, NodeServerMessage};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use tokio::net::TcpListener;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// How long a client may take to complete the TLS handshake before it is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest PEM file read (certificates and keys are a few KiB).
const MAX_PEM: u64 = 1 << 20;

/// A certificate, key or CA file that cannot be used; names the flag and the file.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {}: {message}", path.display())]
pub(crate) struct TlsError {
    /// The flag or setting that named the file (`--tls-key`, `workerTls.ca`…).
    pub flag: String,
    /// The file.
    pub path: PathBuf,
    /// What is wrong and what to do.
    pub message: String,
}

/// What a PEM file holds, which decides how it must be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pem {
    /// Certificates (public): any mode will do.
    Public,
    /// A private key: refused when others can read it.
    PrivateKey,
}

/// A file given for a flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    /// The flag or setting that named it, for errors.
    pub flag: String,
    /// The file.
    pub path: PathBuf,
}

impl Named {
    /// `path` as given for `flag`.
    pub(crate) fn new(flag: &str, path: impl Into<PathBuf>) -> Self {
        Named {
            flag: flag.to_string(),
            path: path.into(),
        }
    }

    fn err(&self, message: impl Into<String>) -> TlsError {
        TlsError {
            flag: self.flag.clone(),
            path: self.path.clone(),
            message: message.into(),
        }
    }

    fn read(&self, kind: Pem) -> Result<Vec<u8>, TlsError> {
        let meta = std::fs::metadata(&self.path).map_err(|e| self.err(e.to_string()))?;
        #[cfg(unix)]
        if kind == Pem::PrivateKey {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode();
            if mode & 0o077 != 0 {
                return Err(self.err(format!(
                    "a private key readable by others (mode {:o}); run `chmod 600 {}`",
                    mode & 0o777,
                    self.path.display()
                )));
            }
        }
        if meta.len() > MAX_PEM {
            return Err(self.err("larger than 1 MiB; expected a PEM file"));
        }
        std::fs::read(&self.path).map_err(|e| self.err(e.to_string()))
    }

    fn certs(&self) -> Result<Vec<CertificateDer<'static>>, TlsError> {
        let pem = self.read(Pem::Public)?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(format!("not a PEM certificate file: {e}")))?;
        if certs.is_empty() {
            return Err(self.err("no `BEGIN CERTIFICATE` block found; expected a PEM certificate"));
        }
        Ok(certs)
    }

    fn key(&self) -> Result<PrivateKeyDer<'static>, TlsError> {
        let pem = self.read(Pem::PrivateKey)?;
        PrivateKeyDer::from_pem_slice(&pem)
            .map_err(|e| self.err(format!("no PEM private key found ({e})")))
    }

    fn roots(&self) -> Result<Arc<RootCertStore>, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in self.certs()? {
            roots
                .add(cert)
                .map_err(|e| self.err(format!("not a usable CA certificate: {e}")))?;
        }
        Ok(Arc::new(roots))
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A worker's TLS acceptor (a newtype so configurations can derive `Debug`).
#[derive(Clone)]
pub(crate) struct ServerTls(pub TlsAcceptor);

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls")
    }
}

/// The worker's side: its certificate chain and key, and, for mutual TLS, the CA that
/// signs the leads' client certificates.
pub(crate) fn acceptor(
    cert: &Named,
    key: &Named,
    client_ca: Option<&Named>,
) -> Result<ServerTls, TlsError> {
    let (chain, private) = (cert.certs()?, key.key()?);
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| cert.err(format!("cannot set up TLS 1.3: {e}")))?;
    let builder = match client_ca {
        Some(ca) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                ca.roots()?,
                provider(),
            )
            .build()
            .map_err(|e| ca.err(format!("cannot verify clients with it: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder.with_single_cert(chain, private).map_err(|e| {
        key.err(format!(
            "does not go with the certificate {} ({e})",
            cert.path.display()
        ))
    })?;
    Ok(ServerTls(TlsAcceptor::from(Arc::new(config))))
}

/// The lead's side: the CA that signs the workers' certificates, and optionally a client
/// certificate and key for workers that demand mutual TLS.
pub(crate) fn connector(
    ca: &Named,
    client: Option<(&Named, &Named)>,
) -> Result<TlsConnector, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| ca.err(format!("cannot set up TLS 1.3: {e}")))?
        .with_root_certificates(ca.roots()?);
    let config = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(cert.certs()?, key.key()?)
            .map_err(|e| {
                key.err(format!(
                    "does not go with the certificate {} ({e})",
                    cert.path.display()
                ))
            })?,
        None => builder.with_no_client_auth(),
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Why the lead could not connect to a worker over TLS.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsConnectError {
    /// The host of the worker's address cannot be a certificate's name.
    #[error("`{host}` cannot name a TLS certificate: {reason}")]
    Name {
        /// The host as given.
        host: String,
        /// Why it is not a name.
        reason: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed (most often: the certificate does not match).
    #[error(
        "the TLS handshake failed ({0}): the worker's certificate must be signed by \
         the --worker-ca CA and name the host as given in --workers, and the worker \
         must run with --tls-cert/--tls-key"
    )]
    Handshake(String),
    /// The connection failed otherwise.
    #[error("cannot connect: {0}")]
    Connect(String),
}

/// The name a worker's certificate must carry: the host of `addr` (`host:port`) as the
/// lead was given it, an IP address or a DNS name.
pub(crate) fn server_name(addr: &str) -> Result<ServerName<'static>, TlsConnectError> {
    let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|reason| TlsConnectError::Name {
        host: host.to_string(),
        reason,
    })
}

/// Connects the lead's node `server` to the worker at `sock` (given as `addr`) over TLS,
/// verifying its certificate; the cookie handshake then runs inside the connection.
pub(crate) async fn connect(
    server: &ActorRef<NodeServerMessage>,
    sock: SocketAddr,
    addr: &str,
    connector: &TlsConnector,
) -> Result<(), TlsConnectError> {
    let name = server_name(addr)?;
    ractor_cluster::client_connect_enc(server, sock, connector.clone(), name)
        .await
        .map_err(|e| match e {
            ractor_cluster::ClientConnectErr::Encryption(e) => {
                tracing::warn!("worker {addr}: TLS handshake failed: {e}");
                TlsConnectError::Handshake(e.to_string())
            }
            e => TlsConnectError::Connect(e.to_string()),
        })
}

/// Accepts TLS connections on `listener` until the process ends; each handshake runs in
/// its own task with a deadline, and only finished handshakes reach the node server
/// (where the cookie handshake follows). Refusals are logged with the peer's address.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    server: ActorRef<NodeServerMessage>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("cannot accept a connection: {e}");
                // Out of descriptors, most often: give the running tasks room to finish.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (acceptor, server) = (acceptor.clone(), server.clone());
        tokio::spawn(async move { handshake(stream, peer, acceptor, server).await });
    }
}

async fn handshake(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    server: ActorRef<NodeServerMessage>,
) {
    let _ = stream.set_nodelay(true);
    let Ok(local) = stream.local_addr() else {
        return;
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => {
            tracing::info!("TLS connection from {peer}");
            let _ = server.cast(NodeServerMessage::ConnectionOpened {
                stream: Box::new(NetworkStream::TlsServer {
                    peer_addr: peer,
                    local_addr: local,
                    stream: tls,
                }),
                is_server: true,
            });
        }
        Ok(Err(e)) => tracing::warn!(
            "refused a connection from {peer}: the TLS handshake failed ({e}); this worker \
             accepts TLS only: the lead needs --worker-ca (and a client certificate if the \
             worker has --tls-ca)"
        ),
        Err(_) => tracing::warn!(
            "refused a connection from {peer}: no TLS handshake within {} s",
            HANDSHAKE_TIMEOUT.as_secs()
        ),
    }
}
