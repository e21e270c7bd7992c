//! Golden bytes shared with TypeScript (test/boundary.test.ts): one event
//! batch holding every event kind, written by the Rust encoder, and one
//! command batch holding every command, written by the TypeScript encoder.
//! Each side checks its encoder against the committed bytes and decodes the
//! other side's, so a change to either half of the protocol that the other
//! does not follow fails here or there. `UPDATE_GENERATED=1` rewrites
//! test/unit/golden/events.bin from the encoder.

use super::codes::{abort_reason, close_how, command_kind, event_kind as kind, log_level, request_flag, wt_stream};
use super::commands::{Command, CommandReader, What};
use super::events::EventBatch;
use h3core::h3::request::validate_request;

const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/unit/golden/events.bin");
const COMMANDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/unit/golden/commands.bin");

/// The largest stream ID an f64 carries exactly that is a client bidi ID.
const BIG_STREAM: u64 = (1 << 53) - 4;

/// Every event kind once, in kind order, with values test/boundary.test.ts
/// expects: non-ASCII UTF-8 in the texts that are UTF-8 (close reason, log),
/// a byte above 0x7f in a latin1 field value, the largest exact stream ID.
fn golden_events() -> (Vec<u8>, Vec<u8>) {
    let mut b = EventBatch::default();
    let mut kinds = Vec::new();
    let lines: [(&[u8], &[u8]); 6] = [
        (b":method", b"POST"),
        (b":scheme", b"https"),
        (b":authority", b"example.com"),
        (b":path", b"/upload?x=1"),
        (b"content-type", b"text/plain"),
        (b"x-latin1", &[b'a', 0xe9]),
    ];
    let head = validate_request(lines.into_iter().collect()).expect("a valid request head");
    b.request(7, 4, request_flag::COMPLETE | request_flag::HAS_BODY, &head, b"hello");
    kinds.push(kind::REQUEST);
    b.body(7, 8, &[0, 1, 2, 255], true);
    kinds.push(kind::BODY);
    b.stream_aborted(7, 12, abort_reason::PEER_RESET, 0x10c);
    kinds.push(kind::STREAM_ABORTED);
    b.conn_open(9, "127.0.0.1:5000", "00ff");
    kinds.push(kind::CONN_OPEN);
    b.conn_closed(9, close_how::PEER, true, 0x100, "bye \u{2713}".as_bytes(), "[::1]:443", "abcd");
    kinds.push(kind::CONN_CLOSED);
    b.log(log_level::WARN, "qlog: cannot create \u{2713}");
    kinds.push(kind::LOG);
    b.server_closed();
    kinds.push(kind::SERVER_CLOSED);
    b.wt_session_open(9, 0, b"/wt");
    kinds.push(kind::WT_SESSION_OPEN);
    b.wt_session_closed(9, 0, 0xdead_beef, "gone \u{2713}".as_bytes());
    kinds.push(kind::WT_SESSION_CLOSED);
    b.wt_stream(9, 0, BIG_STREAM, wt_stream::REJECTED, true);
    kinds.push(kind::WT_STREAM);
    b.wt_datagrams(9, 70_000);
    kinds.push(kind::WT_DATAGRAMS);
    b.trailers(7, 8, &[(b"x-checksum".to_vec(), b"Ab+/=".to_vec()), (b"x-latin1".to_vec(), vec![0xe9])]);
    kinds.push(kind::TRAILERS);
    b.sent(7, BIG_STREAM, (1 << 40) + 5);
    kinds.push(kind::SENT);
    b.peer_field_limit(9, 16_384);
    kinds.push(kind::PEER_FIELD_LIMIT);
    b.wt_datagram(9, 4, &[0, 1, 255]);
    kinds.push(kind::WT_DATAGRAM);
    b.peer_moved(9, "[2001:db8::7]:61000");
    kinds.push(kind::PEER_MOVED);
    b.identity_wanted(9, 70_001, "b.example.com");
    kinds.push(kind::IDENTITY_WANTED);
    b.client_certificate(9, 20, &[&[0x30, 0x82, 0x01], &[0x30]]);
    kinds.push(kind::CLIENT_CERTIFICATE);
    (b.take(42), kinds)
}

