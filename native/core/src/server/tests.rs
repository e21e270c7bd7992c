//! The batched receive path on a real socket: datagrams sent from a plain
//! std socket, one `read_packets` turn of the server loop.

use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::time::Duration;

use super::*;
use crate::testing::{options, Recorder, Report};

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

/// One step of a quiche client against a real server: the client's
/// packets out, one server turn, the server's packets in. Returns the
/// sizes of the datagrams the client received.
fn step(client: &mut quiche::Connection, peer: &UdpSocket, server: &mut Server<Recorder>) -> Vec<usize> {
    step_via(client, peer, peer.local_addr().unwrap(), server)
}

/// The client sends all it has from `out`, and the server takes a turn.
fn client_sends_then_server_turns(client: &mut quiche::Connection, out: &UdpSocket, server: &mut Server<Recorder>) {
    let mut buf = [0u8; 65536];
    while let Ok((n, info)) = client.send(&mut buf) {
        out.send_to(&buf[..n], info.to).unwrap();
    }
    std::thread::sleep(Duration::from_millis(2));
    server.socket.may_have_more = true;
    server.turn();
    std::thread::sleep(Duration::from_millis(2));
}

/// `step` with the client's packets leaving from `out` and the server's
/// read there, while the client believes it is at `believed` (after a NAT
/// rebinding the client's own address has not changed, the one the server
/// sees has).
fn step_via(client: &mut quiche::Connection, out: &UdpSocket, believed: SocketAddr, server: &mut Server<Recorder>) -> Vec<usize> {
    client_sends_then_server_turns(client, out, server);
    let mut buf = [0u8; 65536];
    let mut sizes = Vec::new();
    while let Ok((n, from)) = out.recv_from(&mut buf) {
        sizes.push(n);
        let _ = client.recv(&mut buf[..n], quiche::RecvInfo { from, to: believed });
    }
    client.on_timeout();
    sizes
}

fn connect(local: SocketAddr, peer: &UdpSocket) -> quiche::Connection {
    connect_taking(local, peer, 1472)
}

/// A client whose transport parameters say it takes UDP payloads of at most `max_udp_payload`.
fn connect_taking(local: SocketAddr, peer: &UdpSocket, max_udp_payload: usize) -> quiche::Connection {
    let mut cfg = crate::testing::client_config();
    cfg.set_max_recv_udp_payload_size(max_udp_payload);
    // Room for the spare IDs the server offers (server/paths.rs).
    cfg.set_active_connection_id_limit(4);
    let scid = [3u8; 16];
    let from = peer.local_addr().unwrap();
    quiche::connect(Some("localhost"), &quiche::ConnectionId::from_ref(&scid), from, local, &mut cfg).unwrap()
}

/// A server with these options and a quiche client on a socket of its own,
/// stepped until `ready` holds for the client (at most 200 steps). Returns
/// the datagram sizes the client received meanwhile.
fn connected_until(
    opts: Options,
    ready: impl Fn(&quiche::Connection) -> bool,
) -> (Server<Recorder>, Arc<Counters>, quiche::Connection, UdpSocket, Vec<usize>) {
    connected_taking(opts, 1472, ready)
}

/// `connected_until` with a client that takes UDP payloads of at most `max_udp_payload`.
fn connected_taking(
    opts: Options,
    max_udp_payload: usize,
    ready: impl Fn(&quiche::Connection) -> bool,
) -> (Server<Recorder>, Arc<Counters>, quiche::Connection, UdpSocket, Vec<usize>) {
    let bound = Server::bind(opts, Recorder::default()).unwrap();
    let (mut server, counters, local) = (bound.server, bound.shared.counters.clone(), bound.local);
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_nonblocking(true).unwrap();
    let mut client = connect_taking(local, &peer, max_udp_payload);
    let mut sizes = Vec::new();
    for _ in 0..200 {
        if ready(&client) {
            break;
        }
        sizes.extend(step(&mut client, &peer, &mut server));
    }
    assert!(ready(&client), "the client did not get there");
    (server, counters, client, peer, sizes)
}

/// Hands the server's QUIC more of `payload` on stream 43 (a
/// server-initiated unidirectional stream past HTTP/3's own): quiche takes
/// at most a congestion window ahead, so the rest is offered again later.
fn offer_more(server: &mut Server<Recorder>, id: ConnId, payload: &[u8], offered: &mut usize) {
    if *offered < payload.len() {
        let quic = &mut server.table.get_mut(id).unwrap().quic;
        *offered += quic.stream_send(43, &payload[*offered..], true).unwrap_or(0);
        server.mark_dirty(id);
    }
}

#[test]
fn pmtud_starts_at_1350_bytes_and_grows_to_the_send_limit() {
    let (mut server, counters, mut client, peer, during_handshake) =
        connected_until(options(false, false), |c| c.is_established());
    // The handshake's datagrams fill up to 1,350 bytes and no more (our
    // quiche patch 02; quiche as published: 1,200).
    assert_eq!(during_handshake.iter().max(), Some(&1350), "handshake datagrams {during_handshake:?}");
    // After the handshake quiche probes the ceiling (1472 over IPv4);
    // loopback takes it, and the path's limit grows.
    let id = server.table.ids()[0];
    for _ in 0..200 {
        if server.table.get_mut(id).unwrap().quic.max_send_udp_payload_size() == crate::config::SEND_LIMIT_V4 {
            break;
        }
        client.send_ack_eliciting().unwrap();
        step(&mut client, &peer, &mut server);
    }
    assert_eq!(server.table.get_mut(id).unwrap().quic.max_send_udp_payload_size(), crate::config::SEND_LIMIT_V4);
    assert_eq!(Counters::get(&counters.udp_too_large), 0);
}

