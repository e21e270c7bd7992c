//! Experiment: can `quiche::h3` (quiche =0.30.0) hand WebTransport streams to
//! the application?
//!
//! A `quiche::h3::Connection` server (extended CONNECT + datagrams enabled)
//! and a raw `quiche::Connection` client talk through memory (no sockets).
//! The client writes its own control stream + SETTINGS and an extended
//! CONNECT (QPACK-encoded with the pub `quiche::h3::qpack::Encoder`) opening
//! WebTransport session 0, then WebTransport streams:
//!   uni  = varint 0x54, session-id varint, payload
//!   bidi = varint 0x41, session-id varint, payload
//! and the example prints every event / error the server's `poll()` yields.
//! Three fresh connections are used because some cases close the connection.
//!
//! Only quiche and std are used. Run (from the package root):
//!   cargo run --release --example quiche_h3_wt_probe [cert.pem key.pem]
//! Defaults: <package>/certs/demo-cert.pem and <package>/certs/demo-key.pem.

use std::net::SocketAddr;

type Conn = quiche::Connection;

const SESSION: u64 = 0; // WebTransport session id = stream id of the CONNECT

fn varint(v: u64, out: &mut Vec<u8>) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16383 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        16384..=1_073_741_823 => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

fn wt_stream(signal: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    varint(signal, &mut v);
    varint(SESSION, &mut v);
    v.extend_from_slice(payload);
    v
}

