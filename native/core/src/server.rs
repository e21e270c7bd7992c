//! The UDP I/O loop: one thread, one mio poll, every connection of the
//! server. Each turn reads a bounded run of datagrams, applies JavaScript's
//! commands, fires QUIC timers, lets the HTTP/3 layer of each touched
//! connection read its streams, writes packets, and ends the application's
//! turn (the JavaScript link sends at most one event batch then).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::app::{Application, CloseHow, ConnClosed, LogLevel, Mark};
use crate::config::Options;
use crate::counters::Counters;
use crate::h3::codes::{H3_INTERNAL_ERROR, H3_NO_ERROR};
use crate::h3::connection::{H3Connection, H3Options};
use crate::h3::settings::LocalSettings;
use crate::ids::{ConnId, StreamId};

const SOCKET: Token = Token(0);
const WAKER: Token = Token(1);

/// Datagrams read per turn before the loop goes on to process them; keeps
/// one turn's event batch bounded.
const MAX_READS_PER_TURN: usize = 256;

/// quiche's max_send_udp_payload_size (config.rs) rounded up.
const MAX_PACKET: usize = 1500;
const MAX_GSO_SEGMENTS: usize = 32;

/// quiche keeps at most 1,024 received DATAGRAMs per connection (config.rs)
/// and silently drops the oldest beyond that, while one turn may read
/// hundreds of packets, each carrying dozens of small datagrams. Draining a
/// connection's queue as soon as it holds this many keeps every datagram
/// quiche accepted countable (W7: usage.datagrams equals quiche's count).
const DGRAM_DRAIN_AT: usize = 512;

/// How long a graceful shutdown waits for in-flight requests and for
/// clients to acknowledge their responses; short enough that a server told
/// to stop exits within 5 s even with clients that vanished.
const DRAIN_DEADLINE: Duration = Duration::from_secs(3);
/// Longest a connection's packets wait for JavaScript's acknowledgement.
const HOLD_MAX: Duration = Duration::from_millis(5);

pub const SHUTDOWN_NONE: u8 = 0;
pub const SHUTDOWN_GRACEFUL: u8 = 1;
pub const SHUTDOWN_NOW: u8 = 2;

/// State shared between the loop thread and the threads that control it.
pub struct Shared {
    pub shutdown: AtomicU8,
    /// Wakes the loop: after a shutdown request, or when the application
    /// has responses or acknowledgements for it.
    pub waker: Waker,
    pub counters: Arc<Counters>,
}

struct Conn {
    quic: quiche::Connection,
    h3: H3Connection,
    peer: SocketAddr,
    /// Connection IDs routed to this connection: ours, and the client's
    /// original destination ID until the handshake moves on.
    cids: Vec<Vec<u8>>,
    cid_hex: String,
    dirty: bool,
    /// When the first packet arrived, for the handshake timeout.
    accepted_at: Instant,
    /// The handshake timed out: the connection is closed and dropped once
    /// its CONNECTION_CLOSE went out, without the draining period.
    expired: bool,
    /// quiche's DATAGRAM receive count already added to the counters.
    dgrams_counted: usize,
    /// This connection's entry in `Server::timers`.
    timer: Option<Instant>,
    /// Sending waits for JavaScript's answer to this turn's events.
    held: bool,
    /// JavaScript's responses were applied this turn: send them now.
    answered: bool,
}