#[test]
fn pmtud_grows_to_what_a_client_taking_less_than_the_ceiling_takes() {
    // quic-go takes at most 1,452 bytes. quiche searched from its own
    // ceiling (1,472), a probe the server loop's 1,452-byte buffer (the
    // peer's limit) never let out, so the path stayed at 1,350 bytes for
    // the whole connection (a qlog of W10: 8,269 data packets, all 1,350).
    // quiche patch 04 caps the search at the peer's limit.
    let (mut server, counters, mut client, peer, _) = connected_taking(options(false, false), 1452, |c| c.is_established());
    let id = server.table.ids()[0];
    let mut largest = 0;
    for _ in 0..200 {
        if server.table.get_mut(id).unwrap().quic.max_send_udp_payload_size() == 1452 {
            break;
        }
        client.send_ack_eliciting().unwrap();
        largest = largest.max(step(&mut client, &peer, &mut server).into_iter().max().unwrap_or(0));
    }
    assert_eq!(server.table.get_mut(id).unwrap().quic.max_send_udp_payload_size(), 1452);
    assert!(largest <= 1452, "a datagram of {largest} bytes reached a client that takes 1,452");
    assert_eq!(Counters::get(&counters.udp_too_large), 0);
}

/// A client connected to a server with this reset key, past the handshake;
/// then the server goes away with its state. Returns the options for a
/// server on the same port, the client and its socket.
fn connected_then_server_gone(key: [u8; 32]) -> (Options, quiche::Connection, UdpSocket) {
    let mut opts = options(false, false);
    opts.stateless_reset_key = Some(key);
    let (mut server, _, mut client, peer, _) = connected_until(opts.clone(), |c| c.is_established());
    // Until HANDSHAKE_DONE arrives the client's datagrams open with a
    // Handshake packet (long header), which no reset answers.
    for _ in 0..10 {
        step(&mut client, &peer, &mut server);
    }
    opts.port = server.socket.local.port();
    drop(server);
    (opts, client, peer)
}

#[test]
fn a_server_restarted_with_the_same_reset_key_resets_a_connected_client() {
    let (opts, mut client, peer) = connected_then_server_gone([9; 32]);
    // A new server takes the port with the same key.
    let bound = Server::bind(opts, Recorder::default()).unwrap();
    let (mut server, counters) = (bound.server, bound.shared.counters.clone());
    client.send_ack_eliciting().unwrap();
    let start = Instant::now();
    for _ in 0..50 {
        if client.is_closed() {
            break;
        }
        step(&mut client, &peer, &mut server);
    }
    assert!(client.is_closed(), "the client saw the reset");
    assert!(start.elapsed() < Duration::from_secs(2), "promptly, not at the idle timeout");
    assert_eq!(Counters::get(&counters.stateless_resets_sent), 1);
}

#[test]
fn a_reset_under_another_key_is_not_recognised() {
    let (mut opts, mut client, peer) = connected_then_server_gone([9; 32]);
    opts.stateless_reset_key = Some([10; 32]);
    let bound = Server::bind(opts, Recorder::default()).unwrap();
    let (mut server, counters) = (bound.server, bound.shared.counters.clone());
    client.send_ack_eliciting().unwrap();
    for _ in 0..10 {
        step(&mut client, &peer, &mut server);
    }
    assert!(Counters::get(&counters.stateless_resets_sent) >= 1);
    assert!(!client.is_closed(), "a token from another key means nothing to the client");
}

#[test]
fn a_short_packet_for_an_unknown_connection_gets_no_reset() {
    let (mut server, counters, local) = server();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    // 21 bytes: too small to answer with a smaller reset. A 20-byte ID needs
    // 1 + 20 bytes of header already.
    let mut small = vec![0x40u8; 21];
    small[1..21].copy_from_slice(&[5; 20]);
    peer.send_to(&small, local).unwrap();
    let mut big = vec![0x40u8; 60];
    big[1..21].copy_from_slice(&[5; 20]);
    peer.send_to(&big, local).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    server.read_packets();
    assert_eq!(Counters::get(&counters.stateless_resets_sent), 1);
    peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 1500];
    let (n, _) = peer.recv_from(&mut buf).unwrap();
    assert!((21..60).contains(&n), "{n}");
    assert_eq!(buf[0] & 0xc0, 0x40);
    assert_eq!(buf[n - 16..n], crate::reset::token(&crate::reset::process_key(), &[5; 20]));
}

