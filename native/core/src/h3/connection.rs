//! The HTTP/3 layer of one connection, written on quiche's QUIC streams
//! instead of `quiche::h3` so that WebTransport streams can be claimed (see
//! docs/design.md). It classifies every client stream, reads frames, decodes
//! field sections with quiche's QPACK decoder, and turns finished pieces of
//! work into boundary events. Responses come back as `respond` calls.

use std::collections::HashMap;
use std::sync::Arc;

use quiche::h3::qpack;

use super::codes::*;
use super::decoder_stream::DecoderStreamReader;
use super::error::{H3Error, H3Result};
use super::field_section::{self, FieldSectionError};
use super::frame::{self, Context, FrameEvent, FrameReader};
use super::request::{validate_request, validate_trailers, RequestHead};
use super::settings::{self, LocalSettings, PeerSettings};
use super::webtransport::{self as wt, CapsuleEvent, Session, Sessions, WtStream};
use crate::app::{AbortReason, Application, Mark, Reply, Request, SessionStream};
use crate::counters::Counters;
use crate::ids::{ConnId, StreamId};
use crate::varint::{self, Partial};

/// How request bodies reach JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    /// The whole body arrives with the REQUEST event; bodies larger than the
    /// window are answered 413 by the native core itself.
    Buffered { window: usize },
    /// REQUEST after the header section, then BODY chunks. At most `credit`
    /// bytes per stream are read ahead of JavaScript's acknowledgement, which
    /// bounds what the server reads past an application cap.
    Streamed { credit: usize },
}

#[derive(Debug, Clone)]
pub struct H3Options {
    pub body_mode: BodyMode,
    pub max_field_section_size: usize,
    /// Fault injection for tests: a request for this exact path panics in
    /// the native core, to prove a panic closes only its own connection.
    pub panic_on_path: Option<Vec<u8>>,
    /// Extended CONNECT, HTTP datagrams and WebTransport sessions.
    pub webtransport: bool,
}

/// The server's own control stream: the first server-initiated
/// unidirectional stream.
const CONTROL_STREAM_ID: u64 = 3;

fn is_client_bidi(id: u64) -> bool {
    id & 0x3 == 0
}

fn is_client_uni(id: u64) -> bool {
    id & 0x3 == 2
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Headers,
    Body,
    Trailers,
}

struct RequestStream {
    frames: FrameReader,
    phase: Phase,
    content_length: Option<u64>,
    body_len: u64,
    /// Buffered mode only.
    body: Vec<u8>,
    /// A REQUEST event went to JavaScript, so an abort must be reported.
    delivered: bool,
    /// A response was queued; later bytes from the client are not wanted.
    responded: bool,
    /// No more bytes will be read: FIN seen, or reading was stopped.
    read_done: bool,
    /// Streamed mode: bytes handed to the application that it has not yet
    /// settled, and the mark of the latest of them.
    unacked: usize,
    unacked_mark: Mark,
    head: Option<RequestHead>,
    /// This CONNECT stream carries an accepted WebTransport session.
    session: bool,
}

enum StreamState {
    /// Client unidirectional stream whose type varint is still arriving.
    UniType(Partial),
    Control(FrameReader),
    QpackEncoder,
    QpackDecoder(DecoderStreamReader),
    /// Unknown stream type, or a stream we refused: read and discard.
    Discard,
    /// WebTransport stream whose session ID is still arriving.
    WtSessionId { bidi: bool, id: Partial },
    /// Client bidirectional stream whose first varint is still arriving:
    /// a frame type, or the WebTransport signal 0x41.
    BidiFirst(Partial),
    Request(Box<RequestStream>),
    /// A client stream of a WebTransport session.
    Wt(WtStream),
}

struct Outgoing {
    data: Vec<u8>,
    written: usize,
    fin: bool,
}

/// What the caller must do after processing.
#[derive(Debug, Default)]
pub struct Outcome {
    pub close: Option<H3Error>,
    /// Work went to the application that it answers later (a request, body
    /// bytes): the I/O loop may hold this connection's packets for it.
    pub awaits_application: bool,
}

pub struct H3Connection {
    conn: ConnId,
    counters: Arc<Counters>,
    options: H3Options,
    local: LocalSettings,
    control_opened: bool,
    peer_control: Option<u64>,
    peer_encoder: Option<u64>,
    peer_decoder: Option<u64>,
    peer_settings: Option<PeerSettings>,
    streams: HashMap<u64, StreamState>,
    outgoing: HashMap<u64, Outgoing>,
    qpack_decoder: qpack::Decoder,
    qpack_encoder: qpack::Encoder,
    /// GOAWAY sent with this stream ID; requests at or above it are refused.
    goaway: Option<u64>,
    next_request_floor: u64,
    closing: bool,
    /// This `process` call handed the application work it answers later.
    awaits_application: bool,
    /// Answered request streams quiche still holds (data not yet acknowledged).
    undelivered: Vec<u64>,
    sessions: Sessions,
    /// Next server-initiated unidirectional stream (3 is the control stream).
    next_server_uni: u64,
    /// This connection's share of `Counters::request_streams_open`.
    request_streams: u64,
}

