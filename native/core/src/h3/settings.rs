//! SETTINGS frame payloads (RFC 9114 section 7.2.4).

use super::codes::{setting, H3_SETTINGS_ERROR};
use super::error::{H3Error, H3Result};
use crate::varint;

/// What this server advertises. `QPACK_MAX_TABLE_CAPACITY` and
/// `QPACK_BLOCKED_STREAMS` stay 0, so a compliant peer never references a
/// dynamic table and no QPACK stream state is needed.
pub struct LocalSettings {
    pub max_field_section_size: u64,
    /// Extended CONNECT, HTTP datagrams and the WebTransport settings.
    pub webtransport: bool,
    pub max_webtransport_sessions: u64,
}

impl LocalSettings {
    pub fn encode_payload(&self, out: &mut Vec<u8>) {
        let mut put = |id: u64, v: u64| {
            varint::encode(id, out);
            varint::encode(v, out);
        };
        put(setting::QPACK_MAX_TABLE_CAPACITY, 0);
        put(setting::QPACK_BLOCKED_STREAMS, 0);
        put(setting::MAX_FIELD_SECTION_SIZE, self.max_field_section_size);
        if self.webtransport {
            put(setting::ENABLE_CONNECT_PROTOCOL, 1);
            put(setting::H3_DATAGRAM, 1);
            // Chromium 156 refuses WebTransport without the draft-02 setting
            // (tested: docs/design.md); draft-07's WT_MAX_SESSIONS tells
            // clients the session capacity. Later drafts' codepoints are not
            // sent: no client here needs them.
            put(setting::ENABLE_WEBTRANSPORT_DRAFT02, 1);
            put(setting::WT_MAX_SESSIONS_DRAFT07, self.max_webtransport_sessions);
        }
        // A GREASE setting (RFC 9114 section 7.2.4.1) keeps peers honest about
        // ignoring identifiers they do not know.
        put(0x1f * 0x2a + 0x21, 0);
    }
}

/// The peer's settings, as far as this server cares.
#[derive(Debug, Default, Clone)]
pub struct PeerSettings {
    pub max_field_section_size: Option<u64>,
    pub h3_datagram: bool,
    pub qpack_max_table_capacity: u64,
}

pub fn parse(payload: &[u8]) -> H3Result<PeerSettings> {
    let bad = |reason| H3Error::connection(H3_SETTINGS_ERROR, reason);
    let mut out = PeerSettings::default();
    let mut seen: Vec<u64> = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let (id, n) = varint::decode(rest).ok_or(H3Error::connection(super::codes::H3_FRAME_ERROR, "truncated SETTINGS"))?;
        rest = &rest[n..];
        let (value, n) = varint::decode(rest).ok_or(H3Error::connection(super::codes::H3_FRAME_ERROR, "truncated SETTINGS"))?;
        rest = &rest[n..];
        if setting::is_reserved_http2(id) {
            return Err(bad("HTTP/2 setting in HTTP/3 SETTINGS"));
        }
        if seen.contains(&id) {
            return Err(bad("duplicate setting"));
        }
        if seen.len() < 256 {
            seen.push(id);
        }
        match id {
            setting::MAX_FIELD_SECTION_SIZE => out.max_field_section_size = Some(value),
            setting::QPACK_MAX_TABLE_CAPACITY => out.qpack_max_table_capacity = value,
            setting::H3_DATAGRAM => {
                if value > 1 {
                    return Err(bad("H3_DATAGRAM must be 0 or 1"));
                }
                out.h3_datagram = value == 1;
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let ok = parse(&[0x33, 0x01, 0x06, 0x44, 0x00]).unwrap();
        assert!(ok.h3_datagram);
        assert_eq!(ok.max_field_section_size, Some(0x400));
        assert_eq!(parse(&[0x02, 0x00]).unwrap_err().code, H3_SETTINGS_ERROR);
        assert_eq!(parse(&[0x06, 0x01, 0x06, 0x02]).unwrap_err().code, H3_SETTINGS_ERROR);
    }
}
