//! The whole per-connection HTTP/3 layer (native/src/h3/connection.rs):
//! stream classification (`StreamState`), control and QPACK streams,
//! request streams, WebTransport streams and datagrams, responses and
//! resets, driven through a real quiche connection pair in memory.
//!
//! Input: one byte of options (body mode, WebTransport, whether the client
//! first sends a valid control stream and SETTINGS), then operations of
//! `op, len, data[len]`; the client writes raw bytes on the stream the
//! operation names, and after each operation packets are exchanged and the
//! server's `H3Connection::process` runs, exactly as the I/O loop does.
//! Checks: no panic, and the connection's event batch stays well formed.
#![no_main]

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;

use h3core::boundary::events::EventBatch;
use h3core::config::Options;
use h3core::counters::Counters;
use h3core::h3::connection::H3Connection;
use h3core::h3::settings::LocalSettings;
use libfuzzer_sys::fuzz_target;


const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs");

fn options(streamed: bool, webtransport: bool) -> Options {
    Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_path: format!("{CERTS}/demo-cert.pem"),
        key_path: format!("{CERTS}/demo-key.pem"),
        streamed_bodies: streamed,
        body_window: 1024,
        body_credit: 2048,
        idle_timeout_ms: 30_000,
        max_connections: 1,
        max_streams_per_connection: 16,
        max_field_section_size: 2048,
        stream_window: 64 * 1024,
        panic_on_path: None,
        webtransport,
        ..Options::default()
    }
}

fn client_config() -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"h3"]).unwrap();
    c.verify_peer(false);
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(1 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 18);
    c.set_initial_max_stream_data_bidi_remote(1 << 18);
    c.set_initial_max_stream_data_uni(1 << 18);
    c.set_initial_max_streams_bidi(64);
    c.set_initial_max_streams_uni(64);
    c.enable_dgram(true, 64, 64);
    c
}

thread_local! {
    // Building a quiche::Config loads the PEM files; four variants suffice.
    static SERVER_CONFIGS: RefCell<Vec<quiche::Config>> = RefCell::new(
        (0..4).map(|i| options(i & 1 != 0, i & 2 != 0).quiche_config().unwrap()).collect()
    );
    static CLIENT_CONFIG: RefCell<quiche::Config> = RefCell::new(client_config());
}

struct Pair {
    client: quiche::Connection,
    server: quiche::Connection,
    h3: H3Connection,
    events: EventBatch,
    scratch: Vec<u8>,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    server_closed_by_h3: bool,
}

impl Pair {
    /// Moves packets both ways until neither side has anything to send,
    /// running the server's HTTP/3 layer after every delivery.
    fn exchange(&mut self) {
        let mut buf = [0u8; 1500];
        for _ in 0..64 {
            let mut moved = false;
            while let Ok((n, info)) = self.client.send(&mut buf) {
                moved = true;
                let _ = self.server.recv(&mut buf[..n], quiche::RecvInfo { from: info.from, to: info.to });
            }
            if !self.server.is_closed() && !self.server.is_draining() && !self.server_closed_by_h3 {
                let outcome = self.h3.process(&mut self.server, &mut self.events, &mut self.scratch);
                if let Some(e) = outcome.close {
                    self.server_closed_by_h3 = true;
                    let _ = self.server.close(true, e.code, e.reason.as_bytes());
                }
            }
            while let Ok((n, info)) = self.server.send(&mut buf) {
                moved = true;
                let _ = self.client.recv(&mut buf[..n], quiche::RecvInfo { from: info.from, to: info.to });
            }
            // Drain what the server sent so the client keeps granting credit.
            for id in self.client.readable() {
                while let Ok((_, fin)) = self.client.stream_recv(id, &mut buf) {
                    if fin {
                        break;
                    }
                }
            }
            while self.client.dgram_recv(&mut buf).is_ok() {}
            if !moved {
                break;
            }
        }
        if self.events.len_bytes() > 1 << 20 {
            // The I/O loop hands each batch to JavaScript every turn.
            let _ = self.events.take(1);
        }
    }
}

fn setup(flags: u8) -> Option<Pair> {
    let client_addr: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let streamed = flags & 1 != 0;
    let webtransport = flags & 2 != 0;
    let scid = [0xc1u8; quiche::MAX_CONN_ID_LEN];
    let sscid = [0x5eu8; quiche::MAX_CONN_ID_LEN];
    let client = CLIENT_CONFIG.with(|c| {
        quiche::connect(Some("localhost"), &quiche::ConnectionId::from_ref(&scid), client_addr, server_addr, &mut c.borrow_mut())
    })
    .ok()?;
    let server = SERVER_CONFIGS.with(|c| {
        let idx = (streamed as usize) | ((webtransport as usize) << 1);
        quiche::accept(&quiche::ConnectionId::from_ref(&sscid), None, server_addr, client_addr, &mut c.borrow_mut()[idx])
    })
    .ok()?;
    let opts = options(streamed, webtransport);
    let local = LocalSettings {
        max_field_section_size: opts.max_field_section_size as u64,
        webtransport,
        max_webtransport_sessions: h3core::h3::webtransport::SESSIONS_CAP,
    };
    let h3 = H3Connection::new(1, opts.h3(), local, Arc::new(Counters::default()));
    let mut pair = Pair {
        client,
        server,
        h3,
        events: EventBatch::default(),
        scratch: vec![0; 65536],
        client_addr,
        server_addr,
        server_closed_by_h3: false,
    };
    pair.exchange();
    if !pair.client.is_established() {
        return None;
    }
    let _ = (pair.client_addr, pair.server_addr);
    Some(pair)
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
                // JavaScript acknowledging batches (frees streamed-body credit).
                pair.h3.set_batches(u64::from(op >> 6) + 2, u64::from(op >> 6) + 1);
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
    pair.h3.on_connection_closed(&mut pair.events);
    if !pair.events.is_empty() {
        let batch = pair.events.take(1);
        assert!(batch.len() >= 8 + 5, "an event batch holds at least one event header");
    }
});
