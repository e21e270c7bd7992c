//! Options accepted from TypeScript and the quiche configuration built from
//! them. Every limit a client could otherwise push on has a value here.

use crate::error::ListenError;
use crate::h3::connection::{BodyMode, H3Options};

/// Largest UDP payload the server accepts (max_udp_payload_size); the
/// receive buffers (server/socket.rs) hold more.
pub const RECV_LIMIT: usize = 1472;
/// Largest UDP payload sent: a 1500-byte IPv4 packet (20 + 8 bytes of headers).
pub const SEND_LIMIT_V4: usize = 1472;
/// Largest UDP payload sent over IPv6: a 1500-byte packet (40 + 8 bytes).
pub const SEND_LIMIT_V6: usize = 1452;

/// RFC 9002 section 7.2's initial window, in packets: the default.
pub const INITIAL_WINDOW_PACKETS: usize = 10;
/// The range `initial_window_packets` may take: RFC 9002's minimum window
/// (2 packets) up to 128, well past the 32 quic-go and Chromium start with.
pub const INITIAL_WINDOW_RANGE: std::ops::RangeInclusive<usize> = 2..=128;

/// The send limit for a peer: IPv6 headers are 20 bytes longer.
pub fn send_limit(peer: std::net::SocketAddr) -> usize {
    match peer {
        std::net::SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_none() => SEND_LIMIT_V6,
        _ => SEND_LIMIT_V4,
    }
}

/// `Options::default()` holds every default the core has; the addon fills
/// in what JavaScript leaves out from it, and reports it in `limits()`.
#[derive(Debug, Clone)]
pub struct Options {
    pub host: String,
    pub port: u16,
    /// The identities handshakes choose from (certificates.rs), parsed in
    /// memory (tls.rs); None only in a default that no server listens with.
    pub identities: Option<std::sync::Arc<crate::certificates::IdentityStore>>,
    pub streamed_bodies: bool,
    /// Buffered mode: largest request body held for a handler; more is 413.
    pub body_window: usize,
    /// Streamed mode: bytes read ahead of JavaScript per request stream.
    pub body_credit: usize,
    pub idle_timeout_ms: u64,
    /// A connection whose handshake has not completed this long after its
    /// first packet is dropped (quiche has no handshake timeout of its own).
    pub handshake_timeout_ms: u64,
    pub max_connections: usize,
    pub max_streams_per_connection: u64,
    pub max_field_section_size: usize,
    /// Per-stream QUIC receive window for request bodies.
    pub stream_window: u64,
    pub panic_on_path: Option<String>,
    /// Test-only: one datagram per send, no GSO super-datagrams (a capture
    /// on lo keeps those whole, and tshark cannot split them).
    pub no_gso: bool,
    pub webtransport: bool,
    /// WebTransport sessions go to the application (accept or refuse, its
    /// streams and datagrams) instead of the echo (Profile B).
    pub webtransport_app: bool,
    /// Sessions open at once, server-wide (a 429 beyond).
    pub webtransport_max_sessions: u64,
    /// Client-opened session streams open at once, server-wide (refused
    /// with WT_BUFFERED_STREAM_REJECTED beyond).
    pub webtransport_max_streams: u64,
    /// Client-opened streams one session may have open (refused beyond).
    pub webtransport_max_streams_per_session: u64,
    /// Append TLS secrets here in NSS key-log format (SSLKEYLOGFILE).
    pub keylog_path: Option<String>,
    /// Write one qlog file per connection into this directory.
    pub qlog_dir: Option<String>,
    /// Key for stateless reset tokens (reset.rs); None: one random key per
    /// process.
    pub stateless_reset_key: Option<crate::reset::ResetKey>,
    /// quiche's congestion controller by name ("cubic", "reno", "bbr2").
    pub congestion_control: String,
    /// Packets leave at the times quiche's pacer gives them.
    pub pacing: bool,
    /// The congestion window a connection starts with, in packets of the
    /// path's datagram size (RFC 9002 section 7.2 recommends 10).
    pub initial_window_packets: usize,
    /// Connection IDs in the QUIC-LB plaintext format (connection_ids.rs);
    /// None: random.
    pub quic_lb: Option<crate::connection_ids::QuicLb>,
    /// When first Initials get a Retry (retry.rs).
    pub retry: crate::retry::RetryMode,
    /// Key for Retry tokens; None: random per process.
    pub retry_key: Option<crate::retry::RetryKey>,
    /// 0-RTT: accept early data at all, and answer unsafe methods in it.
    pub early_data: bool,
    pub early_data_any_method: bool,
    /// TLS session ticket key (48 bytes: BoringSSL's name, HMAC and AES
    /// keys); None: BoringSSL's own, random per process and rotated by it.
    pub ticket_key: Option<[u8; 48]>,
    /// How long each ticket key derived from `ticket_key` seals new tickets
    /// (tickets.rs); a ticket is opened for up to two such periods.
    pub ticket_rotation_s: u64,
    /// One worker of several (workers.rs): its socket shares the port
    /// (SO_REUSEPORT), its connection IDs carry its index, and it adds to
    /// the group's counters.
    pub worker: Option<crate::workers::WorkerRole>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            host: String::new(),
            port: 0,
            identities: None,
            streamed_bodies: false,
            body_window: 16 * 1024,
            body_credit: 32 * 1024,
            idle_timeout_ms: 30_000,
            handshake_timeout_ms: 10_000,
            max_connections: 10_000,
            max_streams_per_connection: 128,
            max_field_section_size: 16 * 1024,
            stream_window: 256 * 1024,
            panic_on_path: None,
            no_gso: false,
            webtransport: false,
            webtransport_app: false,
            webtransport_max_sessions: crate::h3::webtransport::SESSIONS_CAP,
            webtransport_max_streams: crate::h3::webtransport::PEER_STREAMS_CAP,
            webtransport_max_streams_per_session: u64::MAX,
            keylog_path: None,
            qlog_dir: None,
            stateless_reset_key: None,
            congestion_control: "cubic".into(),
            pacing: true,
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            quic_lb: None,
            retry: crate::retry::RetryMode::Auto { half_open: crate::retry::AUTO_THRESHOLD },
            retry_key: None,
            ticket_key: None,
            ticket_rotation_s: crate::tickets::DEFAULT_PERIOD_S,
            worker: None,
            early_data: true,
            early_data_any_method: false,
        }
    }
}