impl H3Connection {
    pub fn new(conn: ConnId, options: H3Options, local: LocalSettings, counters: Arc<Counters>) -> Self {
        H3Connection {
            conn,
            counters,
            options,
            local,
            control_opened: false,
            peer_control: None,
            peer_encoder: None,
            peer_decoder: None,
            peer_settings: None,
            streams: HashMap::new(),
            outgoing: HashMap::new(),
            qpack_decoder: qpack::Decoder::new(),
            qpack_encoder: qpack::Encoder::new(),
            goaway: None,
            next_request_floor: 0,
            closing: false,
            awaits_application: false,
            undelivered: Vec::new(),
            sessions: Sessions::new(),
            next_server_uni: CONTROL_STREAM_ID + 4,
            request_streams: 0,
        }
    }

    /// Brings this connection's share of the server-wide live request-stream
    /// count up to date. Recounting (rather than tracking every insert and
    /// remove) keeps it exact whatever path retired a stream.
    fn sync_request_gauge(&mut self) {
        let now = self.streams.values().filter(|s| matches!(s, StreamState::Request(_))).count() as u64;
        if now > self.request_streams {
            Counters::add(&self.counters.request_streams_open, now - self.request_streams);
        } else if now < self.request_streams {
            Counters::sub(&self.counters.request_streams_open, self.request_streams - now);
        }
        self.request_streams = now;
    }

    /// Requests not yet answered, or answered but not yet delivered: a
    /// graceful close waits for these. A response counts until quiche has
    /// collected its stream, i.e. the client acknowledged all of it.
    #[inline]
    pub fn requests_in_flight(&mut self, quic: &mut quiche::Connection) -> usize {
        self.prune_delivered(quic);
        self.streams
            .values()
            .filter(|s| matches!(s, StreamState::Request(r) if !r.responded))
            .count()
            + self.undelivered.len()
    }

    #[inline]
    fn prune_delivered(&mut self, quic: &mut quiche::Connection) {
        self.undelivered.retain(|id| matches!(quic.stream_capacity(*id), Ok(_) | Err(quiche::Error::Done)));
    }

    /// Opens the control stream with SETTINGS once the handshake allows
    /// application data.
    #[inline]
    fn open_control(&mut self, quic: &mut quiche::Connection) {
        if self.control_opened || !(quic.is_established() || quic.is_in_early_data()) {
            return;
        }
        self.control_opened = true;
        let mut payload = Vec::with_capacity(64);
        self.local.encode_payload(&mut payload);
        let mut data = Vec::with_capacity(payload.len() + 8);
        varint::encode(stream_type::CONTROL, &mut data);
        frame::write_header(frame_type::SETTINGS, payload.len(), &mut data);
        data.extend_from_slice(&payload);
        let _ = quic.stream_priority(CONTROL_STREAM_ID, 0, false);
        self.queue(quic, CONTROL_STREAM_ID, data, false);
    }

    /// Sends GOAWAY: requests already received are served, newer ones are
    /// refused with H3_REQUEST_REJECTED (RFC 9114 section 5.2).
    #[inline]
    pub fn send_goaway(&mut self, quic: &mut quiche::Connection) {
        if self.goaway.is_some() || !self.control_opened {
            return;
        }
        let id = self.next_request_floor;
        self.goaway = Some(id);
        let mut data = Vec::with_capacity(16);
        frame::write_header(frame_type::GOAWAY, varint::encoded_len(id), &mut data);
        varint::encode(id, &mut data);
        self.queue(quic, CONTROL_STREAM_ID, data, false);
    }

    /// Reads everything readable, within the body credit the application
    /// has settled.
    pub fn process<A: Application>(&mut self, quic: &mut quiche::Connection, app: &mut A, scratch: &mut [u8]) -> Outcome {
        self.awaits_application = false;
        self.open_control(quic);
        if self.closing {
            return Outcome::default();
        }
        for id in quic.readable() {
            if let Err(e) = self.read_stream(quic, id, app, scratch) {
                if e.connection {
                    self.closing = true;
                    self.sync_request_gauge();
                    return Outcome { close: Some(e), awaits_application: self.awaits_application };
                }
                self.fail_stream(quic, id, e, app);
            }
        }
        if let Err(e) = self.on_datagrams(quic, app, scratch) {
            self.closing = true;
            return Outcome { close: Some(e), awaits_application: self.awaits_application };
        }
        self.flush(quic);
        self.sync_request_gauge();
        Outcome { close: None, awaits_application: self.awaits_application }
    }

