//! WebTransport over HTTP/3 (draft-ietf-webtrans-http3): sessions opened by
//! extended CONNECT, client streams routed to their session, HTTP/3
//! datagrams, and the capsules on the CONNECT stream. Two behaviours:
//! - echo (Profile B, the demo's): a bidirectional stream is echoed on
//!   itself, a unidirectional stream is answered on a server-opened one, a
//!   datagram is echoed; TypeScript sees session, stream and datagram
//!   events, from which it keeps the statistics;
//! - application (`H3Options::webtransport_app`): the CONNECT goes to the
//!   application, which accepts (2xx) or refuses it; stream bytes and
//!   datagrams go to it and come from it, streams under the same body
//!   credit as request bodies (`WtStream::App`).

use crate::id_map::IdMap;

use super::codes::{capsule, stream_type, WEBTRANSPORT_BIDI_SIGNAL, WT_BUFFERED_STREAM_REJECTED, WT_SESSION_GONE};
use crate::app::{Application, SessionStream};
use crate::counters::Counters;
use crate::ids::{ConnId, StreamId};
use crate::varint::{self, Partial};

/// Build-time capacity: WebTransport sessions open at once, server-wide.
pub const SESSIONS_CAP: u64 = 32;
/// Build-time capacity: client-opened WebTransport streams open at once,
/// server-wide.
pub const PEER_STREAMS_CAP: u64 = 128;

/// Echo buffering per stream: a bidirectional stream is read only while its
/// echo has less than this waiting; a unidirectional stream's answer keeps
/// at most this much (the rest is read and dropped).
pub const ECHO_LIMIT: usize = 64 * 1024;

/// Largest capsule read whole (CLOSE_WEBTRANSPORT_SESSION carries a
/// 32-bit code and at most 1024 bytes of reason); others are skipped.
const MAX_CAPSULE: u64 = 1100;

/// `:protocol` values that open a session: drafts up to 14 and draft 15.
pub fn is_webtransport_protocol(p: &[u8]) -> bool {
    p == b"webtransport" || p == b"webtransport-h3"
}

pub struct Session {
    /// Client-opened streams of this session still open.
    pub peer_streams: Vec<u64>,
    /// Streams this server opened for the session (answers to uni streams).
    pub server_streams: Vec<u64>,
    pub capsules: CapsuleReader,
}

