//! WebTransport on one connection: sessions on CONNECT streams, their
//! client streams, and HTTP datagrams.

use super::*;

impl H3Connection {
    pub(super) fn accept_session<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, path: &[u8], app: &mut A) {
        // 200 opens the session; the CONNECT stream stays open for capsules.
        // The draft-02 response header is what Chromium's draft-02 code
        // path checks; later drafts ignore it.
        let fields: [(&[u8], &[u8]); 1] = [(b"sec-webtransport-http3-draft", b"draft02")];
        if let Some(data) = self.encode_headers(200, &fields, 0) {
            self.counters.native_statuses.count(200);
            self.queue(quic, id, data, false);
        }
        self.sessions.insert(id, Session::new());
        Counters::add(&self.counters.wt_sessions_established, 1);
        app.on_session_open(self.conn, StreamId(id), path);
    }

    pub(super) fn on_session_bytes<A: Application>(
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
                CapsuleEvent::Close { code, reason } => {
                    self.end_session(quic, id, code, &reason, app);
                    return Ok(());
                }
                // The client will close soon; nothing to do until it does.
                CapsuleEvent::Drain => {}
            }
        }
        if fin {
            self.end_session(quic, id, 0, b"", app);
        }
        Ok(())
    }

    /// The client ended a session, or its CONNECT stream, before or after
    /// the application accepted it.
    pub(super) fn end_session<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        code: u32,
        reason: &[u8],
        app: &mut A,
    ) {
        if self.sessions.contains_key(&id) {
            self.close_session(quic, id, code, reason, app);
            return;
        }
        match self.streams.get(&id) {
            Some(StreamState::Request(r)) if r.session && !r.responded => self.drop_pending_session(quic, id, app),
            Some(StreamState::Request(r)) if r.session => {
                // This side closed the session and kept reading the CONNECT
                // stream for the client's own close: that came.
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_NO_ERROR);
                self.streams.remove(&id);
            }
            _ => {}
        }
    }

    /// An application session the client gave up on before it was
    /// accepted: the application hears it as an aborted request, and its
    /// place under the cap is freed.
    pub(super) fn drop_pending_session<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, app: &mut A) {
        let Some(StreamState::Request(r)) = self.streams.get(&id) else { return };
        if !r.session || r.responded {
            return;
        }
        Counters::sub(&self.counters.wt_sessions_open, 1);
        app.on_stream_aborted(self.conn, StreamId(id), AbortReason::PeerReset, H3_REQUEST_CANCELLED);
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_REQUEST_CANCELLED);
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, H3_REQUEST_CANCELLED);
        self.streams.remove(&id);
        self.outgoing.remove(&id);
    }

    /// Ends a session: its streams are reset with WT_SESSION_GONE, the
    /// CONNECT stream is finished, and TypeScript hears of every closure.
    pub fn close_session<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        code: u32,
        reason: &[u8],
        app: &mut A,
    ) {
        self.close_session_with(quic, id, code, reason, Vec::new(), app);
    }

    /// `close_session`, with `last` (a CLOSE_WEBTRANSPORT_SESSION capsule
    /// from this side) written before the FIN.
    pub(super) fn close_session_with<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        code: u32,
        reason: &[u8],
        last: Vec<u8>,
        app: &mut A,
    ) {
        let Some(session) = self.sessions.remove(&id) else { return };
        wt::abandon_streams(quic, self.conn, id, &session, &self.counters, app);
        for s in &session.peer_streams {
            self.streams.remove(s);
            self.outgoing.remove(s);
        }
        for s in &session.server_streams {
            self.outgoing.remove(s);
            if let Some(StreamState::Wt(WtStream::App(_))) = self.streams.remove(s) {
                app.on_session_stream(self.conn, StreamId(id), StreamId(*s), SessionStream::Closed, *s & 0x2 == 0);
            }
        }
        Counters::sub(&self.counters.wt_sessions_open, 1);
        app.on_session_closed(self.conn, StreamId(id), code, reason);
        let closed_here = !last.is_empty();
        // The FIN never goes alone: an empty DATA frame carries it when
        // there is no capsule. quiche 0.30 loses a FIN written alone after
        // the stream's data if that data is acknowledged before the FIN is
        // sent (docs/design.md, "Held only for what JavaScript answers"),
        // and application sessions hold connections for JavaScript.
        let last = if closed_here { last } else { vec![0x00, 0x00] };
        self.queue(quic, id, last, true);
        if closed_here {
            // Closed by this side: the client answers with its own close
            // (capsule or FIN), read until then (`end_session`). Asking it
            // to stop sending now made Chromium report "Connection lost"
            // instead of the close code and reason.
            return;
        }
        let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, H3_NO_ERROR);
        self.streams.remove(&id);
    }

    /// The connection is gone: every session and stream on it is closed.
    pub fn on_connection_closed<A: Application>(&mut self, app: &mut A) {
        // Application sessions not yet accepted hold a place under the cap.
        let pending = self.streams.values().filter(|s| matches!(s, StreamState::Request(r) if r.session && !r.responded)).count();
        Counters::sub(&self.counters.wt_sessions_open, pending as u64);
        self.streams.clear();
        self.outgoing.clear();
        self.sync_gauges();
        // The application hears of a lost connection as CONN_CLOSED alone
        // and ends its sessions and streams from that, as lost rather than
        // closed; the echo's statistics count each closure.
        let report = !self.options.webtransport_app;
        for (id, session) in std::mem::take(&mut self.sessions) {
            for s in &session.peer_streams {
                Counters::sub(&self.counters.wt_peer_streams_open, 1);
                if report {
                    app.on_session_stream(self.conn, StreamId(id), StreamId(*s), SessionStream::Closed, is_client_bidi(*s));
                }
            }
            Counters::sub(&self.counters.wt_sessions_open, 1);
            if report {
                app.on_session_closed(self.conn, StreamId(id), 0, b"");
            }
        }
    }

    /// Routes a client stream to its session, or refuses it: for an unknown
    /// session, or when the server-wide stream capacity is full (then it
    /// still counts as offered).
    pub(super) fn admit_wt_stream<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        session: u64,
        bidi: bool,
        app: &mut A,
    ) -> bool {
        let Some(s) = self.sessions.get_mut(&session) else {
            wt::refuse_stream(quic, id, bidi);
            return false;
        };
        Counters::add(&self.counters.wt_peer_streams_offered, 1);
        if s.peer_streams.len() as u64 >= self.options.wt_max_streams_per_session {
            wt::refuse_stream(quic, id, bidi);
            app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Rejected, bidi);
            return false;
        }
        if !wt::try_open(&self.counters.wt_peer_streams_open, self.options.wt_max_streams) {
            wt::refuse_stream(quic, id, bidi);
            app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Rejected, bidi);
            return false;
        }
        s.peer_streams.push(id);
        app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Opened, bidi);
        let state = if self.options.webtransport_app {
            WtStream::App(wt::AppStream::new(session, id))
        } else if bidi {
            WtStream::Bidi { session }
        } else {
            WtStream::Uni { session, data: Vec::new() }
        };
        self.streams.insert(id, StreamState::Wt(state));
        true
    }

    pub(super) fn on_wt_bytes<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        id: u64,
        data: &[u8],
        fin: bool,
        app: &mut A,
        body: &mut Vec<u8>,
    ) -> H3Result<()> {
        let Some(StreamState::Wt(stream)) = self.streams.get_mut(&id) else { return Ok(()) };
        match stream {
            WtStream::App(a) => {
                if a.read_done {
                    return Ok(());
                }
                Counters::add(&self.counters.wt_stream_bytes_read, data.len() as u64);
                body.extend_from_slice(data);
                if fin {
                    a.read_done = true;
                    let pending = std::mem::take(body);
                    self.emit_body(id, &pending, true, app);
                    self.retire_app_stream(id, app);
                }
                return Ok(());
            }
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
    pub(super) fn close_wt_stream<A: Application>(&mut self, id: u64, app: &mut A) {
        let Some(StreamState::Wt(stream)) = self.streams.remove(&id) else { return };
        let session = stream.session();
        if let Some(s) = self.sessions.get_mut(&session) {
            s.peer_streams.retain(|x| *x != id);
            s.server_streams.retain(|x| *x != id);
        }
        if id & 0x1 == 0 {
            Counters::sub(&self.counters.wt_peer_streams_open, 1);
        }
        app.on_session_stream(self.conn, StreamId(session), StreamId(id), SessionStream::Closed, id & 0x2 == 0);
    }

    /// An application stream is forgotten once neither side has anything
    /// more to do: nothing more to read, and its last bytes (or its reset)
    /// handed to QUIC.
    pub(super) fn retire_app_stream<A: Application>(&mut self, id: u64, app: &mut A) {
        let done = matches!(self.streams.get(&id), Some(StreamState::Wt(WtStream::App(a))) if a.read_done && a.write_done);
        if done && !self.outgoing.contains_key(&id) {
            self.close_wt_stream(id, app);
        }
    }

    /// HTTP/3 datagrams (RFC 9297): quarter stream ID, then payload. A
    /// datagram for an open session is counted and echoed; others dropped.
    /// RFC 9297 section 2.1: a Quarter Stream ID of 2^60 or more is a
    /// connection error H3_DATAGRAM_ERROR; one naming no open session is
    /// dropped silently.
    /// Also called by the I/O loop between packets when quiche's receive
    /// queue fills up (server.rs, DGRAM_DRAIN_AT).
    pub fn on_datagrams<A: Application>(
        &mut self,
        quic: &mut quiche::Connection,
        app: &mut A,
        scratch: &mut [u8],
    ) -> H3Result<()> {
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
                if self.options.webtransport_app {
                    let at = varint::encoded_len(quarter);
                    app.on_datagram(self.conn, StreamId(quarter * 4), &scratch[at..n]);
                    self.awaits_application = true;
                } else {
                    let _ = quic.dgram_send(&scratch[..n]);
                }
            }
        }
        if count > 0 {
            Counters::add(&self.counters.wt_datagrams_received, u64::from(count));
            if !self.options.webtransport_app {
                app.on_datagrams(self.conn, count);
            }
        }
        result
    }
}

