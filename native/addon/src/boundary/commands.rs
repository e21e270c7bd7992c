//! JavaScript-to-native command batch reader. A malformed batch is a bug in
//! our own TypeScript, so decoding stops at the first inconsistency and the
//! rest of that batch is dropped with a log line instead of panicking.

use std::fmt;

use super::codes::command_kind as kind;

/// A command batch that does not parse; the rest of that batch is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedCommand;

impl fmt::Display for MalformedCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("malformed command batch from JavaScript; rest dropped")
    }
}

pub struct Respond<'a> {
    pub conn: u32,
    pub stream: u64,
    pub status: u16,
    pub fields: Vec<(&'a [u8], &'a [u8])>,
    pub body: &'a [u8],
}

/// A command for one request stream: which stream, and what.
pub struct StreamCommand<'a> {
    pub conn: u32,
    pub stream: u64,
    pub what: What<'a>,
}

pub enum What<'a> {
    Headers {
        status: u16,
        fin: bool,
        fields: Vec<(&'a [u8], &'a [u8])>,
    },
    Data {
        fin: bool,
        data: &'a [u8],
    },
    Consumed(u64),
    Reset(u64),
    StopSending(u64),
    /// Open this server stream for the session.
    Open {
        session: u64,
    },
    Datagram(&'a [u8]),
    CloseSession {
        code: u32,
        reason: &'a [u8],
    },
}

pub enum Command<'a> {
    Respond(Respond<'a>),
    Stream(StreamCommand<'a>),
}

pub struct CommandReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> CommandReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        CommandReader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    }

    fn f64(&mut self) -> Option<u64> {
        self.take(8).map(|b| f64::from_le_bytes(b.try_into().unwrap()) as u64)
    }

    fn short_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }

    fn long_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// `n` field lines: every line's name length (u16) and value length
    /// (u32) first, then the names and values back to back in line order
    /// (the writer copies them with one call, not one per string).
    fn field_lines(&mut self, n: usize) -> Option<Vec<(&'a [u8], &'a [u8])>> {
        let lengths = self.take(n.checked_mul(6)?)?;
        let mut fields = Vec::with_capacity(n);
        for l in lengths.chunks_exact(6) {
            let name = self.take(usize::from(u16::from_le_bytes([l[0], l[1]])))?;
            let value = self.take(u32::from_le_bytes([l[2], l[3], l[4], l[5]]) as usize)?;
            fields.push((name, value));
        }
        Some(fields)
    }

    /// `None` at the end of the batch.
    pub fn next_command(&mut self) -> Option<Result<Command<'a>, MalformedCommand>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        Some(self.read_one().ok_or(MalformedCommand))
    }

    fn read_one(&mut self) -> Option<Command<'a>> {
        match self.u8()? {
            kind::RESPOND => {
                let conn = self.u32()?;
                let stream = self.f64()?;
                let status = self.u16()?;
                let n = self.u8()? as usize;
                let fields = self.field_lines(n)?;
                let body = self.long_bytes()?;
                Some(Command::Respond(Respond { conn, stream, status, fields, body }))
            }
            k @ (kind::HEADERS
            | kind::DATA
            | kind::CONSUMED
            | kind::RESET
            | kind::STOP_SENDING
            | kind::OPEN_STREAM
            | kind::DATAGRAM
            | kind::CLOSE_SESSION) => {
                let conn = self.u32()?;
                let stream = self.f64()?;
                let what = match k {
                    kind::HEADERS => {
                        let status = self.u16()?;
                        let fin = self.u8()? != 0;
                        let n = self.u16()? as usize;
                        What::Headers { status, fin, fields: self.field_lines(n)? }
                    }
                    kind::DATA => {
                        let fin = self.u8()? != 0;
                        What::Data { fin, data: self.long_bytes()? }
                    }
                    kind::CONSUMED => What::Consumed(u64::from(self.u32()?)),
                    kind::RESET => What::Reset(self.f64()?),
                    kind::STOP_SENDING => What::StopSending(self.f64()?),
                    kind::OPEN_STREAM => What::Open { session: self.f64()? },
                    kind::DATAGRAM => What::Datagram(self.short_bytes()?),
                    _ => {
                        let code = self.u32()?;
                        What::CloseSession { code, reason: self.short_bytes()? }
                    }
                };
                Some(Command::Stream(StreamCommand { conn, stream, what }))
            }
            _ => None,
        }
    }
}
