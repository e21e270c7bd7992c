//! Everything the I/O loop waits for by time: quiche's timers, handshake
//! deadlines, packets held for the application, and the graceful drain.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use crate::app::Mark;
use crate::ids::ConnId;

/// How long a graceful shutdown waits for in-flight requests and for
/// clients to acknowledge their responses; short enough that a server told
/// to stop exits within 5 s even with clients that vanished.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(3);
/// After DRAIN_DEADLINE every connection is closed; this long more for
/// their CONNECTION_CLOSE frames to leave, then the server ends regardless.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// Longest a connection's packets wait for the application's answer.
pub const HOLD_MAX: Duration = Duration::from_millis(5);

pub struct Deadlines {
    /// QUIC timers by deadline, so a turn costs O(touched connections), not
    /// O(all connections): with 1,000 idle connections a scan per turn
    /// doubled the CPU per request (bench W5).
    timers: BTreeSet<(Instant, ConnId)>,
    /// Connections in accept order with their accept time, for the handshake
    /// timeout: accept times only grow, so the front is the next deadline and
    /// each connection is looked at O(1) times, not on every turn.
    handshakes: VecDeque<(Instant, ConnId)>,
    pub handshake_timeout: Duration,
    /// Connections whose packets wait until the application settles the
    /// mark noted with each: a turn that hands requests to JavaScript would
    /// otherwise send an ACK-only packet now and the responses a moment
    /// later; held, the ACK rides with the responses (one packet, one
    /// send, one wake-up of the client fewer per turn). A hold ends at its
    /// deadline even if JavaScript is busy, so ACKs are never late by more
    /// than HOLD_MAX (well under the 25 ms max_ack_delay peers expect).
    held: Vec<(ConnId, Mark, Instant)>,
    /// When a graceful shutdown started (or a forced one, back-dated by
    /// DRAIN_DEADLINE).
    pub drain_started: Option<Instant>,
}

impl Deadlines {
    pub fn new(handshake_timeout: Duration) -> Self {
        Deadlines {
            timers: BTreeSet::new(),
            handshakes: VecDeque::new(),
            handshake_timeout,
            held: Vec::new(),
            drain_started: None,
        }
    }

    /// The earliest of every deadline.
    pub fn next(&self) -> Option<Instant> {
        let mut next = self.timers.first().map(|(t, _)| *t);
        if let Some(h) = self.next_handshake_deadline() {
            next = Some(next.map_or(h, |n| n.min(h)));
        }
        if let Some(h) = self.held.iter().map(|(_, _, d)| *d).min() {
            next = Some(next.map_or(h, |n| n.min(h)));
        }
        if let Some(started) = self.drain_started {
            // Once the drain deadline has passed (and the connections were
            // closed then), the next moment that matters is the end of the
            // grace: waking for the past deadline would spin the loop.
            let mut deadline = started + DRAIN_DEADLINE;
            if Instant::now() >= deadline {
                deadline += CLOSE_GRACE;
            }
            next = Some(next.map_or(deadline, |n| n.min(deadline)));
        }
        next
    }

    /// Moves a connection's timer entry (`current`) to quiche's deadline.
    pub fn rearm(&mut self, id: ConnId, current: &mut Option<Instant>, next: Option<Instant>) {
        if next == *current {
            return;
        }
        if let Some(t) = *current {
            self.timers.remove(&(t, id));
        }
        if let Some(t) = next {
            self.timers.insert((t, id));
        }
        *current = next;
    }

    pub fn forget_timer(&mut self, id: ConnId, timer: Option<Instant>) {
        if let Some(t) = timer {
            self.timers.remove(&(t, id));
        }
    }

    /// The next timer due at `now`, taken out.
    pub fn pop_due_timer(&mut self, now: Instant) -> Option<(Instant, ConnId)> {
        let &(t, _) = self.timers.first()?;
        if t > now {
            return None;
        }
        self.timers.pop_first()
    }

    pub fn handshake_started(&mut self, at: Instant, id: ConnId) {
        self.handshakes.push_back((at, id));
    }

    /// The earliest handshake deadline (the front of the queue; at worst an
    /// early wake-up for a connection that completed meanwhile).
    fn next_handshake_deadline(&self) -> Option<Instant> {
        self.handshakes.front().map(|(at, _)| *at + self.handshake_timeout)
    }

    pub fn front_handshake(&self) -> Option<(Instant, ConnId)> {
        self.handshakes.front().copied()
    }

    pub fn pop_handshake(&mut self) {
        self.handshakes.pop_front();
    }

    pub fn hold(&mut self, id: ConnId, mark: Mark, now: Instant) {
        self.held.push((id, mark, now + HOLD_MAX));
    }

    /// Ends every hold whose mark is settled or whose deadline passed, and
    /// hands its connection to `released`.
    pub fn release_held(&mut self, now: Instant, settled: impl Fn(Mark) -> bool, mut released: impl FnMut(ConnId)) {
        let mut i = 0;
        while i < self.held.len() {
            let (id, mark, deadline) = self.held[i];
            if !settled(mark) && now < deadline {
                i += 1;
                continue;
            }
            self.held.swap_remove(i);
            released(id);
        }
    }

    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    pub fn drain_deadline_passed(&self) -> bool {
        self.drain_started.is_some_and(|s| s.elapsed() >= DRAIN_DEADLINE)
    }
}