impl Options {
    pub fn h3(&self) -> H3Options {
        let body_mode = if self.streamed_bodies {
            BodyMode::Streamed { credit: self.body_credit }
        } else {
            BodyMode::Buffered { window: self.body_window }
        };
        H3Options {
            body_mode,
            max_field_section_size: self.max_field_section_size,
            panic_on_path: self.panic_on_path.as_ref().map(|p| p.as_bytes().to_vec()),
            webtransport: self.webtransport,
            webtransport_app: self.webtransport_app,
            wt_max_sessions: self.webtransport_max_sessions,
            wt_max_streams: self.webtransport_max_streams,
            wt_max_streams_per_session: self.webtransport_max_streams_per_session,
            wt_credit: self.body_credit,
            early_data_any_method: self.early_data_any_method,
        }
    }

    /// `new_handshakes`: where each handshake's TLS state is left for the
    /// loop (certificates.rs).
    pub fn quiche_config(&self, new_handshakes: crate::certificates::NewHandshakes) -> Result<quiche::Config, ListenError> {
        // The identities go to BoringSSL from memory (tls.rs), each
        // handshake's chosen in the select-certificate callback
        // (certificates.rs), never through quiche's file loaders. With a
        // ticket secret (given, or a worker group's), tickets are sealed
        // under keys that rotate (tickets.rs); else BoringSSL's own key,
        // which it rotates, serves this process alone.
        let store = self.identities.as_ref().ok_or(ListenError::Certificate)?;
        let mut tls = boring::ssl::SslContextBuilder::new(boring::ssl::SslMethod::tls())
            .map_err(|_| ListenError::Quiche(quiche::Error::TlsFail))?;
        crate::certificates::install_selector(&mut tls, store.clone(), new_handshakes);
        let group_key = self.worker.as_ref().map(|w| w.group.ticket_key);
        if let Some(secret) = self.ticket_key.or(group_key) {
            crate::tickets::install(&mut tls, secret, self.ticket_rotation_s);
        }
        let mut c = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, tls).map_err(ListenError::Quiche)?;
        c.set_application_protos(&[b"h3"]).map_err(ListenError::Alpn)?;
        c.set_max_idle_timeout(self.idle_timeout_ms);
        // Packet size (docs/design.md): quiche's path MTU discovery starts
        // each path at 1350 bytes (patch 02) and probes up to the send limit, which
        // `server::accept` sets per peer (1472 over IPv4, 1452 over IPv6:
        // a 1500-byte link either way). Peers may send us up to RECV_LIMIT.
        c.set_max_recv_udp_payload_size(RECV_LIMIT);
        c.set_max_send_udp_payload_size(SEND_LIMIT_V4);
        c.discover_pmtu(true);
        let streams = self.max_streams_per_connection;
        c.set_initial_max_streams_bidi(streams);
        // Unidirectional: the client's control and QPACK streams plus
        // WebTransport streams.
        c.set_initial_max_streams_uni(streams.max(8));
        c.set_initial_max_stream_data_bidi_remote(self.stream_window);
        c.set_initial_max_stream_data_bidi_local(self.stream_window);
        c.set_initial_max_stream_data_uni(self.stream_window);
        c.set_initial_max_data((self.stream_window * streams.min(64)).max(1 << 20));
        // Migration (server/paths.rs): the client may move to a new address
        // (or a NAT may move it); it may hold up to four of our IDs.
        c.set_disable_active_migration(false);
        c.set_active_connection_id_limit(4);
        // Congestion control and pacing (docs/design.md, "Pacing"): the
        // server loop holds a packet quiche times for later until its time.
        c.set_cc_algorithm_name(&self.congestion_control)
            .map_err(|_| ListenError::CongestionControl { name: self.congestion_control.clone() })?;
        c.enable_pacing(self.pacing);
        c.set_initial_congestion_window_packets(self.initial_window_packets);
        // Resumption across processes, restarts and workers: the ticket
        // secret (set above) gives every server that shares it the same
        // rotating keys.
        if self.early_data {
            c.enable_early_data();
        }
        // RFC 9221 DATAGRAM support: advertised through max_datagram_frame_size,
        // with bounded queues in both directions, only where WebTransport uses
        // it; elsewhere a DATAGRAM frame is a PROTOCOL_VIOLATION (quiche).
        c.enable_dgram(self.webtransport, 1024, 1024);
        if self.keylog_path.is_some() {
            c.log_keys();
        }
        Ok(c)
    }
}
