//! One request stream: its frames (HEADERS, DATA, trailers) read into a
//! request head and body, and what reading them decided.

use quiche::h3::qpack;

use super::BodyMode;
use crate::counters::Counters;
use crate::h3::codes::*;
use crate::h3::error::{H3Error, H3Result};
use crate::h3::field_section::{self, FieldSectionError};
use crate::h3::frame::{FrameEvent, FrameReader};
use crate::h3::request::{validate_request, validate_trailers, RequestHead};
use crate::h3::webtransport as wt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Headers,
    Body,
    Trailers,
}

/// What the bytes fed to a request stream decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Feed {
    /// Read; nothing for the connection to do beyond delivering the request.
    Read,
    /// The core answers this request itself with this status (413 over the
    /// body window, 429 past the session cap, 431 over the field-section
    /// size, 501 for CONNECT); the rest of the bytes were not looked at.
    Answer(u16),
    /// An extended CONNECT for WebTransport was accepted (its place under
    /// the session cap is taken): open the session.
    OpenSession,
}

/// What a request stream needs to know of its connection to read frames.
pub(super) struct FeedContext<'a> {
    pub mode: BodyMode,
    pub max_field_section_size: u64,
    pub panic_on_path: Option<&'a [u8]>,
    pub webtransport: bool,
    pub wt_max_sessions: u64,
    pub counters: &'a Counters,
}

/// The message being read: head, body so far, and where in it we are.
pub(super) struct Message {
    pub phase: Phase,
    pub content_length: Option<u64>,
    pub body_len: u64,
    /// Buffered mode only.
    pub body: Vec<u8>,
    pub head: Option<RequestHead>,
    /// A trailer section read and not yet handed to the application.
    pub trailers: Option<Vec<(Vec<u8>, Vec<u8>)>>,
}

pub(super) struct RequestStream {
    pub frames: FrameReader,
    pub message: Message,
    /// The request went to the application, so an abort must be reported.
    pub delivered: bool,
    /// The final response's header section was queued (it may still be
    /// streaming its body).
    pub response_started: bool,
    /// The response is complete (its FIN queued); later bytes from the
    /// client are not wanted.
    pub responded: bool,
    /// The response's body bytes handed over so far: the application's
    /// `Action::Data` payloads (for `Application::on_sent`).
    pub data_queued: u64,
    /// No more bytes will be read: FIN seen, or reading was stopped.
    pub read_done: bool,
    /// Streamed mode: body bytes handed to the application that it has not
    /// reported consumed; reading stops at the body credit.
    pub unconsumed: usize,
    /// This CONNECT stream carries an accepted WebTransport session.
    pub session: bool,
    /// Application sessions: the CONNECT's path, kept for the session's
    /// open event at acceptance.
    pub session_path: Vec<u8>,
    /// The header section arrived in 0-RTT (TLS early data).
    pub early_data: bool,
}

impl RequestStream {
    pub fn new(frames: FrameReader) -> Self {
        RequestStream {
            frames,
            message: Message {
                phase: Phase::Headers,
                content_length: None,
                body_len: 0,
                body: Vec::new(),
                head: None,
                trailers: None,
            },
            delivered: false,
            response_started: false,
            responded: false,
            data_queued: 0,
            read_done: false,
            unconsumed: 0,
            session: false,
            session_path: Vec::new(),
            early_data: false,
        }
    }

    /// Reads `data` frame by frame. Streamed body bytes are appended to
    /// `streamed`; on a session's CONNECT stream, DATA payloads (capsules) to
    /// `capsules`.
    pub fn feed(
        &mut self,
        data: &[u8],
        cx: &FeedContext<'_>,
        decoder: &mut qpack::Decoder,
        streamed: &mut Vec<u8>,
        capsules: &mut Vec<u8>,
    ) -> H3Result<Feed> {
        let is_session = self.session;
        let message = &mut self.message;
        let mut fed = Feed::Read;
        self.frames.feed(data, &mut |ev| {
            if matches!(fed, Feed::Answer(_)) {
                return Ok(());
            }
            let (phase, ev_is_data) = (message.phase, matches!(ev, FrameEvent::Data(_)));
            if is_session && ev_is_data && phase == Phase::Body {
                if let FrameEvent::Data(d) = ev {
                    capsules.extend_from_slice(d);
                }
                return Ok(());
            }
            match message.on_frame(ev, cx, decoder, streamed)? {
                Feed::Read => {}
                // An answer overrides an accepted session (its place under
                // the cap stays taken, as it always has).
                f @ Feed::Answer(_) => fed = f,
                Feed::OpenSession => fed = Feed::OpenSession,
            }
            Ok(())
        })?;
        Ok(fed)
    }

