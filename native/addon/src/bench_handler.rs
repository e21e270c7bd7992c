//! BENCHMARK-ONLY native handlers: Profile A's routes and Profile C's byte
//! count answered inside the I/O thread, without crossing into JavaScript,
//! and W8's upload and download (bench_transfer.rs).
//! They exist to measure the ceiling of the Rust/TypeScript boundary's cost
//! (issue 5, workload W6); the addon has them only when built with the cargo
//! feature `bench-handler` (`npm run bench` builds that variant), and they
//! are switched on by `listen`'s `benchNativeHandler` ("a", "c", or
//! "w8:<file>"). They are
//! not an API: the real profiles live in src/profiles/, and these must
//! answer the same bytes so that the comparison is fair.
//!
//! The handler is an `Application` in front of the JavaScript link: it
//! answers every whole request at once and passes everything else on, so
//! JavaScript still hears of connections, logs and shutdown.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use h3core::app::{AbortReason, Action, Application, ConnClosed, LogLevel, Mark, Reply, Request, Response, SessionStream};
use h3core::config::Options;
use h3core::h3::request::RequestHead;
use h3core::ids::{ConnId, StreamId};

use crate::bench_transfer::Transfers;
use crate::boundary::link::JsLink;

/// Profile C's application body cap (src/profiles/profile-c.ts, BODY_CAP).
const BODY_CAP: usize = 4096;
const BEARER: &[u8] = b"Bearer h3-demo-token-2f9c";
const SESSION_COOKIE: &[u8] = b"session=h3-demo-7b41e0";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NativeHandler {
    ProfileA,
    ProfileC,
    /// W8's routes, sending this file; the rest goes to JavaScript.
    Transfer(PathBuf),
}

impl NativeHandler {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "a" => Some(Self::ProfileA),
            "c" => Some(Self::ProfileC),
            _ => name.strip_prefix("w8:").map(|file| Self::Transfer(PathBuf::from(file))),
        }
    }

    /// Profile C counts the body while it is buffered; the core's own
    /// window overflow answers 413 exactly where Profile C's cap would.
    pub fn adjust(&self, options: &mut Options) {
        if *self == Self::ProfileC {
            options.streamed_bodies = false;
            options.body_window = BODY_CAP;
        }
    }
}

const TEXT: (&[u8], &[u8]) = (b"content-type", b"text/plain");
const TEXT_ONLY: &[(&[u8], &[u8])] = &[TEXT];

/// The benchmark's answerer in front of the JavaScript link.
pub struct BenchHandler {
    handler: NativeHandler,
    link: JsLink,
    /// The body of the response being answered (Profile C's count).
    body: Vec<u8>,
    /// W8's transfers (NativeHandler::Transfer).
    transfers: Option<Transfers>,
}

impl BenchHandler {
    pub fn new(handler: NativeHandler, link: JsLink) -> Self {
        let transfers = match &handler {
            NativeHandler::Transfer(file) => Some(Transfers::new(file.clone())),
            _ => None,
        };
        BenchHandler { handler, link, body: Vec::new(), transfers }
    }

    /// Answers one whole request (`body_len` bytes of body received).
    fn answer(&mut self, head: &RequestHead, body_len: usize) -> Response<'_> {
        let text = |status, body: &'static [u8]| Response { status, fields: TEXT_ONLY, body };
        match self.handler {
            NativeHandler::ProfileC => {
                self.body.clear();
                let _ = writeln!(self.body, "{body_len}");
                Response { status: 200, fields: TEXT_ONLY, body: &self.body }
            }
            NativeHandler::Transfer(_) => unreachable!("W8's handler answers through Transfers"),
            NativeHandler::ProfileA => {
                let path = head.path().unwrap_or(b"");
                let path = path.split(|b| *b == b'?').next().unwrap_or(b"");
                match path {
                    b"/redirect" => Response { status: 302, fields: &[(b"location", b"/target")], body: b"" },
                    b"/login" => {
                        Response { status: 200, fields: &[TEXT, (b"set-cookie", SESSION_COOKIE)], body: b"login succeeded\n" }
                    }
                    b"/secret" => {
                        let authorized =
                            head.field(b"authorization") == Some(BEARER) || head.field(b"cookie") == Some(SESSION_COOKIE);
                        if authorized {
                            text(200, b"secret: the owl flies at midnight\n")
                        } else {
                            text(401, b"unauthorized\n")
                        }
                    }
                    _ => text(404, b"not found\n"),
                }
            }
        }
    }
}