/// A connected client, then `bytes` on a server-opened unidirectional
/// stream, stepped until the client has read all of it. Returns the bytes
/// read, the server's pacing waits, and its congestion window at the end.
fn transfer_with_pacing(cc: &str, pacing: bool, bytes: usize) -> (usize, u64, usize) {
    let mut opts = options(false, false);
    opts.pacing = pacing;
    opts.congestion_control = cc.into();
    let (mut server, counters, mut client, peer, _) = connected_until(opts, |c| c.is_established());
    let id = server.table.ids()[0];
    let payload = vec![0x5a; bytes];
    let mut offered = 0;
    let mut read = 0;
    let mut buf = vec![0u8; 65536];
    for _ in 0..500 {
        offer_more(&mut server, id, &payload, &mut offered);
        step(&mut client, &peer, &mut server);
        while let Ok((n, _fin)) = client.stream_recv(43, &mut buf) {
            read += n;
        }
        if read == bytes {
            break;
        }
    }
    let cwnd = server.table.get(id).unwrap().quic.path_stats().find(|p| p.active).unwrap().cwnd;
    (read, Counters::get(&counters.pacing_waits), cwnd)
}

#[test]
fn sending_waits_for_its_pacing_time_with_every_congestion_controller_and_nothing_is_lost() {
    // 200 KB from a congestion window that starts at ten packets, over a
    // path whose RTT is a few milliseconds (each step sleeps): the window
    // is let out over the round trip, not at once. CUBIC and Reno are paced
    // by the server's bucket, BBRv2 by quiche's release times.
    for cc in ["cubic", "reno", "bbr2"] {
        let (read, waits, _) = transfer_with_pacing(cc, true, 200_000);
        assert_eq!(read, 200_000, "{cc}: everything arrived, held packets included");
        assert!(waits > 0, "{cc}: sending waited for its pacing time");
    }
    let (read, waits, _) = transfer_with_pacing("cubic", false, 200_000);
    assert_eq!(read, 200_000);
    assert_eq!(waits, 0, "with pacing off nothing waits");
}

#[test]
fn a_paced_window_grows_in_slow_start_as_an_unpaced_one_does() {
    // quiche's CUBIC and Reno took a window the server's pacer left
    // unfilled as application-limited and skipped the ACKs that arrived in
    // the pause (quiche patch 03 and `on_send_paced`): the paced window
    // stayed near its start while the unpaced one grew with every byte
    // acknowledged. No loss here, so both are still in slow start.
    for cc in ["cubic", "reno"] {
        let (_, waits, paced) = transfer_with_pacing(cc, true, 200_000);
        let (_, _, unpaced) = transfer_with_pacing(cc, false, 200_000);
        assert!(waits > 0, "{cc}: the pacer held the sender");
        assert!(paced * 10 >= unpaced * 8, "{cc}: paced window {paced} bytes, unpaced {unpaced}");
    }
}

#[test]
fn a_connection_starts_with_the_initial_window_it_is_given() {
    // The window right after the handshake: the initial window plus what the
    // handshake's acknowledged packets added in slow start (a few KB).
    let cwnd_after_handshake = |packets: Option<usize>| {
        let mut opts = options(false, false);
        if let Some(n) = packets {
            opts.initial_window_packets = n;
        }
        let (mut server, _, _, _, _) = connected_until(opts, |c| c.is_established());
        let id = server.table.ids()[0];
        let cwnd = server.table.get_mut(id).unwrap().quic.path_stats().find(|p| p.active).unwrap().cwnd;
        cwnd
    };
    let default = cwnd_after_handshake(None);
    let large = cwnd_after_handshake(Some(32));
    assert!((10 * 1350..20 * 1350).contains(&default), "default (10 packets): {default} bytes");
    assert!((32 * 1350..42 * 1350).contains(&large), "32 packets: {large} bytes");
}

#[test]
fn an_unknown_congestion_controller_is_refused_at_listen() {
    let mut opts = options(false, false);
    opts.congestion_control = "vegas".into();
    let err = Server::bind(opts, Recorder::default()).err().expect("refused");
    assert_eq!(err.to_string(), "unknown congestion control \"vegas\" (cubic, reno or bbr2)");
}

#[test]
fn a_client_that_moves_keeps_its_connection_by_nat_rebinding_and_by_active_migration() {
    // Established, and holding the spare IDs the server offered.
    let (mut server, counters, mut client, first, _) =
        connected_until(options(false, false), |c| c.is_established() && c.available_dcids() > 0);
    let id = server.table.ids()[0];
    let believed = first.local_addr().unwrap();
    let payload = vec![0x33u8; 300_000];
    let mut offered = 0;
    let mut read = 0;
    let mut buf = vec![0u8; 65536];
    let mut pump =
        |server: &mut Server<Recorder>, client: &mut quiche::Connection, out: &UdpSocket, at: SocketAddr, read: &mut usize| {
            offer_more(server, id, &payload, &mut offered);
            step_via(client, out, at, server);
            while let Ok((n, _)) = client.stream_recv(43, &mut buf) {
                *read += n;
            }
        };
    for _ in 0..5 {
        pump(&mut server, &mut client, &first, believed, &mut read);
    }
    let before = read;
    assert!(before > 0 && before < payload.len(), "mid-transfer: {before}");

    // NAT rebinding: the same client, the same connection ID, a new port.
    let rebound = UdpSocket::bind("127.0.0.1:0").unwrap();
    rebound.set_nonblocking(true).unwrap();
    for _ in 0..40 {
        client.send_ack_eliciting().unwrap();
        pump(&mut server, &mut client, &rebound, believed, &mut read);
        if Counters::get(&counters.path_migrations) == 1 {
            break;
        }
    }
    assert_eq!(Counters::get(&counters.path_migrations), 1, "the server followed the rebinding");
    assert_eq!(server.table.get(id).unwrap().peer, rebound.local_addr().unwrap());

    // Active migration: the client moves itself, onto one of the spare IDs.
    let moved = UdpSocket::bind("127.0.0.1:0").unwrap();
    moved.set_nonblocking(true).unwrap();
    let moved_addr = moved.local_addr().unwrap();
    // quiche's client wants a spare ID of its own for the new path, which
    // the server must have heard of (it accepts four: config.rs).
    client.new_scid(&quiche::ConnectionId::from_ref(&[9u8; 16]), 0x1234, false).unwrap();
    for _ in 0..3 {
        pump(&mut server, &mut client, &rebound, believed, &mut read);
    }
    client.migrate_source(moved_addr).expect("the client has a spare ID to migrate with");
    for _ in 0..200 {
        pump(&mut server, &mut client, &moved, moved_addr, &mut read);
        if read == payload.len() && Counters::get(&counters.path_migrations) == 2 {
            break;
        }
    }
    assert_eq!(Counters::get(&counters.path_migrations), 2, "the server followed the client's own move");
    assert_eq!(server.table.get(id).unwrap().peer, moved_addr);
    // The application heard of both moves, in order, with the new addresses.
    let moves: Vec<SocketAddr> = server
        .app
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::PeerMoved { peer } => Some(*peer),
            _ => None,
        })
        .collect();
    assert_eq!(moves, [rebound.local_addr().unwrap(), moved_addr]);
    assert_eq!(read, payload.len(), "every byte arrived across both moves");
    assert!(!client.is_closed());
}

