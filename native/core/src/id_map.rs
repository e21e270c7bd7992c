//! Hash maps keyed by stream IDs and connection handles.
//!
//! std's HashMap hashes with SipHash-1-3, built to resist collision
//! flooding by keys an attacker picks. Under W1 through the native handler
//! (one connection, 20 streams) SipHash was ~3.5 % of the I/O thread's
//! samples, from the per-request lookups of the HTTP/3 layer's stream
//! tables and the connection table. These maps do not need it: a stream
//! map holds at most the streams QUIC lets the peer open at once (and the
//! server's own), and connection handles are the server's counter, so no
//! peer can make a chain longer than those limits. They use FxHash (the
//! `rustc-hash` crate: one multiply per word). Maps keyed by bytes a peer
//! chooses, such as connection IDs, keep std's SipHash.

pub type IdMap<K, V> = rustc_hash::FxHashMap<K, V>;