/// What the application asks of its sessions and their streams.
impl H3Connection {
    /// An action for a WebTransport session or stream of the application;
    /// None when `id` is neither (then it is a request stream's action).
    pub(super) fn act_webtransport(&mut self, quic: &mut quiche::Connection, id: u64, action: &Action<'_>) -> Option<bool> {
        if !self.options.webtransport_app {
            return None;
        }
        match (self.streams.get(&id), action) {
            (Some(StreamState::Wt(WtStream::App(_))), _) => Some(self.act_app_stream(quic, id, action)),
            (None, Action::Open { session }) => Some(self.open_app_stream(quic, id, *session)),
            (_, Action::Datagram(payload)) => Some(self.send_datagram(quic, id, payload)),
            (_, Action::CloseSession { code, reason }) => {
                if !self.sessions.contains_key(&id) {
                    return Some(false);
                }
                let capsule = wt::close_capsule(*code, reason);
                self.notices.push(Notice::CloseSession {
                    id,
                    code: *code,
                    reason: reason[..reason.len().min(1024)].to_vec(),
                    capsule,
                });
                Some(true)
            }
            (Some(StreamState::Request(r)), _) if r.session && !r.responded => Some(self.act_pending_session(quic, id, action)),
            (Some(StreamState::Request(r)), _) if r.session => Some(false),
            _ => None,
        }
    }

