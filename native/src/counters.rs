//! Server-wide counters, read by TypeScript on demand (`NativeServer.counters`)
//! for benchmarks and metrics. Relaxed atomics: each is an independent tally.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Counters {
    pub udp_bytes_received: AtomicU64,
    pub udp_datagrams_received: AtomicU64,
    pub udp_datagrams_sent: AtomicU64,
    /// Sends that carried several datagrams at once (UDP GSO).
    pub udp_gso_sends: AtomicU64,
    /// Request-body bytes the HTTP/3 layer read from QUIC streams.
    pub body_bytes_read: AtomicU64,
    pub connections_accepted: AtomicU64,
    pub connections_open: AtomicU64,
    pub wt_sessions_open: AtomicU64,
    pub wt_peer_streams_open: AtomicU64,
    pub wt_datagrams_received: AtomicU64,
    /// Connections that closed before their handshake completed (TLS alert,
    /// no common ALPN, handshake timeout, peer gave up).
    pub handshake_failures: AtomicU64,
    /// UDP payload bytes handed to the kernel.
    pub udp_bytes_sent: AtomicU64,
    /// Request streams (including WebTransport CONNECT streams) the HTTP/3
    /// layer holds state for now, server-wide.
    pub request_streams_open: AtomicU64,
    /// Connections dropped because their handshake did not finish in time.
    pub handshake_timeouts: AtomicU64,
    /// DATAGRAM frames quiche reports received (`Stats::dgram_recv`), summed
    /// over connections: the reference W7 checks `usage.datagrams` against.
    pub quic_datagrams_received: AtomicU64,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn sub(counter: &AtomicU64, n: u64) {
        counter.fetch_sub(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
