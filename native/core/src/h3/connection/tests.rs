//! The HTTP/3 layer of one connection, driven by a real quiche client
//! through the in-memory pair (crate::testing): real packets, real bytes,
//! and what the application is told.

use crate::app::SessionStream;
use crate::app::{AbortReason, Action};
use crate::h3::codes::{H3_NO_ERROR, H3_REQUEST_REJECTED, WT_BUFFERED_STREAM_REJECTED};
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
    assert_eq!(head.method(), b"GET");
    assert_eq!(head.path(), Some(&b"/hello?x=1"[..]));
    assert_eq!(head.authority(), Some(&b"localhost"[..]));
    assert_eq!(head.scheme(), Some(&b"https"[..]));
    assert_eq!(head.fields().collect::<Vec<_>>(), vec![(&b"accept"[..], &b"text/plain"[..])]);
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
fn a_streamed_body_that_arrives_with_its_header_section_rides_in_the_request() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    send_headers_owned(&mut pair, 0, &post(4096), false);
    pair.send_data(0, &vec![b'z'; 4096], true);
    pair.exchange();
    let [Report::Request { complete, ended, body, .. }] = requests(&pair)[..] else {
        panic!("one request expected, got {:?}", pair.app.reports);
    };
    assert!(*complete && *ended);
    assert_eq!(body.as_deref(), Some(&vec![b'z'; 4096][..]));
    assert!(
        !pair.app.reports.iter().any(|r| matches!(r, Report::Body { .. })),
        "no BODY event follows a complete request: {:?}",
        pair.app.reports
    );
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
    let connect = [
        (":method", "CONNECT"),
        (":protocol", "webtransport"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/wt"),
    ];
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

/// The frames the client read on a stream: (type, payload).
fn frames_of(pair: &Pair, stream: u64) -> Vec<(u64, Vec<u8>)> {
    let data = &pair.received[&stream].data;
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (ty, a) = crate::varint::decode(&data[at..]).expect("frame type");
        let (len, b) = crate::varint::decode(&data[at + a..]).expect("frame length");
        let start = at + a + b;
        out.push((ty, data[start..start + len as usize].to_vec()));
        at = start + len as usize;
    }
    out
}

fn decoded(payload: &[u8]) -> Vec<(String, String)> {
    use quiche::h3::NameValue;
    let lines = quiche::h3::qpack::Decoder::new().decode(payload, 1 << 20).expect("QPACK");
    lines
        .iter()
        .map(|h| (String::from_utf8_lossy(h.name()).into_owned(), String::from_utf8_lossy(h.value()).into_owned()))
        .collect()
}

fn field<'a>(lines: &'a [(String, String)], name: &str) -> Option<&'a str> {
    lines.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn get(pair: &mut Pair, stream: u64) {
    pair.send_headers(stream, GET, true);
    pair.exchange();
}

#[test]
fn a_streamed_response_reports_progress_as_quic_takes_its_body_and_ends_with_trailers() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    get(&mut pair, 0);
    let head: [(&[u8], &[u8]); 1] = [(b"x-mixed", b"MiXeD Case")];
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 103, fields: &[(b"link", b"</a.css>; rel=preload")], fin: false });
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &head, fin: false });
    let chunk = vec![b'z'; 100 * 1024];
    for _ in 0..3 {
        pair.h3.act(&mut pair.server, 0, Action::Data { data: &chunk, fin: false });
        pair.exchange();
    }
    for _ in 0..8 {
        pair.exchange();
    }
    let sent: Vec<u64> =
        pair.app.reports.iter().filter_map(|r| if let Report::Sent { total, .. } = r { Some(*total) } else { None }).collect();
    assert_eq!(sent.last(), Some(&(300 * 1024)), "QUIC took all of it: {sent:?}");
    assert!(sent.windows(2).all(|w| w[0] < w[1]), "totals only grow: {sent:?}");
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 0, fields: &[(b"x-checksum", b"Ab+/=")], fin: true });
    pair.exchange();

    assert!(pair.received[&0].fin);
    let frames = frames_of(&pair, 0);
    assert_eq!(frames.first().map(|f| f.0), Some(0x1));
    assert_eq!(field(&decoded(&frames[0].1), ":status"), Some("103"), "the 103 comes first");
    let final_head = decoded(&frames[1].1);
    assert_eq!(field(&final_head, ":status"), Some("200"));
    assert_eq!(field(&final_head, "x-mixed"), Some("MiXeD Case"), "values keep their case");
    let body: usize = frames.iter().filter(|f| f.0 == 0x0).map(|f| f.1.len()).sum();
    assert_eq!(body, 300 * 1024);
    let (ty, trailers) = frames.last().unwrap();
    assert_eq!(*ty, 0x1);
    assert_eq!(decoded(trailers), vec![("x-checksum".to_string(), "Ab+/=".to_string())], "trailers carry no :status");
}