#[test]
fn data_in_flight_to_the_address_a_client_left_is_sent_again_on_its_new_path() {
    // A client that moves mid-download and no longer reads its old socket
    // (ngtcp2's client does this; here a NAT gives it a new port): what the
    // server had in flight to the old address is lost. quiche keeps loss
    // detection per path and the old path hears no more ACKs; without our
    // patch (native/patches/quiche-0.30.0-01-loss-across-paths.patch) that
    // data was never declared lost and the stream waited for the idle
    // timeout.
    let (mut server, counters, mut client, first, _) = connected_until(options(false, false), |c| c.is_established());
    let id = server.table.ids()[0];
    let believed = first.local_addr().unwrap();
    let payload = vec![0x44u8; 400_000];
    let mut offered = 0;
    let mut read = 0;
    let mut buf = vec![0u8; 65536];
    let mut drain = |client: &mut quiche::Connection, read: &mut usize| {
        while let Ok((n, _)) = client.stream_recv(43, &mut buf) {
            *read += n;
        }
    };
    for _ in 0..5 {
        offer_more(&mut server, id, &payload, &mut offered);
        step_via(&mut client, &first, believed, &mut server);
        drain(&mut client, &mut read);
    }
    assert!(read > 0 && read < payload.len(), "mid-transfer: {read}");

    // The client acknowledges; the server answers with a window of data to
    // the old socket, and the client moves before any of it is read.
    offer_more(&mut server, id, &payload, &mut offered);
    client_sends_then_server_turns(&mut client, &first, &mut server);
    let mut out = [0u8; 65536];
    let mut lost = 0;
    while first.recv_from(&mut out).is_ok() {
        lost += 1;
    }
    assert!(lost >= 3, "datagrams in flight to the old socket: {lost}");

    let rebound = UdpSocket::bind("127.0.0.1:0").unwrap();
    rebound.set_nonblocking(true).unwrap();
    for _ in 0..300 {
        client.send_ack_eliciting().unwrap();
        offer_more(&mut server, id, &payload, &mut offered);
        step_via(&mut client, &rebound, believed, &mut server);
        drain(&mut client, &mut read);
        if read == payload.len() {
            break;
        }
    }
    assert_eq!(Counters::get(&counters.path_migrations), 1, "the server followed the client");
    assert_eq!(read, payload.len(), "every byte arrived, the lost ones again on the new path");
    assert!(!client.is_closed());
}

#[test]
fn with_quic_lb_every_connection_id_the_server_issues_carries_its_server_id() {
    let mut opts = options(false, false);
    opts.quic_lb = Some(crate::connection_ids::QuicLb::new(1, vec![0x5e, 0x71]).unwrap());
    let (mut server, _, client, _, _) = connected_until(opts, |c| c.is_established() && c.available_dcids() > 0);
    let id = server.table.ids()[0];
    let issued: Vec<Vec<u8>> = server.table.get_mut(id).unwrap().quic.source_ids().map(|c| c.as_ref().to_vec()).collect();
    assert!(issued.len() >= 2, "the first ID and the spares: {}", issued.len());
    for cid in &issued {
        assert_eq!(crate::connection_ids::ConnectionIds::server_id_of(cid, 2), Some((1, &[0x5e, 0x71][..])));
    }
    assert!(issued.iter().any(|c| c.as_slice() == client.destination_id().as_ref()), "the client uses one of them");
}

/// A real client's first Initial to `local` (a fresh quiche client each
/// time, as a flood of Initials from many spoofed sources would bring).
fn first_initial(local: SocketAddr, from: SocketAddr) -> Vec<u8> {
    let mut cfg = crate::testing::client_config();
    let mut scid = [0u8; 16];
    getrandom::fill(&mut scid).unwrap();
    let mut client = quiche::connect(Some("localhost"), &quiche::ConnectionId::from_ref(&scid), from, local, &mut cfg).unwrap();
    let mut out = [0u8; 1500];
    let (n, _) = client.send(&mut out).unwrap();
    out[..n].to_vec()
}

