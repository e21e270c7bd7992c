//! An in-memory quiche client/server pair with the server's HTTP/3 layer
//! (`H3Connection`) on top, for the unit tests of that layer and for the
//! stream-classifier fuzz target (cargo feature `test-pair`). Packets move
//! between two real quiche connections; nothing touches a socket. The
//! server's application is a `Recorder` that keeps every report.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use quiche::h3::NameValue;

use crate::app::{AbortReason, Action, Application, ConnClosed, LogLevel, Mark, Reply, Request, SessionStream};
use crate::config::Options;
use crate::counters::Counters;
use crate::h3::connection::H3Connection;
use crate::h3::request::RequestHead;
use crate::h3::settings::LocalSettings;
use crate::ids::{ConnId, StreamId};
use crate::varint;

const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../certs");

/// One report to the application, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    Request { stream: u64, head: RequestHead, complete: bool, ended: bool, body: Option<Vec<u8>> },
    Body { stream: u64, data: Vec<u8>, fin: bool },
    Trailers { stream: u64, fields: Vec<(Vec<u8>, Vec<u8>)> },
    Sent { stream: u64, total: u64 },
    PeerFieldLimit { limit: u64 },
    Aborted { stream: u64, reason: AbortReason, code: u64 },
    SessionOpen { session: u64, path: Vec<u8> },
    SessionClosed { session: u64, code: u32 },
    SessionStream { session: u64, stream: u64, what: SessionStream, bidi: bool },
    Datagrams { count: u32 },
    Datagram { session: u64, payload: Vec<u8> },
    ConnOpen,
    PeerMoved { peer: SocketAddr },
    ConnClosed,
    Log { level: LogLevel, message: String },
    ServerClosed,
}

/// An application that records what it is told and answers later. Marks
/// are turns: `turn` is the one being recorded (from 1), `settled_up_to`
/// the last one the test declared answered (0: none).
pub struct Recorder {
    pub reports: Vec<Report>,
    pub turn: u64,
    pub settled_up_to: u64,
    /// Keep at most this many reports (0: all); the fuzz target bounds memory.
    pub cap: usize,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder { reports: Vec::new(), turn: 1, settled_up_to: 0, cap: 0 }
    }
}

impl Recorder {
    fn push(&mut self, r: Report) {
        if self.cap == 0 || self.reports.len() < self.cap {
            self.reports.push(r);
        }
    }

    /// Everything handed over so far is answered.
    pub fn settle_all(&mut self) {
        self.settled_up_to = self.turn;
        self.turn += 1;
    }

    /// Body bytes reported for `stream`, and whether the last chunk had FIN.
    pub fn body_of(&self, stream: u64) -> (usize, bool) {
        let mut len = 0;
        let mut fin = false;
        for r in &self.reports {
            if let Report::Body { stream: s, data, fin: f } = r {
                if *s == stream {
                    len += data.len();
                    fin |= *f;
                }
            }
        }
        (len, fin)
    }
}