pub struct Server<A: Application> {
    poll: Poll,
    socket: UdpSocket,
    local: SocketAddr,
    options: Options,
    h3_options: H3Options,
    config: quiche::Config,
    conns: HashMap<u32, Conn>,
    cids: HashMap<Vec<u8>, u32>,
    next_handle: u32,
    shared: Arc<Shared>,
    app: A,
    dirty: Vec<u32>,
    /// Connections flushed this turn: the only ones that can have closed.
    touched: Vec<u32>,
    /// QUIC timers by deadline, so a turn costs O(touched connections), not
    /// O(all connections): with 1,000 idle connections a scan per turn
    /// doubled the CPU per request (bench W5).
    timers: BTreeSet<(Instant, u32)>,
    /// Connections whose packets wait until JavaScript acknowledges the
    /// batch noted with each: a turn that hands requests to JavaScript would
    /// otherwise send an ACK-only packet now and the responses a moment
    /// later; held, the ACK rides with the responses (one packet, one
    /// send, one wake-up of the client fewer per turn). A hold ends at its
    /// deadline even if JavaScript is busy, so ACKs are never late by more
    /// than HOLD_MAX (well under the 25 ms max_ack_delay peers expect).
    held: Vec<(u32, Mark, Instant)>,
    /// GSO/GRO-capable socket state (quinn-udp).
    udp: quinn_udp::UdpSocketState,
    recv_buf: Vec<u8>,
    /// Outgoing packets of one connection, back to back, sent as one GSO
    /// super-datagram when the kernel supports it.
    send_buf: Vec<u8>,
    scratch: Vec<u8>,
    /// A packet the socket would not take; sent before anything else.
    /// Sends the socket would not take yet (WouldBlock), in order; at most
    /// the runs of one connection's flush.
    blocked: Vec<(Vec<u8>, SocketAddr, Option<usize>)>,
    socket_may_have_more: bool,
    drain_started: Option<Instant>,
    keylog: Option<crate::keylog::KeyLog>,
    qlog: Option<crate::qlog::QlogDir>,
    /// Connections in accept order with their accept time, for the handshake
    /// timeout: accept times only grow, so the front is the next deadline and
    /// each connection is looked at O(1) times, not on every turn.
    handshakes: VecDeque<(Instant, u32)>,
}