    /// The client finished the stream: it must end between frames, after a
    /// header section, with the body content-length announced.
    pub fn finish(&mut self) -> H3Result<()> {
        if !self.frames.at_boundary() {
            return Err(H3Error::connection(H3_FRAME_ERROR, "stream ended inside a frame"));
        }
        if self.message.phase == Phase::Headers {
            return Err(H3Error::stream(H3_REQUEST_INCOMPLETE, "request stream ended before HEADERS"));
        }
        if self.message.content_length.is_some_and(|cl| cl != self.message.body_len) {
            return Err(H3Error::stream(H3_MESSAGE_ERROR, "body shorter than content-length"));
        }
        self.read_done = true;
        Ok(())
    }
}

impl Message {
    fn on_frame(
        &mut self,
        ev: FrameEvent<'_>,
        cx: &FeedContext<'_>,
        decoder: &mut qpack::Decoder,
        streamed: &mut Vec<u8>,
    ) -> H3Result<Feed> {
        match (ev, self.phase) {
            (FrameEvent::Whole { ty: frame_type::HEADERS, payload }, Phase::Headers) => self.on_headers(&payload, cx, decoder),
            (FrameEvent::Whole { ty: frame_type::HEADERS, payload }, Phase::Body) => {
                let lines = field_section::decode(decoder, &payload, cx.max_field_section_size).map_err(|e| match e {
                    FieldSectionError::TooLarge => H3Error::stream(H3_EXCESSIVE_LOAD, "trailers too large"),
                    FieldSectionError::Invalid => H3Error::connection(QPACK_DECOMPRESSION_FAILED, "QPACK decoding failed"),
                })?;
                validate_trailers(&lines)?;
                self.phase = Phase::Trailers;
                if matches!(cx.mode, BodyMode::Streamed { .. }) {
                    self.trailers = Some(lines.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect());
                }
                Ok(Feed::Read)
            }
            (FrameEvent::Oversized { .. }, Phase::Headers) => Ok(Feed::Answer(431)),
            (FrameEvent::Oversized { .. }, _) => Err(H3Error::stream(H3_EXCESSIVE_LOAD, "trailers too large")),
            (FrameEvent::DataStart { .. }, Phase::Body) => Ok(Feed::Read),
            (FrameEvent::Data(d), Phase::Body) => self.on_body(d, cx, streamed),
            (FrameEvent::DataStart { .. } | FrameEvent::Data(_), _) => {
                Err(H3Error::connection(H3_FRAME_UNEXPECTED, "DATA outside the body"))
            }
            (FrameEvent::Whole { .. }, _) => Err(H3Error::connection(H3_FRAME_UNEXPECTED, "unexpected frame on request stream")),
        }
    }

    fn on_headers(&mut self, payload: &[u8], cx: &FeedContext<'_>, decoder: &mut qpack::Decoder) -> H3Result<Feed> {
        let lines = match field_section::decode(decoder, payload, cx.max_field_section_size) {
            Ok(lines) => lines,
            // Larger than our advertised SETTINGS_MAX_FIELD_SECTION_SIZE
            // once decoded: the same answer as an oversized frame.
            Err(FieldSectionError::TooLarge) => return Ok(Feed::Answer(431)),
            Err(FieldSectionError::Invalid) => {
                return Err(H3Error::connection(QPACK_DECOMPRESSION_FAILED, "QPACK decoding failed"));
            }
        };
        let h = validate_request(lines)?;
        if cx.panic_on_path.is_some() && h.path() == cx.panic_on_path {
            panic!("fault injection: request for the configured panic path");
        }
        self.content_length = h.content_length;
        self.phase = Phase::Body;
        let mut fed = Feed::Read;
        if h.is_plain_connect() {
            // This server is not a proxy.
            fed = Feed::Answer(501);
        } else if h.is_extended_connect() {
            let is_wt = h.protocol().is_some_and(wt::is_webtransport_protocol);
            if !cx.webtransport || !is_wt {
                fed = Feed::Answer(501);
            } else if !wt::try_open(&cx.counters.wt_sessions_open, cx.wt_max_sessions) {
                // Over the server-wide session capacity.
                fed = Feed::Answer(429);
            } else {
                fed = Feed::OpenSession;
            }
        }
        self.head = Some(h);
        Ok(fed)
    }

    fn on_body(&mut self, d: &[u8], cx: &FeedContext<'_>, streamed: &mut Vec<u8>) -> H3Result<Feed> {
        self.body_len += d.len() as u64;
        Counters::add(&cx.counters.body_bytes_read, d.len() as u64);
        if self.content_length.is_some_and(|cl| self.body_len > cl) {
            return Err(H3Error::stream(H3_MESSAGE_ERROR, "body longer than content-length"));
        }
        match cx.mode {
            BodyMode::Buffered { window } => {
                if self.body.len() + d.len() > window {
                    return Ok(Feed::Answer(413));
                }
                crate::bytes::append(&mut self.body, d);
            }
            BodyMode::Streamed { .. } => crate::bytes::append(streamed, d),
        }
        Ok(Feed::Read)
    }
}
