//! Responses, the per-stream send queue (what flow control has not let
//! out yet) and stream resets, of one connection's HTTP/3 layer.

use super::*;

/// Bytes queued on one stream, and whether FIN follows them.
pub(super) struct Outgoing {
    pub(super) data: Vec<u8>,
    pub(super) written: usize,
    pub(super) fin: bool,
    /// Bytes of this stream handed to QUIC before `data[0]`.
    base: u64,
    /// For each queued DATA frame of a streamed response: the stream offset
    /// where it ends, and the response's body total once it is written.
    data_ends: VecDeque<(u64, u64)>,
}

impl Outgoing {
    fn new(data: Vec<u8>, fin: bool) -> Self {
        Outgoing { data, written: 0, fin, base: 0, data_ends: VecDeque::new() }
    }

    /// QUIC took `n` more bytes. Returns the response body total now taken
    /// when a DATA frame was completed. Drops what was taken once that is
    /// the whole queue, or a large part of it: a streamed response whose
    /// writer never lets the queue empty would otherwise keep every byte.
    fn advance(&mut self, n: usize) -> Option<u64> {
        self.written += n;
        let done = self.base + self.written as u64;
        let mut taken = None;
        while let Some(&(end, total)) = self.data_ends.front() {
            if end > done {
                break;
            }
            taken = Some(total);
            self.data_ends.pop_front();
        }
        if self.written == self.data.len() || (self.written >= COMPACT_AT && self.written * 2 >= self.data.len()) {
            self.data.drain(..self.written);
            self.base += self.written as u64;
            self.written = 0;
        }
        taken
    }
}

/// A queue whose sent prefix is this large (and at least half of it) is
/// compacted.
const COMPACT_AT: usize = 64 * 1024;

/// Offers QUIC a DATA frame's header and payload (the FIN with the last
/// byte). Returns how many bytes it took, and whether the stream refused
/// with an error (stopped, reset): then the caller queues the rest, and
/// the usual flush meets that error and handles it.
fn offer(quic: &mut quiche::Connection, id: u64, head: &[u8], data: &[u8], fin: bool) -> (usize, bool) {
    let send = |quic: &mut quiche::Connection, buf: &[u8], fin: bool| match quic.stream_send(id, buf, fin) {
        Ok(n) => (n, false),
        Err(quiche::Error::Done) => (0, false),
        Err(_) => (0, true),
    };
    let (h, failed) = send(quic, head, fin && data.is_empty());
    if failed || h < head.len() || data.is_empty() {
        return (h, failed);
    }
    let (d, failed) = send(quic, data, fin);
    (h + d, failed)
}

/// What the HTTP/3 layer learned while applying the application's actions
/// (when the application itself is busy handing them over): reported at the
/// connection's next `process`.
pub(super) enum Notice {
    /// QUIC took a streamed response's body up to this total.
    Sent(u64, u64),
    Aborted(u64, AbortReason, u64),
    PeerFieldLimit(u64),
    Log(String),
    /// An application WebTransport stream may be done with (both sides).
    Retire(u64),
    /// The application accepted a session (its path).
    SessionOpen(u64, Vec<u8>),
    /// The application closed a session: its capsule, the last bytes of
    /// the CONNECT stream, goes out with the FIN.
    CloseSession {
        id: u64,
        code: u32,
        reason: Vec<u8>,
        capsule: Vec<u8>,
    },
}