pub struct Bound<A: Application> {
    pub server: Server<A>,
    pub shared: Arc<Shared>,
    pub local: SocketAddr,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

impl<A: Application> Server<A> {
    /// Binds the socket and loads the identity on the caller's thread, so
    /// that a port in use or a bad key fails `listen` synchronously.
    pub fn bind(options: Options, app: A) -> Result<Bound<A>, String> {
        let config = options.quiche_config()?;
        let keylog = options.keylog_path.as_deref().map(crate::keylog::KeyLog::open).transpose()?;
        let qlog = options.qlog_dir.as_deref().map(crate::qlog::QlogDir::new).transpose()?;
        let addr: SocketAddr = format!("{}:{}", bracket(&options.host), options.port)
            .parse()
            .map_err(|_| format!("invalid host address: {}", options.host))?;
        let std_socket = std::net::UdpSocket::bind(addr).map_err(|e| match e.kind() {
            ErrorKind::AddrInUse => format!("UDP port {} on {} is already in use", options.port, options.host),
            _ => format!("cannot bind UDP {addr}: {e}"),
        })?;
        std_socket.set_nonblocking(true).map_err(|e| e.to_string())?;
        enlarge_socket_buffers(&std_socket);
        let local = std_socket.local_addr().map_err(|e| e.to_string())?;
        let mut socket = UdpSocket::from_std(std_socket);
        let poll = Poll::new().map_err(|e| e.to_string())?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| e.to_string())?;
        let waker = Waker::new(poll.registry(), WAKER).map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            shutdown: AtomicU8::new(SHUTDOWN_NONE),
            waker,
            counters: Arc::new(Counters::default()),
        });
        let h3_options = options.h3();
        let udp = quinn_udp::UdpSocketState::new((&socket).into()).map_err(|e| format!("UDP socket setup: {e}"))?;
        let server = Server {
            poll,
            socket,
            local,
            options,
            h3_options,
            config,
            conns: HashMap::new(),
            cids: HashMap::new(),
            next_handle: 1,
            app,
            shared: shared.clone(),
            dirty: Vec::new(),
            touched: Vec::new(),
            timers: BTreeSet::new(),
            held: Vec::new(),
            udp,
            recv_buf: vec![0; 65536],
            send_buf: vec![0; MAX_GSO_SEGMENTS * MAX_PACKET],
            scratch: vec![0; 65536],
            blocked: Vec::new(),
            socket_may_have_more: true,
            drain_started: None,
            keylog,
            qlog,
            handshakes: VecDeque::new(),
        };
        Ok(Bound { server, shared, local })
    }

    pub fn run(mut self) {
        let mut events = Events::with_capacity(64);
        loop {
            let timeout = self.poll_timeout();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != ErrorKind::Interrupted {
                    self.app.on_log(LogLevel::Error, &format!("poll failed: {e}"));
                    break;
                }
            }
            let turn = catch_unwind(AssertUnwindSafe(|| self.turn()));
            if turn.is_err() {
                let cause = crate::panic_report::take_last().map(|p| format!(" (panic {p})")).unwrap_or_default();
                self.app.on_log(LogLevel::Error, &format!("internal error in the I/O loop; continuing{cause}"));
            }
            if self.finished() {
                break;
            }
        }
        // Connections still draining at the deadline end with the server;
        // TypeScript hears of each, so nothing it tracks is left open.
        let left: Vec<u32> = self.conns.keys().copied().collect();
        for h in left {
            if let Some(mut conn) = self.conns.remove(&h) {
                conn.h3.on_connection_closed(&mut self.app);
                Counters::sub(&self.shared.counters.connections_open, 1);
                let closed = ConnClosed {
                    how: CloseHow::Local,
                    is_app: true,
                    code: H3_NO_ERROR,
                    reason: b"server closed",
                    peer: conn.peer,
                    cid: &conn.cid_hex,
                };
                self.app.on_conn_closed(ConnId(h), closed);
            }
        }
        self.app.on_server_closed();
        self.app.end_turn();
    }

    fn turn(&mut self) {
        self.apply_commands();
        self.check_shutdown();
        if self.app.accepting() {
            self.read_packets();
        }
        self.fire_timers();
        self.expire_handshakes();
        self.process_dirty();
        self.send_packets();
        self.collect_closed();
        self.app.end_turn();
    }

    fn poll_timeout(&self) -> Option<Duration> {
        if (self.socket_may_have_more && self.app.accepting()) || !self.dirty.is_empty() {
            return Some(Duration::ZERO);
        }
        let now = Instant::now();
        let mut next = self.timers.first().map(|(t, _)| *t);
        if let Some(h) = self.next_handshake_deadline() {
            next = Some(next.map_or(h, |n| n.min(h)));
        }
        if let Some(h) = self.held.iter().map(|(_, _, d)| *d).min() {
            next = Some(next.map_or(h, |n| n.min(h)));
        }
        if let Some(started) = self.drain_started {
            let deadline = started + DRAIN_DEADLINE;
            next = Some(next.map_or(deadline, |n| n.min(deadline)));
        }
        next.map(|t| t.saturating_duration_since(now))
    }

    fn mark_dirty(&mut self, handle: u32) {
        if let Some(c) = self.conns.get_mut(&handle) {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push(handle);
            }
        }
    }

    fn read_packets(&mut self) {
        self.socket_may_have_more = false;
        for _ in 0..MAX_READS_PER_TURN {
            let mut meta = [quinn_udp::RecvMeta::default()];
            let result = {
                let mut bufs = [std::io::IoSliceMut::new(&mut self.recv_buf)];
                self.udp.recv((&self.socket).into(), &mut bufs, &mut meta)
            };
            match result {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // EINTR, or an ICMP error for one peer: read on.
                Err(_) => continue,
            }
            let meta = &meta[0];
            // With GRO one read may carry several datagrams of `stride` bytes.
            let stride = meta.stride.max(1);
            let mut off = 0;
            while off < meta.len {
                let len = stride.min(meta.len - off);
                self.on_datagram(off, len, meta.addr);
                off += len;
            }
        }
        self.socket_may_have_more = true;
    }

    fn on_datagram(&mut self, off: usize, len: usize, from: SocketAddr) {
        Counters::add(&self.shared.counters.udp_bytes_received, len as u64);
        Counters::add(&self.shared.counters.udp_datagrams_received, 1);
        let buf = &mut self.recv_buf[off..off + len];
        let Ok(hdr) = quiche::Header::from_slice(buf, quiche::MAX_CONN_ID_LEN) else { return };
        let handle = match self.cids.get(hdr.dcid.as_ref()) {
            Some(h) => *h,
            None => {
                if hdr.ty != quiche::Type::Initial {
                    return;
                }
                if !quiche::version_is_supported(hdr.version) {
                    if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut self.send_buf) {
                        let _ = self.socket.send_to(&self.send_buf[..n], from);
                    }
                    return;
                }
                let dcid = hdr.dcid.to_vec();
                match self.accept(&dcid, from) {
                    Some(h) => h,
                    None => return,
                }
            }
        };
        let local = self.local;
        let Some(conn) = self.conns.get_mut(&handle) else { return };
        let buf = &mut self.recv_buf[off..off + len];
        let result = catch_unwind(AssertUnwindSafe(|| conn.quic.recv(buf, quiche::RecvInfo { from, to: local })));
        if result.is_err() {
            self.on_panic(handle, "packet processing");
        } else if conn.quic.dgram_recv_queue_len() >= DGRAM_DRAIN_AT {
            let (app, scratch) = (&mut self.app, &mut self.scratch);
            let drained = catch_unwind(AssertUnwindSafe(|| conn.h3.on_datagrams(&mut conn.quic, app, scratch)));
            match drained {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let _ = conn.quic.close(true, e.code, e.reason.as_bytes());
                }
                Err(_) => self.on_panic(handle, "datagram processing"),
            }
        }
        self.mark_dirty(handle);
    }

    fn accept(&mut self, odcid: &[u8], from: SocketAddr) -> Option<u32> {
        if self.drain_started.is_some() || self.conns.len() >= self.options.max_connections {
            return None;
        }
        let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
        getrandom::fill(&mut scid).ok()?;
        let scid_ref = quiche::ConnectionId::from_ref(&scid);
        let mut quic = quiche::accept(&scid_ref, None, self.local, from, &mut self.config).ok()?;
        // Key log and qlog must be attached before the first packet is processed.
        if let Some(k) = &self.keylog {
            quic.set_keylog(k.writer());
        }
        if let Some(q) = &self.qlog {
            if let Err(e) = q.attach(&mut quic, &hex(&scid), &from.to_string()) {
                self.app.on_log(LogLevel::Warn, &e);
            }
        }
        let handle = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        let local_settings = LocalSettings {
            max_field_section_size: self.options.max_field_section_size as u64,
            webtransport: self.options.webtransport,
            max_webtransport_sessions: crate::h3::webtransport::SESSIONS_CAP,
        };
        let h3 = H3Connection::new(ConnId(handle), self.h3_options.clone(), local_settings, self.shared.counters.clone());
        Counters::add(&self.shared.counters.connections_accepted, 1);
        Counters::add(&self.shared.counters.connections_open, 1);
        let cid_hex = hex(&scid);
        let now = Instant::now();
        self.app.on_conn_open(ConnId(handle), from, &cid_hex);
        self.cids.insert(scid.to_vec(), handle);
        self.cids.insert(odcid.to_vec(), handle);
        self.conns.insert(
            handle,
            Conn {
                quic,
                h3,
                peer: from,
                cids: vec![scid.to_vec(), odcid.to_vec()],
                cid_hex,
                dirty: false,
                accepted_at: now,
                expired: false,
                dgrams_counted: 0,
                timer: None,
                held: false,
                answered: false,
            },
        );
        self.handshakes.push_back((now, handle));
        Some(handle)
    }

    fn apply_commands(&mut self) {
        let conns = &mut self.conns;
        let dirty = &mut self.dirty;
        let mut panicked: Vec<u32> = Vec::new();
        self.app.take_responses(|ConnId(h), StreamId(stream), r| {
            let Some(conn) = conns.get_mut(&h) else { return };
            conn.answered = true;
            let result = catch_unwind(AssertUnwindSafe(|| conn.h3.respond(&mut conn.quic, stream, r.status, r.fields, r.body)));
            if result.is_err() {
                panicked.push(h);
            }
            if !conn.dirty {
                conn.dirty = true;
                dirty.push(h);
            }
        });
        for h in panicked {
            self.on_panic(h, "respond");
        }
        self.release_held();
        // Acknowledged batches free body credit: revisit streams waiting on it.
        if !matches!(self.h3_options.body_mode, crate::h3::connection::BodyMode::Streamed { .. }) {
            return;
        }
        let waiting: Vec<u32> = self.conns.iter().filter(|(_, c)| c.h3.has_credit_waiters()).map(|(h, _)| *h).collect();
        for h in waiting {
            self.mark_dirty(h);
        }
    }

    /// Once JavaScript has acknowledged the batch held connections wait for
    /// (its responses, if any, are applied by then), they send again.
    fn release_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.held.len() {
            let (h, mark, deadline) = self.held[i];
            if !self.app.settled(mark) && now < deadline {
                i += 1;
                continue;
            }
            self.held.swap_remove(i);
            if let Some(c) = self.conns.get_mut(&h) {
                c.held = false;
            }
            self.mark_dirty(h);
        }
    }

    fn check_shutdown(&mut self) {
        match self.shared.shutdown.load(Ordering::Acquire) {
            SHUTDOWN_GRACEFUL if self.drain_started.is_none() => {
                self.drain_started = Some(Instant::now());
                let handles: Vec<u32> = self.conns.keys().copied().collect();
                for h in handles {
                    if let Some(c) = self.conns.get_mut(&h) {
                        c.h3.send_goaway(&mut c.quic);
                    }
                    self.mark_dirty(h);
                }
            }
            SHUTDOWN_NOW => self.close_all(),
            _ => {}
        }
        if let Some(started) = self.drain_started {
            let deadline_passed = started.elapsed() >= DRAIN_DEADLINE;
            let idle: Vec<u32> = self
                .conns
                .iter_mut()
                .filter(|(_, c)| !c.quic.is_draining())
                .filter_map(|(h, c)| (deadline_passed || c.h3.requests_in_flight(&mut c.quic) == 0).then_some(*h))
                .collect();
            for h in idle {
                if let Some(c) = self.conns.get_mut(&h) {
                    let _ = c.quic.close(true, H3_NO_ERROR, b"server shutting down");
                }
                self.mark_dirty(h);
            }
        }
    }

    fn close_all(&mut self) {
        let handles: Vec<u32> = self.conns.keys().copied().collect();
        for h in handles {
            if let Some(c) = self.conns.get_mut(&h) {
                let _ = c.quic.close(true, H3_NO_ERROR, b"server closed");
            }
            self.mark_dirty(h);
        }
        if self.drain_started.is_none() {
            self.drain_started = Some(Instant::now() - DRAIN_DEADLINE);
        }
    }

    fn finished(&self) -> bool {
        match self.shared.shutdown.load(Ordering::Acquire) {
            SHUTDOWN_NONE => false,
            _ => self.conns.is_empty() || self.drain_started.is_some_and(|s| s.elapsed() > DRAIN_DEADLINE + Duration::from_millis(500)),
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&(t, h)) = self.timers.first() {
            if t > now {
                break;
            }
            self.timers.pop_first();
            if let Some(c) = self.conns.get_mut(&h) {
                if c.timer == Some(t) {
                    c.timer = None;
                    c.quic.on_timeout();
                    self.mark_dirty(h);
                }
            }
        }
    }

    fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.options.handshake_timeout_ms)
    }

    /// The earliest handshake deadline (the front of the queue; at worst an
    /// early wake-up for a connection that completed meanwhile).
    fn next_handshake_deadline(&self) -> Option<Instant> {
        self.handshakes.front().map(|(at, _)| *at + self.handshake_timeout())
    }

    /// Still waiting for its handshake: in the table (the same connection,
    /// not a later one that reused the handle), not established, not closed.
    fn handshaking(&self, at: Instant, handle: u32) -> bool {
        self.conns
            .get(&handle)
            .is_some_and(|c| c.accepted_at == at && !c.expired && !c.quic.is_established() && !c.quic.is_closed())
    }

    /// Drops connections whose handshake has not completed in time: a
    /// client that sends an Initial and stalls would otherwise hold a
    /// connection slot until the idle timeout, which restarts with every
    /// packet. The client gets CONNECTION_CLOSE (NO_ERROR, reason "handshake
    /// timeout"); the slot is freed in the same loop turn.
    fn expire_handshakes(&mut self) {
        let limit = self.handshake_timeout();
        let now = Instant::now();
        while let Some(&(at, h)) = self.handshakes.front() {
            if !self.handshaking(at, h) {
                self.handshakes.pop_front();
                continue;
            }
            if now < at + limit {
                break;
            }
            self.handshakes.pop_front();
            if let Some(c) = self.conns.get_mut(&h) {
                c.expired = true;
                let _ = c.quic.close(false, 0x0, b"handshake timeout");
                Counters::add(&self.shared.counters.handshake_timeouts, 1);
            }
            self.mark_dirty(h);
        }
    }

    fn process_dirty(&mut self) {
        for i in 0..self.dirty.len() {
            let h = self.dirty[i];
            let Some(conn) = self.conns.get_mut(&h) else { continue };
            if conn.quic.is_closed() || conn.quic.is_draining() {
                continue;
            }
            let app = &mut self.app;
            let scratch = &mut self.scratch;
            let result = catch_unwind(AssertUnwindSafe(|| conn.h3.process(&mut conn.quic, app, scratch)));
            let awaits = result.as_ref().is_ok_and(|o| o.awaits_application);
            // Hold only for what JavaScript answers. Holding anything else
            // only delays what the native core already wrote, and can lose
            // it: a FIN written alone after the data was sent (a WebTransport
            // echo) is dropped by quiche 0.30 if the peer's ACK of that data
            // is processed before the FIN is sent, because the stream then
            // counts as complete and is collected (docs/design.md).
            if awaits && self.drain_started.is_none() && !conn.held && !conn.answered {
                conn.held = true;
                self.held.push((h, self.app.mark(), Instant::now() + HOLD_MAX));
            }
            match result {
                Ok(outcome) => {
                    if let Some(e) = outcome.close {
                        let _ = conn.quic.close(true, e.code, e.reason.as_bytes());
                    }
                }
                Err(_) => self.on_panic(h, "HTTP/3 processing"),
            }
            if self.options.webtransport {
                if let Some(conn) = self.conns.get_mut(&h) {
                    count_quic_datagrams(conn, &self.shared.counters);
                }
            }
        }
    }

    /// A panic while handling one connection closes that connection only.
    fn on_panic(&mut self, handle: u32, during: &str) {
        // The panic hook recorded the message (crate::panic_report); take it
        // even when the connection is gone so it does not linger.
        let cause = crate::panic_report::take_last().map(|p| format!(" (panic {p})")).unwrap_or_default();
        if let Some(c) = self.conns.get_mut(&handle) {
            self.app.on_log(
                LogLevel::Error,
                &format!("internal error during {during} on connection {}; closing that connection{cause}", c.cid_hex),
            );
            let _ = c.quic.close(true, H3_INTERNAL_ERROR, b"internal error");
        }
    }

    fn send_packets(&mut self) {
        while !self.blocked.is_empty() {
            let (pkt, to, segment) = &self.blocked[0];
            if send_run(&self.udp, &self.socket, pkt, *to, *segment).is_err() {
                return;
            }
            self.blocked.remove(0);
        }
        let max_segments = self.udp.max_gso_segments().clamp(1, MAX_GSO_SEGMENTS);
        let dirty = std::mem::take(&mut self.dirty);
        for (i, h) in dirty.iter().enumerate() {
            let Some(conn) = self.conns.get_mut(h) else { continue };
            conn.dirty = false;
            conn.answered = false;
            self.touched.push(*h);
            if conn.held && !conn.quic.is_closed() {
                continue;
            }
            // Packets of one connection accumulate back to back in send_buf;
            // a run of equal-sized packets to one address (the last may be
            // shorter) leaves as one GSO send.
            let mut run = Run { len: 0, count: 0, segment: 0, to: conn.peer };
            loop {
                let (n, info) = match conn.quic.send(&mut self.send_buf[run.len..run.len + MAX_PACKET]) {
                    Ok(r) => r,
                    Err(quiche::Error::Done) => break,
                    Err(_) => {
                        let _ = conn.quic.close(false, 0x1, b"send failed");
                        break;
                    }
                };
                if run.count > 0 && (info.to != run.to || n > run.segment) {
                    // This packet cannot join the run: send the run, then
                    // start a new one with the packet.
                    flush_run(&self.udp, &self.socket, &self.send_buf, &run, &mut self.blocked, &self.shared.counters);
                    self.send_buf.copy_within(run.len..run.len + n, 0);
                    run = Run { len: 0, count: 0, segment: 0, to: info.to };
                }
                if run.count == 0 {
                    run.segment = n;
                    run.to = info.to;
                }
                run.len += n;
                run.count += 1;
                if n < run.segment || run.count >= max_segments || run.len + MAX_PACKET > self.send_buf.len() {
                    flush_run(&self.udp, &self.socket, &self.send_buf, &run, &mut self.blocked, &self.shared.counters);
                    run = Run { len: 0, count: 0, segment: 0, to: run.to };
                }
                if !self.blocked.is_empty() && run.count == 0 {
                    break;
                }
            }
            flush_run(&self.udp, &self.socket, &self.send_buf, &run, &mut self.blocked, &self.shared.counters);
            rearm(&mut self.timers, *h, conn);
            if !self.blocked.is_empty() {
                // Wait for the socket's writable event; this connection and
                // every one not yet flushed stay dirty for the next turn.
                let rest: Vec<u32> = dirty[i..].to_vec();
                for h in &rest {
                    if let Some(c) = self.conns.get_mut(h) {
                        c.dirty = true;
                    }
                }
                self.dirty = rest;
                return;
            }
        }
    }

    fn collect_closed(&mut self) {
        // Only connections touched this turn can have closed: every timer,
        // packet and handshake expiry marks its connection dirty first.
        let touched = std::mem::take(&mut self.touched);
        for h in touched {
            if !self.conns.get(&h).is_some_and(|c| c.quic.is_closed() || (c.expired && !c.dirty)) {
                continue;
            }
            let Some(mut conn) = self.conns.remove(&h) else { continue };
            if let Some(t) = conn.timer {
                self.timers.remove(&(t, h));
            }
            count_quic_datagrams(&mut conn, &self.shared.counters);
            conn.h3.on_connection_closed(&mut self.app);
            Counters::sub(&self.shared.counters.connections_open, 1);
            if !conn.quic.is_established() {
                Counters::add(&self.shared.counters.handshake_failures, 1);
            }
            for cid in &conn.cids {
                self.cids.remove(cid);
            }
            let q = &conn.quic;
            let (how, is_app, code, reason): (CloseHow, bool, u64, &[u8]) = if let Some(e) = q.peer_error() {
                (CloseHow::Peer, e.is_app, e.error_code, &e.reason)
            } else if let Some(e) = q.local_error() {
                (CloseHow::Local, e.is_app, e.error_code, &e.reason)
            } else if q.is_timed_out() {
                (CloseHow::IdleTimeout, false, 0, b"")
            } else {
                (CloseHow::Other, false, 0, b"")
            };
            self.app.on_conn_closed(ConnId(h), ConnClosed { how, is_app, code, reason, peer: conn.peer, cid: &conn.cid_hex });
        }
    }
}