    /// The application's answer to a session request: a 2xx head without
    /// FIN accepts it, a final answer refuses it, a reset drops it.
    fn act_pending_session(&mut self, quic: &mut quiche::Connection, id: u64, action: &Action<'_>) -> bool {
        match *action {
            Action::Headers { status, fields, fin: false } if (200..300).contains(&status) => {
                // The draft-02 response field is what Chromium's draft-02
                // code path checks; later drafts ignore it.
                let mut all: Vec<(&[u8], &[u8])> = fields.to_vec();
                all.push((b"sec-webtransport-http3-draft", b"draft02"));
                let Some(data) = self.encode_section(quic, id, status, &all, 0) else {
                    Counters::sub(&self.counters.wt_sessions_open, 1);
                    return true;
                };
                self.queue(quic, id, data, false);
                let path = match self.streams.get_mut(&id) {
                    Some(StreamState::Request(r)) => {
                        r.response_started = true;
                        r.responded = true;
                        std::mem::take(&mut r.session_path)
                    }
                    _ => Vec::new(),
                };
                self.sessions.insert(id, Session::new());
                Counters::add(&self.counters.wt_sessions_established, 1);
                self.notices.push(Notice::SessionOpen(id, path));
                true
            }
            Action::Respond(_) | Action::Headers { .. } | Action::Reset(_) => {
                let informational = matches!(action, Action::Headers { status, .. } if (100..200).contains(status));
                if informational {
                    return false;
                }
                // Refused: no longer a session; its place under the cap is freed.
                Counters::sub(&self.counters.wt_sessions_open, 1);
                if let Some(StreamState::Request(r)) = self.streams.get_mut(&id) {
                    r.session = false;
                }
                self.act_request(quic, id, *action)
            }
            _ => false,
        }
    }

