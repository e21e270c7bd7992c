//! The server's UDP socket: batched receive (recvmmsg) with GRO and GSO on
//! send through quinn-udp (with its fallbacks), runs of one connection's
//! packets sent as one super-datagram, the sends the kernel would not
//! take yet, and per-packet addresses: each datagram's destination is read
//! (IP_PKTINFO / IPV6_PKTINFO, which quinn-udp turns on), and on a socket
//! bound to a wildcard every reply names its source, the address the
//! client reached, so a host with several addresses (or a virtual address
//! a balancer forwards to) never answers from another one.

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr};

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};

use crate::counters::Counters;
use crate::error::ListenError;

/// quiche's max_send_udp_payload_size (config.rs) rounded up.
pub const MAX_PACKET: usize = 1500;
const MAX_GSO_SEGMENTS: usize = 32;

/// Receive buffers one call can fill: quinn-udp hands up to this many to
/// one recvmmsg (32 on Linux; 1 where it reads one datagram per call).
pub const RECV_SLOTS: usize = quinn_udp::BATCH_SIZE;
/// A receive buffer with GRO: the kernel coalesces at most 64 KiB into one
/// read, so nothing is truncated.
const GRO_SLOT: usize = 64 * 1024;
/// A receive buffer without GRO holds one datagram. quiche advertises
/// max_udp_payload_size 1472 (config::RECV_LIMIT) and a client's first
/// Initial is 1200 to about 1472 bytes, so 2 KiB holds whatever a peer
/// sends; a larger datagram arrives truncated and quiche drops it, as if lost.
const PLAIN_SLOT: usize = 2048;
/// What the receive buffers are filled with at start (any non-zero byte).
const RECV_FILL: u8 = 0xa5;

/// A send the socket would not take (WouldBlock), kept in order.
struct Blocked {
    data: Vec<u8>,
    to: SocketAddr,
    from: Option<IpAddr>,
    segment: Option<usize>,
}

/// Packets gathered in `send_buf[..len]`: `count` of `segment` bytes to
/// `to` from `from` (None: the kernel picks), the last possibly shorter.
pub struct Run {
    pub len: usize,
    pub count: usize,
    pub segment: usize,
    pub to: SocketAddr,
    pub from: Option<IpAddr>,
}

impl Run {
    pub fn empty(to: SocketAddr, from: Option<IpAddr>) -> Run {
        Run { len: 0, count: 0, segment: 0, to, from }
    }
}

pub struct Socket {
    socket: UdpSocket,
    /// GSO/GRO-capable socket state (quinn-udp).
    udp: quinn_udp::UdpSocketState,
    pub local: SocketAddr,
    /// Bound to 0.0.0.0 or `::`: replies name their source address.
    wildcard: bool,
    /// `RECV_SLOTS` receive buffers of `slot` bytes back to back, allocated
    /// once (2 MiB with GRO, 64 KiB without).
    pub recv_buf: Vec<u8>,
    slot: usize,
    /// What the last `recv` put in each slot it filled.
    recv_meta: [quinn_udp::RecvMeta; RECV_SLOTS],
    /// Outgoing packets of one connection, back to back, sent as one GSO
    /// super-datagram when the kernel supports it.
    pub send_buf: Vec<u8>,
    /// Sends the socket would not take yet, in order; at most the runs of
    /// one connection's flush.
    blocked: Vec<Blocked>,
    /// Datagrams may be waiting: a readable event came, or the last read
    /// stopped at the per-turn limit; false once a read found the socket
    /// empty (WouldBlock).
    pub may_have_more: bool,
}

fn enlarge_socket_buffers(socket: &std::net::UdpSocket) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 4 << 20;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // Best effort: the kernel caps it at net.core.[rw]mem_max.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &size as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