#[test]
fn request_trailers_reach_the_application_after_the_body_and_before_its_end() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    send_headers_owned(&mut pair, 0, &post(5), false);
    pair.send_data(0, b"hello", false);
    pair.send_headers(0, &[("x-checksum", "42")], true);
    pair.exchange();
    let kinds: Vec<&str> = pair
        .app
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::Request { complete: false, .. } => Some("request"),
            Report::Body { data, fin: false, .. } if data == b"hello" => Some("body"),
            Report::Trailers { fields, .. } if fields == &vec![(b"x-checksum".to_vec(), b"42".to_vec())] => Some("trailers"),
            Report::Body { data, fin: true, .. } if data.is_empty() => Some("end"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["request", "body", "trailers", "end"], "{:?}", pair.app.reports);
}

#[test]
fn stop_sending_during_a_streamed_response_is_an_abort_for_the_application() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    get(&mut pair, 0);
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &[], fin: false });
    pair.h3.act(&mut pair.server, 0, Action::Data { data: b"first", fin: false });
    pair.exchange();
    // The client will not read the rest; the application has nothing queued.
    pair.client.stream_shutdown(0, quiche::Shutdown::Read, 0x10c).unwrap();
    pair.exchange();
    assert!(
        pair.app.reports.contains(&Report::Aborted { stream: 0, reason: AbortReason::PeerStopSending, code: 0x10c }),
        "{:?}",
        pair.app.reports
    );
    // Later writes for the stream are ignored.
    pair.h3.act(&mut pair.server, 0, Action::Data { data: b"late", fin: true });
    pair.exchange();
}

#[test]
fn a_header_section_over_the_clients_limit_resets_the_stream_and_says_why() {
    let mut pair = Pair::with(&options(true, false));
    // SETTINGS with SETTINGS_MAX_FIELD_SECTION_SIZE (0x06) = 200.
    pair.client.stream_send(2, &[0x00, 0x04, 0x03, 0x06, 0x40, 0xc8], false).unwrap();
    pair.client.stream_send(6, &[0x02], false).unwrap();
    pair.client.stream_send(10, &[0x03], false).unwrap();
    pair.exchange();
    assert!(pair.app.reports.contains(&Report::PeerFieldLimit { limit: 200 }));
    get(&mut pair, 0);
    let big = vec![b'v'; 300];
    pair.h3.respond(&mut pair.server, 0, 200, &[(b"x-big", &big)], b"");
    pair.exchange();
    assert!(pair.app.reports.contains(&Report::Aborted { stream: 0, reason: AbortReason::FieldSectionTooLarge, code: 0x102 }));
    assert!(pair
        .app
        .reports
        .iter()
        .any(|r| matches!(r, Report::Log { message, .. } if message.contains("SETTINGS_MAX_FIELD_SECTION_SIZE of 200"))));
    assert_eq!(pair.received.get(&0).and_then(|r| r.reset), Some(0x102), "the client sees the reset");
    // A section within the limit is sent.
    get(&mut pair, 4);
    pair.h3.respond(&mut pair.server, 4, 200, &[(b"x-small", b"ok")], b"fine");
    pair.exchange();
    assert_eq!(pair.status(4), Some(200));
}