/// Moves packets both ways until neither side has anything to send.
fn pump(client: &mut Conn, server: &mut Conn, caddr: SocketAddr, saddr: SocketAddr) {
    let mut buf = [0u8; 65535];
    loop {
        let mut moved = false;
        while let Ok((n, _)) = client.send(&mut buf) {
            server.recv(&mut buf[..n], quiche::RecvInfo { from: caddr, to: saddr }).ok();
            moved = true;
        }
        while let Ok((n, _)) = server.send(&mut buf) {
            client.recv(&mut buf[..n], quiche::RecvInfo { from: saddr, to: caddr }).ok();
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

struct Pair {
    client: Conn,
    server: Conn,
    h3: quiche::h3::Connection,
    caddr: SocketAddr,
    saddr: SocketAddr,
}

impl Pair {
    fn pump(&mut self) {
        pump(&mut self.client, &mut self.server, self.caddr, self.saddr);
    }

    fn send(&mut self, stream: u64, data: &[u8], fin: bool) {
        println!(
            "   client stream_send(stream {stream}, {:02x?}, fin={fin}) -> {:?}",
            data,
            self.client.stream_send(stream, data, fin)
        );
        self.pump();
    }

    /// Calls `poll()` until Done or an error, printing everything.
    fn poll_all(&mut self, step: &str) {
        println!("-- {step}");
        let mut seen = 0;
        loop {
            match self.h3.poll(&mut self.server) {
                Ok((id, ev)) => {
                    seen += 1;
                    println!("   poll -> stream {id}: {ev:?}");
                    if let quiche::h3::Event::Data = ev {
                        let mut buf = [0u8; 256];
                        while let Ok(n) = self.h3.recv_body(&mut self.server, id, &mut buf) {
                            println!("   recv_body stream {id}: {:?}", String::from_utf8_lossy(&buf[..n]));
                        }
                    }
                }
                Err(quiche::h3::Error::Done) => break,
                Err(e) => {
                    seen += 1;
                    println!("   poll -> Err({e:?})");
                    break;
                }
            }
        }
        if seen == 0 {
            println!("   poll -> Done immediately (no event)");
        }
        self.pump();
    }

    fn report_close(&self) {
        let le = self.server.local_error().map(|e| {
            format!("error_code=0x{:x} is_app={} reason={:?}", e.error_code, e.is_app, String::from_utf8_lossy(&e.reason))
        });
        println!("   server closing/closed={} local_error={:?}", self.server.is_closed() || self.server.is_draining(), le);
    }
}

fn setup(cert: &str, key: &str, label: &str) -> Pair {
    println!("==== connection {label}");
    let caddr: SocketAddr = "127.0.0.1:1111".parse().unwrap();
    let saddr: SocketAddr = "127.0.0.1:2222".parse().unwrap();
    let mut scfg = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    scfg.load_cert_chain_from_pem_file(cert).expect("load cert");
    scfg.load_priv_key_from_pem_file(key).expect("load key");
    let mut ccfg = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    ccfg.verify_peer(false);
    for c in [&mut scfg, &mut ccfg] {
        c.set_application_protos(&[b"h3"]).unwrap();
        c.set_initial_max_data(1 << 20);
        c.set_initial_max_stream_data_bidi_local(1 << 16);
        c.set_initial_max_stream_data_bidi_remote(1 << 16);
        c.set_initial_max_stream_data_uni(1 << 16);
        c.set_initial_max_streams_bidi(16);
        c.set_initial_max_streams_uni(16);
        c.enable_dgram(true, 16, 16);
    }
    let scid = quiche::ConnectionId::from_ref(&[1; 16]);
    let ccid = quiche::ConnectionId::from_ref(&[2; 16]);
    let mut client = quiche::connect(Some("localhost"), &ccid, caddr, saddr, &mut ccfg).unwrap();
    let mut server = quiche::accept(&scid, None, saddr, caddr, &mut scfg).unwrap();
    let mut h3cfg = quiche::h3::Config::new().unwrap();
    h3cfg.enable_extended_connect(true);
    pump(&mut client, &mut server, caddr, saddr);
    assert!(client.is_established() && server.is_established(), "handshake failed");
    let h3 = quiche::h3::Connection::with_transport(&mut server, &h3cfg).unwrap();
    let mut pair = Pair { client, server, h3, caddr, saddr };
    pair.pump();

    // Client control stream (uni stream 2): type 0x00, SETTINGS
    // { ENABLE_CONNECT_PROTOCOL(0x08)=1, H3_DATAGRAM(0x33)=1 }.
    let settings = [0x08, 0x01, 0x33, 0x01];
    let mut control = vec![0x00, 0x04];
    varint(settings.len() as u64, &mut control);
    control.extend_from_slice(&settings);
    pair.client.stream_send(2, &control, false).unwrap();

    // Bidi stream 0: extended CONNECT opening WebTransport session 0.
    let headers = [
        quiche::h3::Header::new(b":method", b"CONNECT"),
        quiche::h3::Header::new(b":protocol", b"webtransport"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", b"localhost"),
        quiche::h3::Header::new(b":path", b"/wt"),
    ];
    let mut block = vec![0u8; 256];
    let n = quiche::h3::qpack::Encoder::new().encode(&headers, &mut block).unwrap();
    let mut connect = vec![0x01];
    varint(n as u64, &mut connect);
    connect.extend_from_slice(&block[..n]);
    pair.client.stream_send(0, &connect, false).unwrap();
    pair.pump();
    pair.poll_all("control stream 2 + extended CONNECT on stream 0");
    println!(
        "   extended_connect_enabled_by_peer={} dgram_enabled_by_peer={}",
        pair.h3.extended_connect_enabled_by_peer(),
        pair.h3.dgram_enabled_by_peer(&pair.server)
    );
    pair
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cert = args.get(1).cloned().unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/certs/demo-cert.pem").into());
    let key = args.get(2).cloned().unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/certs/demo-key.pem").into());

    // ---- Connection A: cases that leave the connection open.
    let mut p = setup(&cert, &key, "A");

    // (a) WT uni stream 6 (0x54, session 0, payload, FIN).
    p.send(6, &wt_stream(0x54, b"uni-payload"), true);
    p.poll_all("(a1) WT uni stream 6: 0x54 + sid + payload + FIN");

    // (a) WT uni stream 10 without FIN; afterwards try to send more.
    p.send(10, &wt_stream(0x54, b"uni-part-1"), false);
    p.poll_all("(a2) WT uni stream 10: 0x54 + sid + payload, no FIN");
    println!("   client: more data on stream 10 after the server polled:");
    p.send(10, b"uni-part-2", false);
    p.poll_all("(a2) after second write on stream 10");

    // (b) WT bidi stream 4 (0x41, session 0, text payload, FIN).
    p.send(4, &wt_stream(0x41, b"hello over a WT bidi stream"), true);
    p.poll_all("(b1) WT bidi stream 4: 0x41 + sid + text payload + FIN");

    // (b) WT bidi stream 8 without FIN.
    p.send(8, &wt_stream(0x41, b"hello, no fin"), false);
    p.poll_all("(b2) WT bidi stream 8: 0x41 + sid + text payload, no FIN");

    // Claiming: the only way around poll() is to consume the stream on the
    // quiche::Connection before poll() sees it (no peek exists).
    p.send(14, &wt_stream(0x54, b"claimed-uni"), true);
    println!("-- (c) app reads uni stream 14 with quiche::Connection::stream_recv BEFORE poll()");
    println!("   server.readable() = {:?}", p.server.readable().collect::<Vec<_>>());
    println!("   server.stream_readable_len(14, 1024) = {}", p.server.stream_readable_len(14, 1024));
    let mut buf = [0u8; 256];
    match p.server.stream_recv(14, &mut buf) {
        Ok((n, fin)) => println!("   stream_recv(14) -> {n} bytes {:02x?} fin={fin} (consumed)", &buf[..n]),
        Err(e) => println!("   stream_recv(14) -> Err({e:?})"),
    }
    p.poll_all("(c) poll() after the app consumed stream 14");
    p.report_close();

    // ---- Connection B: WT bidi whose payload starts with byte 0x00.
    let mut p = setup(&cert, &key, "B");
    p.send(4, &wt_stream(0x41, &[0x00, 0x03, 0xaa, 0xbb, 0xcc]), true);
    p.poll_all("(b3) WT bidi stream 4: 0x41 + sid + payload [00 03 aa bb cc] + FIN");
    p.report_close();

    // ---- Connection C: WT bidi whose payload starts with byte 0x01.
    let mut p = setup(&cert, &key, "C");
    p.send(4, &wt_stream(0x41, &[0x01, 0x03, 0xff, 0xff, 0xff]), true);
    p.poll_all("(b4) WT bidi stream 4: 0x41 + sid + payload [01 03 ff ff ff] + FIN");
    p.report_close();
}
