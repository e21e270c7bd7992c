//! Workers: several I/O loops of one server in one process, each with its
//! own SO_REUSEPORT socket on the same port and its own application (a
//! JavaScript worker thread in the addon), sharing the server-wide counters
//! (so caps such as Profile B's sessions hold across them, by the same
//! atomics) and the keys a resumed or retried client needs from any of them.
//!
//! Ownership is one rule on a packet's destination connection ID:
//! `id[offset] % count` (`WorkerGroup::owner_of`). Every ID a worker issues
//! carries its own index at that offset, so the rule names the worker that
//! holds the connection; a client's first Initial carries an ID of the
//! client's choosing, and the rule spreads those evenly. The kernel's
//! reuseport choice follows the same rule where an eBPF program can be
//! attached (steering.rs); otherwise a worker that receives a packet it does
//! not own hands it to the owner's mailbox (counted), and the owner
//! processes it as if its own socket had read it. A worker that is not
//! running (starting, restarting) owns nothing: whoever receives its packets
//! handles them.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::counters::Counters;

/// Most workers one group may have: the index is one byte of the ID, and
/// the eBPF map is sized by it.
pub const MAX_WORKERS: usize = 64;
/// Packets one worker's mailbox holds; more are dropped (and counted), as a
/// full socket buffer would drop them, and QUIC's loss recovery resends.
pub const MAILBOX_LIMIT: usize = 8192;

/// How packets reach the worker that owns their connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steering {
    /// The kernel picks the owner's socket (an eBPF reuseport program).
    Ebpf,
    /// The kernel picks by its 4-tuple hash; non-owners forward in-process.
    Forwarding,
}

/// Per-worker tallies, read by JavaScript (`workerStats`).
#[derive(Default)]
pub struct WorkerCounters {
    pub connections_accepted: AtomicU64,
    pub connections_open: AtomicU64,
    /// Packets this worker's socket received for a connection another
    /// worker owns, and handed over (0 with eBPF steering).
    pub packets_forwarded: AtomicU64,
    /// Packets other workers handed to this one.
    pub packets_received_forwarded: AtomicU64,
    /// Packets dropped because this worker's mailbox was full.
    pub mailbox_drops: AtomicU64,
}

/// A datagram another worker's socket read for this one.
pub struct Forwarded {
    pub data: Vec<u8>,
    pub from: SocketAddr,
    /// The address it was sent to (the receiving socket's IP_PKTINFO), so
    /// the owner answers from it.
    pub to: SocketAddr,
}

/// Where other workers leave this worker's packets, and how they wake it.
pub struct Mailbox {
    queue: Mutex<VecDeque<Forwarded>>,
    waker: Arc<mio::Waker>,
}

impl Mailbox {
    pub fn new(waker: Arc<mio::Waker>) -> Mailbox {
        Mailbox { queue: Mutex::new(VecDeque::new()), waker }
    }

    /// Takes every packet waiting, in arrival order.
    pub fn take(&self, into: &mut VecDeque<Forwarded>) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::swap(&mut *q, into);
    }

    fn push(&self, packet: Forwarded) -> bool {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= MAILBOX_LIMIT {
            return false;
        }
        q.push_back(packet);
        true
    }

    pub fn wake(&self) {
        let _ = self.waker.wake();
    }
}

/// One server's workers.
pub struct WorkerGroup {
    pub count: usize,
    /// The server-wide counters every worker adds to.
    pub counters: Arc<Counters>,
    pub workers: Vec<WorkerCounters>,
    /// TLS session ticket key for servers not given one, so a client
    /// resumes on whichever worker its new connection lands (BoringSSL's own
    /// key would differ per worker).
    pub ticket_key: [u8; 48],
    /// Raised by closeIdleConnections() on any worker: every worker closes
    /// its idle connections once per new value.
    pub close_idle: AtomicU64,
    /// The identities every worker's handshakes choose from: the first
    /// worker's, replaced for all by setSecureContext on any of them.
    pub identities: std::sync::OnceLock<Arc<crate::certificates::IdentityStore>>,
    mailboxes: RwLock<Vec<Option<Arc<Mailbox>>>>,
    /// Where the worker index sits in a connection ID; fixed by the first
    /// worker that joins (it depends on the QUIC-LB server ID's length).
    offset: AtomicU64,
    steering: Mutex<crate::steering::SteeringState>,
}

impl WorkerGroup {
    /// A group of `count` workers (2 to MAX_WORKERS). `try_ebpf`: attach
    /// the steering program when the kernel allows (else forwarding).
    pub fn new(count: usize, try_ebpf: bool) -> Result<WorkerGroup, String> {
        if !(1..=MAX_WORKERS).contains(&count) {
            return Err(format!("workers must be 1 to {MAX_WORKERS}, got {count}"));
        }
        let mut ticket_key = [0u8; 48];
        getrandom::fill(&mut ticket_key).map_err(|e| format!("no random source for the ticket key: {e}"))?;
        Ok(WorkerGroup {
            count,
            counters: Arc::new(Counters::default()),
            workers: (0..count).map(|_| WorkerCounters::default()).collect(),
            ticket_key,
            close_idle: AtomicU64::new(0),
            identities: Default::default(),
            mailboxes: RwLock::new(vec![None; count]),
            offset: AtomicU64::new(u64::MAX),
            steering: Mutex::new(crate::steering::SteeringState::new(count, try_ebpf)),
        })
    }

    /// The worker that owns a packet sent to `dcid`; None for an ID too
    /// short to carry the index (never one this server issued).
    #[inline]
    pub fn owner_of(&self, dcid: &[u8], offset: usize) -> Option<usize> {
        dcid.get(offset).map(|b| usize::from(*b) % self.count)
    }