#[test]
fn a_reset_action_resets_the_stream_with_the_code() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    get(&mut pair, 0);
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &[], fin: false });
    pair.h3.act(&mut pair.server, 0, Action::Reset(0x102));
    pair.exchange();
    assert_eq!(pair.received.get(&0).and_then(|r| r.reset), Some(0x102));
    assert_eq!(crate::counters::Counters::get(&pair.counters.request_streams_open), 0);
}

#[test]
fn a_request_reset_before_it_was_read_is_answered_with_a_reset() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    // Headers, a body chunk and the reset reach the server together: quiche
    // reports only the reset, and drops the bytes.
    send_headers_owned(&mut pair, 0, &post(100), false);
    pair.send_data(0, &[1; 10], false);
    pair.client.stream_shutdown(0, quiche::Shutdown::Write, 0x10c).unwrap();
    pair.exchange();
    assert!(requests(&pair).is_empty());
    assert_eq!(
        pair.received.get(&0).and_then(|r| r.reset),
        Some(crate::h3::codes::H3_REQUEST_INCOMPLETE),
        "the client is not left waiting"
    );
}

#[test]
fn a_streamed_body_arrives_whole_and_in_order_whether_quic_takes_it_at_once_or_later() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    get(&mut pair, 0);
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &[], fin: false });
    // Chunks of a different byte each: the first ones go to QUIC straight
    // from the action, then the client's 256 KiB window fills and the rest
    // waits in the queue, with more chunks appended behind it.
    let mut expected = Vec::new();
    pair.client_reads = false;
    for i in 0..7u8 {
        let chunk = vec![b'a' + i; 60 * 1024 + usize::from(i)];
        expected.extend_from_slice(&chunk);
        pair.h3.act(&mut pair.server, 0, Action::Data { data: &chunk, fin: false });
        pair.exchange();
    }
    let sent_so_far = pair.app.reports.iter().filter(|r| matches!(r, Report::Sent { .. })).count();
    assert!(sent_so_far >= 3, "the first chunks were taken at once: {sent_so_far} SENT reports");
    pair.client_reads = true;
    for _ in 0..8 {
        pair.exchange();
    }
    // The end: an empty DATA frame carrying the FIN, never a lone FIN.
    pair.h3.act(&mut pair.server, 0, Action::Data { data: &[], fin: true });
    for _ in 0..4 {
        pair.exchange();
    }
    assert!(pair.received[&0].fin);
    let frames = frames_of(&pair, 0);
    let body: Vec<u8> = frames.iter().filter(|f| f.0 == 0x0).flat_map(|f| f.1.iter().copied()).collect();
    assert!(body == expected, "the body arrived whole and in order ({} of {} bytes)", body.len(), expected.len());
    assert_eq!(frames.last().map(|f| (f.0, f.1.len())), Some((0x0, 0)), "the FIN rides on an empty DATA frame");
    let sent: Vec<u64> =
        pair.app.reports.iter().filter_map(|r| if let Report::Sent { total, .. } = r { Some(*total) } else { None }).collect();
    assert_eq!(sent.last(), Some(&(expected.len() as u64)), "{sent:?}");
    assert!(sent.windows(2).all(|w| w[0] <= w[1]), "totals never shrink: {sent:?}");
}

