//! Incremental HTTP/3 frame reader (RFC 9114 section 7). Bytes arrive in
//! whatever pieces QUIC hands over; the reader never needs more than one
//! frame header of look-ahead, streams DATA payloads through without
//! buffering them, and skips unknown and GREASE frame types as section 9
//! requires.

use super::codes::{frame_type, H3_EXCESSIVE_LOAD, H3_FRAME_UNEXPECTED};
use super::error::{H3Error, H3Result};
use crate::varint::Partial;

/// Which stream the frames are read from decides which types are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Request,
    Control,
}

#[derive(Debug, PartialEq, Eq)]
pub enum FrameEvent<'a> {
    /// A frame that is only useful whole (HEADERS, SETTINGS, GOAWAY, ...).
    Whole {
        ty: u64,
        payload: Vec<u8>,
    },
    /// A DATA frame has begun; its payload follows as `Data` events.
    DataStart {
        len: u64,
    },
    Data(&'a [u8]),
    /// A frame that must be buffered is larger than this reader allows. Its
    /// payload is discarded; the caller decides what the peer deserves.
    Oversized {
        ty: u64,
        len: u64,
    },
}

#[derive(Debug)]
enum State {
    Type(Partial),
    Length { ty: u64, len: Partial },
    Buffer { ty: u64, need: usize, buf: Vec<u8> },
    Data { remaining: u64 },
    Skip { remaining: u64 },
}

#[derive(Debug)]
pub struct FrameReader {
    state: State,
    context: Context,
    max_buffered: usize,
    /// Type of the first frame on the stream, known or not: the control
    /// stream must open with SETTINGS whatever follows (RFC 9114 section 6.2.1).
    first_type: Option<u64>,
}

enum Handling {
    Buffer,
    Stream,
    Skip,
}

impl FrameReader {
    /// `max_buffered` caps the payload of any frame that is read whole.
    pub fn new(context: Context, max_buffered: usize) -> Self {
        FrameReader { state: State::Type(Partial::default()), context, max_buffered, first_type: None }
    }

    pub fn first_type(&self) -> Option<u64> {
        self.first_type
    }

    /// For a request stream whose first varint (the first frame's type) was
    /// already read while checking for a WebTransport signal.
    pub fn with_type(context: Context, max_buffered: usize, ty: u64) -> H3Result<Self> {
        let mut reader = Self::new(context, max_buffered);
        reader.handling(ty)?;
        reader.first_type = Some(ty);
        reader.state = State::Length { ty, len: Partial::default() };
        Ok(reader)
    }

    /// True between frames: a stream may only end here (RFC 9114 section 7.1).
    pub fn at_boundary(&self) -> bool {
        matches!(&self.state, State::Type(p) if p.is_empty())
    }

    fn handling(&self, ty: u64) -> H3Result<Handling> {
        use frame_type::*;
        let unexpected = Err(H3Error::connection(H3_FRAME_UNEXPECTED, "frame not allowed on this stream"));
        if is_reserved_http2(ty) || ty == PUSH_PROMISE {
            return unexpected;
        }
        match (self.context, ty) {
            (Context::Request, DATA) => Ok(Handling::Stream),
            (Context::Request, HEADERS) => Ok(Handling::Buffer),
            (Context::Request, CANCEL_PUSH | SETTINGS | GOAWAY | MAX_PUSH_ID) => unexpected,
            (Context::Control, CANCEL_PUSH | SETTINGS | GOAWAY | MAX_PUSH_ID) => Ok(Handling::Buffer),
            (Context::Control, DATA | HEADERS) => unexpected,
            _ => Ok(Handling::Skip),
        }
    }

    pub fn feed(&mut self, mut input: &[u8], on_event: &mut dyn FnMut(FrameEvent<'_>) -> H3Result<()>) -> H3Result<()> {
        while !input.is_empty() {
            match &mut self.state {
                State::Type(p) => {
                    let (v, used) = p.feed(input);
                    input = &input[used..];
                    if let Some(ty) = v {
                        self.first_type.get_or_insert(ty);
                        self.handling(ty)?;
                        self.state = State::Length { ty, len: Partial::default() };
                    }
                }
                State::Length { ty, len } => {
                    let ty = *ty;
                    let (v, used) = len.feed(input);
                    input = &input[used..];
                    if let Some(len) = v {
                        self.start_payload(ty, len, on_event)?;
                    }
                }
                State::Buffer { ty, need, buf } => {
                    let take = (*need - buf.len()).min(input.len());
                    buf.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if buf.len() == *need {
                        let ty = *ty;
                        let payload = std::mem::take(buf);
                        self.state = State::Type(Partial::default());
                        on_event(FrameEvent::Whole { ty, payload })?;
                    }
                }
                State::Data { remaining } => {
                    let take = (*remaining).min(input.len() as u64) as usize;
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        self.state = State::Type(Partial::default());
                    }
                    on_event(FrameEvent::Data(&input[..take]))?;
                    input = &input[take..];
                }
                State::Skip { remaining } => {
                    let take = (*remaining).min(input.len() as u64) as usize;
                    *remaining -= take as u64;
                    input = &input[take..];
                    if *remaining == 0 {
                        self.state = State::Type(Partial::default());
                    }
                }
            }
        }
        Ok(())
    }