    fn act_app_stream(&mut self, quic: &mut quiche::Connection, id: u64, action: &Action<'_>) -> bool {
        let Some(StreamState::Wt(WtStream::App(a))) = self.streams.get_mut(&id) else { return false };
        match *action {
            Action::Data { data, fin } => {
                if a.write_done {
                    return false;
                }
                a.queued += data.len() as u64;
                a.write_done = fin;
                let total = a.queued;
                self.streaming_responses = true;
                self.queue_raw(quic, id, data, fin, total);
                if fin {
                    self.notices.push(Notice::Retire(id));
                }
                true
            }
            Action::Consumed(n) => {
                a.unconsumed = a.unconsumed.saturating_sub(n as usize);
                !a.read_done
            }
            Action::Reset(code) => {
                if a.write_done {
                    return false;
                }
                a.write_done = true;
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Write, code);
                self.outgoing.remove(&id);
                self.notices.push(Notice::Retire(id));
                true
            }
            Action::StopSending(code) => {
                if a.read_done {
                    return false;
                }
                a.read_done = true;
                a.unconsumed = 0;
                let _ = quic.stream_shutdown(id, quiche::Shutdown::Read, code);
                self.notices.push(Notice::Retire(id));
                true
            }
            _ => false,
        }
    }

    /// Opens a server stream for a session: the ID must be the next of its
    /// kind the application has not used (the application numbers them, so
    /// it can write to the stream at once). When the client's stream limit
    /// is reached the prefix waits in the queue until MAX_STREAMS comes.
    fn open_app_stream(&mut self, quic: &mut quiche::Connection, id: u64, session: u64) -> bool {
        let bidi = id & 0x2 == 0;
        let next = if bidi { &mut self.next_server_bidi } else { &mut self.next_server_uni };
        if id & 0x1 == 0 || id < *next || !self.sessions.contains_key(&session) {
            self.notices.push(Notice::Log(format!("cannot open stream {id} for session {session}")));
            self.notices.push(Notice::Aborted(id, AbortReason::ProtocolError, WT_SESSION_GONE));
            return false;
        }
        *next = id + 4;
        if let Some(s) = self.sessions.get_mut(&session) {
            s.server_streams.push(id);
        }
        self.streams.insert(id, StreamState::Wt(WtStream::App(wt::AppStream::new(session, id))));
        self.queue(quic, id, wt::stream_prefix(session, bidi), false);
        true
    }

    /// An HTTP datagram for an application session; counted as dropped
    /// when QUIC's send queue is full or it is too large for a packet.
    fn send_datagram(&mut self, quic: &mut quiche::Connection, session: u64, payload: &[u8]) -> bool {
        if !self.sessions.contains_key(&session) {
            return false;
        }
        let mut dgram = Vec::with_capacity(payload.len() + 8);
        varint::encode(session / 4, &mut dgram);
        dgram.extend_from_slice(payload);
        match quic.dgram_send(&dgram) {
            Ok(()) => {
                Counters::add(&self.counters.wt_datagrams_sent, 1);
                true
            }
            Err(_) => {
                Counters::add(&self.counters.wt_datagrams_dropped, 1);
                false
            }
        }
    }
}
