//! Experiment: can `quiche::h3` hand WebTransport streams to an application?
//!
//! A `quiche::h3::Connection` server and a raw `quiche::Connection` client
//! talk through memory (no sockets). The client opens a WebTransport session
//! with extended CONNECT, then a WebTransport unidirectional stream (type
//! 0x54) and a bidirectional stream (signal 0x41), and the example prints
//! every event the server's `poll()` yields. The outcome is recorded in
//! docs/design.md.
//!
//! Run: cargo run --release --example quiche_h3_wt_probe [cert.pem key.pem]

use std::net::SocketAddr;

fn varint(v: u64, out: &mut Vec<u8>) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16383 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        _ => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
    }
}

/// Moves packets both ways until neither side has anything to send.
fn pump(client: &mut quiche::Connection, server: &mut quiche::Connection, caddr: SocketAddr, saddr: SocketAddr) {
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cert = args.get(1).map_or("certs/demo-cert.pem", |s| s.as_str());
    let key = args.get(2).map_or("certs/demo-key.pem", |s| s.as_str());
    let (caddr, saddr): (SocketAddr, SocketAddr) = ("127.0.0.1:1111".parse().unwrap(), "127.0.0.1:2222".parse().unwrap());

    let mut scfg = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    scfg.load_cert_chain_from_pem_file(cert).unwrap();
    scfg.load_priv_key_from_pem_file(key).unwrap();
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
    pump(&mut client, &mut server, caddr, saddr);
    assert!(client.is_established() && server.is_established(), "handshake failed");

    let mut h3cfg = quiche::h3::Config::new().unwrap();
    h3cfg.enable_extended_connect(true);
    let mut h3 = quiche::h3::Connection::with_transport(&mut server, &h3cfg).unwrap();

    // Client control stream: type 0x00, SETTINGS with ENABLE_CONNECT_PROTOCOL
    // and H3_DATAGRAM.
    let mut control = vec![0x00];
    let settings = [0x08, 0x01, 0x33, 0x01];
    control.push(0x04);
    varint(settings.len() as u64, &mut control);
    control.extend_from_slice(&settings);
    client.stream_send(2, &control, false).unwrap();

    // Stream 0: extended CONNECT opening WebTransport session 0.
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
    client.stream_send(0, &connect, false).unwrap();
    pump(&mut client, &mut server, caddr, saddr);
    poll_all(&mut h3, &mut server, "after CONNECT");

    // Stream 6: WebTransport unidirectional stream for session 0.
    let mut uni = vec![0x40, 0x54, 0x00];
    uni.extend_from_slice(b"hello over a WT uni stream");
    client.stream_send(6, &uni, true).unwrap();
    pump(&mut client, &mut server, caddr, saddr);
    poll_all(&mut h3, &mut server, "after WT uni stream (type 0x54) on stream 6");

    // Stream 4: WebTransport bidirectional stream for session 0.
    let mut bidi = vec![0x40, 0x41, 0x00];
    bidi.extend_from_slice(b"hello over a WT bidi stream");
    client.stream_send(4, &bidi, true).unwrap();
    pump(&mut client, &mut server, caddr, saddr);
    poll_all(&mut h3, &mut server, "after WT bidi stream (signal 0x41) on stream 4");

    println!(
        "server connection closed: {}, local error: {:?}",
        server.is_closed() || server.is_draining(),
        server.local_error().map(|e| (format!("0x{:x}", e.error_code), String::from_utf8_lossy(&e.reason).into_owned()))
    );
}

fn poll_all(h3: &mut quiche::h3::Connection, server: &mut quiche::Connection, step: &str) {
    println!("-- {step}");
    let mut seen = 0;
    loop {
        match h3.poll(server) {
            Ok((id, ev)) => {
                seen += 1;
                println!("   stream {id}: {ev:?}");
                if let quiche::h3::Event::Data = ev {
                    let mut buf = [0u8; 256];
                    while let Ok(n) = h3.recv_body(server, id, &mut buf) {
                        println!("   stream {id}: body {:?}", String::from_utf8_lossy(&buf[..n]));
                    }
                }
            }
            Err(quiche::h3::Error::Done) => break,
            Err(e) => {
                println!("   poll error: {e:?}");
                break;
            }
        }
    }
    if seen == 0 {
        println!("   (no event)");
    }
}
