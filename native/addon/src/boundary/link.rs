//! The JavaScript link: the application the I/O loop reports to in the
//! shipped addon. It encodes what the core reports into one event batch per
//! loop turn, numbers the batches, and reads JavaScript's command batches
//! and acknowledgements (`NativeServer.submit`). A batch's sequence number
//! is the `Mark` the core keeps: a mark is settled once JavaScript has
//! acknowledged that batch (it has answered, or consumed, what it carried).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use h3core::app::{
    AbortReason, Action, Application, CloseHow, ConnClosed, LogLevel, Mark, Reply, Request, Response, SessionStream,
};
use h3core::ids::{ConnId, StreamId};

use super::codes::{abort_reason, close_how, log_level, request_flag, wt_stream};
use super::commands::{Command, CommandReader, What};
use super::events::EventBatch;

/// Event batches JavaScript may leave unacknowledged before the loop stops
/// reading the socket; the kernel buffer and QUIC flow control absorb the rest.
const MAX_UNACKED_BATCHES: u64 = 64;

/// How long a batch of events JavaScript need not hear at once (a connection
/// opened, moved or closed, the client's field-section limit) waits for one that
/// wakes JavaScript anyway. A short connection then costs the JavaScript
/// thread one wake (its request) instead of three, and the loop one
/// acknowledgement instead of three (docs/design.md, "Lazy events").
const LAZY_HOLD: Duration = Duration::from_millis(10);

/// A held batch of lazy events goes at once past this size.
const LAZY_MAX_BYTES: usize = 64 * 1024;

/// What the JavaScript thread hands the I/O thread.
#[derive(Default)]
pub struct Inbox {
    pub commands: Mutex<Vec<Vec<u8>>>,
    /// Sequence number of the latest event batch JavaScript acknowledged.
    pub acked_batch: AtomicU64,
}

/// Receives each finished event batch; the napi layer forwards it to
/// JavaScript.
pub type Sink = Box<dyn FnMut(Vec<u8>) + Send>;

pub struct JsLink {
    events: EventBatch,
    /// Sequence number of the batch being filled (the first is 1).
    batch_seq: u64,
    inbox: Arc<Inbox>,
    sink: Sink,
    /// Events in the batch being filled that can wait (LAZY_HOLD).
    lazy: u32,
    /// When the batch being filled, lazy events only, was first held.
    held_since: Option<Instant>,
}

impl JsLink {
    pub fn new(inbox: Arc<Inbox>, sink: Sink) -> Self {
        JsLink { events: EventBatch::default(), batch_seq: 1, inbox, sink, lazy: 0, held_since: None }
    }

    /// Whether the batch being filled holds lazy events only, small enough
    /// and young enough to wait for the next turn. The first time it is
    /// asked about a batch, that batch's hold starts (`wake_at` counts from
    /// it).
    fn hold_lazy_batch(&mut self) -> bool {
        if self.events.count() != self.lazy || self.events.len_bytes() >= LAZY_MAX_BYTES {
            return false;
        }
        let since = *self.held_since.get_or_insert_with(Instant::now);
        since.elapsed() < LAZY_HOLD
    }

    fn acked(&self) -> u64 {
        self.inbox.acked_batch.load(Ordering::Acquire)
    }

    /// JavaScript has been handed nothing it has not answered, and nothing
    /// waits to be handed over (the benchmark's native handlers: a hold for
    /// what they answer themselves need not wait on JavaScript).
    #[cfg(feature = "bench-handler")]
    pub fn idle(&self) -> bool {
        self.events.is_empty() && self.acked() + 1 >= self.batch_seq
    }
}

fn abort_code(reason: AbortReason) -> u8 {
    match reason {
        AbortReason::PeerReset => abort_reason::PEER_RESET,
        AbortReason::PeerStopSending => abort_reason::PEER_STOP_SENDING,
        AbortReason::ProtocolError => abort_reason::PROTOCOL_ERROR,
        AbortReason::FieldSectionTooLarge => abort_reason::FIELD_SECTION_TOO_LARGE,
    }
}

fn close_code(how: CloseHow) -> u8 {
    match how {
        CloseHow::Peer => close_how::PEER,
        CloseHow::Local => close_how::LOCAL,
        CloseHow::IdleTimeout => close_how::IDLE_TIMEOUT,
        CloseHow::Other => close_how::OTHER,
    }
}

fn level_code(level: LogLevel) -> u8 {
    match level {
        LogLevel::Error => log_level::ERROR,
        LogLevel::Warn => log_level::WARN,
        LogLevel::Info => log_level::INFO,
        LogLevel::Debug => log_level::DEBUG,
    }
}

