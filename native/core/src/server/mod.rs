//! The UDP I/O loop: one thread, one mio poll, every connection of the
//! server. Its parts: `socket` (UDP, GSO runs, blocked sends), `table`
//! (connections by handle and connection ID), `deadlines` (QUIC timers,
//! handshakes, holds, the drain), `doorbell` (woken for the application's
//! commands only when it sleeps); the application it reports to is a
//! generic parameter (crate::app). Each turn reads a bounded run of datagrams, applies JavaScript's
//! commands, fires QUIC timers, lets the HTTP/3 layer of each touched
//! connection read its streams, writes packets, and ends the application's
//! turn (the JavaScript link sends at most one event batch then).

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use crate::app::{Action, Application, CloseHow, ConnClosed, LogLevel, Mark};
use crate::config::Options;
use crate::counters::Counters;
use crate::error::ListenError;
use crate::h3::codes::{H3_INTERNAL_ERROR, H3_NO_ERROR};
use crate::h3::connection::{H3Connection, H3Options};
use crate::h3::settings::LocalSettings;
use crate::ids::{ConnId, StreamId};
use crate::udp_bind::display;

mod closing;
mod deadlines;
mod doorbell;
mod pacer;
mod paths;
mod socket;
mod table;
#[cfg(test)]
mod tests;
mod tls_handshakes;

use deadlines::{Deadlines, CLOSE_GRACE, DRAIN_DEADLINE};
pub use doorbell::Doorbell;
use pacer::Pacer;
use socket::{Run, Socket, MAX_PACKET, RECV_SLOTS};
use table::{hex, Conn, ConnTable, PacedPacket};

/// How early a packet quiche's pacer timed for later may still leave in
/// this turn: the loop's timers have millisecond resolution (epoll), so a
/// packet due within one goes now rather than a turn late.
const PACING_GRANULARITY: Duration = Duration::from_millis(1);

const SOCKET: Token = Token(0);
const WAKER: Token = Token(1);

/// Receive buffers filled per turn (each one datagram, or with GRO up to
/// 64 KiB of them) before the loop goes on to process them; keeps one
/// turn's event batch bounded. One receive call fills up to
/// `socket::RECV_SLOTS` of them.
const MAX_RECV_BUFFERS_PER_TURN: usize = 256;

/// quiche keeps at most 1,024 received DATAGRAMs per connection (config.rs)
/// and silently drops the oldest beyond that, while one turn may read
/// hundreds of packets, each carrying dozens of small datagrams. Draining a
/// connection's queue as soon as it holds this many keeps every datagram
/// quiche accepted countable (W7: usage.datagrams equals quiche's count).
const DGRAM_DRAIN_AT: usize = 512;

pub const SHUTDOWN_NONE: u8 = 0;
pub const SHUTDOWN_GRACEFUL: u8 = 1;
pub const SHUTDOWN_NOW: u8 = 2;

/// State shared between the loop thread and the threads that control it.
pub struct Shared {
    pub shutdown: AtomicU8,
    /// Wakes the loop unconditionally: after a shutdown request or a
    /// closeIdleConnections(), or when another worker left packets in its
    /// mailbox.
    pub waker: Arc<Waker>,
    /// Wakes the loop for the application's commands and acknowledgements,
    /// only if it sleeps (doorbell.rs).
    pub doorbell: Doorbell,
    pub counters: Arc<Counters>,
    /// Raised by each closeIdleConnections() (without workers; a group has
    /// its own, for all its workers): the loop closes idle connections once
    /// per new value.
    pub close_idle: std::sync::atomic::AtomicU64,
    /// The application's answers to identity questions (tls_handshakes.rs).
    pub identity_answers: std::sync::Mutex<Vec<(u32, crate::certificates::Answer)>>,
    /// The identities new handshakes choose from; replaced by setSecureContext.
    pub identities: Option<Arc<crate::certificates::IdentityStore>>,
}

pub struct Server<A: Application> {
    poll: Poll,
    socket: Socket,
    table: ConnTable,
    deadlines: Deadlines,
    app: A,
    options: Options,
    h3_options: H3Options,
    config: quiche::Config,
    shared: Arc<Shared>,
    dirty: Vec<ConnId>,
    /// Connections flushed this turn: the only ones that can have closed.
    touched: Vec<ConnId>,
    scratch: Vec<u8>,
    /// A streamed body's bytes of one read, merged into one event (kept between reads).
    body_scratch: Vec<u8>,
    keylog: Option<crate::keylog::KeyLog>,
    qlog: Option<crate::qlog::QlogDir>,
    /// Stateless reset tokens: HMAC of each issued connection ID (reset.rs).
    reset_key: crate::reset::ResetKey,
    reset_limit: crate::reset::RateLimit,
    /// The first EMSGSIZE refusal is logged; the rest are counted only.
    too_large_logged: bool,
    /// Identity questions to the application and their answers.
    tls: tls_handshakes::TlsQuestions,
    /// Retry tokens (retry.rs): from options, or random per process.
    retry_key: crate::retry::RetryKey,
    /// Connections accepted whose handshake is not done: what
    /// `RetryMode::Auto` compares with its threshold.
    half_open: usize,
    /// Makes the connection IDs this server issues (random, or QUIC-LB).
    ids: crate::connection_ids::ConnectionIds,
    /// Pacing is on and quiche's controller does not pace (CUBIC, Reno):
    /// the server's token bucket does (pacer.rs).
    own_pacing: bool,
    /// One worker of several: its group, mailbox and the packets others
    /// forwarded to it (workers.rs).
    worker: Option<WorkerTie>,
    /// The close_idle value last acted on.
    close_idle_seen: u64,
    /// Connections this server closed, by their IDs: the datagram that
    /// carried CONNECTION_CLOSE, sent again to packets that still come
    /// (closing.rs, RFC 9000 section 10.2.1).
    closing: closing::ClosingPackets,
}