impl Session {
    pub fn new() -> Self {
        Session { peer_streams: Vec::new(), server_streams: Vec::new(), capsules: CapsuleReader::default() }
    }
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

/// What a stream of a session is doing.
pub enum WtStream {
    /// Echoed back on itself.
    Bidi { session: u64 },
    /// Collected, then answered on a server-opened stream at FIN.
    Uni { session: u64, data: Vec<u8> },
    /// Carried for the application, either side's stream.
    App(AppStream),
}

/// A stream of an application session. Bytes read go to the application
/// as BODY events, at most the body credit ahead of what it reported
/// consumed; bytes it writes go out raw (no HTTP/3 framing).
pub struct AppStream {
    pub session: u64,
    /// Read and handed over, not yet reported consumed.
    pub unconsumed: usize,
    /// Nothing more will be read: FIN read, STOP_SENDING sent, or the
    /// stream has no receiving side (one this server opened one-way).
    pub read_done: bool,
    /// Nothing more will be written: FIN queued, RESET_STREAM sent, or the
    /// stream has no sending side (one the client opened one-way).
    pub write_done: bool,
    /// Bytes the application handed over for sending (SENT reports progress).
    pub queued: u64,
}

impl AppStream {
    pub fn new(session: u64, id: u64) -> Self {
        let server_opened = id & 0x1 == 1;
        let uni = id & 0x2 != 0;
        AppStream { session, unconsumed: 0, read_done: uni && server_opened, write_done: uni && !server_opened, queued: 0 }
    }
}

impl WtStream {
    pub fn session(&self) -> u64 {
        match self {
            WtStream::Bidi { session } | WtStream::Uni { session, .. } => *session,
            WtStream::App(a) => a.session,
        }
    }
}

/// The prefix of a stream this server opens for a session: the bidirectional
/// signal 0x41 or the unidirectional stream type 0x54, then the session ID.
pub fn stream_prefix(session: u64, bidi: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    varint::encode(if bidi { WEBTRANSPORT_BIDI_SIGNAL } else { stream_type::WEBTRANSPORT_UNI }, &mut out);
    varint::encode(session, &mut out);
    out
}

/// A DRAIN_WEBTRANSPORT_SESSION capsule (no payload) in a DATA frame.
pub fn drain_capsule() -> Vec<u8> {
    let mut capsule = Vec::with_capacity(8);
    varint::encode(capsule::DRAIN_WEBTRANSPORT_SESSION, &mut capsule);
    varint::encode(0, &mut capsule);
    let mut out = Vec::with_capacity(capsule.len() + 2);
    super::frame::write_header(super::codes::frame_type::DATA, capsule.len(), &mut out);
    out.extend_from_slice(&capsule);
    out
}

/// A CLOSE_WEBTRANSPORT_SESSION capsule (code, reason of at most 1024 bytes)
/// in a DATA frame, as it goes on the CONNECT stream.
pub fn close_capsule(code: u32, reason: &[u8]) -> Vec<u8> {
    let reason = &reason[..reason.len().min(1024)];
    let mut capsule = Vec::with_capacity(reason.len() + 16);
    varint::encode(capsule::CLOSE_WEBTRANSPORT_SESSION, &mut capsule);
    varint::encode(4 + reason.len() as u64, &mut capsule);
    capsule.extend_from_slice(&code.to_be_bytes());
    capsule.extend_from_slice(reason);
    let mut out = Vec::with_capacity(capsule.len() + 8);
    super::frame::write_header(super::codes::frame_type::DATA, capsule.len(), &mut out);
    out.extend_from_slice(&capsule);
    out
}

/// Reads the capsule sequence (RFC 9297 section 3.2) carried in the DATA
/// frames of a CONNECT stream.
#[derive(Default)]
pub struct CapsuleReader {
    state: CapsuleState,
    buf: Vec<u8>,
}

enum CapsuleState {
    Type(Partial),
    Length { ty: u64, len: Partial },
    Value { ty: u64, remaining: u64 },
}

impl Default for CapsuleState {
    fn default() -> Self {
        CapsuleState::Type(Partial::default())
    }
}

pub enum CapsuleEvent {
    Close { code: u32, reason: Vec<u8> },
    Drain,
}

impl CapsuleReader {
    pub fn feed(&mut self, mut data: &[u8], out: &mut Vec<CapsuleEvent>) {
        while !data.is_empty() {
            match &mut self.state {
                CapsuleState::Type(p) => {
                    let (ty, used) = p.feed(data);
                    data = &data[used..];
                    if let Some(ty) = ty {
                        self.state = CapsuleState::Length { ty, len: Partial::default() };
                    }
                }
                CapsuleState::Length { ty, len } => {
                    let ty = *ty;
                    let (n, used) = len.feed(data);
                    data = &data[used..];
                    if let Some(n) = n {
                        self.buf.clear();
                        if n == 0 {
                            self.state = CapsuleState::default();
                            self.finish(ty, out);
                        } else {
                            self.state = CapsuleState::Value { ty, remaining: n };
                        }
                    }
                }
                CapsuleState::Value { ty, remaining } => {
                    let take = (*remaining).min(data.len() as u64) as usize;
                    if self.buf.len() + take <= MAX_CAPSULE as usize {
                        self.buf.extend_from_slice(&data[..take]);
                    }
                    data = &data[take..];
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        let ty = *ty;
                        self.state = CapsuleState::default();
                        self.finish(ty, out);
                    }
                }
            }
        }
    }

