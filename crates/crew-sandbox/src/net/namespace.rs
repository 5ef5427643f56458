//! The network namespace a sandboxed command runs in: only a loopback interface, brought
//! up so that `127.0.0.1` works inside, and nothing that leads out. When the proxy is on,
//! the child also opens the proxy's listening socket on `127.0.0.1:PROXY_PORT` *inside*
//! the namespace and hands the descriptor to crew over a Unix socket pair; crew accepts on
//! it from outside (a socket keeps the namespace it was made in), so no relay process is
//! needed and nothing of crew runs in the namespace.
//!
//! Everything is prepared in the parent (the socket pair, the address, the interface
//! request, the id maps); [`PreparedNet::apply`] runs between `fork` and `exec` and makes
//! only system calls on that data: no allocation, no locks.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use nix::errno::Errno;
use nix::libc;
use nix::sched::{CloneFlags, unshare};

/// The errno the child reports when it could not build its network namespace; the
/// parent turns it back into a sandbox error.
pub const NET_NS_ERRNO: i32 = Errno::ENONET as i32;

/// The port the proxy listens on inside every namespace (it is fresh, so always free).
pub const PROXY_PORT: u16 = 3128;

/// The child's half of the proxy hand-over: the socket to send the listener on.
#[derive(Debug)]
struct Handover {
    send: OwnedFd,
    addr: libc::sockaddr_in,
}

/// A network namespace set-up, ready for [`PreparedNet::apply`] in the child.
pub struct PreparedNet {
    root: bool,
    uid_map: CString,
    gid_map: CString,
    /// `lo`, as an interface name field (`ifreq` itself holds a pointer, so it is built
    /// on the child's stack).
    lo: [libc::c_char; libc::IFNAMSIZ],
    handover: Option<Handover>,
}

impl std::fmt::Debug for PreparedNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedNet")
            .field("root", &self.root)
            .field("proxy", &self.handover.is_some())
            .finish()
    }
}

impl PreparedNet {
    /// A namespace with loopback only.
    pub fn loopback_only() -> io::Result<Self> {
        let mut lo = [0 as libc::c_char; libc::IFNAMSIZ];
        for (dst, src) in lo.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let uid = nix::unistd::geteuid();
        let gid = nix::unistd::getegid();
        Ok(Self {
            root: uid.is_root(),
            uid_map: map_text(uid.as_raw())?,
            gid_map: map_text(gid.as_raw())?,
            lo,
            handover: None,
        })
    }

    /// A namespace with loopback and the proxy's listener on `127.0.0.1:PROXY_PORT`, whose
    /// descriptor the child sends over the returned socket (crew's end, close-on-exec).
    pub fn with_proxy() -> io::Result<(Self, UnixStream)> {
        let mut net = Self::loopback_only()?;
        let (ours, theirs) = UnixStream::pair()?;
        // SAFETY: an all-zero `sockaddr_in` is valid; the fields are set below.
        let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = PROXY_PORT.to_be();
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        net.handover = Some(Handover {
            send: OwnedFd::from(theirs),
            addr,
        });
        Ok((net, ours))
    }

    /// Builds the namespace in the calling (child) process. Meant for `pre_exec`, after
    /// the mount namespace (whose user namespace, when there is one, lets us make this
    /// one): system calls only, no allocation. Any failure is reported as
    /// [`NET_NS_ERRNO`].
    pub fn apply(&self) -> io::Result<()> {
        self.try_apply()
            .map_err(|_| io::Error::from_raw_os_error(NET_NS_ERRNO))
    }

    fn try_apply(&self) -> Result<(), Errno> {
        match unshare(CloneFlags::CLONE_NEWNET) {
            Ok(()) => {}
            // Not root and not yet in a user namespace of our own: make one.
            Err(Errno::EPERM) if !self.root => {
                nix::sys::prctl::set_dumpable(true)?;
                unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)?;
                write_proc(c"/proc/self/setgroups", c"deny")?;
                write_proc(c"/proc/self/uid_map", &self.uid_map)?;
                write_proc(c"/proc/self/gid_map", &self.gid_map)?;
            }
            Err(e) => return Err(e),
        }
        self.loopback_up()?;
        if let Some(h) = &self.handover {
            send_listener(h)?;
        }
        Ok(())
    }

    /// `ip link set lo up`, with two `ioctl`s on a throwaway socket.
    fn loopback_up(&self) -> Result<(), Errno> {
        // SAFETY: plain system calls on a stack copy of data prepared in the parent.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(Errno::last());
            }
            // An all-zero `ifreq` is a valid value (integers, arrays and a null pointer).
            let mut req: libc::ifreq = std::mem::zeroed();
            req.ifr_name = self.lo;
            let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
            if rc == 0 {
                req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
                rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
            }
            let err = Errno::last();
            libc::close(fd);
            if rc == 0 { Ok(()) } else { Err(err) }
        }
    }
}

/// Opens the listener on `127.0.0.1:PROXY_PORT` in the (new) namespace, sends it over the
/// hand-over socket with `SCM_RIGHTS`, and closes our copy.
fn send_listener(h: &Handover) -> Result<(), Errno> {
    // SAFETY: plain system calls on stack buffers and data prepared in the parent.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(Errno::last());
        }
        let ok = libc::bind(
            fd,
            (&h.addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) == 0
            && libc::listen(fd, 128) == 0
            && send_fd(h.send.as_raw_fd(), fd);
        let err = Errno::last();
        libc::close(fd);
        if ok { Ok(()) } else { Err(err) }
    }
}

/// Sends `fd` as one `SCM_RIGHTS` message over `sock` (with one data byte, which
/// `SOCK_STREAM` needs to carry the message).
///
/// # Safety
/// Both must be open descriptors; only system calls and stack memory are used.
unsafe fn send_fd(sock: libc::c_int, fd: libc::c_int) -> bool {
    // Aligned room for one `cmsghdr` carrying one `int` (CMSG_SPACE(4) is 24 on 64-bit).
    let mut control = [0u64; 4];
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY (whole block): the header points at the stack buffers above, which outlive
    // the call; the CMSG macros only compute offsets into `control`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return false;
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) == 1
    }
}

fn map_text(id: u32) -> io::Result<CString> {
    CString::new(format!("{id} {id} 1\n")).map_err(|e| io::Error::other(e.to_string()))
}

/// Writes `text` to a `/proc/self` file (no allocation).
fn write_proc(path: &std::ffi::CStr, text: &std::ffi::CStr) -> Result<(), Errno> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    let bytes = text.to_bytes();
    if nix::unistd::write(&fd, bytes)? == bytes.len() {
        Ok(())
    } else {
        Err(Errno::EIO)
    }
}