/// A worker's ties to its group.
struct WorkerTie {
    role: crate::workers::WorkerRole,
    mailbox: Arc<crate::workers::Mailbox>,
    /// Where the worker index sits in a connection ID.
    offset: usize,
    /// Packets taken from the mailbox, processed this turn.
    forwarded: std::collections::VecDeque<crate::workers::Forwarded>,
    /// The forwarded packet being processed (quiche decrypts in place).
    buf: Vec<u8>,
    /// Workers that were handed packets this turn, woken once at its end.
    wake: u64,
}

/// Where a datagram being processed lies.
#[derive(Clone, Copy)]
enum Source {
    /// In the socket's receive buffer, at this offset.
    Socket(usize),
    /// In the worker's forwarded-packet buffer.
    Forwarded,
}

/// A datagram's destination connection ID by QUIC's version-independent
/// invariants (RFC 8999 section 5): after a long header's version, its own
/// length byte; in a short header, right after the first byte, as long as
/// the IDs this server issues (every short-header packet it can route
/// carries one of them).
fn destination_id(buf: &[u8]) -> Option<&[u8]> {
    let first = *buf.first()?;
    if first & 0x80 != 0 {
        let n = usize::from(*buf.get(5)?);
        buf.get(6..6 + n)
    } else {
        buf.get(1..1 + crate::connection_ids::CID_LEN)
    }
}

/// The bytes of the datagram at `src`; a function of the two fields, not
/// of the server, so the rest of it stays free to borrow.
fn datagram<'a>(socket: &'a mut Socket, worker: &'a mut Option<WorkerTie>, src: Source, len: usize) -> &'a mut [u8] {
    match (src, worker) {
        (Source::Socket(off), _) => &mut socket.recv_buf[off..off + len],
        (Source::Forwarded, Some(w)) => &mut w.buf[..len],
        (Source::Forwarded, None) => &mut [],
    }
}

pub struct Bound<A: Application> {
    pub server: Server<A>,
    pub shared: Arc<Shared>,
    pub local: SocketAddr,
}