    fn read_stream<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        app: &mut A,
        scratch: &mut [u8],
    ) -> H3Result<()> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.streams.entry(id) {
            if is_client_bidi(id) {
                slot.insert(StreamState::BidiFirst(Partial::default()));
            } else if is_client_uni(id) {
                slot.insert(StreamState::UniType(Partial::default()));
            } else {
                // Server-initiated streams are never read from here.
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_NO_ERROR);
                return Ok(());
            }
        }
        // Streamed bodies: merge what one read delivers into one BODY event.
        let mut body: Vec<u8> = Vec::new();
        loop {
            let limit = match self.streams.get(&id) {
                Some(StreamState::Request(r)) => match self.options.body_mode {
                    BodyMode::Streamed { credit } if r.phase != Phase::Headers => {
                        let unacked = if app.settled(r.unacked_mark) { 0 } else { r.unacked };
                        credit.saturating_sub(unacked + body.len())
                    }
                    _ => scratch.len(),
                },
                Some(StreamState::Wt(WtStream::Bidi { .. })) => {
                    // Read only while the echo is draining.
                    let waiting = self.outgoing.get(&id).map_or(0, |o| o.data.len() - o.written);
                    wt::ECHO_LIMIT.saturating_sub(waiting).min(scratch.len())
                }
                Some(_) => scratch.len(),
                None => return Ok(()),
            };
            if limit == 0 {
                break;
            }
            match quic.stream_recv(id, &mut scratch[..limit]) {
                Ok((n, fin)) => {
                    self.on_bytes(quic, id, &scratch[..n], fin, app, &mut body)?;
                    if fin {
                        break;
                    }
                }
                Err(quiche::Error::Done) => break,
                Err(quiche::Error::StreamReset(code)) => {
                    self.on_peer_reset(quic, id, code, app);
                    return Ok(());
                }
                Err(_) => break,
            }
        }
        self.emit_body(id, &body, false, app);
        Ok(())
    }

    /// Sends accumulated streamed-body bytes as one BODY event.
    fn emit_body<A: Application>(&mut self, id: u64, body: &[u8], fin: bool, app: &mut A) {
        if body.is_empty() && !fin {
            return;
        }
        if let Some(StreamState::Request(r)) = self.streams.get_mut(&id) {
            if r.responded {
                return;
            }
            if app.settled(r.unacked_mark) {
                r.unacked = 0;
            }
            r.unacked += body.len();
            r.unacked_mark = app.on_body(self.conn, StreamId(id), body, fin);
            self.awaits_application = true;
        }
    }

    fn on_bytes<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        mut data: &[u8],
        fin: bool,
        app: &mut A,
        body: &mut Vec<u8>,
    ) -> H3Result<()> {
        // Classification states consume a prefix and hand the rest on.
        loop {
            let Some(state) = self.streams.get_mut(&id) else { return Ok(()) };
            match state {
                StreamState::UniType(p) => {
                    let (ty, used) = p.feed(data);
                    data = &data[used..];
                    match ty {
                        Some(ty) => {
                            let next = self.classify_uni(quic, id, ty)?;
                            self.streams.insert(id, next);
                        }
                        None => return self.on_fin_unclassified(fin, id),
                    }
                }
                StreamState::BidiFirst(p) => {
                    let (first, used) = p.feed(data);
                    data = &data[used..];
                    match first {
                        Some(WEBTRANSPORT_BIDI_SIGNAL) => {
                            self.streams.insert(id, StreamState::WtSessionId { bidi: true, id: Partial::default() });
                        }
                        Some(ty) => {
                            if let Some(goaway) = self.goaway {
                                if id >= goaway {
                                    return Err(H3Error::stream(H3_REQUEST_REJECTED, "after GOAWAY"));
                                }
                            }
                            self.next_request_floor = self.next_request_floor.max(id + 4);
                            let frames = FrameReader::with_type(Context::Request, self.options.max_field_section_size, ty)?;
                            self.streams.insert(id, StreamState::Request(Box::new(RequestStream {
                                frames,
                                phase: Phase::Headers,
                                content_length: None,
                                body_len: 0,
                                body: Vec::new(),
                                delivered: false,
                                responded: false,
                                read_done: false,
                                unacked: 0,
                                unacked_mark: Mark::default(),
                                head: None,
                                session: false,
                            })));
                        }
                        None => return self.on_fin_unclassified(fin, id),
                    }
                }
                StreamState::WtSessionId { bidi, id: p } => {
                    let bidi = *bidi;
                    let (session, used) = p.feed(data);
                    data = &data[used..];
                    match session {
                        Some(session) => {
                            if !self.admit_wt_stream(quic, id, session, bidi, app) {
                                self.streams.remove(&id);
                                return Ok(());
                            }
                        }
                        None => return self.on_fin_unclassified(fin, id),
                    }
                }
                StreamState::Wt(_) => return self.on_wt_bytes(quic, id, data, fin, app),
                StreamState::Control(_) => return self.on_control_bytes(id, data, fin),
                StreamState::QpackEncoder => {
                    // With a table capacity of 0 the only legal instruction is
                    // "Set Dynamic Table Capacity" to 0 (RFC 9204 section 4.3.1).
                    if data.iter().any(|b| *b != 0x20) {
                        return Err(H3Error::connection(QPACK_ENCODER_STREAM_ERROR, "dynamic table use not allowed"));
                    }
                    return self.on_critical_fin(fin);
                }
                StreamState::QpackDecoder(reader) => {
                    if let Err(e) = reader.feed(data) {
                        return Err(H3Error::connection(QPACK_DECODER_STREAM_ERROR, e.reason()));
                    }
                    return self.on_critical_fin(fin);
                }
                StreamState::Discard => {
                    if fin {
                        self.streams.remove(&id);
                    }
                    return Ok(());
                }
                StreamState::Request(_) => return self.on_request_bytes(quic, id, data, fin, app, body),
            }
        }
    }

    fn on_fin_unclassified(&mut self, fin: bool, id: u64) -> H3Result<()> {
        if fin {
            // A stream that ended before its type was known carries nothing.
            self.streams.remove(&id);
        }
        Ok(())
    }

    fn on_critical_fin(&self, fin: bool) -> H3Result<()> {
        if fin {
            return Err(H3Error::connection(H3_CLOSED_CRITICAL_STREAM, "critical stream closed"));
        }
        Ok(())
    }

    #[inline]
    fn classify_uni(&mut self, quic: &mut quiche::Connection, id: u64, ty: u64) -> H3Result<StreamState> {
        let duplicate = || Err(H3Error::connection(H3_STREAM_CREATION_ERROR, "duplicate critical stream"));
        Ok(match ty {
            stream_type::CONTROL => {
                if self.peer_control.replace(id).is_some() {
                    return duplicate();
                }
                StreamState::Control(FrameReader::new(Context::Control, frame::MAX_CONTROL_FRAME))
            }
            stream_type::QPACK_ENCODER => {
                if self.peer_encoder.replace(id).is_some() {
                    return duplicate();
                }
                StreamState::QpackEncoder
            }
            stream_type::QPACK_DECODER => {
                if self.peer_decoder.replace(id).is_some() {
                    return duplicate();
                }
                StreamState::QpackDecoder(DecoderStreamReader::default())
            }
            stream_type::PUSH => {
                return Err(H3Error::connection(H3_STREAM_CREATION_ERROR, "client opened a push stream"));
            }
            stream_type::WEBTRANSPORT_UNI => StreamState::WtSessionId { bidi: false, id: Partial::default() },
            _ => {
                // Unknown and GREASE stream types (RFC 9114 section 6.2).
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_STREAM_CREATION_ERROR);
                StreamState::Discard
            }
        })
    }

    fn on_control_bytes(&mut self, id: u64, data: &[u8], fin: bool) -> H3Result<()> {
        let Some(StreamState::Control(reader)) = self.streams.get_mut(&id) else { return Ok(()) };
        let mut frames = Vec::new();
        let fed = reader.feed(data, &mut |ev| {
            match ev {
                FrameEvent::Whole { ty, payload } => frames.push((ty, payload)),
                FrameEvent::Oversized { .. } => return Err(frame::oversized_control_frame()),
                FrameEvent::DataStart { .. } | FrameEvent::Data(_) => {}
            }
            Ok(())
        });
        // RFC 9114 section 6.2.1: a control stream that opens with any frame
        // other than SETTINGS, an unknown or GREASE type included, is
        // H3_MISSING_SETTINGS, whatever else is wrong with that frame.
        if self.peer_settings.is_none() && reader.first_type().is_some_and(|ty| ty != frame_type::SETTINGS) {
            return Err(H3Error::connection(H3_MISSING_SETTINGS, "first control frame is not SETTINGS"));
        }
        fed?;
        for (ty, payload) in frames {
            match (ty, self.peer_settings.is_some()) {
                (frame_type::SETTINGS, false) => self.peer_settings = Some(settings::parse(&payload)?),
                (_, false) => return Err(H3Error::connection(H3_MISSING_SETTINGS, "first control frame is not SETTINGS")),
                (frame_type::SETTINGS, true) => {
                    return Err(H3Error::connection(H3_FRAME_UNEXPECTED, "second SETTINGS frame"));
                }
                // A client's GOAWAY names push IDs; this server never pushes.
                // MAX_PUSH_ID and CANCEL_PUSH likewise need no action.
                _ => {}
            }
        }
        if fin {
            return Err(H3Error::connection(H3_CLOSED_CRITICAL_STREAM, "control stream closed"));
        }
        Ok(())
    }

    fn on_request_bytes<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        data: &[u8],
        fin: bool,
        app: &mut A,
        body: &mut Vec<u8>,
    ) -> H3Result<()> {
        let conn = self.conn;
        let mode = self.options.body_mode;
        let max_fields = self.options.max_field_section_size as u64;
        let counters = &self.counters;
        let panic_path = self.options.panic_on_path.as_deref();
        let webtransport = self.options.webtransport;
        let mut accept_session = false;
        let mut capsule_bytes: Vec<u8> = Vec::new();
        let Some(StreamState::Request(req)) = self.streams.get_mut(&id) else { return Ok(()) };
        let mut native_answer: Option<u16> = None;
        {
            let decoder = &mut self.qpack_decoder;
            let req_ref: &mut RequestStream = req;
            let RequestStream { frames, phase, content_length, body_len, body: buffered, head, session, .. } = req_ref;
            let is_session = *session;
            frames.feed(data, &mut |ev| {
                if native_answer.is_some() {
                    return Ok(());
                }
                match (ev, *phase) {
                    (FrameEvent::Whole { ty: frame_type::HEADERS, payload }, Phase::Headers) => {
                        let lines = match field_section::decode(decoder, &payload, max_fields) {
                            Ok(lines) => lines,
                            // Larger than our advertised SETTINGS_MAX_FIELD_SECTION_SIZE
                            // once decoded: the same answer as an oversized frame.
                            Err(FieldSectionError::TooLarge) => {
                                native_answer = Some(431);
                                return Ok(());
                            }
                            Err(FieldSectionError::Invalid) => {
                                return Err(H3Error::connection(QPACK_DECOMPRESSION_FAILED, "QPACK decoding failed"));
                            }
                        };
                        let h = validate_request(lines)?;
                        if panic_path.is_some() && h.path.as_deref() == panic_path {
                            panic!("fault injection: request for the configured panic path");
                        }
                        *content_length = h.content_length;
                        *phase = Phase::Body;
                        if h.is_plain_connect() {
                            // This server is not a proxy.
                            native_answer = Some(501);
                        } else if h.is_extended_connect() {
                            let is_wt = h.protocol.as_deref().is_some_and(wt::is_webtransport_protocol);
                            if !webtransport || !is_wt {
                                native_answer = Some(501);
                            } else if !wt::try_open(&counters.wt_sessions_open, wt::SESSIONS_CAP) {
                                // Over the build-time session capacity.
                                native_answer = Some(429);
                            } else {
                                accept_session = true;
                            }
                        }
                        *head = Some(h);
                    }
                    (FrameEvent::Whole { ty: frame_type::HEADERS, payload }, Phase::Body) => {
                        let lines = field_section::decode(decoder, &payload, max_fields).map_err(|e| match e {
                            FieldSectionError::TooLarge => H3Error::stream(H3_EXCESSIVE_LOAD, "trailers too large"),
                            FieldSectionError::Invalid => {
                                H3Error::connection(QPACK_DECOMPRESSION_FAILED, "QPACK decoding failed")
                            }
                        })?;
                        validate_trailers(&lines)?;
                        *phase = Phase::Trailers;
                    }
                    (FrameEvent::Oversized { .. }, Phase::Headers) => native_answer = Some(431),
                    (FrameEvent::Oversized { .. }, _) => {
                        return Err(H3Error::stream(H3_EXCESSIVE_LOAD, "trailers too large"));
                    }
                    (FrameEvent::DataStart { .. }, Phase::Body) => {}
                    (FrameEvent::Data(d), Phase::Body) if is_session => capsule_bytes.extend_from_slice(d),
                    (FrameEvent::Data(d), Phase::Body) => {
                        *body_len += d.len() as u64;
                        Counters::add(&counters.body_bytes_read, d.len() as u64);
                        if content_length.is_some_and(|cl| *body_len > cl) {
                            return Err(H3Error::stream(H3_MESSAGE_ERROR, "body longer than content-length"));
                        }
                        match mode {
                            BodyMode::Buffered { window } => {
                                if buffered.len() + d.len() > window {
                                    native_answer = Some(413);
                                } else {
                                    buffered.extend_from_slice(d);
                                }
                            }
                            BodyMode::Streamed { .. } => body.extend_from_slice(d),
                        }
                    }
                    (FrameEvent::DataStart { .. } | FrameEvent::Data(_), _) => {
                        return Err(H3Error::connection(H3_FRAME_UNEXPECTED, "DATA outside the body"));
                    }
                    (FrameEvent::Whole { .. }, _) => {
                        return Err(H3Error::connection(H3_FRAME_UNEXPECTED, "unexpected frame on request stream"));
                    }
                }
                Ok(())
            })?;
        }

        let accept = accept_session;
        if let Some(status) = native_answer {
            req.responded = true;
            self.counters.native_statuses.count(status);
            self.respond_bytes(quic, id, status, &[], b"");
            return Ok(());
        }
        if accept {
            req.session = true;
            req.responded = true;
            let path = req.head.take().and_then(|h| h.path).unwrap_or_default();
            self.accept_session(quic, id, &path, app);
        }
        if req_is_session(&self.streams, id) {
            return self.on_session_bytes(quic, id, &capsule_bytes, fin, app);
        }
        let Some(StreamState::Request(req)) = self.streams.get_mut(&id) else { return Ok(()) };

        if fin {
            if !req.frames.at_boundary() {
                return Err(H3Error::connection(H3_FRAME_ERROR, "stream ended inside a frame"));
            }
            if req.phase == Phase::Headers {
                return Err(H3Error::stream(H3_REQUEST_INCOMPLETE, "request stream ended before HEADERS"));
            }
            if req.content_length.is_some_and(|cl| cl != req.body_len) {
                return Err(H3Error::stream(H3_MESSAGE_ERROR, "body shorter than content-length"));
            }
            req.read_done = true;
        }

        // Deliver the request once the application has what it needs.
        if !req.delivered && req.phase != Phase::Headers {
            let buffered = matches!(mode, BodyMode::Buffered { .. });
            if !buffered || req.read_done {
                req.delivered = true;
                let head = req.head.take().unwrap_or_default();
                let complete = req.read_done && (buffered || body.is_empty());
                let request = Request {
                    head: &head,
                    complete,
                    ended: req.read_done,
                    body: (buffered && !req.body.is_empty()).then_some(req.body.as_slice()),
                };
                match app.on_request(conn, StreamId(id), request) {
                    Reply::Later => {
                        self.awaits_application = true;
                        req.body = Vec::new();
                        if complete {
                            return Ok(());
                        }
                    }
                    Reply::Now(response) => {
                        req.responded = true;
                        req.body = Vec::new();
                        self.respond_bytes(quic, id, response.status, response.fields, response.body);
                        return Ok(());
                    }
                }
            }
        }
        if fin && matches!(mode, BodyMode::Streamed { .. }) && req.delivered {
            let pending = std::mem::take(body);
            self.emit_body(id, &pending, true, app);
        }
        Ok(())
    }

    fn on_peer_reset<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, code: u64, app: &mut A) {
        match self.streams.get(&id) {
            Some(StreamState::Control(_) | StreamState::QpackEncoder | StreamState::QpackDecoder(_)) => {
                // Handled as a critical-stream closure by the caller's next
                // read; quiche reports the reset only once, so act now.
                self.closing = true;
                let _ = quic.close(true, H3_CLOSED_CRITICAL_STREAM, b"critical stream reset");
            }
            Some(StreamState::Request(r)) if r.session => {
                self.close_session(quic, id, 0, app);
            }
            Some(StreamState::Wt(_)) => {
                self.close_wt_stream(id, app);
                if is_client_bidi(id) {
                    let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, code);
                    self.outgoing.remove(&id);
                }
            }
            Some(StreamState::Request(r)) => {
                if r.delivered && !r.responded {
                    app.on_stream_aborted(self.conn, StreamId(id), AbortReason::PeerReset, code);
                }
                if !r.responded {
                    let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_REQUEST_INCOMPLETE);
                    self.outgoing.remove(&id);
                }
                self.streams.remove(&id);
            }
            _ => {
                self.streams.remove(&id);
            }
        }
    }

    /// A stream error: reset both directions with the error's code.
    fn fail_stream<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, e: H3Error, app: &mut A) {
        if let Some(StreamState::Request(r)) = self.streams.get(&id) {
            if r.delivered && !r.responded {
                app.on_stream_aborted(self.conn, StreamId(id), AbortReason::ProtocolError, e.code);
            }
        }
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, e.code);
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, e.code);
        self.streams.remove(&id);
        self.outgoing.remove(&id);
    }

    /// Answers a request from JavaScript. Unknown or already answered
    /// streams (the client reset it, the connection moved on) are ignored.
    #[inline]
    pub fn respond(&mut self, quic: &mut quiche::Connection, id: u64, status: u16, fields: &[(&[u8], &[u8])], body: &[u8]) {
        match self.streams.get_mut(&id) {
            Some(StreamState::Request(r)) if r.delivered && !r.responded => r.responded = true,
            _ => return,
        }
        self.respond_bytes(quic, id, status, fields, body);
        self.sync_request_gauge();
    }

    /// A HEADERS frame carrying `:status` and the fields, QPACK-encoded
    /// with the static table and literals only.
    fn encode_headers(&mut self, status: u16, fields: &[(&[u8], &[u8])]) -> Option<Vec<u8>> {
        let status = status.to_string();
        let mut lines: Vec<Field<'_>> = Vec::with_capacity(fields.len() + 1);
        lines.push(Field(b":status", status.as_bytes()));
        lines.extend(fields.iter().map(|(n, v)| Field(n, v)));
        let bound = 16 + lines.iter().map(|f| f.0.len() + f.1.len() + 8).sum::<usize>();
        let mut block = vec![0u8; bound];
        let len = self.qpack_encoder.encode(&lines, &mut block).ok()?;
        let mut data = Vec::with_capacity(len + 16);
        frame::write_header(frame_type::HEADERS, len, &mut data);
        data.extend_from_slice(&block[..len]);
        Some(data)
    }

    #[inline]
    fn respond_bytes(&mut self, quic: &mut quiche::Connection, id: u64, status: u16, fields: &[(&[u8], &[u8])], body: &[u8]) {
        let Some(mut data) = self.encode_headers(status, fields) else {
            let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
            return;
        };
        if !body.is_empty() {
            frame::write_header(frame_type::DATA, body.len(), &mut data);
            data.extend_from_slice(body);
        }
        self.queue(quic, id, data, true);
        if self.undelivered.len() >= 256 {
            self.prune_delivered(quic);
        }
        self.undelivered.push(id);
        // RFC 9114 section 4.1: once answered, the rest of the request is not
        // needed; ask the client to stop with H3_NO_ERROR.
        if let Some(StreamState::Request(r)) = self.streams.get_mut(&id) {
            if !r.read_done {
                r.read_done = true;
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_NO_ERROR);
            }
        }
        self.retire_if_done(id);
    }

    #[inline]
    fn queue(&mut self, quic: &mut quiche::Connection, id: u64, data: Vec<u8>, fin: bool) {
        match self.outgoing.get_mut(&id) {
            Some(out) => {
                out.data.extend_from_slice(&data);
                out.fin |= fin;
            }
            None => {
                self.outgoing.insert(id, Outgoing { data, written: 0, fin });
            }
        }
        self.flush_stream(quic, id);
    }

    #[inline]
    fn flush_stream(&mut self, quic: &mut quiche::Connection, id: u64) {
        let Some(out) = self.outgoing.get_mut(&id) else { return };
        let result = quic.stream_send(id, &out.data[out.written..], out.fin);
        match result {
            Ok(n) => out.written += n,
            Err(quiche::Error::Done) => {}
            Err(_) => {
                // STOP_SENDING or a reset from the client: nothing more to send.
                self.outgoing.remove(&id);
                self.retire_if_done(id);
                return;
            }
        }
        if out.written == out.data.len() && out.fin {
            self.outgoing.remove(&id);
            self.retire_if_done(id);
        } else if out.written == out.data.len() {
            out.data.clear();
            out.written = 0;
        }
    }

    /// Writes whatever flow control now allows on every stream with queued data.
    #[inline]
    pub fn flush(&mut self, quic: &mut quiche::Connection) {
        if self.outgoing.is_empty() {
            return;
        }
        let ids: Vec<u64> = self.outgoing.keys().copied().collect();
        for id in ids {
            self.flush_stream(quic, id);
        }
    }

    /// Forgets a request stream once it is answered and nothing more is read
    /// or written on it.
    fn retire_if_done(&mut self, id: u64) {
        if self.outgoing.contains_key(&id) {
            return;
        }
        if let Some(StreamState::Request(r)) = self.streams.get(&id) {
            if r.responded && r.read_done {
                self.streams.remove(&id);
            }
        }
    }

    /// True when this connection still has streams that can be credited.
    pub fn has_credit_waiters(&self) -> bool {
        matches!(self.options.body_mode, BodyMode::Streamed { .. })
            && self.streams.values().any(|s| matches!(s, StreamState::Request(r) if !r.read_done && r.unacked > 0))
    }
}