#[test]
fn with_retry_on_a_client_proves_its_address_before_the_server_keeps_state() {
    let mut opts = options(false, false);
    opts.retry = crate::retry::RetryMode::On;
    let (server, counters, client, _, _) = connected_until(opts, |c| c.is_established());
    assert!(client.is_established(), "quiche's client followed the Retry");
    assert!(Counters::get(&counters.retries_sent) >= 1);
    assert_eq!(Counters::get(&counters.connections_accepted), 1, "one connection, made after the Retry");
    assert_eq!(server.table.len(), 1);
}

#[test]
fn initials_under_1200_bytes_are_dropped_unanswered_and_retry_auto_holds_the_table_at_its_threshold() {
    let mut opts = options(false, false);
    opts.max_connections = 100;
    opts.retry = crate::retry::RetryMode::Auto { half_open: 3 };
    let bound = Server::bind(opts, Recorder::default()).unwrap();
    let (mut server, counters, local) = (bound.server, bound.shared.counters.clone(), bound.local);
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_nonblocking(true).unwrap();
    let from = peer.local_addr().unwrap();
    let initial = first_initial(local, from);
    assert!(initial.len() >= 1200);
    peer.send_to(&initial[..1199], local).unwrap();
    std::thread::sleep(Duration::from_millis(2));
    server.socket.may_have_more = true;
    server.turn();
    assert_eq!(Counters::get(&counters.initials_too_small), 1);
    assert_eq!(server.table.len(), 0);
    // Initials of ten clients that never go on: three connections
    // (half-open, they never complete), then Retry for the rest.
    for _ in 0..10 {
        peer.send_to(&first_initial(local, from), local).unwrap();
    }
    std::thread::sleep(Duration::from_millis(2));
    server.socket.may_have_more = true;
    server.turn();
    assert_eq!(server.table.len(), 3, "the table stops at the threshold");
    assert_eq!(Counters::get(&counters.retries_sent), 7);
    let mut buf = [0u8; 2048];
    let mut retries = 0;
    while let Ok((n, _)) = peer.recv_from(&mut buf) {
        if let Ok(h) = quiche::Header::from_slice(&mut buf[..n], 20) {
            if h.ty == quiche::Type::Retry {
                retries += 1;
            }
        }
    }
    assert_eq!(retries, 7, "the Retry packets went out");
}

/// A client's session from a first connection to a server with `first`,
/// then whether a second connection, to a new server with `second`,
/// resumed it.
fn resumed_across_servers(first: Option<[u8; 48]>, second: Option<[u8; 48]>) -> bool {
    let mut opts = options(false, false);
    opts.ticket_key = first;
    let (mut server, _, mut client, peer, _) = connected_until(opts, |c| c.is_established());
    // The ticket arrives after the handshake, in a NewSessionTicket.
    for _ in 0..10 {
        step(&mut client, &peer, &mut server);
    }
    let session = client.session().expect("the server sent a session ticket").to_vec();
    drop(server);
    let mut opts = options(false, false);
    opts.ticket_key = second;
    let bound = Server::bind(opts, Recorder::default()).unwrap();
    let (mut server, local) = (bound.server, bound.local);
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_nonblocking(true).unwrap();
    let mut client = connect(local, &peer);
    client.set_session(&session).unwrap();
    for _ in 0..200 {
        if client.is_established() {
            break;
        }
        step(&mut client, &peer, &mut server);
    }
    assert!(client.is_established(), "a full handshake still works");
    client.is_resumed()
}

#[test]
fn a_session_resumes_on_another_server_with_the_same_ticket_key_and_only_then() {
    let key = [0x42; 48];
    assert!(resumed_across_servers(Some(key), Some(key)), "same key: resumed");
    assert!(!resumed_across_servers(Some(key), Some([0x43; 48])), "another key: a full handshake");
    assert!(!resumed_across_servers(None, None), "no key: each server has its own");
}

#[test]
fn the_destination_id_read_by_the_invariants_is_the_one_quiche_parses() {
    let mut long = unsupported_initial(0x0102_0304_0506_0708);
    assert_eq!(destination_id(&long), Some(&0x0102_0304_0506_0708_u64.to_be_bytes()[..]));
    let parsed = quiche::Header::from_slice(&mut long, quiche::MAX_CONN_ID_LEN).unwrap();
    assert_eq!(destination_id(&unsupported_initial(0x0102_0304_0506_0708)), Some(parsed.dcid.as_ref()));

    let mut short = vec![0x40];
    short.extend((0..crate::connection_ids::CID_LEN as u8).map(|b| b + 1));
    short.extend_from_slice(&[0xaa; 24]);
    let want = short[1..1 + crate::connection_ids::CID_LEN].to_vec();
    assert_eq!(destination_id(&short), Some(&want[..]));
    let parsed = quiche::Header::from_slice(&mut short, crate::connection_ids::CID_LEN).unwrap();
    assert_eq!(parsed.dcid.as_ref(), &want[..]);

    // Cut short: nothing, never a panic.
    assert_eq!(destination_id(&[]), None);
    assert_eq!(destination_id(&[0xc0, 0, 0, 0, 1, 8, 1, 2]), None);
    assert_eq!(destination_id(&[0x40, 1, 2, 3]), None);
}

