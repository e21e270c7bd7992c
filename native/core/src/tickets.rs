//! TLS session tickets under rotating keys derived from one secret.
//!
//! quiche takes a single ticket key (SSL_CTX_set_tlsext_ticket_keys), which
//! never rotates; BoringSSL rotates only the key it makes itself, which
//! differs per process and per worker. So with a `ticketKey` (or a worker
//! group's random one) the server installs BoringSSL's ticket key callback
//! instead: the key of period `n = unix time / period` is derived from the
//! secret (HMAC-SHA256 of a label and `n`), new tickets are sealed under the
//! current period's key, and tickets of the previous and the next period are
//! still opened (the next one for a machine whose clock runs ahead), those
//! with a fresh ticket for the client. Every process given the same secret
//! and a clock within a period of the others derives the same keys, so
//! rotation needs no coordination between machines.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use boring::hash::MessageDigest;
use boring::hmac::HmacCtxRef;
use boring::ssl::{SslContextBuilder, TicketKeyCallbackResult};
use boring::symm::{Cipher, CipherCtxRef};

/// Default rotation period: 12 hours (a ticket lives 12 to 24 hours).
pub const DEFAULT_PERIOD_S: u64 = 12 * 3600;

/// One period's key: the name written in the ticket, the AES-128-CBC key
/// and the HMAC-SHA256 key (RFC 5077's layout, as BoringSSL uses it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PeriodKey {
    pub name: [u8; 16],
    aes: [u8; 16],
    hmac: [u8; 32],
}

fn derive(secret: &[u8; 48], label: &[u8], period: u64) -> Option<[u8; 32]> {
    let mut input = Vec::with_capacity(label.len() + 8);
    input.extend_from_slice(label);
    input.extend_from_slice(&period.to_be_bytes());
    boring::hash::hmac_sha256(secret, &input).ok()
}

/// The key of period `period` under `secret`.
pub fn period_key(secret: &[u8; 48], period: u64) -> Option<PeriodKey> {
    let name = derive(secret, b"h3-node ticket key name", period)?;
    let aes = derive(secret, b"h3-node ticket key aes", period)?;
    let hmac = derive(secret, b"h3-node ticket key hmac", period)?;
    let mut k = PeriodKey { name: [0; 16], aes: [0; 16], hmac };
    k.name.copy_from_slice(&name[..16]);
    k.aes.copy_from_slice(&aes[..16]);
    Some(k)
}

/// The period a moment falls in.
pub fn period_of(now: SystemTime, period_s: u64) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / period_s.max(1))
}

/// The keys accepted at period `now`: the current one first, then the
/// previous and the next.
pub fn keys_at(secret: &[u8; 48], now: u64) -> Option<[PeriodKey; 3]> {
    Some([period_key(secret, now)?, period_key(secret, now.saturating_sub(1))?, period_key(secret, now + 1)?])
}

/// Which of `keys` (from `keys_at`) a ticket named `name` was sealed
/// under, and whether it is the current one.
pub fn find<'k>(keys: &'k [PeriodKey; 3], name: &[u8; 16]) -> Option<(&'k PeriodKey, bool)> {
    keys.iter().position(|k| &k.name == name).map(|i| (&keys[i], i == 0))
}

/// Which period's key a ticket named `name` was sealed under, among the
/// ones still accepted at period `now`.
pub fn accepted(secret: &[u8; 48], now: u64, name: &[u8; 16]) -> Option<(PeriodKey, bool)> {
    let keys = keys_at(secret, now)?;
    find(&keys, name).map(|(k, current)| (k.clone(), current))
}

/// Installs the callback on a TLS context builder.
pub fn install(builder: &mut SslContextBuilder, secret: [u8; 48], period_s: u64) {
    // A period's keys are derived once (nine HMACs), not per ticket sealed
    // or opened. Only this server's I/O thread calls in, so the lock is
    // never contended.
    let ring: Mutex<Option<(u64, [PeriodKey; 3])>> = Mutex::new(None);
    let callback = move |_: &boring::ssl::SslRef,
                         name: &mut [u8; 16],
                         iv: &mut [u8; 16],
                         cipher: &mut CipherCtxRef,
                         hmac: &mut HmacCtxRef,
                         encrypt: bool| {
        let now = period_of(SystemTime::now(), period_s);
        let mut held = ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if held.as_ref().is_none_or(|(p, _)| *p != now) {
            *held = keys_at(&secret, now).map(|keys| (now, keys));
        }
        // Any failure means a full handshake, never an aborted one.
        let Some((_, keys)) = held.as_ref() else { return TicketKeyCallbackResult::Noop };
        if encrypt {
            let k = &keys[0];
            let sealed = boring::rand::rand_bytes(iv).is_ok()
                && cipher.init_encrypt(&Cipher::aes_128_cbc(), &k.aes, iv).is_ok()
                && hmac.init(&k.hmac, &MessageDigest::sha256()).is_ok();
            if !sealed {
                return TicketKeyCallbackResult::Noop;
            }
            name.copy_from_slice(&k.name);
            return TicketKeyCallbackResult::Success;
        }
        let Some((k, current)) = find(keys, name) else { return TicketKeyCallbackResult::Noop };
        if cipher.init_decrypt(&Cipher::aes_128_cbc(), &k.aes, iv).is_err()
            || hmac.init(&k.hmac, &MessageDigest::sha256()).is_err()
        {
            return TicketKeyCallbackResult::Noop;
        }
        if current {
            TicketKeyCallbackResult::Success
        } else {
            TicketKeyCallbackResult::DecryptSuccessRenew
        }
    };
    // SAFETY: the callback only uses the contexts BoringSSL hands it, for
    // the duration of the call, and never panics (failures are Noop).
    unsafe { builder.set_ticket_key_callback(callback) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_period_and_secret_and_repeat_for_the_same_ones() {
        let a = [1u8; 48];
        let b = [2u8; 48];
        assert_eq!(period_key(&a, 7), period_key(&a, 7));
        assert_ne!(period_key(&a, 7).unwrap().name, period_key(&a, 8).unwrap().name);
        assert_ne!(period_key(&a, 7).unwrap().name, period_key(&b, 7).unwrap().name);
    }

    #[test]
    fn a_ticket_is_accepted_in_its_period_and_the_neighbours_only() {
        let s = [9u8; 48];
        let name = period_key(&s, 100).unwrap().name;
        assert_eq!(accepted(&s, 100, &name).map(|(_, current)| current), Some(true));
        assert_eq!(accepted(&s, 101, &name).map(|(_, current)| current), Some(false), "the next period renews it");
        assert_eq!(accepted(&s, 99, &name).map(|(_, current)| current), Some(false), "a clock behind by a period");
        assert!(accepted(&s, 102, &name).is_none(), "two periods later it is refused");
        assert!(accepted(&[8u8; 48], 100, &name).is_none(), "another secret's ticket");
    }
}
