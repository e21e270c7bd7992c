//! The one interface the protocol core reports to, in the spirit of
//! tokio-quiche's `ApplicationOverQuic`: the I/O loop and the HTTP/3 layer
//! call an `Application` (a generic parameter, so every call is static
//! dispatch) with what happened, and the application hands back responses.
//! The napi addon's JavaScript link implements it (it encodes event batches
//! for TypeScript); so does the benchmark's native answerer.

use std::net::SocketAddr;
use std::time::Instant;

use crate::h3::request::RequestHead;
use crate::ids::{ConnId, StreamId};

/// A point in the sequence of work handed to the application. The core
/// keeps marks (the turn a connection's packets were held for, the last
/// body chunk of a stream) and asks `Application::settled` whether the
/// application has caught up with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Mark(pub u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

/// Why a request stream ended without a normal finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortReason {
    PeerReset,
    PeerStopSending,
    ProtocolError,
    /// A response or trailer section the application gave is larger than
    /// the client's SETTINGS_MAX_FIELD_SECTION_SIZE; the stream was reset.
    FieldSectionTooLarge,
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseHow {
    /// The peer sent CONNECTION_CLOSE.
    Peer,
    /// This server closed it (protocol error, shutdown, panic).
    Local,
    IdleTimeout,
    /// The handshake never completed or the connection vanished otherwise.
    Other,
}

/// A closed connection, as the application hears of it.
pub struct ConnClosed<'a> {
    pub how: CloseHow,
    pub is_app: bool,
    pub code: u64,
    pub reason: &'a [u8],
    /// As people read it: an IPv4-mapped address is shown as IPv4 (udp_bind::display).
    pub peer: SocketAddr,
    pub cid: &'a str,
}

/// What happened to a client stream of a WebTransport session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStream {
    /// It joined its session (counts as open).
    Opened,
    /// It was offered but refused over the cap (never open).
    Rejected,
    Closed,
}

/// A request ready for the application.
pub struct Request<'a> {
    pub head: &'a RequestHead,
    /// The header section arrived as TLS early data (0-RTT): the client may
    /// send it again, and an attacker may replay it.
    pub early_data: bool,
    /// The whole request is in this call: no body chunks follow.
    pub complete: bool,
    /// The client finished the request stream (all of the body was read,
    /// though in streamed mode a trailer section may still follow).
    pub ended: bool,
    /// The whole body, when there is one and it is here: always in buffered
    /// mode; in streamed mode when the request is `complete` (the body came
    /// with the header section), else it follows in body chunks.
    pub body: Option<&'a [u8]>,
    /// An extended CONNECT for a WebTransport session (application mode):
    /// `Action::Headers` with a 2xx status and no FIN accepts it, any other
    /// final answer refuses it.
    pub session: bool,
}

/// A response: status, field lines and the whole body.
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    pub status: u16,
    pub fields: &'a [(&'a [u8], &'a [u8])],
    pub body: &'a [u8],
}

