//! The batched receive path on a real socket: datagrams sent from a plain
//! std socket, one `read_packets` turn of the server loop.

use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::time::Duration;

use super::*;
use crate::testing::{options, Recorder};

const DATAGRAM: usize = 1200;

/// An Initial of a version no one speaks (0x?a?a?a?a, RFC 9000 section 15)
/// with destination connection ID `id`: the server answers it with Version
/// Negotiation, whose source connection ID echoes `id`.
fn unsupported_initial(id: u64) -> Vec<u8> {
    let mut p = vec![0xc0];
    p.extend_from_slice(&0x1a2a_3a4a_u32.to_be_bytes());
    p.push(8);
    p.extend_from_slice(&id.to_be_bytes());
    p.push(8);
    p.extend_from_slice(&[0xee; 8]);
    p.push(0); // token length
    p.resize(DATAGRAM, 0);
    p
}

fn server() -> (Server<Recorder>, Arc<Counters>, SocketAddr) {
    let bound = Server::bind(options(false, false), Recorder::default()).unwrap();
    let counters = bound.shared.counters.clone();
    (bound.server, counters, bound.local)
}

#[test]
fn a_turn_reads_batches_of_datagrams_per_call_and_handles_each() {
    let (mut server, counters, local) = server();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = BTreeSet::new();
    for id in 0..40 {
        peer.send_to(&unsupported_initial(id), local).unwrap();
        sent.insert(id);
    }
    // A GSO run where the sender has GSO: with GRO it fills one buffer,
    // read in `stride` steps.
    let gso = quinn_udp::UdpSocketState::new((&peer).into()).unwrap();
    let segments = gso.max_gso_segments().min(8) as u64;
    if segments > 1 {
        let run: Vec<u8> = (100..100 + segments).flat_map(unsupported_initial).collect();
        let t = quinn_udp::Transmit { destination: local, ecn: None, contents: &run, segment_size: Some(DATAGRAM), src_ip: None };
        gso.try_send((&peer).into(), &t).unwrap();
        sent.extend(100..100 + segments);
    }
    let n = sent.len() as u64;

    server.read_packets();
    assert_eq!(Counters::get(&counters.udp_datagrams_received), n);
    assert_eq!(Counters::get(&counters.udp_bytes_received), n * DATAGRAM as u64);
    let calls = Counters::get(&counters.udp_recv_calls);
    // Full batches, then the call that finds the socket empty.
    assert!(calls <= n.div_ceil(RECV_SLOTS as u64) + 1, "{calls} receive calls for {n} datagrams");
    if RECV_SLOTS > 1 {
        assert!(calls < n / 4, "{calls} receive calls for {n} datagrams");
    }
    assert!(!server.socket.may_have_more, "the turn read until the socket was empty");

    // Each datagram was parsed where it lay: every ID comes back.
    assert_eq!(Counters::get(&counters.udp_send_calls), n);
    peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut answered = BTreeSet::new();
    let mut buf = [0u8; 1500];
    for _ in 0..n {
        let (len, _) = peer.recv_from(&mut buf).unwrap();
        let hdr = quiche::Header::from_slice(&mut buf[..len], quiche::MAX_CONN_ID_LEN).unwrap();
        assert_eq!(hdr.ty, quiche::Type::VersionNegotiation);
        answered.insert(u64::from_be_bytes(hdr.scid.as_ref().try_into().unwrap()));
    }
    assert_eq!(answered, sent);
}

#[test]
fn a_turn_stops_at_its_buffer_limit_and_the_next_reads_on() {
    let (mut server, counters, local) = server();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Short-header packets of no connection: counted, then dropped.
    let n = MAX_RECV_BUFFERS_PER_TURN + 20;
    for _ in 0..n {
        peer.send_to(&[0x40; 32], local).unwrap();
    }
    server.read_packets();
    assert_eq!(Counters::get(&counters.udp_datagrams_received), MAX_RECV_BUFFERS_PER_TURN as u64);
    assert!(server.socket.may_have_more, "stopped at the limit, not at an empty socket");
    server.read_packets();
    assert_eq!(Counters::get(&counters.udp_datagrams_received), n as u64);
    assert!(!server.socket.may_have_more);
}

#[test]
fn only_a_readable_event_or_the_limit_makes_a_turn_read() {
    let (mut server, counters, local) = server();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let calls = || Counters::get(&counters.udp_recv_calls);
    let mut events = Events::with_capacity(8);
    let mut turn_after_poll = |server: &mut Server<Recorder>| {
        server.poll.poll(&mut events, Some(Duration::from_millis(200))).unwrap();
        server.note_events(&events);
        server.turn();
    };
    // Datagrams queued before the loop's first poll bring their event too.
    for _ in 0..3 {
        peer.send_to(&[0x40; 32], local).unwrap();
    }
    turn_after_poll(&mut server);
    assert_eq!(Counters::get(&counters.udp_datagrams_received), 3);
    let after_first = calls();
    if RECV_SLOTS > 1 {
        assert_eq!(after_first, 1, "a short batch means an empty socket: no call to see WouldBlock");
    }
    // Woken by the waker alone: no read.
    server.shared.waker.wake().unwrap();
    turn_after_poll(&mut server);
    assert_eq!(calls(), after_first);
    // A datagram brings its event, and the turn reads it.
    peer.send_to(&[0x40; 32], local).unwrap();
    turn_after_poll(&mut server);
    assert_eq!(Counters::get(&counters.udp_datagrams_received), 4);
    assert!(calls() > after_first);
}
