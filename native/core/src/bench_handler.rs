//! BENCHMARK-ONLY native handlers: Profile A's routes and Profile C's byte
//! count answered inside the I/O thread, without crossing into JavaScript.
//! They exist to measure the ceiling of the Rust/TypeScript boundary's cost
//! (issue 5, workload W6) and are switched on only by the environment
//! variable `H3_BENCH_NATIVE_HANDLER=a|c` (see bench/README.md). They are not
//! an API: the real profiles live in src/profiles/, and these must answer the
//! same bytes so that the comparison is fair.

use crate::h3::connection::BodyMode;
use crate::h3::request::RequestHead;

/// Profile C's application body cap (src/profiles/profile-c.ts, BODY_CAP).
const BODY_CAP: usize = 4096;
const BEARER: &[u8] = b"Bearer h3-demo-token-2f9c";
const SESSION_COOKIE: &[u8] = b"session=h3-demo-7b41e0";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeHandler {
    ProfileA,
    ProfileC,
}

impl NativeHandler {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "a" => Some(Self::ProfileA),
            "c" => Some(Self::ProfileC),
            _ => None,
        }
    }

    /// Profile C counts the body while it is buffered; the core's own
    /// window overflow answers 413 exactly where Profile C's cap would.
    pub fn body_mode(self, default: BodyMode) -> BodyMode {
        match self {
            Self::ProfileA => default,
            Self::ProfileC => BodyMode::Buffered { window: BODY_CAP },
        }
    }
}

/// A response with static fields and an owned body.
pub struct Answer {
    pub status: u16,
    pub fields: &'static [(&'static [u8], &'static [u8])],
    pub body: Vec<u8>,
}

const TEXT: (&[u8], &[u8]) = (b"content-type", b"text/plain");

fn text(status: u16, body: &[u8]) -> Answer {
    Answer { status, fields: &[TEXT], body: body.to_vec() }
}

fn field<'a>(head: &'a RequestHead, name: &[u8]) -> Option<&'a [u8]> {
    head.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())
}

/// Answers one complete request (`body_len` bytes of body received).
pub fn answer(handler: NativeHandler, head: &RequestHead, body_len: usize) -> Answer {
    match handler {
        NativeHandler::ProfileC => text(200, format!("{body_len}\n").as_bytes()),
        NativeHandler::ProfileA => {
            let path = head.path.as_deref().unwrap_or(b"");
            let path = path.split(|b| *b == b'?').next().unwrap_or(b"");
            match path {
                b"/redirect" => Answer { status: 302, fields: &[(b"location", b"/target")], body: Vec::new() },
                b"/login" => Answer {
                    status: 200,
                    fields: &[TEXT, (b"set-cookie", SESSION_COOKIE)],
                    body: b"login succeeded\n".to_vec(),
                },
                b"/secret" => {
                    let authorized = field(head, b"authorization") == Some(BEARER) || field(head, b"cookie") == Some(SESSION_COOKIE);
                    if authorized {
                        text(200, b"secret: the owl flies at midnight\n")
                    } else {
                        text(401, b"unauthorized\n")
                    }
                }
                _ => text(404, b"not found\n"),
            }
        }
    }
}
