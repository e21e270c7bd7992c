//! Connection migration (RFC 9000 section 9): each client is offered spare
//! connection IDs so it can move to a new address with a fresh one, a
//! packet from a new address makes quiche validate that path by itself
//! (PATH_CHALLENGE / PATH_RESPONSE; probing it again from here only adds
//! challenges), and once the client's non-probing
//! packets arrive on a validated path the connection follows it. A NAT
//! rebinding (same connection ID, new port) takes the same course. quiche
//! does the protocol; the loop keeps the routing table in step with the IDs
//! and records the new peer address.

use std::net::SocketAddr;

use super::Server;
use crate::app::{Application, LogLevel};
use crate::counters::Counters;
use crate::ids::ConnId;
use crate::udp_bind::display;

/// Spare connection IDs offered beyond the one in use: one for a
/// migration, one for the next (the client may hold four: config.rs).
const SPARE_IDS: usize = 2;

impl<A: Application> Server<A> {
    /// After a connection handled its packets: a validated move followed,
    /// retired IDs unrouted and spare ones issued.
    pub(super) fn manage_paths(&mut self, id: ConnId) {
        let Some(conn) = self.table.get_mut(id) else { return };
        let mut migrated: Option<(SocketAddr, SocketAddr)> = None;
        let counters = &self.shared.counters;
        // quiche probes a new path by itself; the loop follows the move.
        // The events of a connection's last packets count too (a client
        // that moved and then closed did move), so they are read before
        // a closing connection is left alone.
        while let Some(event) = conn.quic.path_event_next() {
            match event {
                quiche::PathEvent::PeerMigrated(_, peer) => {
                    Counters::add(&counters.path_migrations, 1);
                    migrated = Some((conn.peer, peer));
                    conn.peer = peer;
                }
                quiche::PathEvent::Validated(..) => Counters::add(&counters.paths_validated, 1),
                quiche::PathEvent::FailedValidation(..) => Counters::add(&counters.paths_validation_failed, 1),
                _ => {}
            }
        }
        if conn.quic.is_closed() || conn.quic.is_draining() {
            return;
        }
        let mut retired = Vec::new();
        while let Some(cid) = conn.quic.retired_scid_next() {
            retired.push(cid.as_ref().to_vec());
        }
        let mut issued = Vec::new();
        if conn.quic.is_established() {
            while conn.quic.scids_left() > 0 && conn.quic.active_scids() < 1 + SPARE_IDS {
                let Some(scid) = self.ids.generate() else { break };
                let token = u128::from_be_bytes(crate::reset::token(&self.reset_key, &scid));
                if conn.quic.new_scid(&quiche::ConnectionId::from_ref(&scid), token, false).is_err() {
                    break;
                }
                issued.push(scid.to_vec());
            }
        }
        for cid in retired {
            self.table.remove_cid(id, &cid);
        }
        for cid in issued {
            self.table.add_cid(id, cid);
        }
        if let Some((from, to)) = migrated {
            self.app.on_peer_moved(id, display(to));
            // Debug: the spec allows no other diagnostic lines by default.
            self.app.on_log(LogLevel::Debug, &format!("connection {} moved from {} to {}", id.0, display(from), display(to)));
        }
    }
}