/// Packets gathered in `send_buf[..len]`: `count` of `segment` bytes to
/// `to`, the last possibly shorter.
struct Run {
    len: usize,
    count: usize,
    segment: usize,
    to: SocketAddr,
}

/// One GSO send (or a plain one for a single packet). quinn-udp falls back
/// to separate datagrams itself where the kernel lacks GSO.
fn send_run(udp: &quinn_udp::UdpSocketState, socket: &UdpSocket, buf: &[u8], to: SocketAddr, segment: Option<usize>) -> std::io::Result<()> {
    let t = quinn_udp::Transmit { destination: to, ecn: None, contents: buf, segment_size: segment, src_ip: None };
    match udp.try_send(socket.into(), &t) {
        // Any other error (an ICMP-reported peer, GSO refused: quinn-udp then
        // turns GSO off) loses these packets like the network would; QUIC
        // loss recovery resends them.
        Err(e) if e.kind() != ErrorKind::WouldBlock => Ok(()),
        r => r,
    }
}

/// Sends a run, or queues it behind earlier blocked sends so order holds.
fn flush_run(
    udp: &quinn_udp::UdpSocketState,
    socket: &UdpSocket,
    buf: &[u8],
    run: &Run,
    blocked: &mut Vec<(Vec<u8>, SocketAddr, Option<usize>)>,
    counters: &Counters,
) {
    if run.count == 0 {
        return;
    }
    Counters::add(&counters.udp_datagrams_sent, run.count as u64);
    Counters::add(&counters.udp_bytes_sent, run.len as u64);
    if run.count > 1 {
        Counters::add(&counters.udp_gso_sends, 1);
    }
    let segment = (run.count > 1).then_some(run.segment);
    let contents = &buf[..run.len];
    if blocked.is_empty() && send_run(udp, socket, contents, run.to, segment).is_ok() {
        return;
    }
    blocked.push((contents.to_vec(), run.to, segment));
}

/// Moves a connection's timer entry to quiche's current deadline.
#[inline]
fn rearm(timers: &mut BTreeSet<(Instant, u32)>, handle: u32, conn: &mut Conn) {
    let next = conn.quic.timeout_instant();
    if next == conn.timer {
        return;
    }
    if let Some(t) = conn.timer {
        timers.remove(&(t, handle));
    }
    if let Some(t) = next {
        timers.insert((t, handle));
    }
    conn.timer = next;
}

/// Adds the DATAGRAM frames quiche received on `conn` since the last call.
#[inline]
fn count_quic_datagrams(conn: &mut Conn, counters: &Counters) {
    let n = conn.quic.stats().dgram_recv;
    Counters::add(&counters.quic_datagrams_received, n.saturating_sub(conn.dgrams_counted) as u64);
    conn.dgrams_counted = n;
}

fn bracket(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}
