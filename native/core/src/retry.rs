//! Address validation with Retry (RFC 9000 section 8.1.2): before it keeps
//! any state for a client, the server may answer its first Initial with a
//! Retry carrying a token; a client that really is at its source address
//! echoes the token in a second Initial, and only then is a connection
//! created. The token is the server's own: it needs no table, only a key.
//!
//! ```text
//! token = expiry (8 bytes, seconds since the Unix epoch, big-endian)
//!       | original destination connection ID length (1) | that ID
//!       | HMAC-SHA256(key, address | port | expiry | ID) truncated to 16
//! ```
//!
//! The HMAC binds the token to the client's address and port, to the
//! original destination ID (which quiche must echo in its transport
//! parameters, RFC 9000 section 7.3) and to the expiry; BoringSSL computes
//! it, as for stateless reset tokens (reset.rs).

use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A token key: 32 bytes, from options or random once per process.
pub type RetryKey = [u8; 32];

/// How long a Retry token is good for: long enough for a client across the
/// world to answer, short enough that a captured one is soon useless.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(10);

const MAC_LEN: usize = 16;

/// When the server answers first Initials with Retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryMode {
    /// Never: every Initial creates a connection at once.
    Off,
    /// Always: no state before the client proved its address.
    On,
    /// Once this many handshakes are under way at once (a flood of spoofed
    /// Initials); below it, clients save the round trip.
    Auto { half_open: usize },
}

/// The default threshold of `RetryMode::Auto`.
pub const AUTO_THRESHOLD: usize = 128;

impl RetryMode {
    /// Whether a first Initial without a token gets a Retry now.
    pub fn applies(self, half_open: usize) -> bool {
        match self {
            RetryMode::Off => false,
            RetryMode::On => true,
            RetryMode::Auto { half_open: limit } => half_open >= limit,
        }
    }
}

/// The process's key when options give none.
pub fn process_key() -> RetryKey {
    static KEY: OnceLock<RetryKey> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).expect("random retry token key");
        k
    })
}

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn mac(key: &RetryKey, peer: SocketAddr, expiry: u64, odcid: &[u8]) -> Option<[u8; MAC_LEN]> {
    let mut input = Vec::with_capacity(16 + 2 + 8 + odcid.len());
    match peer.ip() {
        IpAddr::V4(a) => input.extend_from_slice(&a.to_ipv6_mapped().octets()),
        IpAddr::V6(a) => input.extend_from_slice(&a.octets()),
    }
    input.extend_from_slice(&peer.port().to_be_bytes());
    input.extend_from_slice(&expiry.to_be_bytes());
    input.extend_from_slice(odcid);
    let full = boring::hash::hmac_sha256(key, &input).ok()?;
    let mut out = [0u8; MAC_LEN];
    out.copy_from_slice(&full[..MAC_LEN]);
    Some(out)
}

/// A token for a client at `peer` whose first Initial went to `odcid`.
pub fn mint(key: &RetryKey, peer: SocketAddr, odcid: &[u8], now: SystemTime) -> Option<Vec<u8>> {
    let expiry = unix_seconds(now + TOKEN_LIFETIME);
    let mut token = Vec::with_capacity(8 + 1 + odcid.len() + MAC_LEN);
    token.extend_from_slice(&expiry.to_be_bytes());
    token.push(u8::try_from(odcid.len()).ok()?);
    token.extend_from_slice(odcid);
    token.extend_from_slice(&mac(key, peer, expiry, odcid)?);
    Some(token)
}

/// The original destination ID a valid token carries: minted by this key,
/// for this address and port, not expired. None for anything else.
pub fn validate(key: &RetryKey, peer: SocketAddr, token: &[u8], now: SystemTime) -> Option<Vec<u8>> {
    let expiry = u64::from_be_bytes(token.get(..8)?.try_into().ok()?);
    let len = usize::from(*token.get(8)?);
    let odcid = token.get(9..9 + len)?;
    let tag = token.get(9 + len..)?;
    if tag.len() != MAC_LEN || len > quiche::MAX_CONN_ID_LEN {
        return None;
    }
    let expected = mac(key, peer, expiry, odcid)?;
    // Constant time: the comparison must not tell an attacker how many
    // leading bytes of a forged tag were right.
    if !boring::memcmp::eq(&expected, tag) || unix_seconds(now) > expiry {
        return None;
    }
    Some(odcid.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: RetryKey = [7; 32];

    fn peer() -> SocketAddr {
        "192.0.2.7:4433".parse().unwrap()
    }

    #[test]
    fn a_token_returns_its_original_destination_id_to_the_same_address_in_time() {
        let now = SystemTime::now();
        let odcid = [0xaa; 16];
        let token = mint(&KEY, peer(), &odcid, now).unwrap();
        assert_eq!(validate(&KEY, peer(), &token, now), Some(odcid.to_vec()));
        assert_eq!(validate(&KEY, peer(), &token, now + Duration::from_secs(9)), Some(odcid.to_vec()));
    }

    #[test]
    fn a_token_from_another_address_port_key_or_time_or_altered_is_refused() {
        let now = SystemTime::now();
        let token = mint(&KEY, peer(), &[1, 2, 3, 4, 5, 6, 7, 8], now).unwrap();
        assert_eq!(validate(&KEY, "192.0.2.8:4433".parse().unwrap(), &token, now), None, "other address");
        assert_eq!(validate(&KEY, "192.0.2.7:4434".parse().unwrap(), &token, now), None, "other port");
        assert_eq!(validate(&[8; 32], peer(), &token, now), None, "other key");
        assert_eq!(validate(&KEY, peer(), &token, now + TOKEN_LIFETIME + Duration::from_secs(2)), None, "expired");
        for i in 0..token.len() {
            let mut t = token.clone();
            t[i] ^= 0x01;
            assert_eq!(validate(&KEY, peer(), &t, now), None, "byte {i} altered");
        }
        assert_eq!(validate(&KEY, peer(), &token[..token.len() - 1], now), None, "truncated");
        assert_eq!(validate(&KEY, peer(), &[], now), None, "empty");
    }

    #[test]
    fn auto_mode_retries_only_from_its_threshold() {
        let auto = RetryMode::Auto { half_open: 3 };
        assert!(!auto.applies(2));
        assert!(auto.applies(3));
        assert!(RetryMode::On.applies(0));
        assert!(!RetryMode::Off.applies(1_000_000));
    }
}
