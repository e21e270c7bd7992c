//! Native-to-JavaScript event batch writer.

pub mod kind {
    pub const REQUEST: u8 = 1;
    pub const BODY: u8 = 2;
    pub const STREAM_ABORTED: u8 = 3;
    pub const CONN_OPEN: u8 = 4;
    pub const CONN_CLOSED: u8 = 5;
    pub const LOG: u8 = 6;
    pub const SERVER_CLOSED: u8 = 7;
    pub const WT_SESSION_OPEN: u8 = 8;
    pub const WT_SESSION_CLOSED: u8 = 9;
    pub const WT_STREAM: u8 = 10;
    pub const WT_DATAGRAMS: u8 = 11;
}

/// WT_STREAM `what`.
pub mod wt_stream {
    /// A client stream joined its session (counts as open).
    pub const OPENED: u8 = 1;
    /// A client stream was offered but refused over the cap (never open).
    pub const REJECTED: u8 = 2;
    pub const CLOSED: u8 = 3;
}

/// REQUEST flags.
pub mod request_flag {
    /// The request stream ended with the header section (or, in buffered
    /// mode, the whole body is in this event): no BODY events follow.
    pub const COMPLETE: u8 = 1;
    /// Body bytes follow the field lines in this event (buffered mode).
    pub const HAS_BODY: u8 = 2;
}

/// Why a request stream ended without a normal finish.
pub mod abort_reason {
    pub const PEER_RESET: u8 = 1;
    pub const PEER_STOP_SENDING: u8 = 2;
    pub const PROTOCOL_ERROR: u8 = 3;
}

/// How a connection ended (CONN_CLOSED `how`).
pub mod close_how {
    /// The peer sent CONNECTION_CLOSE.
    pub const PEER: u8 = 1;
    /// This server closed it (protocol error, shutdown, panic).
    pub const LOCAL: u8 = 2;
    pub const IDLE_TIMEOUT: u8 = 3;
    /// The handshake never completed or the connection vanished otherwise.
    pub const OTHER: u8 = 4;
}

pub mod log_level {
    pub const ERROR: u8 = 1;
    pub const WARN: u8 = 2;
    pub const INFO: u8 = 3;
    pub const DEBUG: u8 = 4;
}

#[derive(Default)]
pub struct EventBatch {
    buf: Vec<u8>,
    count: u32,
    /// Events JavaScript answers (requests and body chunks), ever: the I/O
    /// loop holds a connection's packets only for those (server.rs, `held`).
    answerable: u64,
}

impl EventBatch {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn answerable(&self) -> u64 {
        self.answerable
    }

    pub fn len_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Hands over the batch, stamped with its sequence number in the first
    /// eight bytes (JavaScript acknowledges batches by that number).
    pub fn take(&mut self, seq: u64) -> Vec<u8> {
        self.count = 0;
        let mut out = std::mem::take(&mut self.buf);
        out[..8].copy_from_slice(&(seq as f64).to_le_bytes());
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
        self.buf.extend_from_slice(b);
    }

    pub fn request(
        &mut self,
        conn: u32,
        stream: u64,
        flags: u8,
        pseudo: &[(&[u8], &[u8])],
        fields: &[(Vec<u8>, Vec<u8>)],
        body: &[u8],
    ) {
        self.answerable += 1;
        self.head(kind::REQUEST, conn);
        self.f64(stream);
        self.u8(flags);
        self.u16((pseudo.len() + fields.len()) as u16);
        for (n, v) in pseudo {
            self.short_bytes(n);
            self.long_bytes(v);
        }
        for (n, v) in fields {
            self.short_bytes(n);
            self.long_bytes(v);
        }
        if flags & request_flag::HAS_BODY != 0 {
            self.long_bytes(body);
        }
    }

    pub fn body(&mut self, conn: u32, stream: u64, data: &[u8], fin: bool) {
        self.answerable += 1;
        self.head(kind::BODY, conn);
        self.f64(stream);
        self.u8(fin as u8);
        self.long_bytes(data);
    }

    pub fn stream_aborted(&mut self, conn: u32, stream: u64, reason: u8, code: u64) {
        self.head(kind::STREAM_ABORTED, conn);
        self.f64(stream);
        self.u8(reason);
        self.f64(code);
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

    pub fn wt_session_closed(&mut self, conn: u32, session: u64, code: u32) {
        self.head(kind::WT_SESSION_CLOSED, conn);
        self.f64(session);
        self.u32(code);
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
