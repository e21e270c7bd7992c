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
    /// Responses the native core wrote by itself (413, 429, 431, 501, the
    /// 200 that opens a WebTransport session), by status: they never reach
    /// JavaScript's 'response' event. The benchmark-only native handler is
    /// not counted here.
    pub native_statuses: NativeStatuses,
}

/// One tally per HTTP status code 100..=599.
pub struct NativeStatuses([AtomicU64; 500]);

impl Default for NativeStatuses {
    fn default() -> Self {
        NativeStatuses(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl NativeStatuses {
    pub fn count(&self, status: u16) {
        if let Some(c) = status.checked_sub(100).and_then(|i| self.0.get(usize::from(i))) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn get(&self, status: u16) -> u64 {
        status.checked_sub(100).and_then(|i| self.0.get(usize::from(i))).map_or(0, |c| c.load(Ordering::Relaxed))
    }
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

#[cfg(test)]
mod tests {
    use super::NativeStatuses;

    #[test]
    fn native_statuses_tally_by_code_and_ignore_out_of_range() {
        let s = NativeStatuses::default();
        s.count(413);
        s.count(501);
        s.count(501);
        s.count(100);
        s.count(599);
        s.count(99);
        s.count(600);
        let all: Vec<(u16, u64)> = (0..700).map(|c| (c, s.get(c))).filter(|&(_, n)| n > 0).collect();
        assert_eq!(all, vec![(100, 1), (413, 1), (501, 2), (599, 1)]);
    }
}
