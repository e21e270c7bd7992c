//! Native-to-JavaScript event batch writer.

use h3core::h3::request::RequestHead;

use super::codes::{event_kind as kind, request_flag};

/// Scratch capacity kept past a turn; a larger one (a burst of events) is
/// given back to the allocator.
const KEEP_CAPACITY: usize = 1 << 20;

/// Events are written into one scratch buffer that stays with the I/O
/// thread; each finished batch leaves as an exact-size copy, which the
/// JavaScript thread copies into a Buffer of Node's and frees at once
/// (`EventBatchBytes` in lib.rs). A batch handed over as the growing buffer
/// itself would regrow from nothing every turn: a dozen reallocations, each
/// a copy, for a 29 KiB upload batch (docs/design.md, "Event batches in
/// Node's memory").
#[derive(Default)]
pub struct EventBatch {
    buf: Vec<u8>,
    count: u32,
}

impl EventBatch {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Events in the batch.
    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn len_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Hands over the batch, stamped with its sequence number in the first
    /// eight bytes (JavaScript acknowledges batches by that number).
    pub fn take(&mut self, seq: u64) -> Vec<u8> {
        self.count = 0;
        self.buf[..8].copy_from_slice(&(seq as f64).to_le_bytes());
        let out = h3core::bytes::to_vec(&self.buf);
        self.buf.clear();
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::new();
        }
        out
    }

    fn head(&mut self, kind: u8, conn: u32) {
        if self.count == 0 {
            self.buf.extend_from_slice(&[0; 8]);
        }
        self.count += 1;
        self.buf.push(kind);
        self.u32(conn);
    }

    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Stream IDs and error codes go as f64: exact up to 2^53, and JavaScript
    /// reads them without BigInt.
    fn f64(&mut self, v: u64) {
        self.buf.extend_from_slice(&(v as f64).to_le_bytes());
    }

    fn short_bytes(&mut self, b: &[u8]) {
        let b = &b[..b.len().min(u16::MAX as usize)];
        self.u16(b.len() as u16);
        self.buf.extend_from_slice(b);
    }

    fn long_bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        // A body's bytes: large, and at any alignment (h3core::bytes).
        h3core::bytes::append(&mut self.buf, b);
    }

    /// REQUEST: the pseudo-header fields JavaScript reads (`:method`, then
    /// `:path`, `:authority`, `:scheme` where present), the regular field
    /// lines, and with HAS_BODY the buffered body.
    pub fn request(&mut self, conn: u32, stream: u64, flags: u8, head: &RequestHead, body: &[u8]) {
        self.head(kind::REQUEST, conn);
        self.f64(stream);
        self.u8(flags);
        let pseudo = [(&b":path"[..], head.path()), (b":authority", head.authority()), (b":scheme", head.scheme())];
        let present = pseudo.iter().filter(|(_, v)| v.is_some()).count();
        self.u16((1 + present + head.fields().len()) as u16);
        self.short_bytes(b":method");
        self.long_bytes(head.method());
        for (n, v) in pseudo {
            if let Some(v) = v {
                self.short_bytes(n);
                self.long_bytes(v);
            }
        }
        for (name, value) in head.fields() {
            self.short_bytes(name);
            self.long_bytes(value);
        }
        if flags & request_flag::HAS_BODY != 0 {
            self.long_bytes(body);
        }
    }

    pub fn body(&mut self, conn: u32, stream: u64, data: &[u8], fin: bool) {
        self.head(kind::BODY, conn);
        self.f64(stream);
        self.u8(fin as u8);
        self.long_bytes(data);
    }

    /// TRAILERS: the request's trailer field lines.
    pub fn trailers(&mut self, conn: u32, stream: u64, fields: &[(Vec<u8>, Vec<u8>)]) {
        self.head(kind::TRAILERS, conn);
        self.f64(stream);
        self.u16(fields.len().min(u16::MAX as usize) as u16);
        for (n, v) in fields.iter().take(u16::MAX as usize) {
            self.short_bytes(n);
            self.long_bytes(v);
        }
    }

    /// SENT: the response body bytes QUIC has taken so far (cumulative).
    pub fn sent(&mut self, conn: u32, stream: u64, total: u64) {
        self.head(kind::SENT, conn);
        self.f64(stream);
        self.f64(total);
    }

    /// PEER_FIELD_LIMIT: the client's SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub fn peer_field_limit(&mut self, conn: u32, limit: u64) {
        self.head(kind::PEER_FIELD_LIMIT, conn);
        self.f64(limit);
    }

    pub fn stream_aborted(&mut self, conn: u32, stream: u64, reason: u8, code: u64) {
        self.head(kind::STREAM_ABORTED, conn);
        self.f64(stream);
        self.u8(reason);
        self.f64(code);
    }

    /// PEER_MOVED: the address the connection follows now.
    pub fn peer_moved(&mut self, conn: u32, peer: &str) {
        self.head(kind::PEER_MOVED, conn);
        self.short_bytes(peer.as_bytes());
    }

    /// IDENTITY_WANTED: the question's number and the client's server name.
    pub fn identity_wanted(&mut self, conn: u32, request: u32, server_name: &str) {
        self.head(kind::IDENTITY_WANTED, conn);
        self.u32(request);
        self.short_bytes(server_name.as_bytes());
    }

    /// CLIENT_CERTIFICATE: X509_V_ERR_* (0: verified), then the chain: a
    /// count and each certificate's DER.
    pub fn client_certificate(&mut self, conn: u32, verify_error: u32, chain: &[&[u8]]) {
        self.head(kind::CLIENT_CERTIFICATE, conn);
        self.u32(verify_error);
        let chain = &chain[..chain.len().min(u8::MAX as usize)];
        self.u8(chain.len() as u8);
        for cert in chain {
            self.long_bytes(cert);
        }
    }

    pub fn conn_open(&mut self, conn: u32, peer: &str, cid: &str) {
        self.head(kind::CONN_OPEN, conn);
        self.short_bytes(peer.as_bytes());
        self.short_bytes(cid.as_bytes());
    }

    // One argument per field of the event as it goes on the wire; a struct
    // built only to be taken apart again here would add nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn conn_closed(&mut self, conn: u32, how: u8, is_app: bool, code: u64, reason: &[u8], peer: &str, cid: &str) {
        self.head(kind::CONN_CLOSED, conn);
        self.u8(how);
        self.u8(is_app as u8);
        self.f64(code);
        self.short_bytes(reason);
        self.short_bytes(peer.as_bytes());
        self.short_bytes(cid.as_bytes());
    }

    pub fn log(&mut self, level: u8, message: &str) {
        self.head(kind::LOG, 0);
        self.u8(level);
        self.short_bytes(message.as_bytes());
    }

    pub fn wt_session_open(&mut self, conn: u32, session: u64, path: &[u8]) {
        self.head(kind::WT_SESSION_OPEN, conn);
        self.f64(session);
        self.short_bytes(path);
    }

    pub fn wt_session_closed(&mut self, conn: u32, session: u64, code: u32, reason: &[u8]) {
        self.head(kind::WT_SESSION_CLOSED, conn);
        self.f64(session);
        self.u32(code);
        self.short_bytes(reason);
    }

    /// WT_DATAGRAM: one datagram's payload for an application session.
    pub fn wt_datagram(&mut self, conn: u32, session: u64, payload: &[u8]) {
        self.head(kind::WT_DATAGRAM, conn);
        self.f64(session);
        self.short_bytes(payload);
    }

    pub fn wt_stream(&mut self, conn: u32, session: u64, stream: u64, what: u8, bidi: bool) {
        self.head(kind::WT_STREAM, conn);
        self.f64(session);
        self.f64(stream);
        self.u8(what);
        self.u8(bidi as u8);
    }

    pub fn wt_datagrams(&mut self, conn: u32, count: u32) {
        self.head(kind::WT_DATAGRAMS, conn);
        self.u32(count);
    }

    pub fn server_closed(&mut self) {
        self.head(kind::SERVER_CLOSED, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of one BODY event, written by a fresh writer.
    fn body_batch(seq: u64, data: &[u8], fin: bool) -> Vec<u8> {
        let mut b = EventBatch::default();
        b.body(7, 4, data, fin);
        b.take(seq)
    }

    #[test]
    fn each_batch_leaves_exact_size_with_only_its_own_events() {
        let mut b = EventBatch::default();
        b.body(7, 4, &[1; 3000], false);
        let first = b.take(1);
        assert!(b.is_empty());
        assert_eq!(b.len_bytes(), 0);
        b.body(7, 4, &[2; 10], true);
        let second = b.take(2);
        // The scratch buffer is reused, but what leaves is a copy of one batch, no more.
        assert_eq!(first, body_batch(1, &[1; 3000], false));
        assert_eq!(second.len(), second.capacity());
        assert_eq!(f64::from_le_bytes(second[..8].try_into().unwrap()), 2.0);
        assert_eq!(second, body_batch(2, &[2; 10], true));
    }

    #[test]
    fn a_burst_past_the_kept_capacity_is_given_back() {
        let mut b = EventBatch::default();
        b.body(1, 0, &vec![0; KEEP_CAPACITY + 1], false);
        // seq, then BODY: kind, conn, stream, fin, length, the bytes.
        assert_eq!(b.take(1).len(), 8 + 1 + 4 + 8 + 1 + 4 + KEEP_CAPACITY + 1);
        assert!(b.buf.capacity() <= KEEP_CAPACITY);
        b.body(1, 0, &[0; 100], false);
        b.take(2);
        assert!(b.buf.capacity() > 0, "a small batch keeps its scratch capacity");
    }
}
