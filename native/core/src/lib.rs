//! h3core: the HTTP/3 + WebTransport protocol core of h3-node, on quiche,
//! with no knowledge of Node.js.
//!
//! Layers, bottom up: `server` (UDP I/O loop on mio, quiche connections),
//! `h3` (HTTP/3 framing and stream classification on quiche streams). The
//! napi-rs addon (native/addon/) exposes it to JavaScript.

#![deny(clippy::all)]

pub mod app;
pub mod config;
pub mod counters;
pub mod error;
pub mod h3;
pub mod ids;
pub mod keylog;
pub mod panic_report;
pub mod qlog;
pub mod server;
#[cfg(any(test, feature = "test-pair"))]
pub mod testing;
pub mod varint;