impl Application for Recorder {
    fn on_request(&mut self, _: ConnId, stream: StreamId, request: Request<'_>) -> Reply<'_> {
        self.push(Report::Request {
            stream: stream.0,
            head: request.head.clone(),
            complete: request.complete,
            ended: request.ended,
            body: request.body.map(<[u8]>::to_vec),
        });
        Reply::Later
    }

    fn on_body(&mut self, _: ConnId, stream: StreamId, data: &[u8], fin: bool) {
        self.push(Report::Body { stream: stream.0, data: data.to_vec(), fin });
    }

    fn on_trailers(&mut self, _: ConnId, stream: StreamId, fields: &[(Vec<u8>, Vec<u8>)]) {
        self.push(Report::Trailers { stream: stream.0, fields: fields.to_vec() });
    }

    fn on_peer_field_limit(&mut self, _: ConnId, limit: u64) {
        self.push(Report::PeerFieldLimit { limit });
    }

    fn on_sent(&mut self, _: ConnId, stream: StreamId, total: u64) {
        self.push(Report::Sent { stream: stream.0, total });
    }

    fn on_stream_aborted(&mut self, _: ConnId, stream: StreamId, reason: AbortReason, code: u64) {
        self.push(Report::Aborted { stream: stream.0, reason, code });
    }

    fn on_conn_open(&mut self, _: ConnId, _: SocketAddr, _: &str) {
        self.push(Report::ConnOpen);
    }

    fn on_peer_moved(&mut self, _: ConnId, peer: SocketAddr) {
        self.push(Report::PeerMoved { peer });
    }

    fn on_conn_closed(&mut self, _: ConnId, _: ConnClosed<'_>) {
        self.push(Report::ConnClosed);
    }

    fn on_log(&mut self, level: LogLevel, message: &str) {
        self.push(Report::Log { level, message: message.to_string() });
    }

    fn on_server_closed(&mut self) {
        self.push(Report::ServerClosed);
    }

    fn on_session_open(&mut self, _: ConnId, session: StreamId, path: &[u8]) {
        self.push(Report::SessionOpen { session: session.0, path: path.to_vec() });
    }

    fn on_session_closed(&mut self, _: ConnId, session: StreamId, code: u32, _: &[u8]) {
        self.push(Report::SessionClosed { session: session.0, code });
    }

    fn on_session_stream(&mut self, _: ConnId, session: StreamId, stream: StreamId, what: SessionStream, bidi: bool) {
        self.push(Report::SessionStream { session: session.0, stream: stream.0, what, bidi });
    }

    fn on_datagrams(&mut self, _: ConnId, count: u32) {
        self.push(Report::Datagrams { count });
    }

    fn on_datagram(&mut self, _: ConnId, session: StreamId, payload: &[u8]) {
        self.push(Report::Datagram { session: session.0, payload: payload.to_vec() });
    }

    fn mark(&self) -> Mark {
        Mark(self.turn)
    }

    fn settled(&self, mark: Mark) -> bool {
        self.settled_up_to >= mark.0
    }

    fn accepting(&self) -> bool {
        true
    }

    fn take_actions(&mut self, _: impl FnMut(ConnId, StreamId, Action<'_>)) {}

    fn end_turn(&mut self) {}
}

/// The demo certificate and key, read as the TypeScript side would hand them over.
pub fn demo_identity() -> crate::tls::Identity {
    let read = |name: &str| std::fs::read(format!("{CERTS}/{name}")).expect("demo identity in certs/");
    crate::tls::Identity::from_memory(&read("demo-cert.pem"), &read("demo-key.pem")).expect("demo identity parses")
}

/// Server options for a pair: the demo certificate, small limits.
pub fn options(streamed: bool, webtransport: bool) -> Options {
    Options {
        host: "127.0.0.1".into(),
        identities: Some(crate::certificates::IdentityStore::single(demo_identity())),
        streamed_bodies: streamed,
        body_window: 1024,
        body_credit: 2048,
        max_connections: 1,
        max_streams_per_connection: 16,
        max_field_section_size: 2048,
        stream_window: 64 * 1024,
        webtransport,
        ..Options::default()
    }
}

pub fn client_config() -> quiche::Config {
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

/// What the client read on one stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Received {
    pub data: Vec<u8>,
    pub fin: bool,
    /// The server reset the stream with this code.
    pub reset: Option<u64>,
}

pub struct Pair {
    pub client: quiche::Connection,
    pub server: quiche::Connection,
    pub h3: H3Connection,
    pub app: Recorder,
    pub counters: Arc<Counters>,
    scratch: Vec<u8>,
    body_scratch: Vec<u8>,
    /// The HTTP/3 layer asked for the connection to close.
    pub closed_by_h3: bool,
    /// Per client stream, what the server sent on it (when `record`).
    pub received: HashMap<u64, Received>,
    pub record: bool,
    /// HTTP datagrams the client received (when `record`).
    pub datagrams: Vec<Vec<u8>>,
    /// The client reads its streams (off: quiche keeps a stream the client
    /// has not read to its end, so what the server did to it stays visible).
    pub client_reads: bool,
    /// Packets the server has sent since the handshake began.
    pub server_packets: u64,
}

impl Pair {
    /// A handshaken pair; `None` if the handshake does not complete.
    pub fn new(options: &Options, server_config: &mut quiche::Config, client_config: &mut quiche::Config) -> Option<Pair> {
        let client_addr: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let scid = [0xc1u8; quiche::MAX_CONN_ID_LEN];
        let sscid = [0x5eu8; quiche::MAX_CONN_ID_LEN];
        let client =
            quiche::connect(Some("localhost"), &quiche::ConnectionId::from_ref(&scid), client_addr, server_addr, client_config)
                .ok()?;
        let server =
            quiche::accept(&quiche::ConnectionId::from_ref(&sscid), None, server_addr, client_addr, server_config).ok()?;
        let local = LocalSettings {
            max_field_section_size: options.max_field_section_size as u64,
            webtransport: options.webtransport,
            max_webtransport_sessions: options.webtransport_max_sessions,
        };
        let counters = Arc::new(Counters::default());
        let h3 = H3Connection::new(ConnId(1), options.h3(), local, counters.clone());
        let mut pair = Pair {
            client,
            server,
            h3,
            app: Recorder::default(),
            counters,
            scratch: vec![0; 65536],
            body_scratch: Vec::new(),
            closed_by_h3: false,
            received: HashMap::new(),
            record: true,
            datagrams: Vec::new(),
            client_reads: true,
            server_packets: 0,
        };
        pair.exchange();
        pair.client.is_established().then_some(pair)
    }

    /// A pair with `options(streamed, webtransport)`, for unit tests.
    pub fn with(options: &Options) -> Pair {
        let mut server_config = options.quiche_config(Default::default()).unwrap();
        Pair::new(options, &mut server_config, &mut client_config()).expect("handshake")
    }

    /// Moves packets both ways until neither side has anything to send,
    /// running the server's HTTP/3 layer after every delivery, as the I/O
    /// loop does.
    pub fn exchange(&mut self) {
        let mut buf = [0u8; 1500];
        for _ in 0..64 {
            let mut moved = false;
            while let Ok((n, info)) = self.client.send(&mut buf) {
                moved = true;
                let _ = self.server.recv(&mut buf[..n], quiche::RecvInfo { from: info.from, to: info.to });
            }
            if !self.server.is_closed() && !self.server.is_draining() && !self.closed_by_h3 {
                let outcome = self.h3.process(&mut self.server, &mut self.app, &mut self.scratch, &mut self.body_scratch);
                if let Some(e) = outcome.close {
                    self.closed_by_h3 = true;
                    let _ = self.server.close(true, e.code, e.reason.as_bytes());
                }
            }
            while let Ok((n, info)) = self.server.send(&mut buf) {
                moved = true;
                self.server_packets += 1;
                let _ = self.client.recv(&mut buf[..n], quiche::RecvInfo { from: info.from, to: info.to });
            }
            // Read what the server sent so the client keeps granting credit.
            let readable = if self.client_reads { self.client.readable() } else { quiche::StreamIter::default() };
            for id in readable {
                loop {
                    match self.client.stream_recv(id, &mut buf) {
                        Ok((n, fin)) => {
                            if self.record {
                                let r = self.received.entry(id).or_default();
                                r.data.extend_from_slice(&buf[..n]);
                                r.fin |= fin;
                            }
                            if fin {
                                break;
                            }
                        }
                        Err(quiche::Error::StreamReset(code)) => {
                            if self.record {
                                self.received.entry(id).or_default().reset = Some(code);
                            }
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            while let Ok(n) = self.client.dgram_recv(&mut buf) {
                if self.record {
                    self.datagrams.push(buf[..n].to_vec());
                }
            }
            if !moved {
                break;
            }
        }
    }

    /// Opens the client's control stream (SETTINGS with the datagram and
    /// extended CONNECT settings) and its QPACK streams.
    pub fn client_preamble(&mut self) {
        let _ = self.client.stream_send(2, &[0x00, 0x04, 0x04, 0x33, 0x01, 0x08, 0x01], false);
        let _ = self.client.stream_send(6, &[0x02], false);
        let _ = self.client.stream_send(10, &[0x03], false);
        self.exchange();
    }

    /// Sends a request's HEADERS frame (QPACK, literals only) on `stream`.
    pub fn send_headers(&mut self, stream: u64, fields: &[(&str, &str)], fin: bool) {
        let headers: Vec<quiche::h3::Header> =
            fields.iter().map(|(n, v)| quiche::h3::Header::new(n.as_bytes(), v.as_bytes())).collect();
        let mut block = vec![0u8; 4096];
        let len = quiche::h3::qpack::Encoder::new().encode(&headers, &mut block).unwrap();
        let mut frame = Vec::new();
        varint::encode(0x1, &mut frame);
        varint::encode(len as u64, &mut frame);
        frame.extend_from_slice(&block[..len]);
        self.client.stream_send(stream, &frame, fin).unwrap();
    }

    /// Sends a DATA frame; returns the bytes quiche took.
    pub fn send_data(&mut self, stream: u64, body: &[u8], fin: bool) -> usize {
        let mut frame = Vec::new();
        varint::encode(0x0, &mut frame);
        varint::encode(body.len() as u64, &mut frame);
        frame.extend_from_slice(body);
        self.client.stream_send(stream, &frame, fin).unwrap_or(0)
    }

    /// The `:status` of the response the client read on `stream`.
    pub fn status(&self, stream: u64) -> Option<u16> {
        let data = &self.received.get(&stream)?.data;
        let (ty, a) = varint::decode(data)?;
        let (len, b) = varint::decode(&data[a..])?;
        if ty != 0x1 {
            return None;
        }
        let block = data.get(a + b..a + b + len as usize)?;
        let lines = quiche::h3::qpack::Decoder::new().decode(block, u64::MAX).ok()?;
        let status = lines.iter().find(|h| h.name() == b":status")?;
        std::str::from_utf8(status.value()).ok()?.parse().ok()
    }
}