impl Application for BenchHandler {
    fn on_request(&mut self, conn: ConnId, stream: StreamId, request: Request<'_>) -> Reply<'_> {
        if let Some(t) = &mut self.transfers {
            if t.on_request(conn, stream, request.head, request.ended, request.body) {
                return Reply::Later;
            }
            return self.link.on_request(conn, stream, request);
        }
        if !request.ended {
            // A streamed body still arriving: JavaScript answers this one.
            return self.link.on_request(conn, stream, request);
        }
        let body_len = request.body.map_or(0, <[u8]>::len);
        Reply::Now(self.answer(request.head, body_len))
    }

    fn on_body(&mut self, conn: ConnId, stream: StreamId, data: &[u8], fin: bool) {
        if self.transfers.as_mut().is_some_and(|t| t.on_body(conn, stream, data, fin)) {
            return;
        }
        self.link.on_body(conn, stream, data, fin);
    }

    fn on_trailers(&mut self, conn: ConnId, stream: StreamId, fields: &[(Vec<u8>, Vec<u8>)]) {
        self.link.on_trailers(conn, stream, fields);
    }

    fn on_sent(&mut self, conn: ConnId, stream: StreamId, total: u64) {
        if self.transfers.as_mut().is_some_and(|t| t.on_sent(conn, stream, total)) {
            return;
        }
        self.link.on_sent(conn, stream, total);
    }

    fn on_peer_field_limit(&mut self, conn: ConnId, limit: u64) {
        self.link.on_peer_field_limit(conn, limit);
    }

    fn on_stream_aborted(&mut self, conn: ConnId, stream: StreamId, reason: AbortReason, code: u64) {
        if self.transfers.as_mut().is_some_and(|t| t.forget(conn, stream)) {
            return;
        }
        self.link.on_stream_aborted(conn, stream, reason, code);
    }

    fn on_conn_open(&mut self, conn: ConnId, peer: SocketAddr, cid: &str) {
        self.link.on_conn_open(conn, peer, cid);
    }

    fn on_peer_moved(&mut self, conn: ConnId, peer: SocketAddr) {
        self.link.on_peer_moved(conn, peer);
    }

    fn on_conn_closed(&mut self, conn: ConnId, closed: ConnClosed<'_>) {
        if let Some(t) = &mut self.transfers {
            t.forget_connection(conn);
        }
        self.link.on_conn_closed(conn, closed);
    }

    fn on_log(&mut self, level: LogLevel, message: &str) {
        self.link.on_log(level, message);
    }

    fn on_server_closed(&mut self) {
        self.link.on_server_closed();
    }

    fn on_session_open(&mut self, conn: ConnId, session: StreamId, path: &[u8]) {
        self.link.on_session_open(conn, session, path);
    }

    fn on_session_closed(&mut self, conn: ConnId, session: StreamId, code: u32, reason: &[u8]) {
        self.link.on_session_closed(conn, session, code, reason);
    }

    fn on_session_stream(&mut self, conn: ConnId, session: StreamId, stream: StreamId, what: SessionStream, bidi: bool) {
        self.link.on_session_stream(conn, session, stream, what, bidi);
    }

    fn on_datagrams(&mut self, conn: ConnId, count: u32) {
        self.link.on_datagrams(conn, count);
    }

    fn mark(&self) -> Mark {
        self.link.mark()
    }

    fn settled(&self, mark: Mark) -> bool {
        match &self.transfers {
            // A connection held for a transfer's answer waits only until the
            // queued actions are applied (the start of the next turn), unless
            // JavaScript has work of its own outstanding.
            Some(t) => t.due().is_none() && (self.link.settled(mark) || self.link.idle()),
            None => self.link.settled(mark),
        }
    }

    fn accepting(&self) -> bool {
        self.link.accepting()
    }

    fn take_actions(&mut self, mut apply: impl FnMut(ConnId, StreamId, Action<'_>)) {
        if let Some(t) = &mut self.transfers {
            t.take_actions(&mut apply);
        }
        self.link.take_actions(apply);
    }

    fn end_turn(&mut self) {
        self.link.end_turn();
    }

    fn wake_at(&self) -> Option<std::time::Instant> {
        // Actions queued in this turn are applied at the start of the next.
        let due = self.transfers.as_ref().and_then(Transfers::due);
        match (due, self.link.wake_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
