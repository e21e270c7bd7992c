/// An HTTP/3 protocol error, with the scope RFC 9114 gives it: a connection
/// error closes the whole QUIC connection, a stream error resets one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3Error {
    pub code: u64,
    pub connection: bool,
    pub reason: &'static str,
}

impl H3Error {
    pub const fn connection(code: u64, reason: &'static str) -> Self {
        H3Error { code, connection: true, reason }
    }

    pub const fn stream(code: u64, reason: &'static str) -> Self {
        H3Error { code, connection: false, reason }
    }
}

pub type H3Result<T> = Result<T, H3Error>;
