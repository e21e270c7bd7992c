//! The HTTP/3 layer of one connection, written on quiche's QUIC streams
//! instead of `quiche::h3` so that WebTransport streams can be claimed (see
//! docs/design.md). It classifies every client stream, reads frames, decodes
//! field sections with quiche's QPACK decoder, and turns finished pieces of
//! work into boundary events. Responses come back as `respond` calls.

use std::collections::VecDeque;
use std::sync::Arc;

use quiche::h3::qpack;

use super::codes::*;
use super::decoder_stream::DecoderStreamReader;
use super::encoded_lines;
use super::error::{H3Error, H3Result};
use super::frame::{self, Context, FrameEvent, FrameReader};
use super::settings::{self, LocalSettings, PeerSettings};
use super::webtransport::{self as wt, CapsuleEvent, Session, Sessions, WtStream};
use crate::app::{AbortReason, Action, Application, Reply, Request, Response, SessionStream};
use crate::counters::Counters;
use crate::id_map::IdMap;
use crate::ids::{ConnId, StreamId};
use crate::varint::{self, Partial};

mod request_stream;
mod send;
mod session;
#[cfg(test)]
mod tests;

use request_stream::{Feed, FeedContext, Phase, RequestStream};
use send::{Notice, Outgoing};

/// How request bodies reach JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    /// The whole body arrives with the REQUEST event; bodies larger than the
    /// window are answered 413 by the native core itself.
    Buffered { window: usize },
    /// REQUEST after the header section, then BODY chunks. At most `credit`
    /// bytes per stream are read ahead of what the application reported
    /// consumed (`Action::Consumed`), so a slow consumer slows the client
    /// through QUIC flow control.
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
    /// Sessions, their streams and datagrams go to the application rather
    /// than to the echo.
    pub webtransport_app: bool,
    /// Server-wide caps: sessions, client-opened session streams.
    pub wt_max_sessions: u64,
    pub wt_max_streams: u64,
    /// Client-opened streams one session may have open.
    pub wt_max_streams_per_session: u64,
    /// Application sessions: bytes of a stream read ahead of what the
    /// application reported consumed.
    pub wt_credit: usize,
    /// Requests of any method may be answered in 0-RTT; otherwise only
    /// safe ones (GET, HEAD, OPTIONS), the rest get 425 Too Early.
    pub early_data_any_method: bool,
}

/// Bytes read at a time from a stream not yet classified, when session
/// streams go to the application: a stream type or signal and a session ID
/// are two varints of at most 8 bytes each.
const CLASSIFY_READ: usize = 16;

/// The loop's body buffer for `read_stream` keeps its capacity up to this
/// (one read's body is at most the body credit); past it, it is given back.
const BODY_SCRATCH_KEEP: usize = 1 << 20;

/// The server's own control stream: the first server-initiated
/// unidirectional stream.
const CONTROL_STREAM_ID: u64 = 3;

fn is_client_bidi(id: u64) -> bool {
    id & 0x3 == 0
}

fn is_client_uni(id: u64) -> bool {
    id & 0x3 == 2
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
    WtSessionId {
        bidi: bool,
        id: Partial,
    },
    /// Client bidirectional stream whose first varint is still arriving:
    /// a frame type, or the WebTransport signal 0x41.
    BidiFirst(Partial),
    Request(Box<RequestStream>),
    /// A client stream of a WebTransport session.
    Wt(WtStream),
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
    streams: IdMap<u64, StreamState>,
    outgoing: IdMap<u64, Outgoing>,
    qpack_decoder: qpack::Decoder,
    /// Where header sections of up to 4 KiB are QPACK-encoded before they
    /// are framed; kept between responses so that the encoding buffer is
    /// not allocated and zeroed for each one.
    qpack_scratch: Vec<u8>,
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
    /// Next server-initiated bidirectional stream (application sessions).
    next_server_bidi: u64,
    /// This connection's shares of the server-wide gauges.
    gauges: Gauges,
    /// Learned while applying actions; reported at the next `process`.
    notices: Vec<Notice>,
    /// A response head was sent without FIN at some point: STOP_SENDING
    /// must be looked for on streams with nothing queued.
    streaming_responses: bool,
}