    fn finish(&mut self, ty: u64, out: &mut Vec<CapsuleEvent>) {
        match ty {
            capsule::CLOSE_WEBTRANSPORT_SESSION if self.buf.len() >= 4 => {
                let code = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                out.push(CapsuleEvent::Close { code, reason: self.buf[4..].to_vec() });
            }
            capsule::DRAIN_WEBTRANSPORT_SESSION => out.push(CapsuleEvent::Drain),
            // DATAGRAM capsules and unknown types are skipped (RFC 9297 3.2).
            _ => {}
        }
        self.buf.clear();
    }
}

/// Server-wide WebTransport bookkeeping that the caps apply to.
pub fn try_open(counter: &std::sync::atomic::AtomicU64, cap: u64) -> bool {
    // Only the I/O thread changes these counters, so load-then-add is exact.
    if Counters::get(counter) >= cap {
        return false;
    }
    Counters::add(counter, 1);
    true
}

/// A unidirectional stream answer: type 0x54, the session ID, the payload.
pub fn uni_answer(session: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 10);
    varint::encode(stream_type::WEBTRANSPORT_UNI, &mut out);
    varint::encode(session, &mut out);
    out.extend_from_slice(data);
    out
}

/// Resets what is left of a session's streams when it ends (draft section
/// 6: WT_SESSION_GONE) and reports each client stream closed.
pub fn abandon_streams<A: Application>(
    quic: &mut quiche::Connection,
    conn: ConnId,
    session_id: u64,
    session: &Session,
    counters: &Counters,
    app: &mut A,
) {
    for id in &session.peer_streams {
        let _ = quic.stream_shutdown(*id, quiche::Shutdown::Read, WT_SESSION_GONE);
        if id & 0x2 == 0 {
            let _ = quic.stream_shutdown(*id, quiche::Shutdown::Write, WT_SESSION_GONE);
        }
        Counters::sub(&counters.wt_peer_streams_open, 1);
        app.on_session_stream(conn, StreamId(session_id), StreamId(*id), SessionStream::Closed, id & 0x2 == 0);
    }
    for id in &session.server_streams {
        let _ = quic.stream_shutdown(*id, quiche::Shutdown::Write, WT_SESSION_GONE);
        if id & 0x2 == 0 {
            // A bidirectional stream this server opened (application sessions).
            let _ = quic.stream_shutdown(*id, quiche::Shutdown::Read, WT_SESSION_GONE);
        }
    }
}

/// Refuses a client stream: for an unknown session, or over the cap.
#[inline]
pub fn refuse_stream(quic: &mut quiche::Connection, id: u64, bidi: bool) {
    let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, WT_BUFFERED_STREAM_REJECTED);
    if bidi {
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, WT_BUFFERED_STREAM_REJECTED);
    }
}

pub type Sessions = IdMap<u64, Session>;

/// RFC 9297 section 2.1: the Quarter Stream ID of an HTTP/3 datagram is
/// below 2^60 (a client bidirectional stream ID fits in 62 bits).
pub const MAX_QUARTER_STREAM_ID: u64 = 1 << 60;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_close_capsule_split_anywhere_after_unknown_ones() {
        // An unknown capsule (type 0x29, 2 bytes), then CLOSE (0x2843) with
        // code 7 and reason "bye".
        let bytes = [0x29, 0x02, 0xaa, 0xbb, 0x68, 0x43, 0x07, 0, 0, 0, 7, b'b', b'y', b'e'];
        for cut in 0..bytes.len() {
            let mut r = CapsuleReader::default();
            let mut out = Vec::new();
            r.feed(&bytes[..cut], &mut out);
            r.feed(&bytes[cut..], &mut out);
            assert_eq!(out.len(), 1, "cut {cut}");
            match &out[0] {
                CapsuleEvent::Close { code, reason } => {
                    assert_eq!(*code, 7);
                    assert_eq!(reason, b"bye");
                }
                CapsuleEvent::Drain => panic!("drain"),
            }
        }
    }
}