#[test]
fn a_path_the_client_moves_to_gets_no_datagram_over_its_max_udp_payload_size() {
    // quiche sizes the first path by the client's transport parameter but a
    // new one by the server's own limit (1,472): the send loop's buffer is
    // what keeps the new path's datagrams within the client's 1,400.
    const TAKES: usize = 1400;
    let bound = Server::bind(options(false, false), Recorder::default()).unwrap();
    let (mut server, counters, local) = (bound.server, bound.shared.counters.clone(), bound.local);
    let first = UdpSocket::bind("127.0.0.1:0").unwrap();
    first.set_nonblocking(true).unwrap();
    let believed = first.local_addr().unwrap();
    let mut client = connect_taking(local, &first, TAKES);
    for _ in 0..200 {
        if client.is_established() && client.available_dcids() > 0 {
            break;
        }
        step(&mut client, &first, &mut server);
    }
    assert!(client.is_established());
    let id = server.table.ids()[0];
    let payload = vec![0x44u8; 400_000];
    let mut offered = 0;
    let mut read = 0;
    let mut buf = vec![0u8; 65536];
    let mut largest_after_move = 0;
    let moved = UdpSocket::bind("127.0.0.1:0").unwrap();
    moved.set_nonblocking(true).unwrap();
    for i in 0..400 {
        offer_more(&mut server, id, &payload, &mut offered);
        // A NAT rebinding after a few steps of the download.
        let sizes = if i < 5 {
            step_via(&mut client, &first, believed, &mut server)
        } else {
            step_via(&mut client, &moved, believed, &mut server)
        };
        if i >= 5 {
            largest_after_move = largest_after_move.max(sizes.iter().copied().max().unwrap_or(0));
            client.send_ack_eliciting().unwrap();
        }
        while let Ok((n, _)) = client.stream_recv(43, &mut buf) {
            read += n;
        }
        if read == payload.len() {
            break;
        }
    }
    assert_eq!(Counters::get(&counters.path_migrations), 1, "the server followed the move");
    assert!(largest_after_move > 1200, "full-size packets went to the new path: {largest_after_move}");
    assert!(largest_after_move <= TAKES, "a {largest_after_move}-byte datagram to a client that takes {TAKES}");
    assert_eq!(read, payload.len());
}

/// A connection whose client went silent with the congestion window full:
/// quiche holds its CONNECTION_CLOSE until a PTO lets it out. Shutting
/// down (gracefully, past the drain deadline, or at once) must then wait,
/// not take turn after turn: the loop spun at about 200,000 turns a second for the
/// half second before the end (seen in a qlog of the interop runner's
/// handshakeloss case, 0-length writes to the control stream each turn).
fn shutdown_waits_for_a_held_close(mode: u8) {
    let (mut server, _, mut client, peer, _) = connected_until(options(false, false), |c| c.is_established());
    step(&mut client, &peer, &mut server);
    let id = server.table.ids()[0];
    // A window's worth leaves; the client never reads or acknowledges again.
    let payload = vec![7u8; 200_000];
    let mut offered = 0;
    offer_more(&mut server, id, &payload, &mut offered);
    server.turn();
    assert!(offered > 0);

    server.shared.shutdown.store(mode, Ordering::Release);
    if mode == SHUTDOWN_GRACEFUL {
        server.turn();
        // The drain deadline has passed: every connection is closed now.
        server.deadlines.drain_started = Some(Instant::now() - DRAIN_DEADLINE);
    }
    server.turn();
    let conn = server.table.get_mut(id).unwrap();
    assert!(conn.quic.local_error().is_some(), "closed");
    assert!(!conn.quic.is_draining(), "its CONNECTION_CLOSE is held by the congestion window (the case under test)");

    for turn in 0..5 {
        let wait = server.poll_timeout();
        assert!(wait.is_some_and(|w| w > Duration::from_millis(5)), "turn {turn}: the loop would wake after {wait:?}");
        server.turn();
    }
    assert!(!server.finished(), "the grace for the closes is not over yet");
    server.deadlines.drain_started = Some(Instant::now() - DRAIN_DEADLINE - CLOSE_GRACE);
    assert!(server.finished(), "and the server ends once it is");
}

#[test]
fn a_graceful_shutdown_past_its_deadline_waits_for_a_held_close_without_spinning() {
    shutdown_waits_for_a_held_close(SHUTDOWN_GRACEFUL);
}

#[test]
fn an_immediate_shutdown_waits_for_a_held_close_without_spinning() {
    shutdown_waits_for_a_held_close(SHUTDOWN_NOW);
}