/// What the application asks of one request stream (the general,
/// streamed form of an answer; `Respond` is the one-shot fast path).
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// Status, fields, whole body, end of stream.
    Respond(Response<'a>),
    /// A header section: 1xx informational, or the final response's head
    /// (`fin` ends the stream with it), or with status 0 the trailer section
    /// (which always ends the stream).
    Headers { status: u16, fields: &'a [(&'a [u8], &'a [u8])], fin: bool },
    /// Body bytes of a response whose head was sent.
    Data { data: &'a [u8], fin: bool },
    /// The application consumed this many more bytes of the request body:
    /// body credit returns.
    Consumed(u64),
    /// Reset both directions with this HTTP/3 error code (a request
    /// stream), or the sending side only (a WebTransport stream:
    /// RESET_STREAM).
    Reset(u64),
    /// WebTransport stream: STOP_SENDING with this code; nothing more is read.
    StopSending(u64),
    /// Open this server-initiated stream (its ID chosen by the application,
    /// the next of its kind) for the session; writes follow as `Data`.
    Open { session: u64 },
    /// An HTTP datagram for this session (the action's stream is the
    /// session's CONNECT stream); dropped when QUIC's queue is full.
    Datagram(&'a [u8]),
    /// End this session: CLOSE_WEBTRANSPORT_SESSION with the code and
    /// reason, then FIN on its CONNECT stream; its streams are reset.
    CloseSession { code: u32, reason: &'a [u8] },
}

/// The application's answer to a request.
pub enum Reply<'a> {
    /// The application answers later, through `Application::take_responses`;
    /// the I/O loop may hold the connection's packets for it (HOLD_MAX).
    Later,
    /// Answer now with this response.
    Now(Response<'a>),
}

/// Everything the protocol core reports, and the little it asks back.
pub trait Application {
    /// A request is ready: its head and, in buffered mode, its body.
    fn on_request(&mut self, conn: ConnId, stream: StreamId, request: Request<'_>) -> Reply<'_>;
    /// Streamed mode: body bytes of a request already handed over. The
    /// stream reads at most the body credit ahead of what the application
    /// reported consumed (`Action::Consumed`).
    fn on_body(&mut self, conn: ConnId, stream: StreamId, data: &[u8], fin: bool);
    /// Streamed mode: the request's trailer section (after its last body
    /// bytes, before the FIN's body chunk).
    fn on_trailers(&mut self, conn: ConnId, stream: StreamId, fields: &[(Vec<u8>, Vec<u8>)]);
    /// QUIC has taken `total` bytes of this stream's response body so far
    /// (`Action::Data` payloads; cumulative), reported once per loop turn
    /// per stream that progressed.
    fn on_sent(&mut self, conn: ConnId, stream: StreamId, total: u64);
    /// The client's SETTINGS_MAX_FIELD_SECTION_SIZE, once its SETTINGS
    /// arrived with one (no call: the client set no limit).
    fn on_peer_field_limit(&mut self, conn: ConnId, max_field_section_size: u64);
    /// A request handed over ended without a normal finish.
    fn on_stream_aborted(&mut self, conn: ConnId, stream: StreamId, reason: AbortReason, code: u64);
    fn on_conn_open(&mut self, conn: ConnId, peer: SocketAddr, cid: &str);
    /// The connection follows the client to a new address (a validated
    /// path: NAT rebinding or migration), as people read it.
    fn on_peer_moved(&mut self, conn: ConnId, peer: SocketAddr);
    fn on_conn_closed(&mut self, conn: ConnId, closed: ConnClosed<'_>);
    fn on_log(&mut self, level: LogLevel, message: &str);
    /// The I/O loop is about to end; nothing follows.
    fn on_server_closed(&mut self);
    fn on_session_open(&mut self, conn: ConnId, session: StreamId, path: &[u8]);
    /// A session ended: closed by the client (its code and reason; 0 and
    /// empty when the CONNECT stream just ended or reset), by the
    /// application, or with its connection.
    fn on_session_closed(&mut self, conn: ConnId, session: StreamId, code: u32, reason: &[u8]);
    fn on_session_stream(&mut self, conn: ConnId, session: StreamId, stream: StreamId, what: SessionStream, bidi: bool);
    /// Echo mode: datagrams counted (and echoed) for open sessions on one connection.
    fn on_datagrams(&mut self, conn: ConnId, count: u32);
    /// Application mode: one datagram for a session, its payload after the
    /// Quarter Stream ID.
    fn on_datagram(&mut self, _conn: ConnId, _session: StreamId, _payload: &[u8]) {}
    /// A handshake names a server the identity table does not know, and
    /// the application chooses (SNICallback): it answers `request` through
    /// `Shared::answer_identity`. Until then the handshake waits (at most
    /// the handshake timeout).
    fn on_identity_wanted(&mut self, _conn: ConnId, _request: u32, _server_name: &str) {}
    /// The handshake completed after asking for a client certificate:
    /// `verify_error` is None when the chain verified (X509_V_ERR_* code
    /// otherwise: 2 when the client sent none), `chain` the client's
    /// certificates as DER, leaf first (empty: none).
    fn on_client_certificate(&mut self, _conn: ConnId, _verify_error: Option<i32>, _chain: &[&[u8]]) {}

    /// The current point in the work handed over.
    fn mark(&self) -> Mark;
    /// The application has caught up with everything handed over up to
    /// `mark` (answered it, or consumed and acknowledged it).
    fn settled(&self, mark: Mark) -> bool;
    /// False while the application is too far behind: the loop then stops
    /// reading the socket (the kernel buffer and QUIC flow control absorb
    /// the rest).
    fn accepting(&self) -> bool;
    /// Hands everything the application has asked of streams to `apply`, in order.
    fn take_actions(&mut self, apply: impl FnMut(ConnId, StreamId, Action<'_>));
    /// The loop turn ends: pass on what it produced.
    fn end_turn(&mut self);
    /// A time the application wants a loop turn by even if nothing else
    /// happens (it holds back what need not be passed on at once).
    fn wake_at(&self) -> Option<Instant> {
        None
    }
}
