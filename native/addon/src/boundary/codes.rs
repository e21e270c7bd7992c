//! Every code of the boundary protocol, in one place: event and command
//! kinds, REQUEST flags, abort reasons, close kinds, log levels and
//! WebTransport stream changes. `src/native/protocol.ts` is the TypeScript
//! side; docs/design.md describes the layout.

/// Event kinds (native to JavaScript), the first byte of each event.
pub mod event_kind {
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

/// Command kinds (JavaScript to native), the first byte of each command.
pub mod command_kind {
    pub const RESPOND: u8 = 1;
}
