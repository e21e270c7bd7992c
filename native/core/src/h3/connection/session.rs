//! WebTransport on one connection: sessions on CONNECT streams, their
//! client streams, and HTTP datagrams.

use super::*;

impl H3Connection {
    pub(super) fn accept_session<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, path: &[u8], app: &mut A) {
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
        self.outgoing.clear();
        self.sync_gauges();
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
    pub(super) fn admit_wt_stream<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, session: u64, bidi: bool, app: &mut A) -> bool {
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

    pub(super) fn on_wt_bytes<A: Application>(&mut self, quic: &mut quiche::Connection, id: u64, data: &[u8], fin: bool, app: &mut A) -> H3Result<()> {
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
    pub(super) fn close_wt_stream<A: Application>(&mut self, id: u64, app: &mut A) {
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
