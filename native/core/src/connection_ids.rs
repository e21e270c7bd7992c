//! The connection IDs this server issues: 20 bytes, either random or in
//! the QUIC-LB format without a key (draft-ietf-quic-load-balancers-19: the
//! server ID in the clear), which lets a load balancer that knows the
//! configuration route
//! every packet of a connection, before and after a migration, to the
//! server that owns it:
//!
//! ```text
//! first octet: config rotation (3 bits) | length self-description (5 bits)
//! server id:   server_id.len() bytes, in the clear
//! nonce:       the rest, random (at least 4 bytes)
//! ```
//!
//! The length is always 20 (quiche's maximum): short-header packets carry
//! no length, and the server parses them with this one.

use std::fmt;

/// Every ID this server issues has this length.
pub const CID_LEN: usize = quiche::MAX_CONN_ID_LEN;
/// QUIC-LB: configuration 0b111 marks an ID no balancer can route.
pub const UNROUTABLE_CONFIG: u8 = 0b111;
/// A Retry packet's source ID (`generate_for_retry`), without QUIC-LB.
pub const RETRY_CID_LEN: usize = 8;
/// QUIC-LB requires at least this much nonce.
pub const MIN_NONCE: usize = 4;

/// A QUIC-LB plaintext configuration: which rotation codepoint, and this
/// server's ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuicLb {
    pub config_id: u8,
    pub server_id: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum QuicLbError {
    ConfigId(u8),
    ServerIdLength(usize),
}

impl fmt::Display for QuicLbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuicLbError::ConfigId(c) => write!(f, "QUIC-LB config id must be 0 to 6 (7 marks unroutable IDs), got {c}"),
            QuicLbError::ServerIdLength(n) => {
                write!(f, "QUIC-LB server id must be 1 to {} bytes, got {n}", CID_LEN - 1 - MIN_NONCE)
            }
        }
    }
}

impl QuicLb {
    pub fn new(config_id: u8, server_id: Vec<u8>) -> Result<QuicLb, QuicLbError> {
        if config_id >= UNROUTABLE_CONFIG {
            return Err(QuicLbError::ConfigId(config_id));
        }
        if server_id.is_empty() || server_id.len() > CID_LEN - 1 - MIN_NONCE {
            return Err(QuicLbError::ServerIdLength(server_id.len()));
        }
        Ok(QuicLb { config_id, server_id })
    }
}

/// Makes the server's connection IDs.
#[derive(Debug, Clone, Default)]
pub struct ConnectionIds {
    lb: Option<QuicLb>,
    /// With workers (workers.rs): this worker's index, written at
    /// `worker_offset()`.
    worker: Option<u8>,
}

impl ConnectionIds {
    pub fn new(lb: Option<QuicLb>) -> ConnectionIds {
        ConnectionIds { lb, worker: None }
    }

    /// IDs that name worker `index` of a group.
    pub fn for_worker(lb: Option<QuicLb>, index: u8) -> ConnectionIds {
        ConnectionIds { lb, worker: Some(index) }
    }

    /// Where a worker's index sits in an ID: the first nonce byte after
    /// the QUIC-LB server ID, else byte 1 (byte 0 of a QUIC-LB ID is the
    /// configuration; without QUIC-LB it is left random too). Always within
    /// the shortest ID issued, the Retry source's.
    pub fn worker_offset(lb: Option<&QuicLb>) -> usize {
        lb.map_or(1, |lb| 1 + lb.server_id.len())
    }

    /// A fresh ID; None only if the system's random source failed.
    pub fn generate(&self) -> Option<[u8; CID_LEN]> {
        let mut cid = [0u8; CID_LEN];
        getrandom::fill(&mut cid).ok()?;
        if let Some(lb) = &self.lb {
            // Self-described length: the ID's length minus one.
            cid[0] = (lb.config_id << 5) | (CID_LEN as u8 - 1);
            cid[1..1 + lb.server_id.len()].copy_from_slice(&lb.server_id);
        }
        if let Some(index) = self.worker {
            cid[Self::worker_offset(self.lb.as_ref())] = index;
        }
        Some(cid)
    }

