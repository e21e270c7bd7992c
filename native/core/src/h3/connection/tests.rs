//! The HTTP/3 layer of one connection, driven by a real quiche client
//! through the in-memory pair (crate::testing): real packets, real bytes,
//! and what the application is told.

use crate::app::{AbortReason, Action};
use crate::h3::codes::{H3_NO_ERROR, H3_REQUEST_REJECTED};
use crate::testing::{options, Pair, Report};

const GET: &[(&str, &str)] = &[(":method", "GET"), (":scheme", "https"), (":authority", "localhost"), (":path", "/hello?x=1")];

fn post(len: usize) -> Vec<(&'static str, String)> {
    vec![
        (":method", "POST".into()),
        (":scheme", "https".into()),
        (":authority", "localhost".into()),
        (":path", "/upload".into()),
        ("content-length", len.to_string()),
    ]
}

fn send_headers_owned(pair: &mut Pair, stream: u64, fields: &[(&'static str, String)], fin: bool) {
    let borrowed: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    pair.send_headers(stream, &borrowed, fin);
}

fn requests(pair: &Pair) -> Vec<&Report> {
    pair.app.reports.iter().filter(|r| matches!(r, Report::Request { .. })).collect()
}

#[test]
fn a_get_is_reported_with_its_head_and_complete() {
    let mut pair = Pair::with(&options(false, false));
    pair.client_preamble();
    pair.send_headers(0, &[GET[0], GET[1], GET[2], GET[3], ("accept", "text/plain")], true);
    pair.exchange();
    let [Report::Request { stream, head, complete, ended, body }] = requests(&pair)[..] else {
        panic!("one request expected, got {:?}", pair.app.reports);
    };
    assert_eq!(*stream, 0);
    assert_eq!(head.method, b"GET");
    assert_eq!(head.path.as_deref(), Some(&b"/hello?x=1"[..]));
    assert_eq!(head.authority.as_deref(), Some(&b"localhost"[..]));
    assert_eq!(head.scheme.as_deref(), Some(&b"https"[..]));
    assert_eq!(head.fields, vec![(b"accept".to_vec(), b"text/plain".to_vec())]);
    assert!(*complete && *ended);
    assert_eq!(*body, None);
}

#[test]
fn a_buffered_body_over_the_window_is_answered_413_and_the_client_told_to_stop() {
    let opts = options(false, false);
    let mut pair = Pair::with(&opts);
    pair.client_preamble();
    let len = opts.body_window + 500;
    send_headers_owned(&mut pair, 0, &post(len), false);
    pair.send_data(0, &vec![b'x'; len], false);
    pair.client_reads = false;
    pair.exchange();
    // STOP_SENDING(H3_NO_ERROR): the client's next write is refused.
    assert_eq!(pair.client.stream_send(0, b"more", false), Err(quiche::Error::StreamStopped(H3_NO_ERROR)));
    pair.client_reads = true;
    pair.exchange();
    assert_eq!(pair.status(0), Some(413));
    assert!(pair.received[&0].fin, "the 413 ends the stream");
    assert!(requests(&pair).is_empty(), "the application never sees it");
    assert_eq!(pair.counters.native_statuses.get(413), 1);
}

#[test]
fn streamed_bodies_are_read_up_to_the_credit_and_resume_as_the_application_consumes() {
    let opts = options(true, false);
    let credit = opts.body_credit;
    let mut pair = Pair::with(&opts);
    pair.client_preamble();
    let len = 3 * credit;
    send_headers_owned(&mut pair, 0, &post(len), false);
    pair.exchange();
    let sent = pair.send_data(0, &vec![b'y'; len], true);
    assert!(sent > len, "the whole DATA frame fits the client's window");
    pair.exchange();
    let [Report::Request { complete, ended, body, .. }] = requests(&pair)[..] else {
        panic!("one request expected, got {:?}", pair.app.reports);
    };
    assert!(!*complete && !*ended);
    assert_eq!(*body, None);
    assert_eq!(pair.app.body_of(0), (credit, false), "reading stops at the credit");
    pair.exchange();
    pair.app.settle_all();
    pair.exchange();
    assert_eq!(pair.app.body_of(0), (credit, false), "and stays stopped: settling batches is not consuming");

    // Half consumed: half a credit more is read.
    assert!(pair.h3.act(&mut pair.server, 0, Action::Consumed((credit / 2) as u64)));
    pair.exchange();
    assert_eq!(pair.app.body_of(0), (credit + credit / 2, false));
    pair.h3.act(&mut pair.server, 0, Action::Consumed((credit + credit / 2) as u64));
    pair.exchange();
    assert_eq!(pair.app.body_of(0), (2 * credit + credit / 2, false));
    pair.h3.act(&mut pair.server, 0, Action::Consumed(credit as u64));
    pair.exchange();
    assert_eq!(pair.app.body_of(0), (3 * credit, true), "the rest, with FIN");
}

#[test]
fn after_goaway_a_new_request_stream_is_rejected() {
    let mut pair = Pair::with(&options(false, false));
    pair.client_preamble();
    pair.send_headers(0, GET, true);
    pair.exchange();
    pair.h3.send_goaway(&mut pair.server);
    pair.exchange();
    pair.send_headers(4, GET, true);
    pair.exchange();
    assert_eq!(requests(&pair).len(), 1, "only the request before GOAWAY is reported");
    assert_eq!(pair.received.get(&4).and_then(|r| r.reset), Some(H3_REQUEST_REJECTED));
}

#[test]
fn a_webtransport_bidi_stream_is_echoed() {
    let mut pair = Pair::with(&options(false, true));
    pair.client_preamble();
    let connect = [(":method", "CONNECT"), (":protocol", "webtransport"), (":scheme", "https"), (":authority", "localhost"), (":path", "/wt")];
    pair.send_headers(0, &connect, false);
    pair.exchange();
    assert_eq!(pair.status(0), Some(200));
    assert!(pair.app.reports.contains(&Report::SessionOpen { session: 0, path: b"/wt".to_vec() }));
    // Signal 0x41 (two-byte varint), session id 0, then the payload.
    let mut bytes = vec![0x40, 0x41, 0x00];
    bytes.extend_from_slice(b"echo me");
    pair.client.stream_send(4, &bytes, true).unwrap();
    pair.exchange();
    let echoed = &pair.received[&4];
    assert_eq!(echoed.data, b"echo me");
    assert!(echoed.fin);
}

#[test]
fn a_peer_reset_of_a_delivered_request_is_reported_as_an_abort() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    send_headers_owned(&mut pair, 0, &post(10), false);
    pair.exchange();
    assert_eq!(requests(&pair).len(), 1);
    pair.client.stream_shutdown(0, quiche::Shutdown::Write, 0x10c).unwrap();
    pair.exchange();
    assert!(
        pair.app.reports.contains(&Report::Aborted { stream: 0, reason: AbortReason::PeerReset, code: 0x10c }),
        "{:?}",
        pair.app.reports
    );
}

#[test]
fn buffered_body_bytes_and_queued_send_bytes_are_counted_and_return_to_0() {
    use crate::counters::Counters;
    let mut pair = Pair::with(&options(false, false));
    pair.client_preamble();
    send_headers_owned(&mut pair, 0, &post(1000), false);
    pair.send_data(0, &[b'x'; 600], false);
    pair.exchange();
    assert_eq!(Counters::get(&pair.counters.body_bytes_buffered), 600, "a partial body waits in the body window");
    assert_eq!(Counters::get(&pair.counters.request_streams_open), 1);
    pair.send_data(0, &[b'x'; 400], true);
    pair.exchange();
    assert_eq!(requests(&pair).len(), 1);
    assert_eq!(Counters::get(&pair.counters.body_bytes_buffered), 0, "handed to the application, the buffer is freed");

    // 400 KiB against the client's 256 KiB stream window: the rest waits in the HTTP/3 layer.
    let body = vec![b'r'; 400 * 1024];
    pair.client_reads = false;
    pair.h3.respond(&mut pair.server, 0, 200, &[], &body);
    pair.exchange();
    let queued = Counters::get(&pair.counters.send_bytes_queued);
    assert!(queued > 100 * 1024 && queued < body.len() as u64, "queued {queued}");
    pair.client_reads = true;
    for _ in 0..16 {
        pair.exchange();
    }
    assert_eq!(Counters::get(&pair.counters.send_bytes_queued), 0, "flow control let it all out");
    assert!(pair.received[&0].fin);

    // A connection that closes with bytes still queued gives its share back.
    pair.client_reads = false;
    send_headers_owned(&mut pair, 4, &post(0), true);
    pair.exchange();
    pair.h3.respond(&mut pair.server, 4, 200, &[], &body);
    assert!(Counters::get(&pair.counters.send_bytes_queued) > 0);
    pair.h3.on_connection_closed(&mut pair.app);
    assert_eq!(Counters::get(&pair.counters.send_bytes_queued), 0);
    assert_eq!(Counters::get(&pair.counters.request_streams_open), 0);
}