fn session_stream_code(what: SessionStream) -> u8 {
    match what {
        SessionStream::Opened => wt_stream::OPENED,
        SessionStream::Rejected => wt_stream::REJECTED,
        SessionStream::Closed => wt_stream::CLOSED,
    }
}

impl Application for JsLink {
    fn on_request(&mut self, conn: ConnId, stream: StreamId, request: Request<'_>) -> Reply<'_> {
        let mut flags = 0;
        if request.complete {
            flags |= request_flag::COMPLETE;
        }
        if request.body.is_some() {
            flags |= request_flag::HAS_BODY;
        }
        if request.early_data {
            flags |= request_flag::EARLY_DATA;
        }
        if request.session {
            flags |= request_flag::WT_SESSION;
        }
        self.events.request(conn.0, stream.0, flags, request.head, request.body.unwrap_or_default());
        Reply::Later
    }

    fn on_body(&mut self, conn: ConnId, stream: StreamId, data: &[u8], fin: bool) {
        self.events.body(conn.0, stream.0, data, fin);
    }

    fn on_trailers(&mut self, conn: ConnId, stream: StreamId, fields: &[(Vec<u8>, Vec<u8>)]) {
        self.events.trailers(conn.0, stream.0, fields);
    }

    fn on_sent(&mut self, conn: ConnId, stream: StreamId, total: u64) {
        self.events.sent(conn.0, stream.0, total);
    }

    fn on_peer_field_limit(&mut self, conn: ConnId, limit: u64) {
        self.lazy += 1;
        self.events.peer_field_limit(conn.0, limit);
    }

    fn on_stream_aborted(&mut self, conn: ConnId, stream: StreamId, reason: AbortReason, code: u64) {
        self.events.stream_aborted(conn.0, stream.0, abort_code(reason), code);
    }

    fn on_conn_open(&mut self, conn: ConnId, peer: SocketAddr, cid: &str) {
        self.lazy += 1;
        self.events.conn_open(conn.0, &peer.to_string(), cid);
    }

    fn on_peer_moved(&mut self, conn: ConnId, peer: SocketAddr) {
        // Lazy: a request that arrives on the new path comes after it in the batch.
        self.lazy += 1;
        self.events.peer_moved(conn.0, &peer.to_string());
    }

    fn on_identity_wanted(&mut self, conn: ConnId, request: u32, server_name: &str) {
        self.events.identity_wanted(conn.0, request, server_name);
    }

    fn on_client_certificate(&mut self, conn: ConnId, verify_error: Option<i32>, chain: &[&[u8]]) {
        // Lazy: the connection's first request comes after it in the batch.
        self.lazy += 1;
        self.events.client_certificate(conn.0, verify_error.map_or(0, |e| e.max(1) as u32), chain);
    }

    fn on_conn_closed(&mut self, conn: ConnId, c: ConnClosed<'_>) {
        self.lazy += 1;
        self.events.conn_closed(conn.0, close_code(c.how), c.is_app, c.code, c.reason, &c.peer.to_string(), c.cid);
    }

    fn on_log(&mut self, level: LogLevel, message: &str) {
        self.events.log(level_code(level), message);
    }

    fn on_server_closed(&mut self) {
        self.events.server_closed();
    }

    fn on_session_open(&mut self, conn: ConnId, session: StreamId, path: &[u8]) {
        self.events.wt_session_open(conn.0, session.0, path);
    }

    fn on_session_closed(&mut self, conn: ConnId, session: StreamId, code: u32, reason: &[u8]) {
        self.events.wt_session_closed(conn.0, session.0, code, reason);
    }

    fn on_session_stream(&mut self, conn: ConnId, session: StreamId, stream: StreamId, what: SessionStream, bidi: bool) {
        self.events.wt_stream(conn.0, session.0, stream.0, session_stream_code(what), bidi);
    }

    fn on_datagrams(&mut self, conn: ConnId, count: u32) {
        self.events.wt_datagrams(conn.0, count);
    }

    fn on_datagram(&mut self, conn: ConnId, session: StreamId, payload: &[u8]) {
        self.events.wt_datagram(conn.0, session.0, payload);
    }

    fn mark(&self) -> Mark {
        Mark(self.batch_seq)
    }

    fn settled(&self, mark: Mark) -> bool {
        self.acked() >= mark.0
    }

    fn accepting(&self) -> bool {
        self.batch_seq.saturating_sub(1 + self.acked()) < MAX_UNACKED_BATCHES
    }

    fn take_actions(&mut self, mut apply: impl FnMut(ConnId, StreamId, Action<'_>)) {
        let batches = std::mem::take(&mut *self.inbox.commands.lock().unwrap_or_else(|p| p.into_inner()));
        for batch in &batches {
            let mut reader = CommandReader::new(batch);
            while let Some(cmd) = reader.next_command() {
                match cmd {
                    Ok(Command::Respond(r)) => {
                        let response = Response { status: r.status, fields: &r.fields, body: r.body };
                        apply(ConnId(r.conn), StreamId(r.stream), Action::Respond(response));
                    }
                    Ok(Command::Stream(c)) => {
                        let action = match &c.what {
                            What::Headers { status, fin, fields } => Action::Headers { status: *status, fields, fin: *fin },
                            What::Data { fin, data } => Action::Data { data, fin: *fin },
                            What::Consumed(n) => Action::Consumed(*n),
                            What::Reset(code) => Action::Reset(*code),
                            What::StopSending(code) => Action::StopSending(*code),
                            What::Open { session } => Action::Open { session: *session },
                            What::Datagram(payload) => Action::Datagram(payload),
                            What::CloseSession { code, reason } => Action::CloseSession { code: *code, reason },
                        };
                        apply(ConnId(c.conn), StreamId(c.stream), action);
                    }
                    Err(e) => {
                        self.events.log(log_level::ERROR, &e.to_string());
                        break;
                    }
                }
            }
        }
    }

    fn end_turn(&mut self) {
        if self.events.is_empty() || self.hold_lazy_batch() {
            return;
        }
        let out = self.events.take(self.batch_seq);
        self.batch_seq += 1;
        self.lazy = 0;
        self.held_since = None;
        (self.sink)(out);
    }

    fn wake_at(&self) -> Option<Instant> {
        self.held_since.map(|t| t + LAZY_HOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> (JsLink, Arc<Mutex<Vec<Vec<u8>>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let out = sent.clone();
        let sink: Sink = Box::new(move |batch| out.lock().unwrap().push(batch));
        (JsLink::new(Arc::new(Inbox::default()), sink), sent)
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:4433".parse().unwrap()
    }

    fn closed() -> ConnClosed<'static> {
        ConnClosed { how: CloseHow::Peer, is_app: true, code: 0, reason: b"", peer: peer(), cid: "00" }
    }

    #[test]
    fn lazy_events_wait_for_a_batch_that_wakes_javascript_anyway() {
        let (mut link, sent) = link();
        link.on_conn_open(ConnId(1), peer(), "01");
        link.on_peer_field_limit(ConnId(1), 16384);
        link.end_turn();
        assert!(sent.lock().unwrap().is_empty(), "a connection's open alone waits");
        let due = link.wake_at().expect("the loop is asked for a turn by the hold's end");
        assert!(due > Instant::now() && due <= Instant::now() + LAZY_HOLD);
        let seq = link.mark();
        // A stream event joins: the batch goes at the end of this turn, in
        // order, under the sequence number the held events were given.
        link.on_sent(ConnId(1), StreamId(0), 10);
        link.end_turn();
        let batches = std::mem::take(&mut *sent.lock().unwrap());
        assert_eq!(batches.len(), 1);
        assert_eq!(f64::from_le_bytes(batches[0][..8].try_into().unwrap()), seq.0 as f64);
        assert_eq!(batches[0][8], super::super::codes::event_kind::CONN_OPEN);
        assert_eq!(link.wake_at(), None);
        assert_eq!(link.mark().0, seq.0 + 1);
    }

    #[test]
    fn lazy_events_go_when_the_hold_ends() {
        let (mut link, sent) = link();
        link.on_conn_closed(ConnId(1), closed());
        link.end_turn();
        assert!(sent.lock().unwrap().is_empty());
        std::thread::sleep(LAZY_HOLD);
        link.end_turn();
        assert_eq!(sent.lock().unwrap().len(), 1, "held no longer than LAZY_HOLD");
        assert_eq!(link.wake_at(), None);
    }

    #[test]
    fn other_events_and_large_lazy_batches_go_in_the_same_turn() {
        let (mut link, sent) = link();
        link.on_log(LogLevel::Warn, "a warning");
        link.end_turn();
        assert_eq!(sent.lock().unwrap().len(), 1);
        let long = "x".repeat(1000);
        while link.events.len_bytes() < LAZY_MAX_BYTES {
            link.on_conn_open(ConnId(2), peer(), &long);
        }
        link.end_turn();
        assert_eq!(sent.lock().unwrap().len(), 2, "past LAZY_MAX_BYTES a lazy batch goes at once");
    }
}