/// A field line borrowed from the caller, for quiche's QPACK encoder.
struct Field<'a>(&'a [u8], &'a [u8]);

impl quiche::h3::NameValue for Field<'_> {
    fn name(&self) -> &[u8] {
        self.0
    }

    fn value(&self) -> &[u8] {
        self.1
    }
}

fn req_is_session(streams: &HashMap<u64, StreamState>, id: u64) -> bool {
    matches!(streams.get(&id), Some(StreamState::Request(r)) if r.session)
}

// WebTransport: sessions on CONNECT streams, their client streams, datagrams.
impl H3Connection {
    fn accept_session<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, path: &[u8], app: &mut A) {
        // 200 opens the session; the CONNECT stream stays open for capsules.
        // The draft-02 response header is what Chromium's draft-02 code
        // path checks; later drafts ignore it.
        let fields: [(&[u8], &[u8]); 1] = [(b"sec-webtransport-http3-draft", b"draft02")];
        if let Some(data) = self.encode_headers(200, &fields) {
            self.counters.native_statuses.count(200);
            self.queue(quic, id, data, false);
        }
        self.sessions.insert(id, Session::new());
        app.on_session_open(self.conn, StreamId(id), path);
    }

    fn on_session_bytes<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        capsule_bytes: &[u8],
        fin: bool,
        app: &mut A,
    ) -> H3Result<()> {
        let mut found = Vec::new();
        if let Some(session) = self.sessions.get_mut(&id) {
            session.capsules.feed(capsule_bytes, &mut found);
        }
        for ev in found {
            match ev {
                CapsuleEvent::Close { code, .. } => {
                    self.close_session(quic, id, code, app);
                    return Ok(());
                }
                // The client will close soon; nothing to do until it does.
                CapsuleEvent::Drain => {}
            }
        }
        if fin {
            self.close_session(quic, id, 0, app);
        }
        Ok(())
    }

    /// Ends a session: its streams are reset with WT_SESSION_GONE, the
    /// CONNECT stream is finished, and TypeScript hears of every closure.
    pub fn close_session<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, code: u32, app: &mut A) {
        let Some(session) = self.sessions.remove(&id) else { return };
        wt::abandon_streams(quic, self.conn, id, &session, &self.counters, app);
        for s in &session.peer_streams {
            self.streams.remove(s);
            self.outgoing.remove(s);
        }
        for s in &session.server_streams {
            self.outgoing.remove(s);
        }
        Counters::sub(&self.counters.wt_sessions_open, 1);
        app.on_session_closed(self.conn, StreamId(id), code);
        self.queue(quic, id, Vec::new(), true);
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_NO_ERROR);
        self.streams.remove(&id);
    }

    /// The connection is gone: every session and stream on it is closed.
    pub fn on_connection_closed<A: Application>(&mut self, app: &mut A) {
        self.streams.clear();
        self.sync_request_gauge();
        for (id, session) in std::mem::take(&mut self.sessions) {
            for s in &session.peer_streams {
                Counters::sub(&self.counters.wt_peer_streams_open, 1);
                app.on_session_stream(self.conn, StreamId(id), StreamId(*s), SessionStream::Closed, is_client_bidi(*s));
            }
            Counters::sub(&self.counters.wt_sessions_open, 1);
            app.on_session_closed(self.conn, StreamId(id), 0);
        }
    }

    /// Routes a client stream to its session, or refuses it: for an unknown
    /// session, or when the server-wide stream capacity is full (then it
    /// still counts as offered).
    fn admit_wt_stream<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, session: u64, bidi: bool, app: &mut A) -> bool {
        let Some(s) = self.sessions.get_mut(&session) else {
            wt::refuse_stream(quic, id, bidi);
            return false;
        };
        if !wt::try_open(&self.counters.wt_peer_streams_open, wt::PEER_STREAMS_CAP) {
            wt::refuse_stream(quic, id, bidi);
            app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Rejected, bidi);
            return false;
        }
        s.peer_streams.push(id);
        app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Opened, bidi);
        let state = if bidi { WtStream::Bidi { session } } else { WtStream::Uni { session, data: Vec::new() } };
        self.streams.insert(id, StreamState::Wt(state));
        true
    }

    fn on_wt_bytes<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, data: &[u8], fin: bool, app: &mut A) -> H3Result<()> {
        let Some(StreamState::Wt(stream)) = self.streams.get_mut(&id) else { return Ok(()) };
        match stream {
            WtStream::Bidi { .. } => {
                if !data.is_empty() || fin {
                    self.queue(quic, id, data.to_vec(), fin);
                }
            }
            WtStream::Uni { session, data: collected } => {
                let room = wt::ECHO_LIMIT.saturating_sub(collected.len());
                collected.extend_from_slice(&data[..data.len().min(room)]);
                if fin {
                    let session = *session;
                    let answer = wt::uni_answer(session, collected);
                    let out = self.next_server_uni;
                    self.next_server_uni += 4;
                    if let Some(s) = self.sessions.get_mut(&session) {
                        // Keep the list short: answers already written need no reset later.
                        if s.server_streams.len() >= 64 {
                            let outgoing = &self.outgoing;
                            s.server_streams.retain(|x| outgoing.contains_key(x));
                        }
                        s.server_streams.push(out);
                    }
                    self.queue(quic, out, answer, true);
                }
            }
        }
        if fin {
            self.close_wt_stream(id, app);
        }
        Ok(())
    }

    /// A client stream of a session finished (FIN or reset): it no longer
    /// counts as open. An echo still being written continues on its own.
    fn close_wt_stream<A: Application>(&mut self, id: u64, app: &mut A) {
        let Some(StreamState::Wt(stream)) = self.streams.remove(&id) else { return };
        let session = stream.session();
        if let Some(s) = self.sessions.get_mut(&session) {
            s.peer_streams.retain(|x| *x != id);
        }
        Counters::sub(&self.counters.wt_peer_streams_open, 1);
        app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Closed, is_client_bidi(id));
    }

    /// HTTP/3 datagrams (RFC 9297): quarter stream ID, then payload. A
    /// datagram for an open session is counted and echoed; others dropped.
    /// RFC 9297 section 2.1: a Quarter Stream ID of 2^60 or more is a
    /// connection error H3_DATAGRAM_ERROR; one naming no open session is
    /// dropped silently.
    /// Also called by the I/O loop between packets when quiche's receive
    /// queue fills up (server.rs, DGRAM_DRAIN_AT).
    pub fn on_datagrams<A: Application>(&mut self, quic: &mut quiche::Connection, app: &mut A, scratch: &mut [u8]) -> H3Result<()> {
        let mut count = 0u32;
        let mut result = Ok(());
        while let Ok(n) = quic.dgram_recv(scratch) {
            let Some((quarter, _)) = varint::decode(&scratch[..n]) else {
                result = Err(H3Error::connection(H3_DATAGRAM_ERROR, "datagram without a Quarter Stream ID"));
                break;
            };
            if quarter >= wt::MAX_QUARTER_STREAM_ID {
                result = Err(H3Error::connection(H3_DATAGRAM_ERROR, "Quarter Stream ID too large"));
                break;
            }
            if self.sessions.contains_key(&(quarter * 4)) {
                count += 1;
                let _ = quic.dgram_send(&scratch[..n]);
            }
        }
        if count > 0 {
            Counters::add(&self.counters.wt_datagrams_received, u64::from(count));
            app.on_datagrams(self.conn, count);
        }
        result
    }
}