impl Socket {
    pub fn bind(host: &str, port: u16, shared: bool) -> Result<Socket, ListenError> {
        let addr: SocketAddr =
            format!("{}:{}", bracket(host), port).parse().map_err(|_| ListenError::InvalidHost { host: host.to_string() })?;
        let std_socket = crate::udp_bind::bind(addr, shared).map_err(|cause| match cause.kind() {
            ErrorKind::AddrInUse => ListenError::PortInUse { port, host: host.to_string() },
            _ => ListenError::Bind { addr, cause },
        })?;
        std_socket.set_nonblocking(true).map_err(ListenError::Socket)?;
        enlarge_socket_buffers(&std_socket);
        let local = std_socket.local_addr().map_err(ListenError::Socket)?;
        let socket = UdpSocket::from_std(std_socket);
        let udp = quinn_udp::UdpSocketState::new((&socket).into()).map_err(ListenError::UdpSetup)?;
        let slot = if udp.gro_segments() > 1 { GRO_SLOT } else { PLAIN_SLOT };
        Ok(Socket {
            udp,
            socket,
            local,
            wildcard: local.ip().is_unspecified(),
            // Filled rather than zeroed: zeroed memory comes from calloc as
            // untouched pages, committed only as bursts first reach the later
            // slots, so RSS would creep up by as much as 2 MiB under load and
            // read as a leak (the soak's rule). The contents never matter:
            // a slot is read only after recv wrote it.
            recv_buf: vec![RECV_FILL; RECV_SLOTS * slot],
            slot,
            recv_meta: [quinn_udp::RecvMeta::default(); RECV_SLOTS],
            send_buf: vec![0; MAX_GSO_SEGMENTS * MAX_PACKET],
            blocked: Vec::new(),
            // Datagrams that arrive before the socket is registered make
            // it ready at registration (epoll reports what is queued).
            may_have_more: false,
        })
    }

    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.socket.as_raw_fd()
    }

    pub fn register(&mut self, registry: &Registry, token: Token) -> Result<(), ListenError> {
        registry.register(&mut self.socket, token, Interest::READABLE | Interest::WRITABLE).map_err(ListenError::Socket)
    }

    /// One receive call (recvmmsg on Linux) into at most `max` (>= 1) of
    /// the slots; returns how many it filled. Each filled slot is one
    /// datagram or, with GRO, several of `stride` bytes (`received`).
    pub fn recv(&mut self, max: usize, counters: &Counters) -> io::Result<usize> {
        let n = max.clamp(1, RECV_SLOTS);
        let mut slots = self.recv_buf.chunks_mut(self.slot);
        let mut bufs: [std::io::IoSliceMut<'_>; RECV_SLOTS] =
            std::array::from_fn(|_| std::io::IoSliceMut::new(slots.next().unwrap_or_default()));
        Counters::add(&counters.udp_recv_calls, 1);
        self.udp.recv((&self.socket).into(), &mut bufs[..n], &mut self.recv_meta[..n])
    }

    /// The local address a datagram reached, from its destination IP (the
    /// kernel's packet info) and the bound port, in the socket's family: an
    /// IPv4 destination on a dual-stack socket is written IPv4-mapped, as
    /// its source is. Without packet info, the bound address.
    pub fn local_for(&self, dst: Option<IpAddr>) -> SocketAddr {
        let ip = match (dst, self.local) {
            (None, _) => return self.local,
            (Some(IpAddr::V4(v4)), SocketAddr::V6(_)) => IpAddr::V6(v4.to_ipv6_mapped()),
            (Some(IpAddr::V6(v6)), SocketAddr::V4(_)) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            (Some(ip), _) => ip,
        };
        SocketAddr::new(ip, self.local.port())
    }

    /// The source address to name on a reply from `local` (a path's local
    /// address): on a wildcard socket, that address; on a socket bound to
    /// one address the kernel uses it anyway, so nothing is named.
    pub fn source_for(&self, local: SocketAddr) -> Option<IpAddr> {
        (self.wildcard && !local.ip().is_unspecified()).then_some(local.ip())
    }

    /// Where slot `i` of the last `recv` starts in `recv_buf`, and what it holds.
    pub fn received(&self, i: usize) -> (usize, quinn_udp::RecvMeta) {
        (i * self.slot, self.recv_meta[i])
    }

    /// Answers an Initial of an unsupported version.
    pub fn negotiate_version(
        &mut self,
        scid: &quiche::ConnectionId,
        dcid: &quiche::ConnectionId,
        to: SocketAddr,
        from: Option<IpAddr>,
        counters: &Counters,
    ) {
        if let Ok(n) = quiche::negotiate_version(scid, dcid, &mut self.send_buf) {
            self.send_lone(n, to, from, counters);
        }
    }

    /// Sends a stateless reset, a Retry, a closing packet again: a lone
    /// datagram outside a connection's run, from `from` when named. Lost
    /// if the socket will not take it now, as the network could lose it.
    pub fn send_lone(&mut self, len: usize, to: SocketAddr, from: Option<IpAddr>, counters: &Counters) {
        Counters::add(&counters.udp_datagrams_sent, 1);
        Counters::add(&counters.udp_bytes_sent, len as u64);
        if from.is_some() {
            Counters::add(&counters.udp_sent_with_source, 1);
        }
        let _ = send_run(&self.udp, &self.socket, &self.send_buf[..len], to, from, None, counters);
    }

    pub fn max_segments(&self) -> usize {
        self.udp.max_gso_segments().clamp(1, MAX_GSO_SEGMENTS)
    }

    pub fn is_blocked(&self) -> bool {
        !self.blocked.is_empty()
    }

    /// Sends what was blocked, in order; false if the socket still will not
    /// take it.
    pub fn retry_blocked(&mut self, counters: &Counters) -> bool {
        while !self.blocked.is_empty() {
            let b = &self.blocked[0];
            if send_run(&self.udp, &self.socket, &b.data, b.to, b.from, b.segment, counters).is_err() {
                return false;
            }
            self.blocked.remove(0);
        }
        true
    }

    /// Sends a run, or queues it behind earlier blocked sends so order holds.
    pub fn flush_run(&mut self, run: &Run, counters: &Counters) {
        if run.count == 0 {
            return;
        }
        Counters::add(&counters.udp_datagrams_sent, run.count as u64);
        Counters::add(&counters.udp_bytes_sent, run.len as u64);
        if run.from.is_some() {
            Counters::add(&counters.udp_sent_with_source, run.count as u64);
        }
        if run.count > 1 {
            Counters::add(&counters.udp_gso_sends, 1);
        }
        let segment = (run.count > 1).then_some(run.segment);
        let contents = &self.send_buf[..run.len];
        if self.blocked.is_empty() && send_run(&self.udp, &self.socket, contents, run.to, run.from, segment, counters).is_ok() {
            return;
        }
        self.blocked.push(Blocked { data: contents.to_vec(), to: run.to, from: run.from, segment });
    }
}

