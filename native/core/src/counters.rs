//! Server-wide counters, read by TypeScript on demand (`NativeServer.counters`)
//! for benchmarks and metrics. Relaxed atomics: each is an independent tally.

use std::sync::atomic::{AtomicU64, Ordering};

/// The counters JavaScript reads (`NativeServer.counters()`), defined once:
/// calls `$callback!` with every tallied counter (`counters { .. }`) and the
/// response statuses reported apart (`statuses { field = status, .. }`). The
/// `Counters` struct below and the addon's `NativeCounters` (whose generated
/// declaration TypeScript imports) are both built from this list. Docs are
/// written `#[doc = ".."]`, not `///`: napi-rs copies a plain string literal
/// into the TypeScript declaration, but not the raw one `///` becomes inside a
/// macro.
#[macro_export]
macro_rules! reported_counters {
    ($callback:ident) => {
        $callback! {
            counters {
                udp_bytes_received,
                udp_datagrams_received,
                udp_datagrams_sent,
                #[doc = "Sends that carried several datagrams at once (UDP GSO)."]
                udp_gso_sends,
                #[doc = "Receive calls on the UDP socket (one recvmmsg fills up to 32 buffers),"]
                #[doc = "those that found it empty included."]
                udp_recv_calls,
                #[doc = "Send calls on the UDP socket (one sendmsg per datagram or GSO run),"]
                #[doc = "including those the kernel refused for now (WouldBlock)."]
                udp_send_calls,
                #[doc = "JavaScript submits (commands, acknowledgements) that woke the I/O thread"]
                #[doc = "(an eventfd write: it was asleep or about to be)."]
                submit_wakes,
                #[doc = "JavaScript submits made while the I/O thread was awake: no eventfd"]
                #[doc = "write, its next turn takes them (server/doorbell.rs)."]
                submit_wakes_saved,
                #[doc = "Request-body bytes the HTTP/3 layer read from QUIC streams."]
                body_bytes_read,
                connections_accepted,
                connections_open,
                #[doc = "Connections that closed before their handshake completed (TLS alert,"]
                #[doc = "no common ALPN, handshake timeout, peer gave up)."]
                handshake_failures,
                #[doc = "UDP payload bytes handed to the kernel."]
                udp_bytes_sent,
                #[doc = "Request streams (including WebTransport CONNECT streams) the HTTP/3"]
                #[doc = "layer holds state for now, server-wide."]
                request_streams_open,
                #[doc = "Connections dropped because their handshake did not finish in time."]
                handshake_timeouts,
                #[doc = "Datagrams counted for open WebTransport sessions."]
                wt_datagrams_received,
                #[doc = "DATAGRAM frames quiche reports received (`Stats::dgram_recv`), summed"]
                #[doc = "over connections: the reference W7 checks `usage.datagrams` against."]
                quic_datagrams_received,
                #[doc = "Response and control-stream bytes the HTTP/3 layer holds because QUIC"]
                #[doc = "flow control has not taken them yet, server-wide, now."]
                send_bytes_queued,
                #[doc = "Request-body bytes buffered for requests not yet handed to the"]
                #[doc = "application (body window mode), server-wide, now."]
                body_bytes_buffered,
                #[doc = "Datagrams the kernel refused as larger than the path allows (EMSGSIZE):"]
                #[doc = "PMTU probes past the link's MTU, or a route whose MTU shrank. A refused"]
                #[doc = "GSO run is re-sent one datagram at a time; only the too-large ones count."]
                udp_too_large,
                #[doc = "Stateless resets sent (RFC 9000 section 10.3): answers to short-header"]
                #[doc = "packets for a connection ID the server does not know."]
                stateless_resets_sent,
                #[doc = "Stateless resets not sent because of the rate limit (200 per second)."]
                stateless_resets_limited,
                #[doc = "Datagrams carrying a connection's CONNECTION_CLOSE sent again, in answer"]
                #[doc = "to packets that still came for a connection this server closed (RFC 9000"]
                #[doc = "section 10.2.1; the 1st, 2nd, 4th... such packet is answered)."]
                closing_packets_resent,
                #[doc = "Times a connection's sending waited for its pacing time: a packet"]
                #[doc = "quiche timed for later (BBRv2's `SendInfo::at`), or the server's token"]
                #[doc = "bucket empty (CUBIC, Reno: server/pacer.rs)."]
                pacing_waits,
                #[doc = "Connections whose client moved to a new address (NAT rebinding or"]
                #[doc = "active migration) once quiche validated the new path."]
                path_migrations,
                #[doc = "New paths quiche validated (PATH_CHALLENGE answered, RFC 9000 section 8.2):"]
                #[doc = "a client's move, or a probe of a path it may move to."]
                paths_validated,
                #[doc = "New paths whose validation failed (no PATH_RESPONSE in time); the"]
                #[doc = "connection stays on the path it had."]
                paths_validation_failed,
                #[doc = "Datagrams sent naming their source address (IP_PKTINFO): on a socket bound"]
                #[doc = "to 0.0.0.0 or `::`, every reply leaves from the address the client reached."]
                udp_sent_with_source,
                #[doc = "Connections dropped because quiche could build no packet, not even the"]
                #[doc = "CONNECTION_CLOSE (`send` failed twice in a row); logged at debug level."]
                send_failures,
                #[doc = "Retry packets sent (address validation, RFC 9000 section 8.1.2)."]
                retries_sent,
                #[doc = "Initials whose token was not a valid Retry token of this server"]
                #[doc = "(another key, another address, expired, forged); treated as no token."]
                retry_tokens_invalid,
                #[doc = "Datagrams opening with an Initial (or an unknown version) under 1,200"]
                #[doc = "bytes, dropped unread (RFC 9000 section 14.1)."]
                initials_too_small,
                #[doc = "HTTP datagrams the application sent on its WebTransport sessions."]
                wt_datagrams_sent,
                #[doc = "HTTP datagrams of application sessions dropped: QUIC's send queue was"]
                #[doc = "full, or one was too large for a packet."]
                wt_datagrams_dropped,
                #[doc = "Bytes of application WebTransport streams read from QUIC."]
                wt_stream_bytes_read,
                #[doc = "WebTransport sessions open now, server-wide (the session cap applies to it;"]
                #[doc = "it counts a session from its CONNECT until it ends)."]
                wt_sessions_open,
                #[doc = "Client-opened WebTransport streams open now, server-wide."]
                wt_peer_streams_open,
                #[doc = "WebTransport sessions established (answered 2xx) since start."]
                wt_sessions_established,
                #[doc = "Client-opened WebTransport streams offered for an open session since"]
                #[doc = "start, those refused over a cap included."]
                wt_peer_streams_offered,
                #[doc = "Handshakes that resumed a TLS session from a ticket (0-RTT or not),"]
                #[doc = "since start."]
                handshakes_resumed,
            }
            // Responses the native core wrote by itself: the 200 that opens a
            // WebTransport session, 413 over the body window, 429 past the
            // session cap, 431 over the field-section size, 501 for CONNECT.
            statuses {
                native_responses_200 = 200,
                native_responses_413 = 413,
                native_responses_425 = 425,
                native_responses_429 = 429,
                native_responses_431 = 431,
                native_responses_501 = 501,
            }
        }
    };
}

macro_rules! define_counters {
    (counters { $($(#[$doc:meta])* $name:ident,)* } statuses { $($status_field:ident = $status:literal,)* }) => {
        #[derive(Default)]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
            /// Responses the native core wrote by itself, by status: they never
            /// reach JavaScript's 'response' event. The benchmark-only native
            /// handler is not counted here.
            pub native_statuses: NativeStatuses,
            /// Responses the application started, by status (final statuses
            /// only): with workers, the whole server's, whichever worker's
            /// JavaScript answered (the metrics endpoint reads them).
            pub app_statuses: NativeStatuses,
        }
    };
}

reported_counters!(define_counters);

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

    /// Every status counted at least once, with its count.
    pub fn nonzero(&self) -> Vec<(u16, u64)> {
        let counts = self.0.iter().map(|c| c.load(Ordering::Relaxed));
        (100u16..).zip(counts).filter(|(_, n)| *n > 0).collect()
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