impl<A: Application> Server<A> {
    /// Binds the socket and loads the identity on the caller's thread, so
    /// that a port in use or a bad key fails `listen` synchronously.
    pub fn bind(options: Options, app: A) -> Result<Bound<A>, ListenError> {
        let new_handshakes = crate::certificates::NewHandshakes::default();
        let config = options.quiche_config(new_handshakes.clone())?;
        let reset_key = options.stateless_reset_key;
        let keylog = options.keylog_path.as_deref().map(crate::keylog::KeyLog::open).transpose()?;
        let qlog = options.qlog_dir.as_deref().map(crate::qlog::QlogDir::new).transpose()?;
        let mut socket = Socket::bind(&options.host, options.port, options.worker.is_some())?;
        let local = socket.local;
        let poll = Poll::new().map_err(ListenError::Socket)?;
        socket.register(poll.registry(), SOCKET)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).map_err(ListenError::Socket)?);
        let counters = options.worker.as_ref().map_or_else(|| Arc::new(Counters::default()), |w| w.group.counters.clone());
        let shared = Arc::new(Shared {
            shutdown: AtomicU8::new(SHUTDOWN_NONE),
            waker: waker.clone(),
            doorbell: Doorbell::new(waker.clone()),
            counters,
            close_idle: Default::default(),
            identity_answers: Default::default(),
            identities: options.identities.clone(),
        });
        let worker = match &options.worker {
            None => None,
            Some(role) => {
                let mailbox = Arc::new(crate::workers::Mailbox::new(waker));
                let offset = crate::connection_ids::ConnectionIds::worker_offset(options.quic_lb.as_ref());
                role.group.join(role.index, offset, mailbox.clone(), socket.raw_fd()).map_err(ListenError::Workers)?;
                Some(WorkerTie {
                    role: role.clone(),
                    mailbox,
                    offset,
                    forwarded: Default::default(),
                    buf: vec![0; MAX_PACKET * 2],
                    wake: 0,
                })
            }
        };
        let ids = match &options.worker {
            None => crate::connection_ids::ConnectionIds::new(options.quic_lb.clone()),
            Some(w) => crate::connection_ids::ConnectionIds::for_worker(options.quic_lb.clone(), w.index as u8),
        };
        let own_pacing = options.pacing && !options.congestion_control.starts_with("bbr");
        let server = Server {
            own_pacing,
            ids,
            worker,
            close_idle_seen: 0,
            closing: closing::ClosingPackets::default(),
            retry_key: options.retry_key.unwrap_or_else(crate::retry::process_key),
            half_open: 0,
            poll,
            socket,
            table: ConnTable::default(),
            deadlines: Deadlines::new(Duration::from_millis(options.handshake_timeout_ms)),
            app,
            h3_options: options.h3(),
            options,
            config,
            shared: shared.clone(),
            dirty: Vec::new(),
            touched: Vec::new(),
            scratch: vec![0; 65536],
            body_scratch: Vec::new(),
            keylog,
            qlog,
            reset_key: reset_key.unwrap_or_else(crate::reset::process_key),
            reset_limit: crate::reset::RateLimit::default(),
            too_large_logged: false,
            tls: tls_handshakes::TlsQuestions::new(new_handshakes),
        };
        Ok(Bound { server, shared, local })
    }

    pub fn run(mut self) {
        let mut events = Events::with_capacity(64);
        loop {
            let mut timeout = self.poll_timeout();
            let blocking = timeout != Some(Duration::ZERO);
            if blocking && !self.shared.doorbell.park() {
                timeout = Some(Duration::ZERO);
            }
            let polled = self.poll.poll(&mut events, timeout);
            if blocking {
                self.shared.doorbell.unpark();
            }
            if let Err(e) = polled {
                if e.kind() != ErrorKind::Interrupted {
                    self.app.on_log(LogLevel::Error, &format!("poll failed: {e}"));
                    break;
                }
            }
            self.note_events(&events);
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
        // the application hears of each, so nothing it tracks is left open.
        for h in self.table.ids() {
            if let Some(mut conn) = self.table.remove(h) {
                conn.h3.on_connection_closed(&mut self.app);
                Counters::sub(&self.shared.counters.connections_open, 1);
                if let Some(w) = self.worker_counters() {
                    Counters::sub(&w.connections_open, 1);
                }
                let closed = ConnClosed {
                    how: CloseHow::Local,
                    is_app: true,
                    code: H3_NO_ERROR,
                    reason: b"server closed",
                    peer: display(conn.peer),
                    cid: &conn.cid_hex,
                };
                self.app.on_conn_closed(h, closed);
            }
        }
        if let Some(w) = &self.worker {
            w.role.group.leave(w.role.index, &w.mailbox);
        }
        self.app.on_server_closed();
        self.app.end_turn();
    }

    /// mio is edge-triggered: every datagram that arrives after the read
    /// that found the socket empty brings a readable event.
    fn note_events(&mut self, events: &Events) {
        if events.iter().any(|e| e.token() == SOCKET && (e.is_readable() || e.is_error())) {
            self.socket.may_have_more = true;
        }
    }

    fn turn(&mut self) {
        // Before the inbox is drained: a command submitted after this rings again.
        self.shared.doorbell.answer();
        self.apply_actions();
        self.apply_identity_answers();
        self.check_shutdown();
        self.close_idle_if_asked();
        // A turn woken by the waker or a timer alone does not read: the
        // socket was found empty and no datagram has arrived since.
        if self.app.accepting() {
            self.read_forwarded();
        }
        if self.socket.may_have_more && self.app.accepting() {
            self.read_packets();
        }
        if let Some(w) = &mut self.worker {
            w.role.group.wake(std::mem::take(&mut w.wake));
        }
        self.fire_timers();
        self.expire_handshakes();
        self.process_dirty();
        self.send_packets();
        self.collect_closed();
        self.closing.expire(Instant::now());
        self.app.end_turn();
    }

    fn worker_counters(&self) -> Option<&crate::workers::WorkerCounters> {
        self.worker.as_ref().map(|w| &w.role.group.workers[w.role.index])
    }

    fn poll_timeout(&self) -> Option<Duration> {
        if (self.socket.may_have_more && self.app.accepting()) || !self.dirty.is_empty() {
            return Some(Duration::ZERO);
        }
        let now = Instant::now();
        let next = match (self.deadlines.next(), self.app.wake_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        next.map(|t| t.saturating_duration_since(now))
    }

    fn mark_dirty(&mut self, id: ConnId) {
        self.table.mark_dirty(id, &mut self.dirty);
    }

    /// Reads until the socket is empty (then `may_have_more` is false) or
    /// the turn's limit (it stays true and the next turn reads on).
    fn read_packets(&mut self) {
        let mut filled = 0;
        while filled < MAX_RECV_BUFFERS_PER_TURN {
            let offered = (MAX_RECV_BUFFERS_PER_TURN - filled).min(RECV_SLOTS);
            let n = match self.socket.recv(offered, &self.shared.counters) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.socket.may_have_more = false;
                    return;
                }
                // EINTR, or an ICMP error for one peer: read on.
                Err(_) => {
                    filled += 1;
                    continue;
                }
            };
            filled += n.max(1);
            for i in 0..n {
                // With GRO one buffer may carry several datagrams of `stride` bytes.
                let (base, meta) = self.socket.received(i);
                let stride = meta.stride.max(1);
                let to = self.socket.local_for(meta.dst_ip);
                let mut off = 0;
                while off < meta.len {
                    let len = stride.min(meta.len - off);
                    self.on_datagram(Source::Socket(base + off), len, meta.addr, to);
                    off += len;
                }
            }
            // A non-blocking recvmmsg returns fewer than it was offered when
            // the socket ran empty, so no call just to see WouldBlock. (An
            // error would stop it too, but no error queue is enabled; at
            // worst the rest waits for the next datagram's event.)
            if n < offered {
                self.socket.may_have_more = false;
                return;
            }
        }
        self.socket.may_have_more = true;
    }

    /// Processes what other workers' sockets read for this worker, as if
    /// its own had.
    fn read_forwarded(&mut self) {
        let Some(w) = &mut self.worker else { return };
        w.mailbox.take(&mut w.forwarded);
        while let Some(p) = self.worker.as_mut().and_then(|w| w.forwarded.pop_front()) {
            let Some(w) = &mut self.worker else { return };
            let len = p.data.len().min(w.buf.len());
            w.buf[..len].copy_from_slice(&p.data[..len]);
            self.on_datagram(Source::Forwarded, len, p.from, p.to);
        }
    }

    /// With workers: hands a packet another worker owns to it, unless its
    /// connection is in this worker's table (accepted while the owner was
    /// not running) or the owner is not running. True if handed over (or
    /// dropped at a full mailbox).
    #[inline]
    fn forward_if_foreign(&mut self, src: Source, len: usize, from: SocketAddr, to: SocketAddr, dcid: &[u8]) -> bool {
        let Some(w) = &self.worker else { return false };
        let Some(owner) = w.role.group.owner_of(dcid, w.offset) else { return false };
        // A forwarded packet is never forwarded again.
        let Source::Socket(off) = src else { return false };
        if owner == w.role.index || self.table.route(dcid).is_some() {
            return false;
        }
        let data = &self.socket.recv_buf[off..off + len];
        match w.role.group.forward(w.role.index, owner, data, from, to) {
            crate::workers::ForwardOutcome::NotRunning => false,
            _ => {
                if let Some(w) = &mut self.worker {
                    w.wake |= 1 << owner;
                }
                true
            }
        }
    }

    /// A datagram from `from` that reached this server at `to`.
    fn on_datagram(&mut self, src: Source, len: usize, from: SocketAddr, to: SocketAddr) {
        if let Source::Socket(_) = src {
            // Counted once, by the worker whose socket read it.
            Counters::add(&self.shared.counters.udp_bytes_received, len as u64);
            Counters::add(&self.shared.counters.udp_datagrams_received, 1);
        }
        if let (Some(_), Source::Socket(off)) = (&self.worker, src) {
            // Only the destination ID decides the owner: read it by the
            // version-independent invariants rather than parsing the whole
            // header twice (quiche parses it below).
            let mut dcid = [0u8; quiche::MAX_CONN_ID_LEN];
            let n = match destination_id(&self.socket.recv_buf[off..off + len]) {
                Some(id) if id.len() <= dcid.len() => {
                    dcid[..id.len()].copy_from_slice(id);
                    id.len()
                }
                _ => 0,
            };
            if n > 0 && self.forward_if_foreign(src, len, from, to, &dcid[..n]) {
                return;
            }
        }
        let buf = datagram(&mut self.socket, &mut self.worker, src, len);
        // A short-header packet of a live connection, nearly every packet
        // of a transfer, is routed by its destination ID alone: parsing
        // the whole header here (quiche parses it again in `recv`) cost
        // each one an allocation for the ID (docs/design.md, "Per-packet
        // work in quiche's send"). Anything else takes the full path.
        let live = match destination_id(buf) {
            Some(d) if buf[0] & 0x80 == 0 => {
                self.table.route(d).filter(|&id| self.table.get(id).is_some_and(|c| !c.quic.is_draining()))
            }
            _ => None,
        };
        if let Some(id) = live {
            self.receive(id, src, len, from, to);
            return;
        }
        let Ok(hdr) = quiche::Header::from_slice(buf, quiche::MAX_CONN_ID_LEN) else { return };
        let id = match self.table.route(hdr.dcid.as_ref()) {
            Some(id) if self.table.get(id).is_some_and(|c| c.quic.is_draining()) => {
                // quiche reads nothing more; a connection this server closed
                // answers with its closing packet (its datagram was kept).
                let dcid = hdr.dcid.to_vec();
                self.answer_closing(&dcid, len, from, to);
                return;
            }
            Some(id) => id,
            None => {
                if self.closing.knows(hdr.dcid.as_ref()) {
                    let dcid = hdr.dcid.to_vec();
                    self.answer_closing(&dcid, len, from, to);
                    return;
                }
                if hdr.ty == quiche::Type::Short {
                    let dcid = hdr.dcid.to_vec();
                    self.stateless_reset(&dcid, len, from, to);
                    return;
                }
                // RFC 9000 section 14.1: a client's first flight travels in
                // datagrams of at least 1,200 bytes; smaller ones (which
                // could make the answer an amplifier) are dropped unread,
                // Version Negotiation included (section 5.2.2).
                if len < quiche::MIN_CLIENT_INITIAL_LEN {
                    Counters::add(&self.shared.counters.initials_too_small, 1);
                    return;
                }
                if !quiche::version_is_supported(hdr.version) {
                    let source = self.socket.source_for(to);
                    self.socket.negotiate_version(&hdr.scid, &hdr.dcid, from, source, &self.shared.counters);
                    return;
                }
                if hdr.ty != quiche::Type::Initial {
                    return;
                }
                let dcid = hdr.dcid.to_vec();
                let retried = self.validated_original_id(hdr.token.as_deref(), from);
                if retried.is_none() && self.options.retry.applies(self.half_open) {
                    self.send_retry(&hdr.scid.clone(), &dcid, hdr.version, from, to);
                    return;
                }
                match self.accept(&dcid, retried.as_deref(), from, to) {
                    Some(id) => id,
                    None => return,
                }
            }
        };
        self.receive(id, src, len, from, to);
    }

    /// Hands a datagram to the connection it was routed to. quiche keys
    /// paths by both addresses: a client that reaches another address of
    /// this host is on a new path, validated as a move would be.
    fn receive(&mut self, id: ConnId, src: Source, len: usize, from: SocketAddr, to: SocketAddr) {
        let Some(conn) = self.table.get_mut(id) else { return };
        let buf = datagram(&mut self.socket, &mut self.worker, src, len);
        let result = catch_unwind(AssertUnwindSafe(|| conn.quic.recv(buf, quiche::RecvInfo { from, to })));
        // Until the handshake is done, its TLS state may have news (a new
        // handshake, a question for the application); after, the same
        // connection goes on without a second lookup.
        let conn = if conn.handshake_done {
            conn
        } else {
            self.adopt_handshake(id);
            let Some(conn) = self.table.get_mut(id) else { return };
            conn
        };
        if result.is_err() {
            self.on_panic(id, "packet processing");
        } else if conn.quic.is_in_early_data() && conn.quic.readable().len() > 0 {
            // 0-RTT stream data is read now, while the connection is still
            // in early data: a request is marked early by that state when
            // its header section is decoded, and the client's Finished,
            // later in the same receive batch, would end it first (a 0-RTT
            // POST then went unmarked: test/early-data.test.ts in CI).
            self.process_conn(id);
        } else if conn.quic.dgram_recv_queue_len() >= DGRAM_DRAIN_AT {
            let (app, scratch) = (&mut self.app, &mut self.scratch);
            let drained = catch_unwind(AssertUnwindSafe(|| conn.h3.on_datagrams(&mut conn.quic, app, scratch)));
            match drained {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let _ = conn.quic.close(true, e.code, e.reason.as_bytes());
                }
                Err(_) => self.on_panic(id, "datagram processing"),
            }
        }
        self.mark_dirty(id);
    }

    /// A datagram of `len` bytes for a connection this server closed: its
    /// closing packet again, when closing.rs says one is due.
    fn answer_closing(&mut self, dcid: &[u8], len: usize, from: SocketAddr, to: SocketAddr) {
        let Some(datagrams) = self.closing.answer(dcid, len, Instant::now()) else { return };
        let source = self.socket.source_for(to);
        for datagram in datagrams {
            let n = datagram.len();
            self.socket.send_buf[..n].copy_from_slice(datagram);
            Counters::add(&self.shared.counters.closing_packets_resent, 1);
            self.socket.send_lone(n, from, source, &self.shared.counters);
        }
    }

    /// Answers a short-header packet for a connection ID not in the table
    /// (one from before a restart with the same reset key, or one whose
    /// state is gone) with a stateless reset, so the peer closes now rather
    /// than at its idle timeout. Only for IDs of our length (the only ones
    /// we issue), only for packets larger than the smallest reset, and at
    /// most `reset::RESETS_PER_SECOND`.
    fn stateless_reset(&mut self, dcid: &[u8], len: usize, from: SocketAddr, to: SocketAddr) {
        if dcid.len() != quiche::MAX_CONN_ID_LEN || len <= crate::reset::MIN_RESET_LEN {
            return;
        }
        if !self.reset_limit.take(Instant::now()) {
            Counters::add(&self.shared.counters.stateless_resets_limited, 1);
            return;
        }
        let token = crate::reset::token(&self.reset_key, dcid);
        if let Some(n) = crate::reset::write_reset(&mut self.socket.send_buf, len, &token) {
            Counters::add(&self.shared.counters.stateless_resets_sent, 1);
            let source = self.socket.source_for(to);
            self.socket.send_lone(n, from, source, &self.shared.counters);
        }
    }

    /// The original destination ID a client's token carries when it is a
    /// Retry token of ours, for this address, still valid. A token that is
    /// not (a NEW_TOKEN token of another server, an expired one) counts as
    /// no token (RFC 9000 section 8.1.3), and is counted.
    fn validated_original_id(&self, token: Option<&[u8]>, from: SocketAddr) -> Option<Vec<u8>> {
        let token = token.filter(|t| !t.is_empty())?;
        let odcid = crate::retry::validate(&self.retry_key, from, token, std::time::SystemTime::now());
        if odcid.is_none() {
            Counters::add(&self.shared.counters.retry_tokens_invalid, 1);
        }
        odcid
    }

    /// Answers a first Initial with a Retry (RFC 9000 section 17.2.5): no
    /// state is kept; the client comes back with the token from the same
    /// address, to the new connection ID, which becomes the connection's.
    fn send_retry(&mut self, client_scid: &[u8], odcid: &[u8], version: u32, from: SocketAddr, to: SocketAddr) {
        let Some(new_scid) = self.ids.generate_for_retry() else { return };
        let Some(token) = crate::retry::mint(&self.retry_key, from, odcid, std::time::SystemTime::now()) else { return };
        let written = quiche::retry(
            &quiche::ConnectionId::from_ref(client_scid),
            &quiche::ConnectionId::from_ref(odcid),
            &quiche::ConnectionId::from_ref(&new_scid),
            &token,
            version,
            &mut self.socket.send_buf,
        );
        if let Ok(n) = written {
            Counters::add(&self.shared.counters.retries_sent, 1);
            let source = self.socket.source_for(to);
            self.socket.send_lone(n, from, source, &self.shared.counters);
        }
    }

    /// Creates a connection for a first Initial sent to `dcid`. After a
    /// Retry, `retried` holds the ID the client first chose and `dcid` is
    /// the Retry's source ID.
    fn accept(&mut self, dcid: &[u8], retried: Option<&[u8]>, from: SocketAddr, local: SocketAddr) -> Option<ConnId> {
        if self.deadlines.drain_started.is_some() || self.table.len() >= self.options.max_connections {
            return None;
        }
        let scid = self.ids.generate()?;
        let scid_ref = quiche::ConnectionId::from_ref(&scid);
        // The config is per server, these two per connection: the reset
        // token of the one connection ID issued (quiche sends the config's
        // in the transport parameters) and the PMTUD ceiling for the
        // peer's address family.
        let token = crate::reset::token(&self.reset_key, &scid);
        self.config.set_stateless_reset_token(Some(u128::from_be_bytes(token)));
        self.config.set_max_send_udp_payload_size(crate::config::send_limit(from));
        let mut quic = match retried {
            // The Retry's source ID goes into the transport parameters; the
            // connection gets a full ID of its own (quiche's advice: the
            // client chose the Initial's destination).
            Some(odcid) => {
                let ids = quiche::RetryConnectionIds {
                    original_destination_cid: &quiche::ConnectionId::from_ref(odcid),
                    retry_source_cid: &quiche::ConnectionId::from_ref(dcid),
                };
                quiche::accept_with_retry(&scid_ref, ids, local, from, &mut self.config).ok()?
            }
            None => quiche::accept(&scid_ref, None, local, from, &mut self.config).ok()?,
        };
        // Key log and qlog must be attached before the first packet is processed.
        if let Some(k) = &self.keylog {
            quic.set_keylog(k.writer());
        }
        if let Some(q) = &self.qlog {
            if let Err(e) = q.attach(&mut quic, &hex(&scid), &display(from).to_string()) {
                self.app.on_log(LogLevel::Warn, &e.to_string());
            }
        }
        let id = self.table.allocate();
        let local_settings = LocalSettings {
            max_field_section_size: self.options.max_field_section_size as u64,
            webtransport: self.options.webtransport,
            max_webtransport_sessions: self.options.webtransport_max_sessions,
        };
        let h3 = H3Connection::new(id, self.h3_options.clone(), local_settings, self.shared.counters.clone());
        Counters::add(&self.shared.counters.connections_accepted, 1);
        Counters::add(&self.shared.counters.connections_open, 1);
        if let Some(w) = self.worker_counters() {
            Counters::add(&w.connections_accepted, 1);
            Counters::add(&w.connections_open, 1);
        }
        let cid_hex = hex(&scid);
        let now = Instant::now();
        self.app.on_conn_open(id, display(from), &cid_hex);
        self.table.insert(
            id,
            Conn {
                quic,
                h3,
                peer: from,
                // Until the client learns `scid` it sends to `dcid`: its
                // own first choice, or after a Retry the Retry's source.
                cids: vec![scid.to_vec(), dcid.to_vec()],
                cid_hex,
                dirty: false,
                accepted_at: now,
                expired: false,
                dgrams_counted: 0,
                timer: None,
                held: false,
                answered: false,
                handshake_done: false,
                paced: None,
                pacer: Pacer::new(quiche::MIN_CLIENT_INITIAL_LEN, now),
                tls: None,
                identity_question: None,
                close_datagrams: Vec::new(),
            },
        );
        self.deadlines.handshake_started(now, id);
        self.half_open += 1;
        Some(id)
    }

    /// Applies what the application asked of streams (JavaScript's
    /// commands: responses, body data, credit, resets), then revisits what
    /// its acknowledgements freed.
    fn apply_actions(&mut self) {
        let table = &mut self.table;
        let dirty = &mut self.dirty;
        let mut panicked: Vec<ConnId> = Vec::new();
        self.app.take_actions(|id, StreamId(stream), action| {
            let Some(conn) = table.get_mut(id) else { return };
            if !matches!(action, Action::Consumed(_)) {
                conn.answered = true;
            }
            match catch_unwind(AssertUnwindSafe(|| conn.h3.act(&mut conn.quic, stream, action))) {
                // Credit for a stream that reads no more, or an action for a
                // stream already gone: nothing for the connection to do.
                Ok(false) => {}
                Ok(true) => table.mark_dirty(id, dirty),
                Err(_) => {
                    panicked.push(id);
                    table.mark_dirty(id, dirty);
                }
            }
        });
        for id in panicked {
            self.on_panic(id, "respond");
        }
        self.release_held();
    }

    /// Once the application has settled the mark held connections wait for
    /// (its responses, if any, are applied by then), they send again.
    fn release_held(&mut self) {
        if !self.deadlines.has_held() {
            return;
        }
        let (app, table, dirty) = (&self.app, &mut self.table, &mut self.dirty);
        self.deadlines.release_held(
            Instant::now(),
            |mark: Mark| app.settled(mark),
            |id| {
                if let Some(c) = table.get_mut(id) {
                    c.held = false;
                }
                table.mark_dirty(id, dirty);
            },
        );
    }

    fn check_shutdown(&mut self) {
        match self.shared.shutdown.load(Ordering::Acquire) {
            SHUTDOWN_GRACEFUL if self.deadlines.drain_started.is_none() => {
                self.deadlines.drain_started = Some(Instant::now());
                for id in self.table.ids() {
                    if let Some(c) = self.table.get_mut(id) {
                        c.h3.send_goaway(&mut c.quic);
                    }
                    self.mark_dirty(id);
                }
            }
            SHUTDOWN_NOW => self.close_all(),
            _ => {}
        }
        if self.deadlines.drain_started.is_some() {
            let deadline_passed = self.deadlines.drain_deadline_passed();
            let idle: Vec<ConnId> = self
                .table
                .iter_mut()
                // One already closing waits for its CONNECTION_CLOSE to leave
                // (congestion control can hold it until a PTO): closing it
                // again each turn would mark it dirty and spin the loop.
                .filter(|(_, c)| !c.quic.is_draining() && c.quic.local_error().is_none())
                .filter_map(|(id, c)| (deadline_passed || c.h3.requests_in_flight(&mut c.quic) == 0).then_some(id))
                .collect();
            for id in idle {
                if let Some(c) = self.table.get_mut(id) {
                    let _ = c.quic.close(true, H3_NO_ERROR, b"server shutting down");
                }
                self.mark_dirty(id);
            }
        }
    }

    /// closeIdleConnections(): every established connection with nothing in
    /// flight (H3Connection::is_idle) closes with H3_NO_ERROR; the others go
    /// on. A request whose packets arrive in the same turn is not yet read,
    /// but its stream data is, and that keeps its connection open.
    fn close_idle_if_asked(&mut self) {
        let asked = match &self.worker {
            Some(w) => w.role.group.close_idle.load(Ordering::Acquire),
            None => self.shared.close_idle.load(Ordering::Acquire),
        };
        if asked == self.close_idle_seen {
            return;
        }
        self.close_idle_seen = asked;
        let idle: Vec<ConnId> = self
            .table
            .iter_mut()
            .filter(|(_, c)| c.quic.is_established() && !c.quic.is_draining() && !c.quic.is_closed())
            .filter_map(|(id, c)| c.h3.is_idle(&mut c.quic).then_some(id))
            .collect();
        for id in idle {
            if let Some(c) = self.table.get_mut(id) {
                let _ = c.quic.close(true, H3_NO_ERROR, b"idle connection closed");
            }
            self.mark_dirty(id);
        }
    }

    fn close_all(&mut self) {
        for id in self.table.ids() {
            // Runs every turn until the table empties: only a connection
            // newly closed needs another turn.
            if self.table.get_mut(id).is_some_and(|c| c.quic.close(true, H3_NO_ERROR, b"server closed").is_ok()) {
                self.mark_dirty(id);
            }
        }
        if self.deadlines.drain_started.is_none() {
            self.deadlines.drain_started = Some(Instant::now() - DRAIN_DEADLINE);
        }
    }

    fn finished(&self) -> bool {
        match self.shared.shutdown.load(Ordering::Acquire) {
            SHUTDOWN_NONE => false,
            _ => {
                self.table.is_empty() || self.deadlines.drain_started.is_some_and(|s| s.elapsed() >= DRAIN_DEADLINE + CLOSE_GRACE)
            }
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some((t, id)) = self.deadlines.pop_due_timer(now) {
            if let Some(c) = self.table.get_mut(id) {
                if c.timer == Some(t) {
                    c.timer = None;
                    c.quic.on_timeout();
                    self.mark_dirty(id);
                }
            }
        }
    }

    /// Still waiting for its handshake: in the table (the same connection,
    /// not a later one that reused the handle), not established, not closed.
    fn handshaking(&self, at: Instant, id: ConnId) -> bool {
        self.table.get(id).is_some_and(|c| c.accepted_at == at && !c.expired && !c.quic.is_established() && !c.quic.is_closed())
    }

    /// Drops connections whose handshake has not completed in time: a
    /// client that sends an Initial and stalls would otherwise hold a
    /// connection slot until the idle timeout, which restarts with every
    /// packet. The client gets CONNECTION_CLOSE (NO_ERROR, reason "handshake
    /// timeout"); the slot is freed in the same loop turn.
    fn expire_handshakes(&mut self) {
        let limit = self.deadlines.handshake_timeout;
        let now = Instant::now();
        while let Some((at, id)) = self.deadlines.front_handshake() {
            if !self.handshaking(at, id) {
                self.deadlines.pop_handshake();
                continue;
            }
            if now < at + limit {
                break;
            }
            self.deadlines.pop_handshake();
            if let Some(c) = self.table.get_mut(id) {
                c.expired = true;
                let _ = c.quic.close(false, 0x0, b"handshake timeout");
                Counters::add(&self.shared.counters.handshake_timeouts, 1);
            }
            self.mark_dirty(id);
        }
    }

    fn process_dirty(&mut self) {
        for i in 0..self.dirty.len() {
            let id = self.dirty[i];
            self.manage_paths(id);
            self.process_conn(id);
        }
    }

    /// Runs the HTTP/3 layer over what one connection received.
    fn process_conn(&mut self, id: ConnId) {
        let Some(conn) = self.table.get_mut(id) else { return };
        if conn.quic.is_closed() || conn.quic.is_draining() {
            return;
        }
        let conn = if conn.quic.is_established() && !conn.handshake_done {
            conn.handshake_done = true;
            self.half_open -= 1;
            if conn.quic.is_resumed() {
                Counters::add(&self.shared.counters.handshakes_resumed, 1);
            }
            self.handshake_completed(id);
            let Some(conn) = self.table.get_mut(id) else { return };
            conn
        } else {
            conn
        };
        let app = &mut self.app;
        let (scratch, body) = (&mut self.scratch, &mut self.body_scratch);
        let result = catch_unwind(AssertUnwindSafe(|| conn.h3.process(&mut conn.quic, app, scratch, body)));
        let awaits = result.as_ref().is_ok_and(|o| o.awaits_application);
        // Hold only for what the application answers later. Holding
        // anything else only delays what the native core already wrote,
        // and can lose it: a FIN written alone after the data was sent (a
        // WebTransport echo) is dropped by quiche 0.30 if the peer's ACK
        // of that data is processed before the FIN is sent, because the
        // stream then counts as complete and is collected (docs/design.md).
        if awaits && self.deadlines.drain_started.is_none() && !conn.held && !conn.answered {
            conn.held = true;
            self.deadlines.hold(id, self.app.mark(), Instant::now());
        }
        match result {
            Ok(outcome) => {
                if let Some(e) = outcome.close {
                    let _ = conn.quic.close(true, e.code, e.reason.as_bytes());
                }
            }
            Err(_) => self.on_panic(id, "HTTP/3 processing"),
        }
        if self.options.webtransport {
            if let Some(conn) = self.table.get_mut(id) {
                count_quic_datagrams(conn, &self.shared.counters);
            }
        }
    }

    /// A panic while handling one connection closes that connection only.
    fn on_panic(&mut self, id: ConnId, during: &str) {
        // The panic hook recorded the message (crate::panic_report); take it
        // even when the connection is gone so it does not linger.
        let cause = crate::panic_report::take_last().map(|p| format!(" (panic {p})")).unwrap_or_default();
        if let Some(c) = self.table.get_mut(id) {
            self.app.on_log(
                LogLevel::Error,
                &format!("internal error during {during} on connection {}; closing that connection{cause}", c.cid_hex),
            );
            let _ = c.quic.close(true, H3_INTERNAL_ERROR, b"internal error");
        }
    }

    fn send_packets(&mut self) {
        if !self.socket.retry_blocked(&self.shared.counters) {
            return;
        }
        let max_segments = if self.options.no_gso { 1 } else { self.socket.max_segments() };
        let own_pacing = self.own_pacing;
        let dirty = std::mem::take(&mut self.dirty);
        for (i, &id) in dirty.iter().enumerate() {
            let Some(conn) = self.table.get_mut(id) else { continue };
            conn.dirty = false;
            conn.answered = false;
            self.touched.push(id);
            if conn.held && !conn.quic.is_closed() {
                continue;
            }
            let socket = &mut self.socket;
            let counters = &self.shared.counters;
            // Packets of one connection accumulate back to back in send_buf;
            // a run of equal-sized packets to one address (the last may be
            // shorter) leaves as one GSO send.
            let mut run = Run::empty(conn.peer, None);
            let mut run_limit = 0;
            // No datagram larger than the peer takes (its max_udp_payload_size,
            // RFC 9000 section 18.2). quiche clamps the first path to it but
            // builds a path the client moves to from the local limit alone
            // (1,472), which quic-go's 1,452-byte buffers cut short: its
            // migration failed in the interop runner's matrix. quiche never
            // builds a packet larger than the buffer it is given.
            let packet_cap = conn
                .quic
                .peer_transport_params()
                .map_or(MAX_PACKET, |p| (p.max_udp_payload_size as usize).clamp(1200, MAX_PACKET));
            let now = Instant::now();
            // Pacing: a packet held for later goes first once its time has
            // come (the loop below may add to its run); until then nothing
            // more is built for this connection.
            let mut pacing = conn.paced.as_ref().is_some_and(|p| p.at > now + PACING_GRANULARITY);
            let was_draining = conn.quic.is_draining();
            let mut pace_at = None;
            let mut failed_once = false;
            if own_pacing {
                if let Some(path) = conn.quic.path_stats().find(|p| p.active) {
                    conn.pacer.update(
                        path.cwnd,
                        path.rtt,
                        path.startup_exit.is_none(),
                        conn.quic.max_send_udp_payload_size(),
                        now,
                    );
                }
            }
            if !pacing {
                if let Some(p) = conn.paced.take() {
                    socket.send_buf[..p.data.len()].copy_from_slice(&p.data);
                    run = Run { len: p.data.len(), count: 1, segment: p.data.len(), to: p.to, from: p.from };
                    run_limit = conn.quic.max_send_udp_payload_size();
                }
            }
            while !pacing {
                // The path's current limit (PMTUD raises it after a probe
                // is acknowledged): a run holds packets built under one.
                let limit = conn.quic.max_send_udp_payload_size();
                if run.count > 0 && limit != run_limit {
                    socket.flush_run(&run, counters);
                    run = Run::empty(run.to, run.from);
                }
                run_limit = limit;
                if own_pacing && !conn.pacer.ready(Instant::now) {
                    pace_at = Some(conn.pacer.release_at());
                    Counters::add(&counters.pacing_waits, 1);
                    // Without this, CUBIC would take the window this pause
                    // leaves unfilled as the application's doing and not
                    // grow it on the ACKs that arrive meanwhile (quiche
                    // patch 03).
                    conn.quic.on_send_paced();
                    break;
                }
                let (n, info) = match conn.quic.send(&mut socket.send_buf[run.len..run.len + packet_cap]) {
                    Ok(r) => r,
                    Err(quiche::Error::Done) => break,
                    // A first error (a TLS alert during the handshake, say)
                    // is followed by the CONNECTION_CLOSE it implies, which
                    // quiche builds on the next call: ask again.
                    Err(e) if !failed_once => {
                        failed_once = true;
                        let _ = conn.quic.close(false, 0x1, format!("send failed: {e:?}").as_bytes());
                        continue;
                    }
                    Err(e) => {
                        // Again: quiche cannot build any packet, not even the
                        // close. The connection leaves the table this turn, so
                        // the client's next packet is answered with a
                        // stateless reset: it learns now, not at its idle timeout.
                        Counters::add(&counters.send_failures, 1);
                        self.app.on_log(
                            LogLevel::Debug,
                            &format!("connection {}: quiche could not build a packet ({e:?}); dropping it", conn.cid_hex),
                        );
                        conn.expired = true;
                        break;
                    }
                };
                let from = socket.source_for(info.from);
                if own_pacing {
                    conn.pacer.spent(n);
                }
                if !was_draining && conn.quic.local_error().is_some() {
                    // The datagrams that carry this server's CONNECTION_CLOSE,
                    // kept for the closing state until quiche's draining
                    // period ends: the last (quiche builds nothing after it)
                    // and, before the handshake is confirmed, the Initial one
                    // before it (quiche patch 14).
                    let datagram = socket.send_buf[run.len..run.len + n].to_vec();
                    if conn.quic.is_draining() {
                        let mut datagrams = std::mem::take(&mut conn.close_datagrams);
                        datagrams.push(datagram);
                        self.closing.insert(&conn.cids, datagrams, conn.quic.timeout_instant(), now);
                    } else if conn.close_datagrams.len() < closing::MAX_DATAGRAMS - 1 {
                        conn.close_datagrams.push(datagram);
                    }
                }
                // `now` is from before this connection's sends: a thread
                // descheduled since (a busy machine) sees quiche stamp a
                // packet for now as later, so the clock is read again.
                if info.at > now + PACING_GRANULARITY && info.at > Instant::now() + PACING_GRANULARITY {
                    // quiche's pacer (BBRv2) wants this one later than this
                    // turn: what is built so far leaves now, this packet at
                    // its time.
                    let data = socket.send_buf[run.len..run.len + n].to_vec();
                    conn.paced = Some(PacedPacket { data, to: info.to, from, at: info.at });
                    Counters::add(&counters.pacing_waits, 1);
                    pacing = true;
                    continue;
                }
                if run.count > 0 && (info.to != run.to || from != run.from || n > run.segment || n > limit) {
                    // This packet cannot join the run (another path, or a
                    // size the run's segments cannot hold): send the run,
                    // then start a new one with the packet.
                    socket.flush_run(&run, counters);
                    socket.send_buf.copy_within(run.len..run.len + n, 0);
                    run = Run::empty(info.to, from);
                }
                if run.count == 0 {
                    run.segment = n;
                    run.to = info.to;
                    run.from = from;
                }
                run.len += n;
                run.count += 1;
                if n < run.segment || n > limit || run.count >= max_segments || run.len + MAX_PACKET > socket.send_buf.len() {
                    socket.flush_run(&run, counters);
                    run = Run::empty(run.to, run.from);
                }
                if socket.is_blocked() && run.count == 0 {
                    break;
                }
            }
            socket.flush_run(&run, counters);
            if !self.too_large_logged && Counters::get(&counters.udp_too_large) > 0 {
                self.too_large_logged = true;
                self.app.on_log(
                    LogLevel::Warn,
                    "the kernel refused a datagram as larger than the path allows (EMSGSIZE); counted in udpTooLarge, \
                     further ones are not logged",
                );
            }
            let mut next = conn.quic.timeout_instant();
            if let Some(at) = conn.paced.as_ref().map(|p| p.at).or(pace_at) {
                next = Some(next.map_or(at, |t| t.min(at)));
            }
            self.deadlines.rearm(id, &mut conn.timer, next);
            if self.socket.is_blocked() {
                // Wait for the socket's writable event; this connection and
                // every one not yet flushed stay dirty for the next turn.
                let rest: Vec<ConnId> = dirty[i..].to_vec();
                for id in &rest {
                    if let Some(c) = self.table.get_mut(*id) {
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
        for id in touched {
            if !self.table.get(id).is_some_and(|c| c.quic.is_closed() || (c.expired && !c.dirty)) {
                continue;
            }
            let Some(mut conn) = self.table.remove(id) else { continue };
            self.forget_identity_question(conn.identity_question);
            self.deadlines.forget_timer(id, conn.timer);
            count_quic_datagrams(&mut conn, &self.shared.counters);
            if !conn.handshake_done {
                self.half_open -= 1;
            }
            conn.h3.on_connection_closed(&mut self.app);
            Counters::sub(&self.shared.counters.connections_open, 1);
            if let Some(w) = self.worker_counters() {
                Counters::sub(&w.connections_open, 1);
            }
            if !conn.quic.is_established() {
                Counters::add(&self.shared.counters.handshake_failures, 1);
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
            self.app.on_conn_closed(id, ConnClosed { how, is_app, code, reason, peer: display(conn.peer), cid: &conn.cid_hex });
        }
    }
}

/// Adds the DATAGRAM frames quiche received on `conn` since the last call.
#[inline]
fn count_quic_datagrams(conn: &mut Conn, counters: &Counters) {
    let n = conn.quic.stats().dgram_recv;
    Counters::add(&counters.quic_datagrams_received, n.saturating_sub(conn.dgrams_counted) as u64);
    conn.dgrams_counted = n;
}
