//! Binding the server's UDP socket, and how peers' addresses are shown.
//!
//! The default host is `::` with IPV6_V6ONLY off: one socket takes IPv4 and
//! IPv6 clients, so `localhost` works whichever address a client resolves
//! it to (Chromium tries `::1` first). IPv4 peers then arrive as IPv4-mapped
//! IPv6 addresses (`::ffff:127.0.0.1`); quiche and the socket keep those, and
//! only what people read (events, logs, qlog titles) shows the plain IPv4.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use socket2::{Domain, Protocol, Socket, Type};

/// Binds `addr`. For `::` the socket is dual-stack; where the host has no
/// IPv6 (no address family, or no IPv6 address to bind) it binds `0.0.0.0`
/// on the same port instead, as Node's `net` does for an unspecified host
/// (the socket's local address then says IPv4, which the startup line shows).
/// `shared`: SO_REUSEPORT, for the sockets of one server's workers (set
/// only then, so a second server on a port in use still fails to bind).
pub fn bind(addr: SocketAddr, shared: bool) -> io::Result<UdpSocket> {
    if addr.ip() != Ipv6Addr::UNSPECIFIED {
        return bind_one(addr, shared, None);
    }
    match bind_one(addr, shared, Some(false)) {
        Err(e) if no_ipv6(&e) => bind_one(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), addr.port()), shared, None),
        result => result,
    }
}

fn bind_one(addr: SocketAddr, shared: bool, only_v6: Option<bool>) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(v6) = only_v6 {
        socket.set_only_v6(v6)?;
    }
    if shared {
        set_reuse_port(&socket)?;
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

fn set_reuse_port(socket: &Socket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_REUSEPORT,
            &on as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn no_ipv6(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL | libc::EPROTONOSUPPORT))
}

/// The address as people read it: an IPv4-mapped IPv6 address as plain
/// IPv4 (`127.0.0.1:443`, not `[::ffff:127.0.0.1]:443`).
pub fn display(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => addr,
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_display_as_ipv4() {
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:4433".parse().unwrap();
        assert_eq!(display(mapped).to_string(), "127.0.0.1:4433");
        let v6: SocketAddr = "[::1]:4433".parse().unwrap();
        assert_eq!(display(v6).to_string(), "[::1]:4433");
        let v4: SocketAddr = "10.0.0.1:1".parse().unwrap();
        assert_eq!(display(v4), v4);
    }

    #[test]
    fn unspecified_ipv6_takes_ipv4_and_ipv6_clients() {
        let socket = bind("[::]:0".parse().unwrap(), false).unwrap();
        let local = socket.local_addr().unwrap();
        if local.is_ipv4() {
            return; // no IPv6 on this host: it fell back, nothing dual-stack to check
        }
        let port = local.port();
        for (client, target) in [("127.0.0.1:0", format!("127.0.0.1:{port}")), ("[::1]:0", format!("[::1]:{port}"))] {
            let c = UdpSocket::bind(client).unwrap();
            c.send_to(b"x", target.as_str()).unwrap();
            let mut buf = [0u8; 4];
            let (n, from) = socket.recv_from(&mut buf).unwrap();
            assert_eq!(n, 1);
            assert_eq!(display(from).ip(), c.local_addr().unwrap().ip(), "from {from}");
        }
    }
}
