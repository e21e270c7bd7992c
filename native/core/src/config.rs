//! Options accepted from TypeScript and the quiche configuration built from
//! them. Every limit a client could otherwise push on has a value here.

use crate::bench_handler::NativeHandler;
use crate::h3::connection::{BodyMode, H3Options};

/// `Default` is all zeros and empty paths, for tests and fuzz targets that
/// set what they use; `lib.rs` builds the real defaults.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub host: String,
    pub port: u16,
    pub cert_path: String,
    pub key_path: String,
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
    pub webtransport: bool,
    /// Append TLS secrets here in NSS key-log format (SSLKEYLOGFILE).
    pub keylog_path: Option<String>,
    /// Write one qlog file per connection into this directory.
    pub qlog_dir: Option<String>,
    /// Benchmark only: see bench_handler.rs.
    pub bench_native_handler: Option<NativeHandler>,
}

pub const DEFAULT_BODY_WINDOW: usize = 16 * 1024;
pub const DEFAULT_BODY_CREDIT: usize = 32 * 1024;
pub const DEFAULT_MAX_FIELD_SECTION_SIZE: usize = 16 * 1024;
pub const DEFAULT_HANDSHAKE_TIMEOUT_MS: u64 = 10_000;

impl Options {
    pub fn h3(&self) -> H3Options {
        let body_mode = if self.streamed_bodies {
            BodyMode::Streamed { credit: self.body_credit }
        } else {
            BodyMode::Buffered { window: self.body_window }
        };
        H3Options {
            body_mode: self.bench_native_handler.map_or(body_mode, |h| h.body_mode(body_mode)),
            max_field_section_size: self.max_field_section_size,
            panic_on_path: self.panic_on_path.as_ref().map(|p| p.as_bytes().to_vec()),
            webtransport: self.webtransport,
            native_handler: self.bench_native_handler,
        }
    }

    pub fn quiche_config(&self) -> Result<quiche::Config, String> {
        let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| format!("quiche config: {e}"))?;
        c.load_cert_chain_from_pem_file(&self.cert_path)
            .map_err(|_| format!("cannot load certificate chain from {}", self.cert_path))?;
        c.load_priv_key_from_pem_file(&self.key_path)
            .map_err(|_| format!("cannot load private key from {} (unreadable, or it does not match the certificate)", self.key_path))?;
        c.set_application_protos(&[b"h3"]).map_err(|e| format!("alpn: {e}"))?;
        c.set_max_idle_timeout(self.idle_timeout_ms);
        c.set_max_recv_udp_payload_size(1472);
        c.set_max_send_udp_payload_size(1472);
        let streams = self.max_streams_per_connection;
        c.set_initial_max_streams_bidi(streams);
        // Unidirectional: the client's control and QPACK streams plus
        // WebTransport streams.
        c.set_initial_max_streams_uni(streams.max(8));
        c.set_initial_max_stream_data_bidi_remote(self.stream_window);
        c.set_initial_max_stream_data_bidi_local(self.stream_window);
        c.set_initial_max_stream_data_uni(self.stream_window);
        c.set_initial_max_data((self.stream_window * streams.min(64)).max(1 << 20));
        c.set_disable_active_migration(true);
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