    /// A short ID for a Retry packet's source: the client sends its second
    /// Initial to it and learns the connection's full ID in the answer.
    /// Short because quiche 0.30 encodes the server's transport parameters
    /// into 128 bytes, and after a Retry they carry three IDs (original,
    /// Retry source, initial source): with 20-byte IDs and a client's
    /// 20-byte original ID they no longer fit (quiche fails the accept with
    /// BufferTooShort). With QUIC-LB it still names this server.
    pub fn generate_for_retry(&self) -> Option<Vec<u8>> {
        let full = self.generate()?;
        let len = self.lb.as_ref().map_or(RETRY_CID_LEN, |lb| (1 + lb.server_id.len() + MIN_NONCE).max(RETRY_CID_LEN));
        let mut cid = full[..len].to_vec();
        if let Some(lb) = &self.lb {
            cid[0] = (lb.config_id << 5) | (len as u8 - 1);
        }
        Some(cid)
    }

    /// The server ID a QUIC-LB balancer reads from `cid` under this
    /// configuration (what the test balancer does).
    pub fn server_id_of(cid: &[u8], server_id_len: usize) -> Option<(u8, &[u8])> {
        let first = *cid.first()?;
        let config = first >> 5;
        if config == UNROUTABLE_CONFIG || cid.len() < 1 + server_id_len + MIN_NONCE {
            return None;
        }
        Some((config, &cid[1..1 + server_id_len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quic_lb_id_carries_the_config_the_length_and_the_server_id_before_a_random_nonce() {
        let ids = ConnectionIds::new(Some(QuicLb::new(2, vec![0xab, 0xcd, 0xef]).unwrap()));
        let a = ids.generate().unwrap();
        let b = ids.generate().unwrap();
        assert_eq!(a[0] >> 5, 2, "config rotation bits");
        assert_eq!(usize::from(a[0] & 0x1f) + 1, CID_LEN, "self-described length");
        assert_eq!(&a[1..4], &[0xab, 0xcd, 0xef]);
        assert_eq!(ConnectionIds::server_id_of(&a, 3), Some((2, &[0xab, 0xcd, 0xef][..])));
        assert_ne!(a[4..], b[4..], "the nonce differs between IDs");
    }

    #[test]
    fn a_retry_source_id_is_short_and_still_names_the_server() {
        assert_eq!(ConnectionIds::default().generate_for_retry().unwrap().len(), RETRY_CID_LEN);
        let ids = ConnectionIds::new(Some(QuicLb::new(3, vec![9; 6]).unwrap()));
        let cid = ids.generate_for_retry().unwrap();
        assert_eq!(cid.len(), 11, "first octet, 6 bytes of server id, 4 of nonce");
        assert_eq!(usize::from(cid[0] & 0x1f) + 1, cid.len());
        assert_eq!(ConnectionIds::server_id_of(&cid, 6), Some((3, &[9u8; 6][..])));
    }

    #[test]
    fn a_worker_writes_its_index_after_the_server_id_in_every_id_and_retry_id() {
        let lb = QuicLb::new(1, vec![7, 7]).unwrap();
        let ids = ConnectionIds::for_worker(Some(lb.clone()), 5);
        assert_eq!(ConnectionIds::worker_offset(Some(&lb)), 3);
        assert_eq!(ids.generate().unwrap()[3], 5);
        assert_eq!(ids.generate_for_retry().unwrap()[3], 5);
        let plain = ConnectionIds::for_worker(None, 2);
        assert_eq!(plain.generate().unwrap()[1], 2);
        assert_eq!(plain.generate_for_retry().unwrap()[1], 2);
    }

    #[test]
    fn configurations_outside_the_draft_are_refused() {
        assert_eq!(QuicLb::new(7, vec![1]), Err(QuicLbError::ConfigId(7)));
        assert_eq!(QuicLb::new(0, vec![]), Err(QuicLbError::ServerIdLength(0)));
        assert_eq!(QuicLb::new(0, vec![0; 16]), Err(QuicLbError::ServerIdLength(16)));
        assert!(QuicLb::new(6, vec![0; 15]).is_ok(), "15 bytes of server id leave the 4-byte nonce");
    }

    #[test]
    fn without_a_configuration_ids_are_random_and_a_balancer_reads_none_from_an_unroutable_one() {
        let ids = ConnectionIds::default();
        assert_ne!(ids.generate().unwrap(), ids.generate().unwrap());
        let mut cid = [0u8; CID_LEN];
        cid[0] = UNROUTABLE_CONFIG << 5;
        assert_eq!(ConnectionIds::server_id_of(&cid, 2), None);
    }
}
