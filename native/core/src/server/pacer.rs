//! Pacing for the congestion controllers quiche 0.30 does not pace itself.
//! Its CUBIC and Reno hand every packet `SendInfo::at == now` (their
//! recovery's `get_packet_send_time` returns `now`); only BBRv2 computes
//! release times, which the server loop honours directly. For the others
//! this is RFC 9002 section 7.7's token bucket: the rate is
//! 1.25 x congestion window / smoothed RTT, so a window leaves spread over
//! 80 % of a round trip instead of in one burst; 2 x while the connection
//! is still in its first slow start, as Linux paces TCP (tcp_pacing_ss_ratio
//! 200): there the window doubles each round trip, and a rate of 1.25 x the
//! window at the start of the round trip held the growth to about 1.4x per
//! round trip (a qlog of W10's bottleneck: 200 ms to reach the link's
//! rate at 20 ms RTT instead of about 100).
//!
//! The loop's timers have millisecond resolution (epoll), so the bucket
//! holds up to two milliseconds of sending at the rate (at least ten
//! packets, RFC 9002's initial window): after a timer wait, rounded up to a
//! whole millisecond, the bytes earned in the meantime are still there and
//! the rate is kept; bursts stay within what the controller lets out in two
//! milliseconds.

use std::time::{Duration, Instant};

/// RFC 9002 section 7.7: N = 1.25 lets a window out a little faster than
/// one round trip, so pacing itself does not hold back the controller.
const GAIN: f64 = 1.25;
/// In the first slow start the window doubles within a round trip.
const SLOW_START_GAIN: f64 = 2.0;
/// The smallest burst: RFC 9002's initial window, ten packets.
const MIN_BURST_PACKETS: f64 = 10.0;
/// The bucket's depth in time at the current rate.
const BURST_TIME: Duration = Duration::from_millis(2);

#[derive(Debug)]
pub struct Pacer {
    /// Bytes that may leave now; it may go below zero by the last packet.
    tokens: f64,
    /// Bytes per second.
    rate: f64,
    capacity: f64,
    last: Instant,
}

impl Pacer {
    /// A new connection may send its first ten packets at once.
    pub fn new(packet: usize, now: Instant) -> Pacer {
        let capacity = MIN_BURST_PACKETS * packet as f64;
        Pacer { tokens: capacity, rate: 0.0, capacity, last: now }
    }

    /// Takes the connection's current window and RTT (once per loop turn),
    /// and whether its controller has left its first slow start.
    pub fn update(&mut self, cwnd: usize, srtt: Duration, slow_start: bool, packet: usize, now: Instant) {
        self.refill(now);
        let rtt = srtt.as_secs_f64().max(1e-6);
        let gain = if slow_start { SLOW_START_GAIN } else { GAIN };
        self.rate = gain * cwnd as f64 / rtt;
        self.capacity = (self.rate * BURST_TIME.as_secs_f64()).max(MIN_BURST_PACKETS * packet as f64);
        self.tokens = self.tokens.min(self.capacity);
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
        self.last = now;
    }

    /// Whether a packet may leave now. The clock is read only when the
    /// bucket is empty: a send loop asks once per packet, and reading the
    /// clock each time was about 1 % of the server's core in a 1 GiB
    /// download (perf, docs/design.md "W8's floor").
    pub fn ready(&mut self, now: impl FnOnce() -> Instant) -> bool {
        if self.tokens > 0.0 {
            return true;
        }
        self.refill(now());
        self.tokens > 0.0
    }

    /// A packet of `bytes` left.
    pub fn spent(&mut self, bytes: usize) {
        self.tokens -= bytes as f64;
    }

    /// When the next packet may leave (`ready` said no).
    pub fn release_at(&self) -> Instant {
        if self.rate <= 0.0 {
            return self.last + Duration::from_millis(1);
        }
        self.last + Duration::from_secs_f64((-self.tokens).max(0.0) / self.rate + 1e-6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends a 120 KB window in 1,200-byte packets from a fresh pacer
    /// (40 ms RTT), waking as the loop's millisecond timer would; returns
    /// how long it took and how many times it waited.
    fn send_a_window(slow_start: bool) -> (Duration, u32) {
        let t0 = Instant::now();
        let mut p = Pacer::new(1200, t0);
        p.update(120_000, Duration::from_millis(40), slow_start, 1200, t0);
        let mut now = t0;
        let mut sent = 0;
        let mut waits = 0;
        while sent < 120_000 {
            if p.ready(|| now) {
                p.spent(1200);
                sent += 1200;
            } else {
                let at = p.release_at();
                assert!(at > now, "a wait is in the future");
                // The loop's timer fires on a whole millisecond.
                now += Duration::from_millis((at - now).as_millis() as u64 + 1);
                waits += 1;
            }
        }
        (now - t0, waits)
    }

    #[test]
    fn a_window_leaves_over_four_fifths_of_a_round_trip() {
        // 3.75 MB/s, so 7.5 KB per 2 ms bucket, at least ten packets (12 KB).
        let (took, waits) = send_a_window(false);
        assert!(waits > 10, "it waited {waits} times");
        // 120 KB at 3.75 MB/s is 32 ms, less the first burst.
        assert!(took >= Duration::from_millis(26) && took <= Duration::from_millis(36), "took {took:?}");
    }

    #[test]
    fn in_slow_start_a_window_leaves_over_half_a_round_trip() {
        // 6 MB/s: 20 ms for the window, less the first burst.
        let (took, _) = send_a_window(true);
        assert!(took >= Duration::from_millis(16) && took <= Duration::from_millis(23), "took {took:?}");
    }

    #[test]
    fn the_first_ten_packets_go_at_once_and_idle_time_earns_at_most_a_burst() {
        let t0 = Instant::now();
        let mut p = Pacer::new(1200, t0);
        for _ in 0..10 {
            assert!(p.ready(|| t0));
            p.spent(1200);
        }
        assert!(!p.ready(|| t0), "the eleventh waits");
        p.update(12_000, Duration::from_millis(100), false, 1200, t0);
        // A long idle period does not bank more than the bucket holds.
        let later = t0 + Duration::from_secs(10);
        let mut n = 0;
        while p.ready(|| later) {
            p.spent(1200);
            n += 1;
        }
        assert_eq!(n, 10, "one bucket (ten packets) after idling");
    }
}
