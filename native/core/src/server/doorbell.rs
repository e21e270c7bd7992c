//! How the application's thread tells the loop it left work (commands,
//! acknowledgements) without a system call when the loop is awake anyway.
//!
//! A mio `Waker` is an eventfd write on Linux: a syscall for the caller,
//! and an extra loop turn whenever the loop was not asleep, since the
//! loop's next poll returns at once for the stale event. JavaScript submits
//! once or more per event batch; under load the loop is often still in its
//! turn then, and drains the inbox at the start of the next one anyway.
//! So the loop says when it is about to block (`park`), and `ring` writes
//! the eventfd only then.
//!
//! Correctness is the store-then-load pattern on two flags, all SeqCst:
//! the ringer stores `rung` then swaps `parked`; the loop stores `parked`
//! then loads `rung`. In the single order of SeqCst operations one of the
//! two loads sees the other side's store: either the loop sees `rung` and
//! does not block, or the ringer sees `parked` and wakes it (both at once
//! costs one spurious wake, never a lost one).

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

use mio::Waker;

pub struct Doorbell {
    waker: Arc<Waker>,
    /// The loop is blocking in poll, or about to.
    parked: AtomicBool,
    /// Work was left since the loop last answered.
    rung: AtomicBool,
}

impl Doorbell {
    pub fn new(waker: Arc<Waker>) -> Doorbell {
        Doorbell { waker, parked: AtomicBool::new(false), rung: AtomicBool::new(false) }
    }

    /// Another thread left work for the loop: wakes it if it sleeps, and
    /// says whether it did.
    pub fn ring(&self) -> bool {
        self.rung.store(true, SeqCst);
        if self.parked.swap(false, SeqCst) {
            let _ = self.waker.wake();
            return true;
        }
        false
    }

    /// The loop takes what was left (call before draining the inbox): a
    /// ring after this is seen by the next `park`.
    pub fn answer(&self) {
        self.rung.store(false, SeqCst);
    }

    /// The loop is about to block: false if work was left since `answer`
    /// (then it must not block).
    pub fn park(&self) -> bool {
        self.parked.store(true, SeqCst);
        if self.rung.load(SeqCst) {
            self.parked.store(false, SeqCst);
            return false;
        }
        true
    }

    /// The loop is awake again.
    pub fn unpark(&self) {
        self.parked.store(false, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll, Token};
    use std::time::Duration;

    fn bell() -> (Poll, Doorbell) {
        let poll = Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), Token(7)).unwrap());
        (poll, Doorbell::new(waker))
    }

    #[test]
    fn a_ring_while_the_loop_is_awake_costs_no_wake_but_stops_the_next_park() {
        let (mut poll, bell) = bell();
        bell.answer();
        assert!(!bell.ring());
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::ZERO)).unwrap();
        assert!(events.is_empty(), "no eventfd write while the loop was awake");
        assert!(!bell.park(), "the work left must keep the loop from blocking");
        bell.answer();
        assert!(bell.park(), "once answered, the loop may block");
    }

    #[test]
    fn a_ring_while_the_loop_is_parked_wakes_it() {
        let (mut poll, bell) = bell();
        assert!(bell.park());
        assert!(bell.ring());
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(5))).unwrap();
        assert!(events.iter().any(|e| e.token() == Token(7)));
        bell.unpark();
    }

    #[test]
    fn rings_from_another_thread_are_never_lost() {
        // Another thread rings 20,000 times, each time once the loop has
        // answered the ring before; the loop blocks whenever `park` lets it.
        // A lost ring would leave the loop blocked for the whole timeout.
        const RINGS: u64 = 20_000;
        let (mut poll, bell) = bell();
        let bell = Arc::new(bell);
        let rings = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let ringer = {
            let (bell, rings, answered) = (bell.clone(), rings.clone(), answered.clone());
            std::thread::spawn(move || {
                for i in 1..=RINGS {
                    rings.store(i, SeqCst);
                    let _ = bell.ring();
                    while answered.load(SeqCst) < i {
                        std::hint::spin_loop();
                    }
                }
            })
        };
        let mut events = Events::with_capacity(4);
        while answered.load(SeqCst) < RINGS {
            let blocking = bell.park();
            let timeout = if blocking { Duration::from_secs(10) } else { Duration::ZERO };
            let started = std::time::Instant::now();
            poll.poll(&mut events, Some(timeout)).unwrap();
            assert!(started.elapsed() < Duration::from_secs(5), "a ring was lost after {}", answered.load(SeqCst));
            if blocking {
                bell.unpark();
            }
            bell.answer();
            answered.store(rings.load(SeqCst), SeqCst);
        }
        ringer.join().unwrap();
    }
}