/// The server's first flight is lost; the client's PTO sends its Initial
/// again. The server answers that with its unacknowledged flight at once
/// (quiche patch 05, RFC 9002 section 6.2.3), not with an ACK alone and the
/// flight at its own PTO, which under repeated loss backs off to seconds:
/// at 30 % loss a handshake took 24 s that way, and the client's first RTT
/// sample (3 s) then left it too slow to recover its lost request before
/// the idle timeout (the interop runner's handshakeloss case).
#[test]
fn a_client_repeating_its_initial_gets_the_servers_lost_flight_at_once() {
    let (mut server, _, _) = server();
    let (mut client, peer) = impatient_client(server.socket.local, 5);

    // The first flight: the server's answer never reaches the client.
    client_sends_then_server_turns(&mut client, &peer, &mut server);
    assert!(lose_all(&peer) > 0, "the server answered the first Initial");

    // The client's PTO: its Initial again.
    std::thread::sleep(client.timeout().unwrap_or_default() + Duration::from_millis(2));
    client.on_timeout();
    let answer = step(&mut client, &peer, &mut server);
    assert!(!answer.is_empty());
    assert!(
        client.is_established(),
        "the client completed its handshake from the answer to its repeated Initial (datagrams {answer:?})"
    );
}

/// A quiche client on a socket of its own whose PTO comes in milliseconds
/// (initial RTT 5 ms), so that it sends again soon; the server's PTO
/// (initial RTT 333 ms) does not fire during a test.
fn impatient_client(local: SocketAddr, id: u8) -> (quiche::Connection, UdpSocket) {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_nonblocking(true).unwrap();
    let mut cfg = crate::testing::client_config();
    cfg.set_initial_rtt(Duration::from_millis(5));
    let scid = [id; 16];
    let client =
        quiche::connect(Some("localhost"), &quiche::ConnectionId::from_ref(&scid), peer.local_addr().unwrap(), local, &mut cfg)
            .unwrap();
    (client, peer)
}

/// Delivers nothing: what the server sent to `peer` is read and dropped.
fn lose_all(peer: &UdpSocket) -> usize {
    std::thread::sleep(Duration::from_millis(2));
    let mut buf = [0u8; 65536];
    let mut lost = 0;
    while peer.recv_from(&mut buf).is_ok() {
        lost += 1;
    }
    lost
}

/// The server closes an established connection and its CONNECTION_CLOSE is
/// lost: the client's next packet is answered with the same datagram (RFC
/// 9000 section 10.2.1), so the client learns the code and reason now, not
/// at its idle timeout.
#[test]
fn a_client_whose_connection_close_was_lost_gets_it_again_when_it_sends() {
    let (mut server, counters, mut client, peer, _) = connected_until(options(false, false), |c| c.is_established());
    step(&mut client, &peer, &mut server);
    let id = server.table.ids()[0];
    server.table.get_mut(id).unwrap().quic.close(true, 0x10c, b"going away").unwrap();
    server.mark_dirty(id);
    server.turn();
    assert!(lose_all(&peer) >= 1, "the server sent its CONNECTION_CLOSE");
    assert!(client.peer_error().is_none());

    // The client, unaware, sends on (a PING here).
    client.send_ack_eliciting().unwrap();
    step(&mut client, &peer, &mut server);
    let e = client.peer_error().expect("the client got the close this time");
    assert_eq!((e.is_app, e.error_code, e.reason.as_slice()), (true, 0x10c, &b"going away"[..]));
    assert_eq!(Counters::get(&counters.closing_packets_resent), 1);
}

/// The server gives up on a handshake (its timeout) and that
/// CONNECTION_CLOSE is lost; the connection is gone from the table at once,
/// yet the client's next try is answered with the close, and not taken for
/// a new connection.
#[test]
fn a_handshake_the_server_gave_up_on_is_closed_again_when_the_client_tries_once_more() {
    let mut opts = options(false, false);
    opts.handshake_timeout_ms = 30;
    let bound = Server::bind(opts, Recorder::default()).unwrap();
    let (mut server, counters, local) = (bound.server, bound.shared.counters.clone(), bound.local);
    let (mut client, peer) = impatient_client(local, 6);
    // The server's flight reaches the client; nothing of the client's
    // answer reaches the server.
    step(&mut client, &peer, &mut server);
    let mut buf = [0u8; 65536];
    while client.send(&mut buf).is_ok() {}
    let id = server.table.ids()[0];
    assert!(!server.table.get(id).unwrap().quic.is_established(), "the server's side of the handshake is not done");

    std::thread::sleep(Duration::from_millis(40));
    server.turn();
    assert_eq!(Counters::get(&counters.handshake_timeouts), 1);
    assert!(lose_all(&peer) >= 1, "the server sent its CONNECTION_CLOSE");
    assert!(server.table.is_empty(), "and dropped the connection");

    // The client's PTO: it sends again, to the server's connection ID.
    std::thread::sleep(client.timeout().unwrap_or_default() + Duration::from_millis(2));
    client.on_timeout();
    step(&mut client, &peer, &mut server);
    let e = client.peer_error().expect("the client got the close this time");
    assert_eq!(e.reason.as_slice(), b"handshake timeout");
    assert!(server.table.is_empty(), "no new connection was made of it");
    assert!(Counters::get(&counters.closing_packets_resent) >= 1);
    assert_eq!(Counters::get(&counters.connections_accepted), 1);
}

