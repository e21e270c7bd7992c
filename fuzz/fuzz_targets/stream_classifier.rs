//! The whole per-connection HTTP/3 layer (native/core/src/h3/connection.rs):
//! stream classification (`StreamState`), control and QPACK streams,
//! request streams, WebTransport streams and datagrams, responses and
//! resets, driven through a real quiche connection pair in memory
//! (`h3core::testing`, the pair the layer's unit tests use).
//!
//! Input: one byte of options (body mode, WebTransport, whether the client
//! first sends a valid control stream and SETTINGS), then operations of
//! `op, len, data[len]`; the client writes raw bytes on the stream the
//! operation names, and after each operation packets are exchanged and the
//! server's `H3Connection::process` runs, exactly as the I/O loop does.
//! Checks: no panic, and every report names a stream the client could open.
#![no_main]

use std::cell::RefCell;

use h3core::testing::{client_config, options, Pair, Report};
use libfuzzer_sys::fuzz_target;

thread_local! {
    // Building a quiche::Config loads the PEM files; four variants suffice.
    static SERVER_CONFIGS: RefCell<Vec<quiche::Config>> = RefCell::new(
        (0..4).map(|i| options(i & 1 != 0, i & 2 != 0).quiche_config(Default::default()).unwrap()).collect()
    );
    static CLIENT_CONFIG: RefCell<quiche::Config> = RefCell::new(client_config());
}

fn setup(flags: u8) -> Option<Pair> {
    let streamed = flags & 1 != 0;
    let webtransport = flags & 2 != 0;
    let idx = (streamed as usize) | ((webtransport as usize) << 1);
    let opts = options(streamed, webtransport);
    let mut pair = SERVER_CONFIGS.with(|s| {
        CLIENT_CONFIG.with(|c| Pair::new(&opts, &mut s.borrow_mut()[idx], &mut c.borrow_mut()))
    })?;
    // The fuzzer needs no record of what the client read, and a bounded one
    // of the reports.
    pair.record = false;
    pair.app.cap = 4096;
    Some(pair)
}

/// Streams the fuzzer's client can open: bidi 0..=28 and uni 2..=30.
fn plausible(stream: u64) -> bool {
    stream <= 30
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, mut rest)) = input.split_first() else { return };
    let Some(mut pair) = setup(flags) else { return };
    if flags & 4 != 0 {
        // A valid client preamble: control stream with SETTINGS (with the
        // datagram setting), QPACK encoder and decoder streams.
        let _ = pair.client.stream_send(2, &[0x00, 0x04, 0x04, 0x33, 0x01, 0x06, 0x40], false);
        let _ = pair.client.stream_send(6, &[0x02], false);
        let _ = pair.client.stream_send(10, &[0x03], false);
        pair.exchange();
    }
    while rest.len() >= 2 {
        let op = rest[0];
        let len = (rest[1] as usize).min(rest.len() - 2);
        let data = &rest[2..2 + len];
        rest = &rest[2 + len..];
        let slot = u64::from((op >> 3) & 7);
        let fin = op & 0x40 != 0;
        let bidi = 4 * slot;
        let uni = 2 + 4 * slot;
        match op & 7 {
            0 | 1 => {
                let _ = pair.client.stream_send(bidi, data, fin);
            }
            2 => {
                let _ = pair.client.stream_send(uni, data, fin);
            }
            3 => {
                let code = data.first().copied().map_or(0x10c, u64::from);
                let id = if fin { bidi } else { uni };
                let _ = pair.client.stream_shutdown(id, quiche::Shutdown::Write, code);
            }
            4 => {
                let _ = pair.client.dgram_send(data);
            }
            5 => {
                // JavaScript answering a request (ignored unless delivered).
                let fields: [(&[u8], &[u8]); 1] = [(b"content-type", b"text/plain")];
                pair.h3.respond(&mut pair.server, bidi, 200, &fields, data);
            }
            6 => {
                // JavaScript acknowledging batches and consuming body bytes
                // (frees streamed-body credit).
                pair.app.turn = u64::from(op >> 6) + 2;
                pair.app.settled_up_to = u64::from(op >> 6) + 1;
                pair.h3.act(&mut pair.server, bidi, h3core::app::Action::Consumed(u64::from(op) * 64));
            }
            _ => {
                let _ = pair.client.stream_shutdown(bidi, quiche::Shutdown::Read, 0x100);
            }
        }
        pair.exchange();
        if pair.server.is_closed() {
            break;
        }
    }
    pair.h3.on_connection_closed(&mut pair.app);
    for r in &pair.app.reports {
        let stream = match r {
            Report::Request { stream, .. } | Report::Body { stream, .. } | Report::Aborted { stream, .. } => *stream,
            Report::SessionStream { session, stream, .. } => (*session).max(*stream),
            Report::SessionOpen { session, .. } | Report::SessionClosed { session, .. } => *session,
            _ => 0,
        };
        assert!(plausible(stream), "report for a stream the client never opened: {r:?}");
    }
});
