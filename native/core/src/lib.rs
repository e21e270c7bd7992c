//! h3core: the HTTP/3 + WebTransport protocol core of h3-node, on quiche,
//! with no knowledge of Node.js.
//!
//! Layers, bottom up: `server` (the UDP I/O loop on mio: socket, connection
//! table, deadlines), `h3` (HTTP/3 and WebTransport on quiche streams, one
//! `h3::connection::H3Connection` per connection), and `app`, the one
//! interface both report to: an `Application`, a generic parameter (static
//! dispatch). The napi-rs addon (native/addon/) implements it for
//! JavaScript. `config::Options::default()` holds every default; `testing`
//! (tests, cargo feature `test-pair`) is an in-memory client/server pair.
//!
//! quiche's connection methods are generic, so each crate that calls them
//! instantiates its own copies: the few non-generic functions here that call
//! them are `#[inline]`, which leaves the copies to the crate instantiating
//! the loop (the addon) and keeps the shipped addon from growing.

#![deny(clippy::all)]

pub mod app;
pub mod bytes;
pub mod certificates;
pub mod config;
pub mod connection_ids;
pub mod counters;
pub mod error;
pub mod h3;
pub mod id_map;
pub mod ids;
pub mod keylog;
pub mod panic_report;
pub mod qlog;
pub mod reset;
pub mod retry;
pub mod server;
pub mod steering;
#[cfg(any(test, feature = "test-pair"))]
pub mod testing;
pub mod tickets;
pub mod tls;
pub mod udp_bind;
pub mod varint;
pub mod workers;