/// One connection's contribution to the server-wide gauges in `Counters`.
#[derive(Default, Clone, Copy)]
struct Gauges {
    request_streams: u64,
    send_bytes_queued: u64,
    body_bytes_buffered: u64,
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
            streams: IdMap::default(),
            outgoing: IdMap::default(),
            qpack_decoder: qpack::Decoder::new(),
            qpack_scratch: Vec::new(),
            goaway: None,
            next_request_floor: 0,
            closing: false,
            awaits_application: false,
            undelivered: Vec::new(),
            sessions: Sessions::default(),
            next_server_uni: CONTROL_STREAM_ID + 4,
            next_server_bidi: 1,
            gauges: Gauges::default(),
            notices: Vec::new(),
            streaming_responses: false,
        }
    }

    /// Brings this connection's shares of the server-wide gauges (live
    /// request streams, queued send bytes, buffered body bytes) up to date.
    /// Recounting (rather than tracking every insert and remove) keeps them
    /// exact whatever path retired a stream or drained a queue; the tables
    /// are bounded by the stream limit, so a recount is cheap.
    fn sync_gauges(&mut self) {
        let mut now = Gauges::default();
        for s in self.streams.values() {
            if let StreamState::Request(r) = s {
                now.request_streams += 1;
                now.body_bytes_buffered += r.message.body.len() as u64;
            }
        }
        now.send_bytes_queued = self.outgoing.values().map(|o| (o.data.len() - o.written) as u64).sum();
        let was = std::mem::replace(&mut self.gauges, now);
        let c = &self.counters;
        for (counter, old, new) in [
            (&c.request_streams_open, was.request_streams, now.request_streams),
            (&c.send_bytes_queued, was.send_bytes_queued, now.send_bytes_queued),
            (&c.body_bytes_buffered, was.body_bytes_buffered, now.body_bytes_buffered),
        ] {
            if new > old {
                Counters::add(counter, new - old);
            } else if new < old {
                Counters::sub(counter, old - new);
            }
        }
    }

    /// Requests not yet answered, or answered but not yet delivered: a
    /// graceful close waits for these. A response counts until quiche has
    /// collected its stream, i.e. the client acknowledged all of it.
    #[inline]
    pub fn requests_in_flight(&mut self, quic: &mut quiche::Connection) -> usize {
        self.prune_delivered(quic);
        self.streams.values().filter(|s| matches!(s, StreamState::Request(r) if !r.responded)).count()
            + self.undelivered.len()
            + if self.options.webtransport_app { self.sessions.len() } else { 0 }
    }

    /// Nothing in flight at all: no request, no response still unacknowledged,
    /// no WebTransport session (echo or application), no stream data unread.
    pub fn is_idle(&mut self, quic: &mut quiche::Connection) -> bool {
        self.requests_in_flight(quic) == 0 && self.sessions.is_empty() && quic.readable().len() == 0
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
        if self.options.webtransport_app {
            // Application sessions are asked to wind down too
            // (DRAIN_WEBTRANSPORT_SESSION); a graceful shutdown waits for
            // them as for requests (`requests_in_flight`).
            let ids: Vec<u64> = self.sessions.keys().copied().collect();
            for id in ids {
                self.queue(quic, id, wt::drain_capsule(), false);
            }
        }
    }

    /// Reads everything readable, within the body credit the application
    /// has settled. `body` is the loop's reusable buffer for a streamed
    /// body's bytes of one read (empty on entry and on return).
    pub fn process<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        app: &mut A,
        scratch: &mut [u8],
        body: &mut Vec<u8>,
    ) -> Outcome {
        self.awaits_application = false;
        self.open_control(quic);
        if self.closing {
            return Outcome::default();
        }
        self.check_stopped(quic);
        self.report(quic, app);
        for id in quic.readable() {
            let read = self.read_stream(quic, id, app, scratch, body);
            body.clear();
            if body.capacity() > BODY_SCRATCH_KEEP {
                *body = Vec::new();
            }
            if let Err(e) = read {
                if e.connection {
                    self.closing = true;
                    self.sync_gauges();
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
        self.report(quic, app);
        self.sync_gauges();
        Outcome { close: None, awaits_application: self.awaits_application }
    }

    fn read_stream<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        app: &mut A,
        scratch: &mut [u8],
        body: &mut Vec<u8>,
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
        // Streamed bodies: merge what one read delivers into one BODY event,
        // in a buffer the loop keeps (empty here: `process` clears it after
        // every read). A fresh one per read regrew from nothing each time,
        // a reallocation and copy per doubling (docs/design.md, "Copies
        // that start at an odd address").
        loop {
            let limit = match self.streams.get(&id) {
                Some(StreamState::Request(r)) => match self.options.body_mode {
                    BodyMode::Streamed { credit } if r.message.phase != Phase::Headers => {
                        credit.saturating_sub(r.unconsumed + body.len()).min(scratch.len())
                    }
                    _ => scratch.len(),
                },
                Some(StreamState::Wt(WtStream::App(a))) => {
                    self.options.wt_credit.saturating_sub(a.unconsumed + body.len()).min(scratch.len())
                }
                // With application sessions, a stream whose kind is not
                // known yet is read a few bytes at a time (enough for the
                // type and session ID), so that a session stream's first
                // read stays within its credit too.
                Some(StreamState::BidiFirst(_) | StreamState::UniType(_) | StreamState::WtSessionId { .. })
                    if self.options.webtransport_app =>
                {
                    CLASSIFY_READ.min(scratch.len())
                }
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
                    self.on_bytes(quic, id, &scratch[..n], fin, app, body)?;
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
        self.emit_body(id, body, false, app);
        Ok(())
    }

    /// Sends accumulated streamed-body bytes as one BODY event.
    fn emit_body<A: Application>(&mut self, id: u64, body: &[u8], fin: bool, app: &mut A) {
        if body.is_empty() && !fin {
            return;
        }
        match self.streams.get_mut(&id) {
            Some(StreamState::Request(r)) => {
                if r.responded {
                    return;
                }
                r.unconsumed += body.len();
            }
            Some(StreamState::Wt(WtStream::App(a))) => a.unconsumed += body.len(),
            _ => return,
        }
        app.on_body(self.conn, StreamId(id), body, fin);
        self.awaits_application = true;
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
                            self.streams.insert(id, StreamState::Request(Box::new(RequestStream::new(frames))));
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
                StreamState::Wt(_) => return self.on_wt_bytes(quic, id, data, fin, app, body),
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
                (frame_type::SETTINGS, false) => {
                    let parsed = settings::parse(&payload)?;
                    if let Some(limit) = parsed.max_field_section_size {
                        self.notices.push(Notice::PeerFieldLimit(limit));
                    }
                    self.peer_settings = Some(parsed);
                }
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
        let mode = self.options.body_mode;
        let cx = FeedContext {
            mode,
            max_field_section_size: self.options.max_field_section_size as u64,
            panic_on_path: self.options.panic_on_path.as_deref(),
            webtransport: self.options.webtransport,
            wt_max_sessions: self.options.wt_max_sessions,
            counters: &self.counters,
        };
        let mut capsule_bytes: Vec<u8> = Vec::new();
        let Some(StreamState::Request(req)) = self.streams.get_mut(&id) else { return Ok(()) };
        let had_head = req.message.phase != Phase::Headers;
        let fed = req.feed(data, &cx, &mut self.qpack_decoder, body, &mut capsule_bytes)?;
        if !had_head && req.message.phase != Phase::Headers {
            // When the header section was decoded: still in the handshake,
            // with 0-RTT keys, means the request came as early data.
            req.early_data = quic.is_in_early_data();
        }
        match fed {
            Feed::Read => {}
            Feed::Answer(status) => {
                req.response_started = true;
                req.responded = true;
                self.counters.native_statuses.count(status);
                self.respond_bytes(quic, id, status, &[], b"");
                return Ok(());
            }
            Feed::OpenSession if self.options.webtransport_app => {
                // The application accepts or refuses it (`act`); its place
                // under the session cap is taken meanwhile.
                req.session = true;
                req.delivered = true;
                let head = req.message.head.take().unwrap_or_default();
                req.session_path = head.path().unwrap_or_default().to_vec();
                let request =
                    Request { head: &head, early_data: req.early_data, complete: false, ended: false, body: None, session: true };
                let _ = app.on_request(self.conn, StreamId(id), request);
                self.awaits_application = true;
            }
            Feed::OpenSession => {
                req.session = true;
                req.responded = true;
                let path = req.message.head.take().and_then(|h| h.path().map(<[u8]>::to_vec)).unwrap_or_default();
                self.accept_session(quic, id, &path, app);
            }
        }
        if req_is_session(&self.streams, id) {
            return self.on_session_bytes(quic, id, &capsule_bytes, fin, app);
        }
        let Some(StreamState::Request(req)) = self.streams.get_mut(&id) else { return Ok(()) };
        if fin {
            req.finish()?;
        }

        // Deliver the request once the application has what it needs.
        let conn = self.conn;
        if !req.delivered && req.message.phase != Phase::Headers {
            let buffered = matches!(mode, BodyMode::Buffered { .. });
            if !buffered || req.read_done {
                req.delivered = true;
                let head = req.message.head.take().unwrap_or_default();
                // Streamed mode: a whole body that came with the header section
                // (a small upload, read in one go) rides in the request, as in
                // buffered mode, rather than in a BODY event of its own. It
                // needs no credit: nothing more will be read.
                if req.early_data && !self.options.early_data_any_method && !is_safe_method(head.method()) {
                    // RFC 8470 section 5.2: a request that is unsafe to
                    // replay, sent as early data, waits for the handshake:
                    // 425 tells the client to send it again after.
                    req.response_started = true;
                    req.responded = true;
                    self.counters.native_statuses.count(425);
                    self.respond_bytes(quic, id, 425, &[], b"");
                    return Ok(());
                }
                let complete = req.read_done && (buffered || req.message.trailers.is_none());
                let body_bytes: &[u8] = if buffered {
                    &req.message.body
                } else if complete {
                    body
                } else {
                    &[]
                };
                let request = Request {
                    head: &head,
                    early_data: req.early_data,
                    complete,
                    ended: req.read_done,
                    body: (!body_bytes.is_empty()).then_some(body_bytes),
                    session: false,
                };
                let reply = app.on_request(conn, StreamId(id), request);
                if complete {
                    body.clear();
                }
                match reply {
                    Reply::Later => {
                        self.awaits_application = true;
                        req.message.body = Vec::new();
                        if complete {
                            return Ok(());
                        }
                    }
                    Reply::Now(response) => {
                        req.response_started = true;
                        req.responded = true;
                        req.message.body = Vec::new();
                        self.respond_bytes(quic, id, response.status, response.fields, response.body);
                        return Ok(());
                    }
                }
            }
        }
        if req.delivered {
            if let Some(trailers) = req.message.trailers.take() {
                // Body bytes read before the trailer section go first.
                let pending = std::mem::take(body);
                self.emit_body(id, &pending, false, app);
                app.on_trailers(conn, StreamId(id), &trailers);
            }
        }
        if fin && matches!(mode, BodyMode::Streamed { .. }) && self.is_delivered(id) {
            let pending = std::mem::take(body);
            self.emit_body(id, &pending, true, app);
        }
        Ok(())
    }

    fn is_delivered(&self, id: u64) -> bool {
        matches!(self.streams.get(&id), Some(StreamState::Request(r)) if r.delivered)
    }
}

/// Safe methods (RFC 9110 section 9.2.1): replaying them changes nothing.
fn is_safe_method(method: &[u8]) -> bool {
    matches!(method, b"GET" | b"HEAD" | b"OPTIONS")
}

fn req_is_session(streams: &IdMap<u64, StreamState>, id: u64) -> bool {
    matches!(streams.get(&id), Some(StreamState::Request(r)) if r.session)
}