/// A pair whose WebTransport sessions go to the application, with one
/// session on stream 0 requested (not yet answered).
fn app_session_pair() -> Pair {
    let mut o = options(true, true);
    o.webtransport_app = true;
    let mut pair = Pair::with(&o);
    pair.client_preamble();
    let connect = [
        (":method", "CONNECT"),
        (":protocol", "webtransport"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/chat"),
    ];
    pair.send_headers(0, &connect, false);
    pair.exchange();
    pair
}

#[test]
fn an_application_session_waits_for_the_application_and_opens_on_its_2xx() {
    let mut pair = app_session_pair();
    let [Report::Request { stream: 0, head, .. }] = requests(&pair)[..] else { panic!("{:?}", pair.app.reports) };
    assert_eq!(head.method(), b"CONNECT");
    assert_eq!(pair.status(0), None, "no answer before the application's");
    assert!(!pair.app.reports.iter().any(|r| matches!(r, Report::SessionOpen { .. })));
    let fields: [(&[u8], &[u8]); 1] = [(b"wt-protocol", b"\"chat-v1\"")];
    assert!(pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &fields, fin: false }));
    pair.exchange();
    assert_eq!(pair.status(0), Some(200));
    assert!(pair.app.reports.contains(&Report::SessionOpen { session: 0, path: b"/chat".to_vec() }));
    assert!(!pair.received[&0].fin, "the CONNECT stream stays open");
}

#[test]
fn a_refused_application_session_frees_its_place_under_the_cap() {
    use crate::app::Response;
    use crate::counters::Counters;
    let mut pair = app_session_pair();
    assert_eq!(Counters::get(&pair.counters.wt_sessions_open), 1);
    pair.h3.act(&mut pair.server, 0, Action::Respond(Response { status: 403, fields: &[], body: b"" }));
    pair.exchange();
    assert_eq!(pair.status(0), Some(403));
    assert_eq!(Counters::get(&pair.counters.wt_sessions_open), 0);
    // A stream for the refused session is refused too.
    pair.client.stream_send(4, &[0x40, 0x41, 0x00, b'x'], false).unwrap();
    pair.exchange();
    assert_eq!(pair.received.get(&4).and_then(|r| r.reset), Some(WT_BUFFERED_STREAM_REJECTED));
}

#[test]
fn application_session_streams_and_datagrams_flow_both_ways_and_close_ends_it() {
    let mut pair = app_session_pair();
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &[], fin: false });
    pair.exchange();

    // A client bidirectional stream: its bytes reach the application, which answers on it.
    pair.client.stream_send(4, &[0x40, 0x41, 0x00, b'h', b'i'], false).unwrap();
    pair.exchange();
    assert!(pair.app.reports.contains(&Report::SessionStream { session: 0, stream: 4, what: SessionStream::Opened, bidi: true }));
    assert_eq!(pair.app.body_of(4), (2, false));
    assert!(pair.h3.act(&mut pair.server, 4, Action::Data { data: b"hello back", fin: true }));
    pair.client.stream_send(4, b"!", true).unwrap();
    pair.exchange();
    assert_eq!(pair.received[&4].data, b"hello back");
    assert!(pair.received[&4].fin);
    assert_eq!(pair.app.body_of(4), (3, true));
    assert!(pair.app.reports.contains(&Report::SessionStream { session: 0, stream: 4, what: SessionStream::Closed, bidi: true }));

    // Streams the application opens: bidirectional 1, unidirectional 7 (3 is the control stream).
    assert!(pair.h3.act(&mut pair.server, 1, Action::Open { session: 0 }));
    assert!(pair.h3.act(&mut pair.server, 1, Action::Data { data: b"from server", fin: false }));
    assert!(pair.h3.act(&mut pair.server, 7, Action::Open { session: 0 }));
    assert!(pair.h3.act(&mut pair.server, 7, Action::Data { data: b"one way", fin: true }));
    assert!(!pair.h3.act(&mut pair.server, 5 - 4, Action::Open { session: 0 }), "an ID already used is refused");
    pair.exchange();
    let mut bidi = vec![0x40, 0x41, 0x00];
    bidi.extend_from_slice(b"from server");
    assert_eq!(pair.received[&1].data, bidi);
    let mut uni = vec![0x40, 0x54, 0x00];
    uni.extend_from_slice(b"one way");
    assert_eq!(pair.received[&7].data, uni);
    assert!(pair.received[&7].fin);
    // The client answers on the server's bidirectional stream.
    pair.client.stream_send(1, b"reply", true).unwrap();
    pair.exchange();
    assert_eq!(pair.app.body_of(1), (5, true));

    // Datagrams: quarter stream ID 0, then the payload.
    pair.client.dgram_send(&[0x00, b'p', b'i', b'n', b'g']).unwrap();
    pair.exchange();
    assert!(pair.app.reports.contains(&Report::Datagram { session: 0, payload: b"ping".to_vec() }));
    assert!(pair.h3.act(&mut pair.server, 0, Action::Datagram(b"pong")));
    pair.exchange();
    assert_eq!(pair.datagrams, vec![vec![0x00, b'p', b'o', b'n', b'g']]);

    // Close: the capsule, then FIN on the CONNECT stream; the open stream 1 is reset.
    assert!(pair.h3.act(&mut pair.server, 0, Action::CloseSession { code: 7, reason: b"bye" }));
    pair.exchange();
    let connect = &pair.received[&0];
    assert!(connect.fin);
    let close = super::super::webtransport::close_capsule(7, b"bye");
    assert!(connect.data.ends_with(&close), "CLOSE_WEBTRANSPORT_SESSION before the FIN");
    assert!(pair.app.reports.contains(&Report::SessionClosed { session: 0, code: 7 }));
    assert!(pair.app.reports.contains(&Report::SessionStream { session: 0, stream: 1, what: SessionStream::Closed, bidi: true }));
    assert_eq!(crate::counters::Counters::get(&pair.counters.wt_sessions_open), 0);
    assert_eq!(crate::counters::Counters::get(&pair.counters.wt_peer_streams_open), 0);
}

