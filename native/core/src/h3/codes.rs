//! Error codes and registered values from RFC 9114, RFC 9204, RFC 9220,
//! RFC 9297 and draft-ietf-webtrans-http3.

pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub const H3_INTERNAL_ERROR: u64 = 0x102;
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_FRAME_ERROR: u64 = 0x106;
pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub const H3_ID_ERROR: u64 = 0x108;
pub const H3_SETTINGS_ERROR: u64 = 0x109;
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const H3_REQUEST_INCOMPLETE: u64 = 0x10d;
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
pub const H3_CONNECT_ERROR: u64 = 0x10f;
pub const H3_VERSION_FALLBACK: u64 = 0x110;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
pub const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
pub const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;
pub const H3_DATAGRAM_ERROR: u64 = 0x33;
pub const WT_BUFFERED_STREAM_REJECTED: u64 = 0x3994_bd84;
pub const WT_SESSION_GONE: u64 = 0x170d_7b68;

/// Unidirectional stream types (RFC 9114 section 6.2, RFC 9204 section 4.2,
/// draft-ietf-webtrans-http3 section 4.1).
pub mod stream_type {
    pub const CONTROL: u64 = 0x00;
    pub const PUSH: u64 = 0x01;
    pub const QPACK_ENCODER: u64 = 0x02;
    pub const QPACK_DECODER: u64 = 0x03;
    pub const WEBTRANSPORT_UNI: u64 = 0x54;
}

/// Signal value that opens a WebTransport bidirectional stream in place of a
/// frame type.
pub const WEBTRANSPORT_BIDI_SIGNAL: u64 = 0x41;

pub mod frame_type {
    pub const DATA: u64 = 0x00;
    pub const HEADERS: u64 = 0x01;
    pub const CANCEL_PUSH: u64 = 0x03;
    pub const SETTINGS: u64 = 0x04;
    pub const PUSH_PROMISE: u64 = 0x05;
    pub const GOAWAY: u64 = 0x07;
    pub const MAX_PUSH_ID: u64 = 0x0d;

    /// HTTP/2 frame types with no HTTP/3 meaning; receiving one is an error
    /// (RFC 9114 section 7.2.8).
    pub fn is_reserved_http2(ty: u64) -> bool {
        matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
    }
}

pub mod setting {
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
    pub const ENABLE_CONNECT_PROTOCOL: u64 = 0x08;
    pub const H3_DATAGRAM: u64 = 0x33;
    /// draft-ietf-webtrans-http3-02; Chromium still looks for it.
    pub const ENABLE_WEBTRANSPORT_DRAFT02: u64 = 0x2b60_3742;
    /// draft-07 to draft-12.
    pub const WT_MAX_SESSIONS_DRAFT07: u64 = 0xc671_706a;
    /// draft-13 and draft-14.
    pub const WT_MAX_SESSIONS_DRAFT13: u64 = 0x14e9_cd29;
    /// draft-15.
    pub const WT_ENABLED: u64 = 0x2c7c_f000;

    /// HTTP/2 settings that must not appear in HTTP/3 SETTINGS
    /// (RFC 9114 section 7.2.4.1).
    pub fn is_reserved_http2(id: u64) -> bool {
        matches!(id, 0x00 | 0x02 | 0x03 | 0x04 | 0x05)
    }
}

/// Capsule types carried on a WebTransport CONNECT stream.
pub mod capsule {
    pub const CLOSE_WEBTRANSPORT_SESSION: u64 = 0x2843;
    pub const DRAIN_WEBTRANSPORT_SESSION: u64 = 0x78ae;
}
