//! Every number the boundary protocol gives a meaning to — event kinds,
//! command kinds, flags, reasons, levels — defined once, here. The Rust
//! encoder and decoder use these modules; TypeScript gets the same values
//! from `src/native/boundary.generated.ts`, which `typescript()` writes (the
//! test below fails while the committed file differs from it; run
//! `UPDATE_GENERATED=1 cargo test -p h3-node-addon boundary` to rewrite it).

/// Declares one group of codes: a Rust module of constants, and the group's
/// entry in `GROUPS` for the TypeScript generator. The TypeScript member
/// names are the Rust names in PascalCase (`WT_SESSION_OPEN` ->
/// `WtSessionOpen`).
macro_rules! code_group {
    ($(#[$doc:meta])* $module:ident: $ty:ty => $ts_name:literal { $($(#[$item_doc:meta])* $name:ident = $value:expr,)* }) => {
        $(#[$doc])*
        pub mod $module {
            $($(#[$item_doc])* pub const $name: $ty = $value;)*
            /// (Rust name, value), in declaration order.
            pub const ALL: &[(&str, u64)] = &[$((stringify!($name), $value as u64)),*];
        }
    };
}

code_group! {
    /// Native -> JavaScript: the first byte of every event.
    event_kind: u8 => "EventKind" {
        REQUEST = 1,
        BODY = 2,
        STREAM_ABORTED = 3,
        CONN_OPEN = 4,
        CONN_CLOSED = 5,
        LOG = 6,
        SERVER_CLOSED = 7,
        WT_SESSION_OPEN = 8,
        WT_SESSION_CLOSED = 9,
        WT_STREAM = 10,
        WT_DATAGRAMS = 11,
        /// The request's trailer section (streamed bodies).
        TRAILERS = 12,
        /// QUIC has taken a streamed response's body up to a total.
        SENT = 13,
        /// The client's SETTINGS_MAX_FIELD_SECTION_SIZE (once, if it set one).
        PEER_FIELD_LIMIT = 14,
        /// One HTTP datagram of an application session.
        WT_DATAGRAM = 15,
        /// The client moved (a validated new path): its address now.
        PEER_MOVED = 16,
        /// A handshake waits for the application to choose its identity
        /// for a server name (SNICallback): a request number and the name.
        IDENTITY_WANTED = 17,
        /// A handshake that asked for a client certificate completed: the
        /// verification error (0: verified) and the client's chain, DER.
        CLIENT_CERTIFICATE = 18,
    }
}

code_group! {
    /// JavaScript -> native: the first byte of every command.
    command_kind: u8 => "CommandKind" {
        /// Status, fields, whole body, end of stream.
        RESPOND = 1,
        /// A header section: 1xx, the final head (optionally ending the
        /// stream), or with status 0 the trailers (ending it).
        HEADERS = 2,
        /// Body bytes of a started response.
        DATA = 3,
        /// Request body bytes the application consumed (credit returns).
        CONSUMED = 4,
        /// Reset both directions of a request stream with an HTTP/3 error
        /// code; on a WebTransport stream, RESET_STREAM (the sending side).
        RESET = 5,
        /// WebTransport stream: STOP_SENDING with an HTTP/3 error code.
        STOP_SENDING = 6,
        /// Open a server-initiated WebTransport stream for a session.
        OPEN_STREAM = 7,
        /// Send an HTTP datagram on a session.
        DATAGRAM = 8,
        /// Close a session with a code and reason.
        CLOSE_SESSION = 9,
    }
}

code_group! {
    /// WT_STREAM `what`.
    wt_stream: u8 => "WtStreamEvent" {
        /// A client stream joined its session (counts as open).
        OPENED = 1,
        /// A client stream was offered but refused over the cap (never open).
        REJECTED = 2,
        CLOSED = 3,
    }
}

code_group! {
    /// REQUEST flags.
    request_flag: u8 => "RequestFlag" {
        /// The request stream ended with the header section (or, in buffered
        /// mode, the whole body is in this event): no BODY events follow.
        COMPLETE = 1,
        /// Body bytes follow the field lines in this event (buffered mode).
        HAS_BODY = 2,
        /// The header section arrived as TLS early data (0-RTT).
        EARLY_DATA = 4,
        /// An extended CONNECT opening a WebTransport session: a 2xx head
        /// without FIN accepts it.
        WT_SESSION = 8,
    }
}

code_group! {
    /// Why a request stream ended without a normal finish (STREAM_ABORTED).
    abort_reason: u8 => "AbortReason" {
        PEER_RESET = 1,
        PEER_STOP_SENDING = 2,
        PROTOCOL_ERROR = 3,
        /// A section the application gave exceeds the client's
        /// SETTINGS_MAX_FIELD_SECTION_SIZE; the core reset the stream.
        FIELD_SECTION_TOO_LARGE = 4,
    }
}

code_group! {
    /// How a connection ended (CONN_CLOSED `how`).
    close_how: u8 => "CloseHow" {
        /// The peer sent CONNECTION_CLOSE.
        PEER = 1,
        /// This server closed it (protocol error, shutdown, panic).
        LOCAL = 2,
        IDLE_TIMEOUT = 3,
        /// The handshake never completed or the connection vanished otherwise.
        OTHER = 4,
    }
}

code_group! {
    /// LOG `level`.
    log_level: u8 => "LogLevel" {
        ERROR = 1,
        WARN = 2,
        INFO = 3,
        DEBUG = 4,
    }
}

/// Every group: (TypeScript enum name, its codes).
pub const GROUPS: &[(&str, &[(&str, u64)])] = &[
    ("EventKind", event_kind::ALL),
    ("CommandKind", command_kind::ALL),
    ("WtStreamEvent", wt_stream::ALL),
    ("RequestFlag", request_flag::ALL),
    ("AbortReason", abort_reason::ALL),
    ("CloseHow", close_how::ALL),
    ("LogLevel", log_level::ALL),
];

/// `WT_SESSION_OPEN` -> `WtSessionOpen`.
fn pascal_case(upper_snake: &str) -> String {
    upper_snake
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| first.to_string() + &chars.as_str().to_ascii_lowercase())
        })
        .collect()
}

/// The TypeScript module with every group as a `const enum`: `tsc` inlines
/// the values, so decoding a batch reads literals, as before.
pub fn typescript() -> String {
    let mut out = String::from(
        "// Generated from native/addon/src/boundary/codes.rs: do not edit. The Rust\n\
         // test `boundary::codes::tests::typescript_is_current` fails while this file\n\
         // differs from what it generates; UPDATE_GENERATED=1 makes it rewrite it.\n",
    );
    for (name, codes) in GROUPS {
        out.push_str(&format!("\nexport const enum {name} {{\n"));
        for (rust_name, value) in *codes {
            out.push_str(&format!("  {} = {value},\n", pascal_case(rust_name)));
        }
        out.push_str("}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GENERATED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/native/boundary.generated.ts");

    #[test]
    fn typescript_is_current() {
        let want = typescript();
        if std::env::var_os("UPDATE_GENERATED").is_some() {
            std::fs::write(GENERATED, &want).unwrap();
        }
        let have = std::fs::read_to_string(GENERATED).unwrap_or_default();
        assert!(have == want, "{GENERATED} is stale: run UPDATE_GENERATED=1 cargo test typescript_is_current");
    }

    #[test]
    fn codes_are_unique_within_each_group() {
        for (name, codes) in GROUPS {
            let mut values: Vec<u64> = codes.iter().map(|(_, v)| *v).collect();
            values.sort_unstable();
            values.dedup();
            assert_eq!(values.len(), codes.len(), "{name} repeats a value");
        }
    }

    #[test]
    fn pascal_case_names() {
        assert_eq!(pascal_case("WT_SESSION_OPEN"), "WtSessionOpen");
        assert_eq!(pascal_case("REQUEST"), "Request");
    }
}