#[test]
fn an_application_stream_reads_only_its_credit_ahead_of_what_was_consumed() {
    let mut pair = app_session_pair();
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &[], fin: false });
    pair.exchange();
    let mut bytes = vec![0x40, 0x41, 0x00];
    bytes.extend_from_slice(&[9u8; 10_000]);
    pair.client.stream_send(4, &bytes, false).unwrap();
    pair.exchange();
    // options(): body credit 2048.
    assert_eq!(pair.app.body_of(4), (2048, false));
    pair.h3.act(&mut pair.server, 4, Action::Consumed(2048));
    pair.exchange();
    assert_eq!(pair.app.body_of(4), (4096, false));
}

#[test]
fn an_application_stream_ended_after_its_bytes_were_acknowledged_still_ends() {
    let mut pair = app_session_pair();
    pair.h3.act(&mut pair.server, 0, Action::Headers { status: 200, fields: &[], fin: false });
    pair.exchange();
    assert!(pair.h3.act(&mut pair.server, 7, Action::Open { session: 0 }));
    assert!(pair.h3.act(&mut pair.server, 7, Action::Data { data: b"hello", fin: false }));
    pair.exchange();
    pair.exchange();
    assert!(!pair.received[&7].fin);
    // Everything sent so far is acknowledged; now the end alone.
    assert!(pair.h3.act(&mut pair.server, 7, Action::Data { data: b"", fin: true }));
    pair.exchange();
    assert!(pair.received[&7].fin, "the FIN reached the client");
}

