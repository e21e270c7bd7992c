//! HTTP/3 (RFC 9114) on quiche's QUIC transport: stream classification,
//! frames, SETTINGS, request validation and the per-connection state.

pub mod codes;
pub mod connection;
pub mod decoder_stream;
pub mod encoded_lines;
pub mod error;
pub mod field_lines;
pub mod field_section;
pub mod frame;
pub mod request;
pub mod settings;
pub mod webtransport;
