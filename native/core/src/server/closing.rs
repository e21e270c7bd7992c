//! The closing state of RFC 9000 section 10.2.1: a connection this server
//! closed answers the packets that still arrive for it with its closing
//! packet again (before the handshake is confirmed, both closing datagrams:
//! the Initial one and the Handshake one, quiche patch 14).
//!
//! quiche sends CONNECTION_CLOSE once and then, draining, reads nothing and
//! sends nothing more. When that one datagram is lost, the client learns of
//! the close only at its own idle or handshake timeout: at 30 % loss a
//! client whose handshake the server gave up on kept sending for minutes
//! (docs/design.md, "The closing packet, again"). The RFC lets an endpoint
//! keep the datagram that carried CONNECTION_CLOSE and send the same bytes
//! again (section 10.2.1's note), and asks that it limit the rate, here to
//! the 1st, 2nd, 4th, 8th... packet received, and within three times the
//! bytes received (the amplification limit of section 8, as the client's
//! address may not have been validated).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Closed connections remembered at once; past it the oldest is forgotten
/// (its client then gets a stateless reset or nothing, as before).
pub const MAX_CLOSING: usize = 1024;
/// Closing datagrams kept per connection: an Initial one and a Handshake
/// one before the handshake is confirmed, one after.
pub const MAX_DATAGRAMS: usize = 2;
/// How long a closing packet is kept: quiche's draining period (three PTOs),
/// but at least `SHORTEST` and at most `LONGEST`. A client whose handshake
/// the server gave up on under loss has backed its own PTO off to seconds
/// and tries again that much later; the cap on entries bounds the memory
/// whatever the time.
const SHORTEST: Duration = Duration::from_secs(3);
const LONGEST: Duration = Duration::from_secs(30);

struct Entry {
    /// The datagrams that carried CONNECTION_CLOSE, as sent.
    datagrams: Vec<Vec<u8>>,
    /// The connection IDs that led to the connection, to forget them with it.
    cids: Vec<Vec<u8>>,
    until: Instant,
    received: u64,
    received_bytes: u64,
    sent_bytes: u64,
}

#[derive(Default)]
pub struct ClosingPackets {
    by_cid: HashMap<Vec<u8>, u64>,
    entries: HashMap<u64, Entry>,
    /// Entry keys in the order they came, for expiry and eviction.
    order: VecDeque<u64>,
    next: u64,
}

impl ClosingPackets {
    /// Remembers `datagrams` for packets to any of `cids` until `draining_end`
    /// (clamped to 3-30 s from `now`).
    pub fn insert(&mut self, cids: &[Vec<u8>], datagrams: Vec<Vec<u8>>, draining_end: Option<Instant>, now: Instant) {
        if cids.is_empty() || datagrams.is_empty() {
            return;
        }
        if self.entries.len() >= MAX_CLOSING {
            self.forget_oldest();
        }
        let end = draining_end.unwrap_or(now).clamp(now + SHORTEST, now + LONGEST);
        let key = self.next;
        self.next += 1;
        for cid in cids {
            if let Some(old) = self.by_cid.insert(cid.clone(), key) {
                // A client ID two connections shared: the newer one answers.
                if let Some(e) = self.entries.get_mut(&old) {
                    e.cids.retain(|c| c != cid);
                }
            }
        }
        self.entries
            .insert(key, Entry { datagrams, cids: cids.to_vec(), until: end, received: 0, received_bytes: 0, sent_bytes: 0 });
        self.order.push_back(key);
    }

    /// A datagram of `len` bytes arrived for `dcid`: the closing datagrams to
    /// send back now, if that connection is closing and this one is due.
    pub fn answer(&mut self, dcid: &[u8], len: usize, now: Instant) -> Option<&[Vec<u8>]> {
        let key = *self.by_cid.get(dcid)?;
        let e = self.entries.get_mut(&key)?;
        if now >= e.until {
            return None;
        }
        e.received += 1;
        e.received_bytes += len as u64;
        let due = e.received.is_power_of_two();
        let n: u64 = e.datagrams.iter().map(|d| d.len() as u64).sum();
        if !due || e.sent_bytes + n > 3 * e.received_bytes {
            return None;
        }
        e.sent_bytes += n;
        Some(&e.datagrams)
    }

    /// Whether packets to `dcid` belong to a closing connection remembered here.
    pub fn knows(&self, dcid: &[u8]) -> bool {
        self.by_cid.contains_key(dcid)
    }

    /// Forgets the entries whose time is over, oldest first.
    pub fn expire(&mut self, now: Instant) {
        while let Some(&key) = self.order.front() {
            match self.entries.get(&key) {
                Some(e) if e.until > now => break,
                _ => self.forget_oldest(),
            }
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn forget_oldest(&mut self) {
        let Some(key) = self.order.pop_front() else { return };
        if let Some(e) = self.entries.remove(&key) {
            for cid in &e.cids {
                if self.by_cid.get(cid) == Some(&key) {
                    self.by_cid.remove(cid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cids(ids: &[u8]) -> Vec<Vec<u8>> {
        ids.iter().map(|&i| vec![i; 8]).collect()
    }

    #[test]
    fn answers_the_1st_2nd_4th_8th_packet_within_three_times_the_bytes_received() {
        let mut c = ClosingPackets::default();
        let now = Instant::now();
        c.insert(&cids(&[1, 2]), vec![vec![0xaa; 100]], Some(now + Duration::from_secs(3)), now);
        let answered: Vec<bool> = (0..9).map(|_| c.answer(&[1; 8], 50, now).is_some()).collect();
        assert_eq!(answered, [true, true, false, true, false, false, false, true, false]);
        // Through its other ID the same connection, the same count.
        assert!(c.answer(&[2; 8], 50, now).is_none());
        // Small packets: 100 bytes back for the first 30 would be over
        // three times; after the second (60 received) it is not.
        c.insert(&cids(&[3]), vec![vec![0xbb; 100]], None, now);
        assert!(c.answer(&[3; 8], 30, now).is_none());
        assert!(c.answer(&[3; 8], 30, now).is_some());
        // Two closing datagrams (an Initial one, a Handshake one) go
        // together, within the same budget.
        c.insert(&cids(&[4]), vec![vec![0xcc; 60], vec![0xdd; 50]], None, now);
        assert!(c.answer(&[4; 8], 30, now).is_none(), "110 bytes back for 30 is over three times");
        assert_eq!(c.answer(&[4; 8], 30, now).map(<[Vec<u8>]>::len), Some(2));
    }

    #[test]
    fn forgets_after_its_time_and_past_the_cap() {
        let mut c = ClosingPackets::default();
        let now = Instant::now();
        c.insert(&cids(&[1]), vec![vec![0; 10]], Some(now), now);
        assert!(c.answer(&[1; 8], 1200, now + Duration::from_millis(2999)).is_some(), "kept at least 3 s");
        assert!(c.answer(&[1; 8], 1200, now + Duration::from_secs(3)).is_none());
        c.expire(now + Duration::from_secs(3));
        assert!(!c.knows(&[1; 8]));
        for i in 0..MAX_CLOSING + 5 {
            c.insert(&[(i as u32).to_be_bytes().to_vec()], vec![vec![0; 10]], Some(now + Duration::from_secs(60)), now);
        }
        assert_eq!(c.len(), MAX_CLOSING);
        assert!(!c.knows(&0u32.to_be_bytes()), "the oldest went first");
        assert!(c.knows(&((MAX_CLOSING + 4) as u32).to_be_bytes()));
    }
}