    fn start_payload(&mut self, ty: u64, len: u64, on_event: &mut dyn FnMut(FrameEvent<'_>) -> H3Result<()>) -> H3Result<()> {
        self.state = match self.handling(ty)? {
            Handling::Stream => {
                on_event(FrameEvent::DataStart { len })?;
                if len == 0 {
                    State::Type(Partial::default())
                } else {
                    State::Data { remaining: len }
                }
            }
            Handling::Buffer if len > self.max_buffered as u64 => {
                on_event(FrameEvent::Oversized { ty, len })?;
                State::Skip { remaining: len }
            }
            Handling::Buffer if len == 0 => {
                self.state = State::Type(Partial::default());
                return on_event(FrameEvent::Whole { ty, payload: Vec::new() });
            }
            Handling::Buffer => State::Buffer { ty, need: len as usize, buf: Vec::with_capacity(len as usize) },
            Handling::Skip if len == 0 => State::Type(Partial::default()),
            Handling::Skip => State::Skip { remaining: len },
        };
        Ok(())
    }
}

/// Frame header (type and length) for a frame this server writes.
pub fn write_header(ty: u64, len: usize, out: &mut Vec<u8>) {
    crate::varint::encode(ty, out);
    crate::varint::encode(len as u64, out);
}

/// The limit on a control-stream frame: SETTINGS with GREASE entries fits
/// easily; anything bigger is a peer trying to make us buffer.
pub const MAX_CONTROL_FRAME: usize = 4096;

pub fn oversized_control_frame() -> H3Error {
    H3Error::connection(H3_EXCESSIVE_LOAD, "control frame too large")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(reader: &mut FrameReader, pieces: &[&[u8]]) -> H3Result<Vec<String>> {
        let mut out = Vec::new();
        for piece in pieces {
            reader.feed(piece, &mut |ev| {
                out.push(match ev {
                    FrameEvent::Whole { ty, payload } => format!("whole {ty} {payload:?}"),
                    FrameEvent::DataStart { len } => format!("data-start {len}"),
                    FrameEvent::Data(d) => format!("data {d:?}"),
                    FrameEvent::Oversized { ty, len } => format!("oversized {ty} {len}"),
                });
                Ok(())
            })?;
        }
        Ok(out)
    }

    #[test]
    fn headers_then_data_split_byte_by_byte() {
        let bytes = [0x01, 0x02, 0xaa, 0xbb, 0x00, 0x03, 1, 2, 3];
        let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
        let mut r = FrameReader::new(Context::Request, 100);
        let out = collect(&mut r, &pieces).unwrap();
        assert_eq!(out, ["whole 1 [170, 187]", "data-start 3", "data [1]", "data [2]", "data [3]"]);
        assert!(r.at_boundary());
    }

    #[test]
    fn unknown_and_grease_frames_are_skipped() {
        // 0x21 is a GREASE type (0x1f * 0 + 0x21); 0x2f is unassigned.
        let bytes = [0x21, 0x02, 9, 9, 0x40, 0x2f, 0x00, 0x01, 0x00];
        let mut r = FrameReader::new(Context::Request, 100);
        assert_eq!(collect(&mut r, &[&bytes]).unwrap(), ["whole 1 []"]);
    }

    #[test]
    fn reserved_and_misplaced_frames_are_rejected() {
        for (ctx, bytes) in [
            (Context::Request, &[0x04, 0x00][..]),
            (Context::Request, &[0x02, 0x00][..]),
            (Context::Control, &[0x00, 0x00][..]),
            (Context::Control, &[0x05, 0x00][..]),
        ] {
            let mut r = FrameReader::new(ctx, 100);
            let err = collect(&mut r, &[bytes]).unwrap_err();
            assert_eq!(err.code, H3_FRAME_UNEXPECTED);
        }
    }

    #[test]
    fn first_frame_type_is_remembered_even_when_skipped() {
        let mut r = FrameReader::new(Context::Control, 100);
        assert_eq!(r.first_type(), None);
        assert_eq!(collect(&mut r, &[&[0x21, 0x00, 0x04, 0x00]]).unwrap(), ["whole 4 []"]);
        assert_eq!(r.first_type(), Some(0x21));
    }

    #[test]
    fn oversized_headers_are_reported_and_skipped() {
        let mut r = FrameReader::new(Context::Request, 1);
        let out = collect(&mut r, &[&[0x01, 0x02, 7, 7, 0x01, 0x00]]).unwrap();
        assert_eq!(out, ["oversized 1 2", "whole 1 []"]);
    }
}