/// One GSO send (or a plain one for a single packet): one sendmsg, counted
/// whatever it returns. quinn-udp falls back to separate datagrams itself
/// where the kernel lacks GSO.
fn send_run(
    udp: &quinn_udp::UdpSocketState,
    socket: &UdpSocket,
    buf: &[u8],
    to: SocketAddr,
    from: Option<IpAddr>,
    segment: Option<usize>,
    counters: &Counters,
) -> io::Result<()> {
    let t = quinn_udp::Transmit { destination: to, ecn: None, contents: buf, segment_size: segment, src_ip: from };
    Counters::add(&counters.udp_send_calls, 1);
    match udp.try_send(socket.into(), &t) {
        // Larger than the path allows (the interface's MTU, or a route's
        // learned one): a PMTU probe, or packets built for a larger path
        // than this one. Never silently: counted (and logged once by the
        // loop), and a GSO run is re-sent one datagram at a time so only
        // the too-large ones are lost; QUIC loss recovery (and PMTUD for a
        // probe) handles those.
        Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
            match segment {
                Some(size) => {
                    for one in buf.chunks(size) {
                        let t =
                            quinn_udp::Transmit { destination: to, ecn: None, contents: one, segment_size: None, src_ip: from };
                        Counters::add(&counters.udp_send_calls, 1);
                        match udp.try_send(socket.into(), &t) {
                            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => Counters::add(&counters.udp_too_large, 1),
                            // WouldBlock part way: the rest is lost, as on a full queue.
                            _ => {}
                        }
                    }
                }
                None => Counters::add(&counters.udp_too_large, 1),
            }
            Ok(())
        }
        // Any other error (an ICMP-reported peer, GSO refused: quinn-udp then
        // turns GSO off) loses these packets like the network would; QUIC
        // loss recovery resends them.
        Err(e) if e.kind() != ErrorKind::WouldBlock => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (std::net::UdpSocket, UdpSocket, quinn_udp::UdpSocketState, SocketAddr) {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(500))).unwrap();
        let std_tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        std_tx.set_nonblocking(true).unwrap();
        enlarge_socket_buffers(&std_tx);
        let tx = UdpSocket::from_std(std_tx);
        let udp = quinn_udp::UdpSocketState::new((&tx).into()).unwrap();
        let to = rx.local_addr().unwrap();
        (rx, tx, udp, to)
    }

    #[test]
    fn a_datagram_too_large_is_counted_not_silent() {
        let (_rx, tx, udp, to) = pair();
        let counters = Counters::default();
        let big = vec![0u8; 70_000];
        send_run(&udp, &tx, &big, to, None, None, &counters).unwrap();
        assert_eq!(Counters::get(&counters.udp_too_large), 1);
    }

    #[test]
    fn a_gso_run_the_kernel_refuses_as_too_large_is_resent_datagram_by_datagram() {
        let (rx, tx, udp, to) = pair();
        if udp.max_gso_segments() < 2 {
            return;
        }
        let counters = Counters::default();
        // 60 segments of 1,200 bytes: 72,000 bytes, more than one GSO send
        // (64 KiB) may carry.
        let run = vec![0x40u8; 60 * 1200];
        send_run(&udp, &tx, &run, to, None, Some(1200), &counters).unwrap();
        assert_eq!(Counters::get(&counters.udp_too_large), 0);
        let mut buf = [0u8; 2048];
        let mut got = 0;
        while let Ok((n, _)) = rx.recv_from(&mut buf) {
            assert_eq!(n, 1200);
            got += 1;
        }
        assert_eq!(got, 60, "every datagram arrived");
        assert_eq!(Counters::get(&counters.udp_send_calls), 61, "the refused run, then one send per datagram");
    }
}
