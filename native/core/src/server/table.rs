//! The connection table: every open connection by handle, and the
//! connection IDs that route packets to it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Instant;

use crate::h3::connection::H3Connection;
use crate::id_map::IdMap;
use crate::ids::ConnId;

pub struct Conn {
    pub quic: quiche::Connection,
    pub h3: H3Connection,
    pub peer: SocketAddr,
    /// Connection IDs routed to this connection: ours, and the client's
    /// original destination ID until the handshake moves on.
    pub cids: Vec<Vec<u8>>,
    pub cid_hex: String,
    /// Datagrams that carried this server's CONNECTION_CLOSE before the
    /// last one (which starts draining): for the closing state.
    pub close_datagrams: Vec<Vec<u8>>,
    pub dirty: bool,
    /// When the first packet arrived, for the handshake timeout.
    pub accepted_at: Instant,
    /// The handshake timed out: the connection is closed and dropped once
    /// its CONNECTION_CLOSE went out, without the draining period.
    pub expired: bool,
    /// quiche's DATAGRAM receive count already added to the counters.
    pub dgrams_counted: usize,
    /// This connection's entry in `Deadlines::timers`.
    pub timer: Option<Instant>,
    /// Sending waits for the application's answer to this turn's work.
    pub held: bool,
    /// The application's responses were applied this turn: send them now.
    pub answered: bool,
    /// The handshake completed (it no longer counts as half-open for Retry).
    pub handshake_done: bool,
    /// A packet quiche's pacer timed for later than this turn: it leaves at
    /// its time, and nothing more of this connection is built before it.
    pub paced: Option<PacedPacket>,
    /// Pacing where quiche does not pace (CUBIC, Reno).
    pub pacer: super::pacer::Pacer,
    /// The handshake's TLS choices (identity, client certificate), from
    /// its ClientHello on (certificates.rs).
    pub tls: Option<std::sync::Arc<crate::certificates::HandshakeTls>>,
    /// The application was asked for this handshake's identity (request number).
    pub identity_question: Option<u32>,
}

/// A built packet waiting for the time quiche gave it (`SendInfo::at`).
pub struct PacedPacket {
    pub data: Vec<u8>,
    pub to: std::net::SocketAddr,
    /// The source it leaves from (socket::Socket::source_for).
    pub from: Option<std::net::IpAddr>,
    pub at: std::time::Instant,
}

pub struct ConnTable {
    conns: IdMap<ConnId, Conn>,
    cids: HashMap<Vec<u8>, ConnId>,
    next_handle: u32,
}

impl Default for ConnTable {
    fn default() -> Self {
        ConnTable { conns: IdMap::default(), cids: HashMap::new(), next_handle: 1 }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl ConnTable {
    /// The connection a packet's destination connection ID belongs to.
    pub fn route(&self, dcid: &[u8]) -> Option<ConnId> {
        self.cids.get(dcid).copied()
    }

    /// A handle for a new connection (never 0; wraps after 2^32 - 1).
    pub fn allocate(&mut self) -> ConnId {
        let handle = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        ConnId(handle)
    }

    pub fn insert(&mut self, id: ConnId, conn: Conn) {
        for cid in &conn.cids {
            self.cids.insert(cid.clone(), id);
        }
        self.conns.insert(id, conn);
    }

    /// Routes one more connection ID to a connection (a spare one it issued).
    pub fn add_cid(&mut self, id: ConnId, cid: Vec<u8>) {
        if let Some(conn) = self.conns.get_mut(&id) {
            self.cids.insert(cid.clone(), id);
            conn.cids.push(cid);
        }
    }

    /// Stops routing a connection ID the peer retired.
    pub fn remove_cid(&mut self, id: ConnId, cid: &[u8]) {
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.cids.retain(|c| c != cid);
            if self.cids.get(cid) == Some(&id) {
                self.cids.remove(cid);
            }
        }
    }

    /// Takes a connection out, with its connection IDs.
    pub fn remove(&mut self, id: ConnId) -> Option<Conn> {
        let conn = self.conns.remove(&id)?;
        for cid in &conn.cids {
            self.cids.remove(cid);
        }
        Some(conn)
    }

    pub fn get(&self, id: ConnId) -> Option<&Conn> {
        self.conns.get(&id)
    }

    pub fn get_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.conns.get_mut(&id)
    }

    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    pub fn ids(&self) -> Vec<ConnId> {
        self.conns.keys().copied().collect()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ConnId, &mut Conn)> {
        self.conns.iter_mut().map(|(id, c)| (*id, c))
    }

    /// Queues a connection for this turn's processing and flush, once.
    pub fn mark_dirty(&mut self, id: ConnId, dirty: &mut Vec<ConnId>) {
        if let Some(c) = self.conns.get_mut(&id) {
            if !c.dirty {
                c.dirty = true;
                dirty.push(id);
            }
        }
    }
}
