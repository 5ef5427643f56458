//! crew's side of the proxy for one sandboxed command: a tokio task that receives the
//! listening socket the child opened inside its network namespace (over a Unix socket
//! pair, `SCM_RIGHTS`) and serves the proxy on it. The [`ProxySession`] is kept with the
//! command's guard; dropping it (when the command has ended) stops the task, closes the
//! listener and every connection in progress, and so frees the namespace.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use tokio::io::Interest;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::ask::Deferred;
use super::proxy::{self, Refusals, Rules};

/// The proxy serving one command; stops when dropped.
#[derive(Debug)]
pub struct ProxySession {
    task: JoinHandle<()>,
    refusals: Refusals,
    saves: Deferred,
}

impl Drop for ProxySession {
    fn drop(&mut self) {
        self.task.abort();
        self.saves.persist();
    }
}

impl ProxySession {
    /// Starts waiting for the listener the child sends over `ours`, then serves `rules`
    /// on it. Needs a tokio runtime (commands are always started from one).
    pub fn receive(ours: UnixStream, rules: Rules) -> io::Result<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            io::Error::other("the sandbox's network proxy needs crew's async runtime")
        })?;
        ours.set_nonblocking(true)?;
        let refusals = rules.refusals.clone();
        let saves = rules.saves.clone();
        let task = runtime.spawn(async move {
            let Ok(sock) = tokio::net::UnixStream::from_std(ours) else {
                return;
            };
            match receive_listener(&sock).await {
                Ok(Some(listener)) => proxy::serve(listener, rules).await,
                // The child ended (or was never started) before handing it over.
                Ok(None) => {}
                Err(e) => tracing::warn!("the sandbox's network proxy did not start: {e}"),
            }
        });
        Ok(Self {
            task,
            refusals,
            saves,
        })
    }

    /// Serves `rules` on `listener` directly (the tier without network namespaces, where
    /// the proxy listens on the host's loopback).
    pub fn serve(listener: TcpListener, rules: Rules) -> Self {
        let refusals = rules.refusals.clone();
        let saves = rules.saves.clone();
        Self {
            task: tokio::spawn(proxy::serve(listener, rules)),
            refusals,
            saves,
        }
    }

    /// Saves the hosts a human allowed "always" while the command ran (call it once the
    /// command's protected files were restored; dropping the session does it too).
    pub fn persist_approved(&self) {
        self.saves.persist();
    }

    /// The `host:port` targets the proxy refused so far.
    pub fn refused(&self) -> Vec<String> {
        self.refusals.list()
    }
}

/// Waits for the `SCM_RIGHTS` message; `Ok(None)` when the other end closed without one.
async fn receive_listener(sock: &tokio::net::UnixStream) -> io::Result<Option<TcpListener>> {
    loop {
        sock.readable().await?;
        match sock.try_io(Interest::READABLE, || recv_fd(sock.as_raw_fd())) {
            Ok(None) => return Ok(None),
            Ok(Some(owned)) => {
                let std = std::net::TcpListener::from(owned);
                std.set_nonblocking(true)?;
                return TcpListener::from_std(std).map(Some);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One `recvmsg`: the descriptor it carried (close-on-exec), `None` at end of stream.
fn recv_fd(sock: std::os::fd::RawFd) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(std::os::fd::RawFd);
    let msg = recvmsg::<()>(sock, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)
        .map_err(io::Error::from)?;
    let mut received = None;
    for cmsg in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            for raw in fds {
                // SAFETY: the kernel just installed `raw` in our table for us alone.
                let owned = unsafe { OwnedFd::from_raw_fd(raw) };
                if received.is_none() {
                    received = Some(owned);
                }
            }
        }
    }
    if msg.bytes == 0 && received.is_none() {
        return Ok(None);
    }
    received
        .map(Some)
        .ok_or_else(|| io::Error::other("the sandboxed child sent no listening socket"))
}
