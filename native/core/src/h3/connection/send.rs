//! Responses, the per-stream send queue (what flow control has not let
//! out yet) and stream resets, of one connection's HTTP/3 layer.

use super::*;

/// Bytes queued on one stream, and whether FIN follows them.
pub(super) struct Outgoing {
    pub(super) data: Vec<u8>,
    pub(super) written: usize,
    pub(super) fin: bool,
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

    /// Answers a request from JavaScript. Unknown or already answered
    /// streams (the client reset it, the connection moved on) are ignored.
    #[inline]
    pub fn respond(&mut self, quic: &mut quiche::Connection, id: u64, status: u16, fields: &[(&[u8], &[u8])], body: &[u8]) {
        match self.streams.get_mut(&id) {
            Some(StreamState::Request(r)) if r.delivered && !r.responded => r.responded = true,
            _ => return,
        }
        self.respond_bytes(quic, id, status, fields, body);
        self.sync_gauges();
    }

    /// A HEADERS frame carrying `:status` and the fields, QPACK-encoded
    /// with the static table and literals only.
    pub(super) fn encode_headers(&mut self, status: u16, fields: &[(&[u8], &[u8])]) -> Option<Vec<u8>> {
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
    pub(super) fn respond_bytes(&mut self, quic: &mut quiche::Connection, id: u64, status: u16, fields: &[(&[u8], &[u8])], body: &[u8]) {
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
    pub(super) fn queue(&mut self, quic: &mut quiche::Connection, id: u64, data: Vec<u8>, fin: bool) {
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
    pub(super) fn flush_stream(&mut self, quic: &mut quiche::Connection, id: u64) {
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