#[test]
fn header_sections_large_and_small_arrive_whole_and_the_kept_buffer_stays_small() {
    let mut pair = Pair::with(&options(true, false));
    pair.client_preamble();
    let big = vec![b'v'; 10 * 1024];
    let sections: [(u64, &[u8]); 3] = [(0, b"small"), (4, &big), (8, b"small again")];
    for (stream, value) in sections {
        get(&mut pair, stream);
        pair.h3.respond(&mut pair.server, stream, 200, &[(b"x-value", value), (b"content-type", b"text/plain")], b"body");
        pair.exchange();
        let data = &pair.received[&stream].data;
        let (_, a) = crate::varint::decode(data).unwrap();
        let (len, b) = crate::varint::decode(&data[a..]).unwrap();
        let lines = decoded(&data[a + b..a + b + len as usize]);
        assert_eq!(field(&lines, ":status"), Some("200"));
        assert_eq!(field(&lines, "x-value").map(str::as_bytes), Some(value), "stream {stream}");
        assert_eq!(field(&lines, "content-type"), Some("text/plain"));
        assert!(data.ends_with(b"body"), "the body follows the head");
    }
    assert!(pair.h3.qpack_scratch.len() <= super::send::SCRATCH_MAX, "kept {} bytes", pair.h3.qpack_scratch.len());
}

/// The body a test response on `stream` carries: `len` bytes that name it.
fn numbered_body(stream: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + ((stream as usize / 4 + i) % 26) as u8).collect()
}

/// The DATA frames' payloads of what the client read on `stream`, joined.
fn body_read(pair: &Pair, stream: u64) -> Vec<u8> {
    frames_of(pair, stream).into_iter().filter(|(ty, _)| *ty == 0x0).flat_map(|(_, p)| p).collect()
}

#[test]
fn small_responses_answered_together_share_a_packet() {
    // quiche as published puts one STREAM frame in a packet (patch 11 of
    // native/patches lifts that), so ten small responses were ten packets.
    let mut pair = Pair::with(&options(false, false));
    pair.client_preamble();
    let streams: Vec<u64> = (0..10).map(|i| i * 4).collect();
    for &s in &streams {
        pair.send_headers(s, GET, true);
    }
    pair.exchange();
    assert_eq!(requests(&pair).len(), streams.len());
    let before = pair.server_packets;
    for &s in &streams {
        pair.h3.respond(&mut pair.server, s, 200, &[(b"content-type", b"text/plain")], &numbered_body(s, 16));
    }
    pair.exchange();
    let sent = pair.server_packets - before;
    assert!(sent <= 2, "ten 16-byte responses took {sent} packets");
    for &s in &streams {
        assert_eq!(pair.status(s), Some(200), "stream {s}");
        assert_eq!(body_read(&pair, s), numbered_body(s, 16), "stream {s}");
        assert!(pair.received[&s].fin, "stream {s} ended");
    }
}

#[test]
fn responses_of_many_sizes_fill_packets_and_every_stream_finishes() {
    // Packets filled across stream boundaries: whatever room is left after
    // one frame goes to the next stream, and a stream whose frame header no
    // longer fits stays queued for the next packet instead of stalling.
    let mut opts = options(false, false);
    opts.max_streams_per_connection = 64;
    let mut pair = Pair::with(&opts);
    pair.client_preamble();
    let sizes: Vec<(u64, usize)> = (0..40u64).map(|i| (i * 4, 1 + (i as usize * 397) % 700)).collect();
    for &(s, _) in &sizes {
        pair.send_headers(s, GET, true);
    }
    pair.exchange();
    assert_eq!(requests(&pair).len(), sizes.len());
    let before = pair.server_packets;
    for &(s, len) in &sizes {
        pair.h3.respond(&mut pair.server, s, 200, &[], &numbered_body(s, len));
    }
    for _ in 0..8 {
        pair.exchange();
    }
    let total: usize = sizes.iter().map(|&(_, len)| len).sum();
    let sent = pair.server_packets - before;
    // Full packets carry over 1,200 bytes of stream data here: about 12
    // packets for these 14 KB, where one packet per stream would be 40.
    assert!(sent <= (total / 1200 + 4) as u64, "{total} bytes over {sent} packets");
    for &(s, len) in &sizes {
        assert_eq!(body_read(&pair, s), numbered_body(s, len), "stream {s}");
        assert!(pair.received[&s].fin, "stream {s} ended");
    }
}