#[test]
fn event_batch_matches_the_golden_bytes() {
    let (bytes, _) = golden_events();
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::write(EVENTS, &bytes).unwrap();
    }
    let golden = std::fs::read(EVENTS).unwrap_or_default();
    assert!(golden == bytes, "{EVENTS} differs from what the encoder writes (UPDATE_GENERATED=1 rewrites it)");
}

#[test]
fn golden_batch_holds_every_event_kind() {
    let (_, mut kinds) = golden_events();
    kinds.sort_unstable();
    let all: Vec<u8> = kind::ALL.iter().map(|(_, v)| *v as u8).collect();
    assert_eq!(kinds, all);
}

/// test/unit/golden/commands.bin is written by TypeScript's CommandWriter: one
/// RESPOND with fields and a body, one without either, then one of each
/// stream command: a 103, a final head without FIN, DATA, trailers (status
/// 0), CONSUMED, RESET, STOP_SENDING, OPEN_STREAM, DATAGRAM and
/// CLOSE_SESSION.
#[test]
fn commands_from_typescript_decode() {
    assert_eq!(command_kind::ALL.len(), 9, "a new command kind needs a case here and in test/boundary.test.ts");
    let golden = std::fs::read(COMMANDS).expect("test/unit/golden/commands.bin");
    let mut reader = CommandReader::new(&golden);
    let Some(Ok(Command::Respond(r))) = reader.next_command() else { panic!("first command") };
    assert_eq!((r.conn, r.stream, r.status), (7, (1 << 53) - 4, 200));
    let fields: Vec<(&[u8], &[u8])> = r.fields.clone();
    assert_eq!(fields, vec![(&b"content-type"[..], &b"text/plain"[..]), (&b"set-cookie"[..], &b"a=B64+/="[..])]);
    assert_eq!(r.body, b"hello \xe2\x9c\x93");
    let Some(Ok(Command::Respond(r))) = reader.next_command() else { panic!("second command") };
    assert_eq!((r.conn, r.stream, r.status, r.fields.len(), r.body.len()), (4_000_000_000, 0, 404, 0, 0));

    let mut next = || match reader.next_command() {
        Some(Ok(Command::Stream(c))) => (c.conn, c.stream, c.what),
        _ => panic!("a stream command expected"),
    };
    let (conn, stream, what) = next();
    assert_eq!((conn, stream), (7, 4));
    let What::Headers { status: 103, fin: false, fields } = what else { panic!("103") };
    assert_eq!(fields, vec![(&b"link"[..], &b"</a.css>; rel=preload"[..])]);
    let What::Headers { status: 200, fin: false, fields } = next().2 else { panic!("head") };
    assert_eq!(fields.len(), 300, "more than 255 fields");
    assert_eq!(fields[299], (&b"x-299"[..], &b"Value-299"[..]));
    let What::Data { fin: false, data } = next().2 else { panic!("data") };
    assert_eq!(data, &[0u8, 1, 255][..]);
    let What::Headers { status: 0, fin: true, fields } = next().2 else { panic!("trailers") };
    assert_eq!(fields, vec![(&b"x-checksum"[..], &b"Ab+/="[..])]);
    let What::Consumed(65536) = next().2 else { panic!("consumed") };
    let (conn, stream, what) = next();
    assert_eq!((conn, stream), (4_000_000_000, (1 << 53) - 4));
    let What::Reset(0x10c) = what else { panic!("reset") };
    let What::StopSending(0x52e4_a40f_a8db) = next().2 else { panic!("stop sending") };
    let (conn, stream, what) = next();
    assert_eq!((conn, stream), (7, 3));
    let What::Open { session: 0 } = what else { panic!("open") };
    let What::Datagram(payload) = next().2 else { panic!("datagram") };
    assert_eq!(payload, &[9u8, 0, 255][..]);
    let What::CloseSession { code: 0xdead_beef, reason } = next().2 else { panic!("close session") };
    assert_eq!(reason, "bye \u{2713}".as_bytes());
    assert!(reader.next_command().is_none(), "exactly twelve commands");
}