/// A client that moves onto a new connection ID before it offered the
/// server any spare ID of its own: quiche puts the old path's DCID (seq 0)
/// on the new path without linking it (on_peer_migrated). The client then
/// offers IDs and retires its seq 0 with retire_prior_to. Unpatched, quiche
/// re-points only the path seq 0 is linked to (the old one); the active
/// path keeps seq 0, retired, and every send fails with InvalidState, the
/// CONNECTION_CLOSE too: the client hears nothing until its idle timeout.
/// quiche patch 13 (docs/quiche-patches.md).
#[test]
fn a_client_that_moves_before_offering_spare_ids_then_retires_the_first_by_retire_prior_to_keeps_its_connection() {
    let (mut server, counters, mut client, first, _) =
        connected_until(options(false, false), |c| c.is_established() && c.available_dcids() > 0);
    let id = server.table.ids()[0];
    let believed = first.local_addr().unwrap();
    for _ in 0..5 {
        step(&mut client, &first, &mut server);
    }
    assert_eq!(server.table.get(id).unwrap().quic.available_dcids(), 0, "the client offered no spare ID");
    // The client moves (new port) and onto the server's next ID, retiring seq 0.
    client.retire_dcid(0).unwrap();
    let moved = UdpSocket::bind("127.0.0.1:0").unwrap();
    moved.set_nonblocking(true).unwrap();
    for _ in 0..20 {
        client.send_ack_eliciting().unwrap();
        step_via(&mut client, &moved, believed, &mut server);
        if Counters::get(&counters.path_migrations) == 1 {
            break;
        }
    }
    assert_eq!(Counters::get(&counters.path_migrations), 1, "the server followed the move");
    for _ in 0..5 {
        step_via(&mut client, &moved, believed, &mut server);
    }
    // Now the client offers spare IDs (seq 1..3), then a fourth that retires seq 0.
    for k in 1..=3u8 {
        client.new_scid(&quiche::ConnectionId::from_ref(&[0x40 + k; 16]), 0x1000 + k as u128, false).unwrap();
    }
    for _ in 0..3 {
        step_via(&mut client, &moved, believed, &mut server);
    }
    client.new_scid(&quiche::ConnectionId::from_ref(&[0x50; 16]), 0x2000, true).unwrap();
    for _ in 0..10 {
        client.send_ack_eliciting().unwrap();
        step_via(&mut client, &moved, believed, &mut server);
    }
    let logs: Vec<String> = server
        .app
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::Log { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    let conn = server.table.get(id);
    assert!(!logs.iter().any(|l| l.contains("could not build a packet")), "quiche could not build a packet");
    assert!(conn.unwrap().quic.local_error().is_none());
    // And the connection still carries data on the path it moved to.
    let acked_before = client.stats().sent;
    client.send_ack_eliciting().unwrap();
    for _ in 0..5 {
        step_via(&mut client, &moved, believed, &mut server);
    }
    assert!(client.stats().sent > acked_before && !client.is_closed() && client.peer_error().is_none());
    assert_eq!(server.table.get(id).unwrap().peer, moved.local_addr().unwrap());
}

/// RFC 9000 sections 8.2 and 9: a packet from a new address makes the
/// server probe it (PATH_CHALLENGE) and hold what it sends there to three
/// times what arrived from there until the path is validated. A "client"
/// at the new address that never answers (a spoofed source) gets no more
/// than that, however much the server has to send; the validation fails,
/// and the connection carries on where the client really is.
#[test]
fn an_address_that_never_answers_the_challenge_gets_three_times_what_it_sent_and_the_connection_carries_on() {
    let (mut server, counters, mut client, first, _) = connected_until(options(false, false), |c| c.is_established());
    let id = server.table.ids()[0];
    for _ in 0..5 {
        step(&mut client, &first, &mut server);
    }
    // Plenty to send: 400 kB on a stream.
    let payload = vec![0x5au8; 400_000];
    let mut offered = 0;
    offer_more(&mut server, id, &payload, &mut offered);
    // One ack-eliciting packet of the client's, sent from elsewhere.
    let spoofed = UdpSocket::bind("127.0.0.1:0").unwrap();
    spoofed.set_nonblocking(true).unwrap();
    client.send_ack_eliciting().unwrap();
    let mut buf = [0u8; 65536];
    let mut sent_from_spoofed = 0;
    while let Ok((n, info)) = client.send(&mut buf) {
        spoofed.send_to(&buf[..n], info.to).unwrap();
        sent_from_spoofed += n;
    }
    // The server turns for a while (past its PTOs); nothing at the new
    // address ever answers.
    let mut to_spoofed = 0;
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(10));
        server.socket.may_have_more = true;
        offer_more(&mut server, id, &payload, &mut offered);
        server.turn();
        while let Ok((n, _)) = spoofed.recv_from(&mut buf) {
            to_spoofed += n;
        }
    }
    assert!(to_spoofed > 0, "the server probed the new address");
    assert!(to_spoofed <= 3 * sent_from_spoofed, "{to_spoofed} bytes to an unvalidated address that sent {sent_from_spoofed}");
    // The client, where it really is, goes on.
    let before = client.stats().recv;
    for _ in 0..100 {
        offer_more(&mut server, id, &payload, &mut offered);
        client.send_ack_eliciting().unwrap();
        step(&mut client, &first, &mut server);
        let mut read = [0u8; 65536];
        while client.stream_recv(43, &mut read).is_ok() {}
        if client.stats().recv > before + 20 {
            break;
        }
    }
    assert!(client.stats().recv > before + 20, "the connection carries on at the client's own address");
    assert!(!client.is_closed() && client.peer_error().is_none());
    assert_eq!(server.table.get(id).unwrap().peer, first.local_addr().unwrap());
    assert_eq!(Counters::get(&counters.paths_validated), 0, "the spoofed address was never validated");
}