    /// Worker `index` starts: its packets go to `mailbox`, and its socket
    /// (`fd`, bound with SO_REUSEPORT) joins the kernel's steering.
    pub fn join(&self, index: usize, offset: usize, mailbox: Arc<Mailbox>, fd: i32) -> Result<Steering, String> {
        if index >= self.count {
            return Err(format!("worker index {index} out of range (0 to {})", self.count - 1));
        }
        let fixed = self.offset.compare_exchange(u64::MAX, offset as u64, Ordering::AcqRel, Ordering::Acquire);
        if let Err(existing) = fixed {
            if existing != offset as u64 {
                return Err("every worker of a server needs the same connection ID options (quicLb)".into());
            }
        }
        let steering = self.steering.lock().unwrap_or_else(|p| p.into_inner()).add_socket(index, offset, fd);
        self.mailboxes.write().unwrap_or_else(|p| p.into_inner())[index] = Some(mailbox);
        Ok(steering)
    }

    /// Worker `index` stopped: it owns nothing until it joins again (the
    /// kernel drops its socket from the reuseport group and the eBPF map
    /// when the socket closes).
    pub fn leave(&self, index: usize, mailbox: &Arc<Mailbox>) {
        let mut boxes = self.mailboxes.write().unwrap_or_else(|p| p.into_inner());
        if boxes.get(index).and_then(|b| b.as_ref()).is_some_and(|b| Arc::ptr_eq(b, mailbox)) {
            boxes[index] = None;
        }
    }

    /// How packets are steered now, and why not by eBPF when they are not.
    pub fn steering(&self) -> (Steering, String) {
        let s = self.steering.lock().unwrap_or_else(|p| p.into_inner());
        (s.mode(), s.reason().to_string())
    }

    /// Hands a packet to worker `owner`; false if it is not running (the
    /// caller handles the packet itself) or its mailbox is full (dropped).
    /// The owner is woken by `wake_pending` at the end of the read.
    pub fn forward(&self, from_worker: usize, owner: usize, data: &[u8], from: SocketAddr, to: SocketAddr) -> ForwardOutcome {
        let boxes = self.mailboxes.read().unwrap_or_else(|p| p.into_inner());
        let Some(mailbox) = boxes.get(owner).and_then(|b| b.as_ref()) else { return ForwardOutcome::NotRunning };
        Counters::add(&self.workers[from_worker].packets_forwarded, 1);
        if mailbox.push(Forwarded { data: data.to_vec(), from, to }) {
            Counters::add(&self.workers[owner].packets_received_forwarded, 1);
            ForwardOutcome::Queued
        } else {
            Counters::add(&self.workers[owner].mailbox_drops, 1);
            ForwardOutcome::Dropped
        }
    }

    /// Wakes the workers whose bit is set in `mask` (one wake per turn,
    /// however many packets were forwarded to each).
    pub fn wake(&self, mask: u64) {
        if mask == 0 {
            return;
        }
        let boxes = self.mailboxes.read().unwrap_or_else(|p| p.into_inner());
        for (i, b) in boxes.iter().enumerate() {
            if mask & (1 << i) != 0 {
                if let Some(b) = b {
                    b.wake();
                }
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum ForwardOutcome {
    Queued,
    Dropped,
    NotRunning,
}

/// One worker's place in its group.
#[derive(Clone)]
pub struct WorkerRole {
    pub group: Arc<WorkerGroup>,
    pub index: usize,
}

impl std::fmt::Debug for WorkerRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker {} of {}", self.index, self.group.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_is_the_index_byte_modulo_the_count() {
        let g = WorkerGroup::new(3, false).unwrap();
        assert_eq!(g.owner_of(&[0, 7, 9], 1), Some(1));
        assert_eq!(g.owner_of(&[0, 2, 9], 1), Some(2));
        assert_eq!(g.owner_of(&[0], 1), None, "too short to carry an index");
    }

    #[test]
    fn a_worker_not_running_gets_nothing_and_a_full_mailbox_drops() {
        let g = WorkerGroup::new(2, false).unwrap();
        let from: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(g.forward(0, 1, b"x", from, from), ForwardOutcome::NotRunning);
        let poll = mio::Poll::new().unwrap();
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(1)).unwrap());
        let mailbox = Arc::new(Mailbox::new(waker));
        g.join(1, 1, mailbox.clone(), -1).unwrap();
        for _ in 0..MAILBOX_LIMIT {
            assert_eq!(g.forward(0, 1, b"x", from, from), ForwardOutcome::Queued);
        }
        assert_eq!(g.forward(0, 1, b"x", from, from), ForwardOutcome::Dropped);
        assert_eq!(Counters::get(&g.workers[1].mailbox_drops), 1);
        let mut got = VecDeque::new();
        mailbox.take(&mut got);
        assert_eq!(got.len(), MAILBOX_LIMIT);
        g.leave(1, &mailbox);
        assert_eq!(g.forward(0, 1, b"x", from, from), ForwardOutcome::NotRunning);
    }

    #[test]
    fn workers_must_agree_on_where_the_index_sits() {
        let g = WorkerGroup::new(2, false).unwrap();
        let poll = mio::Poll::new().unwrap();
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(1)).unwrap());
        g.join(0, 1, Arc::new(Mailbox::new(waker.clone())), -1).unwrap();
        assert!(g.join(1, 3, Arc::new(Mailbox::new(waker)), -1).is_err());
    }
}
