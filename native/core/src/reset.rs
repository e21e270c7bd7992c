//! Stateless reset (RFC 9000 section 10.3): the token for each connection
//! ID the server issues, derived from a static key so that a server
//! restarted with the same key can still reset connections it no longer
//! knows; the reset packet itself; and the rate limit on sending them.

use std::sync::OnceLock;
use std::time::Instant;

/// A reset key: 32 bytes, from options or generated once per process.
pub type ResetKey = [u8; 32];

/// Shortest stateless reset: 5 unpredictable bytes (38 random bits after
/// the two fixed bits) and the 16-byte token (RFC 9000 section 10.3).
pub const MIN_RESET_LEN: usize = 21;
/// Triggers up to this size get a reset one byte shorter (section 10.3);
/// larger ones get a reset of this size plus a little random padding.
const SHORT_TRIGGER: usize = 43;

/// Resets sent per second at most, and the burst allowed.
pub const RESETS_PER_SECOND: f64 = 200.0;

/// The process's key when options give none: random, generated once, so
/// every server in this process derives the same tokens.
pub fn process_key() -> ResetKey {
    static KEY: OnceLock<ResetKey> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).expect("random reset key");
        k
    })
}

/// HMAC-SHA256(key, cid) truncated to 16 bytes, with BoringSSL's HMAC
/// (through the `boring` crate quiche already builds). HMAC fails only if
/// BoringSSL cannot allocate; the token is then all zeros, which no peer
/// will match, so at worst a reset goes unrecognised.
pub fn token(key: &ResetKey, cid: &[u8]) -> [u8; 16] {
    let mut t = [0u8; 16];
    if let Ok(mac) = boring::hash::hmac_sha256(key, cid) {
        t.copy_from_slice(&mac[..16]);
    }
    t
}

/// The length of the reset answering a `trigger`-byte packet, or None when
/// it is too small to answer: a reset must be shorter than its trigger (no
/// reset loops, section 10.3.3) and at least `MIN_RESET_LEN` bytes.
pub fn reset_len(trigger: usize, random: u8) -> Option<usize> {
    if trigger <= MIN_RESET_LEN {
        return None;
    }
    let len = if trigger <= SHORT_TRIGGER { trigger - 1 } else { (SHORT_TRIGGER + (random as usize % 32)).min(trigger - 1) };
    Some(len)
}

/// Writes a stateless reset answering a `trigger`-byte packet into `out`:
/// random bytes with the first two bits 01 (a short header), ending with
/// `token`. Returns its length, or None if the trigger is too small.
pub fn write_reset(out: &mut [u8], trigger: usize, token: &[u8; 16]) -> Option<usize> {
    let mut random = [0u8; 1];
    getrandom::fill(&mut random).ok()?;
    let len = reset_len(trigger, random[0])?.min(out.len());
    if len < MIN_RESET_LEN {
        return None;
    }
    getrandom::fill(&mut out[..len - 16]).ok()?;
    out[0] = 0x40 | (out[0] & 0x3f);
    out[len - 16..len].copy_from_slice(token);
    Some(len)
}

/// A token bucket: `RESETS_PER_SECOND` refill, as many in a burst.
pub struct RateLimit {
    tokens: f64,
    last: Instant,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit { tokens: RESETS_PER_SECOND, last: Instant::now() }
    }
}

impl RateLimit {
    pub fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * RESETS_PER_SECOND).min(RESETS_PER_SECOND);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_and_cid_give_the_same_token() {
        let key = [7u8; 32];
        let cid = [1u8; 20];
        assert_eq!(token(&key, &cid), token(&key, &cid));
        assert_ne!(token(&key, &cid), token(&[8u8; 32], &cid));
        assert_ne!(token(&key, &cid), token(&key, &[2u8; 20]));
        assert_eq!(process_key(), process_key());
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2_prefix() {
        // RFC 4231 test case 2 with the key zero-padded to 32 bytes (HMAC
        // pads a short key with zeros, so the MAC is the same).
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let t = token(&key, b"what do ya want for nothing?");
        assert_eq!(t, [0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7]);
    }

    #[test]
    fn a_reset_is_shorter_than_its_trigger_at_least_21_bytes_and_ends_with_the_token() {
        let tok = [0xabu8; 16];
        for trigger in 22..1500 {
            let mut out = [0u8; 1500];
            let len = write_reset(&mut out, trigger, &tok).unwrap();
            assert!(len < trigger, "{len} for {trigger}");
            assert!(len >= MIN_RESET_LEN);
            assert_eq!(out[0] & 0xc0, 0x40, "short header form, fixed bit set");
            assert_eq!(&out[len - 16..len], &tok);
            if trigger <= 43 {
                assert_eq!(len, trigger - 1);
            }
        }
    }

    #[test]
    fn a_packet_too_small_gets_no_reset() {
        let mut out = [0u8; 64];
        for trigger in 0..=MIN_RESET_LEN {
            assert_eq!(write_reset(&mut out, trigger, &[1; 16]), None, "{trigger}");
        }
    }

    #[test]
    fn the_rate_limit_allows_a_burst_then_refills() {
        let mut r = RateLimit::default();
        let t0 = r.last;
        let sent = (0..1000).filter(|_| r.take(t0)).count();
        assert_eq!(sent, RESETS_PER_SECOND as usize);
        assert!(!r.take(t0));
        assert!(r.take(t0 + std::time::Duration::from_millis(10)));
    }
}