impl H3Connection {
    pub(super) fn on_peer_reset<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, code: u64, app: &mut A) {
        match self.streams.get(&id) {
            Some(StreamState::Control(_) | StreamState::QpackEncoder | StreamState::QpackDecoder(_)) => {
                // Handled as a critical-stream closure by the caller's next
                // read; quiche reports the reset only once, so act now.
                self.closing = true;
                let _ = quic.close(true, H3_CLOSED_CRITICAL_STREAM, b"critical stream reset");
            }
            Some(StreamState::Request(r)) if r.session => {
                self.close_session(quic, id, 0, b"", app);
            }
            Some(StreamState::Wt(WtStream::App(_))) => {
                // The client reset its sending side: the application's
                // reading errors; its writing may go on.
                if let Some(StreamState::Wt(WtStream::App(a))) = self.streams.get_mut(&id) {
                    a.read_done = true;
                    a.unconsumed = 0;
                }
                app.on_stream_aborted(self.conn, StreamId(id), AbortReason::PeerReset, code);
                self.retire_app_stream(id, app);
            }
            Some(StreamState::Request(r)) if r.session && !r.responded => {
                self.drop_pending_session(quic, id, app);
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
                // Reset before it was a request (quiche drops the unread
                // bytes with the reset): answer the client's stream with a
                // reset of our own, or it waits for a response forever.
                if is_client_bidi(id) {
                    let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_REQUEST_INCOMPLETE);
                }
                self.streams.remove(&id);
            }
        }
    }

    /// A stream error: reset both directions with the error's code.
    pub(super) fn fail_stream<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, e: H3Error, app: &mut A) {
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

    /// Applies one action of the application to a request stream. Unknown
    /// streams, and actions that no longer fit the stream (the client reset
    /// it, the response already ended), are ignored. Returns true when the
    /// connection has something to do for it: bytes to send, or (for
    /// `Consumed`) a stream that may read again.
    #[inline]
    pub fn act(&mut self, quic: &mut quiche::Connection, id: u64, action: Action<'_>) -> bool {
        if let Some(done) = self.act_webtransport(quic, id, &action) {
            return done;
        }
        self.act_request(quic, id, action)
    }

    /// `act` for a request stream.
    pub(super) fn act_request(&mut self, quic: &mut quiche::Connection, id: u64, action: Action<'_>) -> bool {
        let (started, responded, read_done) = match self.streams.get(&id) {
            Some(StreamState::Request(r)) if r.delivered => (r.response_started, r.responded, r.read_done),
            _ => return false,
        };
        match action {
            Action::Respond(resp) => {
                if started {
                    return false;
                }
                self.request_mut(id).response_started = true;
                self.counters.app_statuses.count(resp.status);
                self.respond_checked(quic, id, resp.status, resp.fields, resp.body);
            }
            Action::Headers { status, fields, fin } => {
                let informational = (100..200).contains(&status);
                let trailers = status == 0;
                if responded || (started && !trailers) || (trailers && !started) {
                    return false;
                }
                if !informational && !trailers {
                    self.request_mut(id).response_started = true;
                    self.streaming_responses |= !fin;
                    self.counters.app_statuses.count(status);
                }
                // Refused as too large: the stream was reset, which must go out.
                let Some(data) = self.encode_section(quic, id, status, fields, 0) else { return true };
                let ends = trailers || (fin && !informational);
                self.queue(quic, id, data, ends);
                if ends {
                    self.finish_response(quic, id);
                }
            }
            Action::Data { data, fin } => {
                if !started || responded {
                    return false;
                }
                let r = self.request_mut(id);
                r.data_queued += data.len() as u64;
                let total = r.data_queued;
                self.queue_data(quic, id, data, fin, total);
                if fin {
                    self.finish_response(quic, id);
                }
            }
            Action::Consumed(n) => {
                let r = self.request_mut(id);
                r.unconsumed = r.unconsumed.saturating_sub(n as usize);
                return !read_done;
            }
            Action::Reset(code) => {
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, code);
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, code);
                self.streams.remove(&id);
                self.outgoing.remove(&id);
            }
            Action::StopSending(_) | Action::Open { .. } | Action::Datagram(_) | Action::CloseSession { .. } => return false,
        }
        // The gauges are recounted by the connection's `process`, which
        // every applied action is followed by in the same loop turn.
        true
    }

    /// A request stream `act` has just found.
    fn request_mut(&mut self, id: u64) -> &mut RequestStream {
        match self.streams.get_mut(&id) {
            Some(StreamState::Request(r)) => r,
            _ => unreachable!("request_mut on a stream that is not a request"),
        }
    }

    /// Answers a request with a whole response (the native tests' and the
    /// benchmark's path; the application's goes through `act`).
    #[inline]
    pub fn respond(&mut self, quic: &mut quiche::Connection, id: u64, status: u16, fields: &[(&[u8], &[u8])], body: &[u8]) {
        let response = Response { status, fields, body };
        self.act(quic, id, Action::Respond(response));
        // No `process` follows here as it does in the loop: recount now.
        self.sync_gauges();
    }

    /// A header section for the stream, or None when it is larger than the
    /// client accepts (SETTINGS_MAX_FIELD_SECTION_SIZE, RFC 9114 section
    /// 4.2.2): the stream is then reset with H3_INTERNAL_ERROR and the
    /// application told why, rather than sending what the client refuses.
    pub(super) fn encode_section(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        status: u16,
        fields: &[(&[u8], &[u8])],
        extra: usize,
    ) -> Option<Vec<u8>> {
        let limit = self.peer_settings.as_ref().and_then(|p| p.max_field_section_size);
        if let Some(limit) = limit {
            let size =
                fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum::<usize>() + if status == 0 { 0 } else { 7 + 3 + 32 };
            if size as u64 > limit {
                self.notices.push(Notice::Log(format!(
                    "a header section of {size} bytes for stream {id} exceeds the client's SETTINGS_MAX_FIELD_SECTION_SIZE of {limit}; stream reset with H3_INTERNAL_ERROR"
                )));
                self.notices.push(Notice::Aborted(id, AbortReason::FieldSectionTooLarge, H3_INTERNAL_ERROR));
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_INTERNAL_ERROR);
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
                self.streams.remove(&id);
                self.outgoing.remove(&id);
                return None;
            }
        }
        let encoded =
            if status == 0 { self.encode_fields(None, fields, extra) } else { self.encode_headers(status, fields, extra) };
        if encoded.is_none() {
            let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
        }
        encoded
    }

    /// A whole response (head, body, FIN) after the size check.
    fn respond_checked(&mut self, quic: &mut quiche::Connection, id: u64, status: u16, fields: &[(&[u8], &[u8])], body: &[u8]) {
        let Some(mut data) = self.encode_section(quic, id, status, fields, data_frame_size(body)) else { return };
        if !body.is_empty() {
            frame::write_header(frame_type::DATA, body.len(), &mut data);
            data.extend_from_slice(body);
        }
        self.queue(quic, id, data, true);
        self.finish_response(quic, id);
    }

    /// The response's FIN is queued: the stream counts as answered until the
    /// client acknowledged it all, and the rest of the request is refused.
    fn finish_response(&mut self, quic: &mut quiche::Connection, id: u64) {
        if self.undelivered.len() >= 256 {
            self.prune_delivered(quic);
        }
        self.undelivered.push(id);
        if let Some(StreamState::Request(r)) = self.streams.get_mut(&id) {
            r.responded = true;
            // RFC 9114 section 4.1: once answered, the rest of the request is
            // not needed; ask the client to stop with H3_NO_ERROR.
            if !r.read_done {
                r.read_done = true;
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_NO_ERROR);
            }
        }
        self.retire_if_done(id);
    }

    /// A HEADERS frame carrying `:status` and the fields, QPACK-encoded
    /// with the static table and literals only; `extra`: room to leave for
    /// what the caller appends (a body's DATA frame).
    pub(super) fn encode_headers(&mut self, status: u16, fields: &[(&[u8], &[u8])], extra: usize) -> Option<Vec<u8>> {
        let mut digits = [0u8; 5];
        let status = decimal(status, &mut digits);
        self.encode_fields(Some(status), fields, extra)
    }

    /// A HEADERS frame: `:status` first when given (a trailer section has none).
    /// Lines the I/O thread encoded before come from its memo (encoded_lines.rs).
    fn encode_fields(&mut self, status: Option<&[u8]>, fields: &[(&[u8], &[u8])], extra: usize) -> Option<Vec<u8>> {
        let status = status.map(|s| (&b":status"[..], s));
        let lines = status.into_iter().chain(fields.iter().copied());
        let scratch = &mut self.qpack_scratch;
        scratch.clear();
        let encoded = encoded_lines::encode_section(lines, scratch);
        let data = encoded.map(|()| {
            let mut data = Vec::with_capacity(FRAME_HEADER_MAX + scratch.len() + extra);
            frame::write_header(frame_type::HEADERS, scratch.len(), &mut data);
            data.extend_from_slice(scratch);
            data
        });
        // A rare large section does not leave every connection keeping the
        // largest buffer it ever needed.
        if scratch.capacity() > SCRATCH_MAX {
            *scratch = Vec::new();
        }
        data
    }

    /// The core's own answers (413, 429, 431, 501): no size check, the
    /// fields are the core's.
    #[inline]
    pub(super) fn respond_bytes(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        status: u16,
        fields: &[(&[u8], &[u8])],
        body: &[u8],
    ) {
        let Some(mut data) = self.encode_headers(status, fields, data_frame_size(body)) else {
            let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_INTERNAL_ERROR);
            return;
        };
        if !body.is_empty() {
            frame::write_header(frame_type::DATA, body.len(), &mut data);
            data.extend_from_slice(body);
        }
        self.queue(quic, id, data, true);
        self.finish_response(quic, id);
    }

    #[inline]
    pub(super) fn queue(&mut self, quic: &mut quiche::Connection, id: u64, data: Vec<u8>, fin: bool) {
        match self.outgoing.get_mut(&id) {
            Some(out) => {
                out.data.extend_from_slice(&data);
                out.fin |= fin;
            }
            None => {
                self.outgoing.insert(id, Outgoing::new(data, fin));
            }
        }
        self.flush_stream(quic, id);
    }

    /// Sends a DATA frame of a streamed response. With nothing queued
    /// ahead of it, QUIC is offered the frame straight from the command
    /// batch and only what it does not take is queued; otherwise the frame
    /// joins the queue. Either way the queue remembers where the frame ends,
    /// so that `on_sent` can say when QUIC has taken it. (Queueing every
    /// frame first cost a copy of every body byte, and another when the
    /// queue was compacted: docs/design.md, "The send path's copies".)
    fn queue_data(&mut self, quic: &mut quiche::Connection, id: u64, data: &[u8], fin: bool, total: u64) {
        let mut head = Vec::with_capacity(16);
        frame::write_header(frame_type::DATA, data.len(), &mut head);
        self.queue_payload(quic, id, &head, data, fin, total);
    }

    /// Bytes of an application WebTransport stream: raw, no HTTP/3 framing.
    pub(super) fn queue_raw(&mut self, quic: &mut quiche::Connection, id: u64, data: &[u8], fin: bool, total: u64) {
        self.queue_payload(quic, id, &[], data, fin, total);
    }

    /// Sends `head` and `data` (a DATA frame, or raw stream bytes), with
    /// the bookkeeping `queue_data` describes.
    fn queue_payload(&mut self, quic: &mut quiche::Connection, id: u64, head: &[u8], data: &[u8], fin: bool, total: u64) {
        // An end with no bytes still goes out as an empty DATA frame with
        // the FIN, never as a FIN alone: quiche 0.30 counts a stream whose
        // data is all acknowledged as complete even when its FIN was written
        // but not yet sent, and then never sends the FIN (docs/design.md,
        // "the intermittent WebTransport time-outs").
        if data.is_empty() && !fin {
            return;
        }
        let out = self.outgoing.entry(id).or_insert_with(|| Outgoing::new(Vec::new(), false));
        if out.data.is_empty() && !out.fin {
            let (taken, failed) = offer(quic, id, head, data, fin);
            out.base += taken as u64;
            if !failed && taken == head.len() + data.len() {
                // All of it, the FIN too when there was one.
                self.notices.push(Notice::Sent(id, total));
                if fin {
                    self.outgoing.remove(&id);
                    self.retire_if_done(id);
                }
                return;
            }
            // QUIC is full for now (the rest waits for flow control), or
            // the stream failed (the flush below meets the error).
            if taken < head.len() {
                out.data.extend_from_slice(&head[taken..]);
                out.data.extend_from_slice(data);
            } else {
                out.data.extend_from_slice(&data[taken - head.len()..]);
            }
            out.fin = fin;
            out.data_ends.push_back((out.base + out.data.len() as u64, total));
            if failed {
                self.flush_stream(quic, id);
            }
            return;
        }
        out.data.reserve(head.len() + data.len());
        out.data.extend_from_slice(head);
        out.data.extend_from_slice(data);
        out.fin |= fin;
        let end = out.base + out.data.len() as u64;
        out.data_ends.push_back((end, total));
        self.flush_stream(quic, id);
    }

    #[inline]
    pub(super) fn flush_stream(&mut self, quic: &mut quiche::Connection, id: u64) {
        let Some(out) = self.outgoing.get_mut(&id) else { return };
        // The control stream is never finished, so it stays here, empty,
        // and every connection turn flushes it: nothing to write, skip it.
        // (An empty request stream is still offered to QUIC: that is how a
        // streamed response between writes learns of STOP_SENDING.)
        if id == CONTROL_STREAM_ID && out.written == out.data.len() && !out.fin {
            return;
        }
        let result = quic.stream_send(id, &out.data[out.written..], out.fin);
        let n = match result {
            Ok(n) => n,
            // A server stream past the client's stream limit: it waits
            // for MAX_STREAMS.
            Err(quiche::Error::Done | quiche::Error::StreamLimit) => 0,
            Err(e) => {
                // STOP_SENDING or a reset from the client: nothing more to send.
                self.outgoing.remove(&id);
                if let quiche::Error::StreamStopped(code) = e {
                    self.on_stopped(quic, id, code);
                }
                self.retire_if_done(id);
                return;
            }
        };
        if let Some(total) = out.advance(n) {
            self.notices.push(Notice::Sent(id, total));
        }
        if out.data.is_empty() && out.fin {
            self.outgoing.remove(&id);
            self.retire_if_done(id);
        }
    }

    /// The client sent STOP_SENDING for a response: it will not read it. A
    /// response still being produced is aborted for the application; the
    /// request side is refused too, and the stream forgotten.
    fn on_stopped(&mut self, quic: &mut quiche::Connection, id: u64, code: u64) {
        if let Some(StreamState::Wt(WtStream::App(a))) = self.streams.get_mut(&id) {
            // The application's writing errors; its reading may go on.
            if !a.write_done {
                a.write_done = true;
                self.notices.push(Notice::Aborted(id, AbortReason::PeerStopSending, code));
            }
            let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, code);
            self.notices.push(Notice::Retire(id));
            return;
        }
        let Some(StreamState::Request(r)) = self.streams.get(&id) else { return };
        if r.delivered && !r.responded {
            self.notices.push(Notice::Aborted(id, AbortReason::PeerStopSending, code));
        }
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_REQUEST_CANCELLED);
        self.streams.remove(&id);
    }

    /// Streamed responses waiting on the application: a STOP_SENDING for
    /// one with nothing queued shows only as an error on its next write, so
    /// look for it among the streams quiche lists as writable.
    pub(super) fn check_stopped(&mut self, quic: &mut quiche::Connection) {
        if !self.streaming_responses {
            return;
        }
        for id in quic.writable() {
            let open = match self.streams.get(&id) {
                Some(StreamState::Request(r)) => r.response_started && !r.responded,
                Some(StreamState::Wt(WtStream::App(a))) => !a.write_done,
                _ => false,
            };
            if !open || self.outgoing.contains_key(&id) {
                continue;
            }
            if let Err(quiche::Error::StreamStopped(code)) = quic.stream_writable(id, 0) {
                self.on_stopped(quic, id, code);
            }
        }
    }

    /// Hands what applying actions learned to the application.
    pub(super) fn report<A: Application>(&mut self, quic: &mut quiche::Connection, app: &mut A) {
        if self.notices.is_empty() {
            return;
        }
        for notice in std::mem::take(&mut self.notices) {
            match notice {
                Notice::Retire(id) => self.retire_app_stream(id, app),
                Notice::SessionOpen(id, path) => app.on_session_open(self.conn, StreamId(id), &path),
                Notice::CloseSession { id, code, reason, capsule } => {
                    self.close_session_with(quic, id, code, &reason, capsule, app)
                }
                Notice::Sent(id, total) => app.on_sent(self.conn, StreamId(id), total),
                Notice::Aborted(id, reason, code) => app.on_stream_aborted(self.conn, StreamId(id), reason, code),
                Notice::PeerFieldLimit(limit) => app.on_peer_field_limit(self.conn, limit),
                Notice::Log(message) => app.on_log(crate::app::LogLevel::Error, &message),
            }
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
    pub(super) fn retire_if_done(&mut self, id: u64) {
        if self.outgoing.contains_key(&id) {
            return;
        }
        if let Some(StreamState::Request(r)) = self.streams.get(&id) {
            if r.responded && r.read_done {
                self.streams.remove(&id);
            }
        }
    }
}

/// A frame header's largest size: type and length, each a varint of at
/// most 8 bytes.
const FRAME_HEADER_MAX: usize = 16;

/// The largest header section encoded in the connection's kept buffer.
pub(super) const SCRATCH_MAX: usize = 4096;

/// The bytes a body takes as one DATA frame (none when it is empty).
fn data_frame_size(body: &[u8]) -> usize {
    if body.is_empty() {
        0
    } else {
        FRAME_HEADER_MAX + body.len()
    }
}

/// `n` in decimal in `out`, without the formatter's allocation.
fn decimal(mut n: u16, out: &mut [u8; 5]) -> &[u8] {
    let mut at = out.len();
    loop {
        at -= 1;
        out[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &out[at..];
        }
    }
}

#[cfg(test)]
mod outgoing_tests {
    use super::*;

    #[test]
    fn statuses_are_written_in_decimal() {
        let mut digits = [0u8; 5];
        for (n, text) in [(0u16, "0"), (7, "7"), (103, "103"), (200, "200"), (404, "404"), (999, "999"), (65535, "65535")] {
            assert_eq!(decimal(n, &mut digits), text.as_bytes());
        }
    }

    #[test]
    fn a_queue_that_never_empties_drops_what_quic_took() {
        let mut out = Outgoing::new(Vec::new(), false);
        let mut total = 0;
        let mut reported = 0;
        let mut largest = 0;
        for step in 0..100 {
            // The writer adds 64 KiB and QUIC takes as much, but half a
            // write behind: the queue never empties.
            out.data.extend_from_slice(&[7u8; 64 * 1024]);
            total += 64 * 1024;
            out.data_ends.push_back((out.base + out.data.len() as u64, total));
            let take = if step == 0 { 32 * 1024 } else { 64 * 1024 };
            if let Some(t) = out.advance(take) {
                reported = t;
            }
            largest = largest.max(out.data.len());
        }
        assert!(largest <= 256 * 1024, "held {largest} bytes of a {total} byte response");
        assert_eq!(out.base + out.written as u64, total - 32 * 1024, "offsets stay exact across compactions");
        assert_eq!(reported, total - 64 * 1024, "every frame but the last reported taken");
    }
}
