//! The peer's QPACK decoder stream (RFC 9204 section 4.4), checked against
//! what this server's encoder does: it never inserts into the dynamic table,
//! so every field section it sends has a Required Insert Count of 0.
//!
//! - Section Acknowledgment is only sent for sections with a non-zero
//!   Required Insert Count: any one acknowledges a section that never needed
//!   it, a connection error (section 4.4.1).
//! - Insert Count Increment of 0 is an error, and any larger one raises the
//!   Known Received Count beyond the 0 entries inserted (section 4.4.3).
//! - Stream Cancellation is always legal; it carries a stream ID we ignore.
//!
//! Instructions may be split across reads anywhere, so the reader keeps the
//! state of a prefixed integer still arriving (RFC 9204 section 4.1.1).

/// A prefixed integer longer than this many continuation bytes exceeds 62
/// bits, the most a stream ID can need.
const MAX_CONTINUATION: u8 = 9;

#[derive(Default)]
pub struct DecoderStreamReader {
    /// Continuation bytes of a Stream Cancellation's stream ID read so far,
    /// or None between instructions.
    continuation: Option<u8>,
}

/// Why the decoder stream is in error.
#[derive(Debug, PartialEq, Eq)]
pub enum DecoderStreamError {
    SectionAcknowledgment,
    InsertCountIncrement,
    IntegerTooLong,
}

impl DecoderStreamError {
    pub fn reason(&self) -> &'static str {
        match self {
            Self::SectionAcknowledgment => "Section Acknowledgment for a section that needed none",
            Self::InsertCountIncrement => "Insert Count Increment without dynamic table inserts",
            Self::IntegerTooLong => "decoder stream integer too long",
        }
    }
}

impl DecoderStreamReader {
    pub fn feed(&mut self, data: &[u8]) -> Result<(), DecoderStreamError> {
        for &b in data {
            match self.continuation {
                Some(n) => {
                    if n >= MAX_CONTINUATION {
                        return Err(DecoderStreamError::IntegerTooLong);
                    }
                    self.continuation = if b & 0x80 != 0 { Some(n + 1) } else { None };
                }
                None if b & 0x80 != 0 => return Err(DecoderStreamError::SectionAcknowledgment),
                None if b & 0x40 == 0 => return Err(DecoderStreamError::InsertCountIncrement),
                // Stream Cancellation: a 6-bit prefix; all ones means more bytes follow.
                None => {
                    if b & 0x3f == 0x3f {
                        self.continuation = Some(0);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_split(bytes: &[u8]) -> Result<(), DecoderStreamError> {
        // Every split point must give the same answer as one read.
        let whole = DecoderStreamReader::default().feed(bytes);
        for cut in 0..=bytes.len() {
            let mut r = DecoderStreamReader::default();
            let split = r.feed(&bytes[..cut]).and_then(|_| r.feed(&bytes[cut..]));
            assert_eq!(split, whole, "split at {cut}");
        }
        whole
    }

    #[test]
    fn stream_cancellations_are_accepted_whole_or_split() {
        assert_eq!(feed_split(&[0x44]), Ok(())); // stream 4
        assert_eq!(feed_split(&[0x7f, 0x81, 0x01, 0x40]), Ok(())); // stream 63 + 129, then stream 0
    }

    #[test]
    fn section_acknowledgment_is_refused() {
        assert_eq!(feed_split(&[0x44, 0x80]), Err(DecoderStreamError::SectionAcknowledgment));
        assert_eq!(feed_split(&[0xff, 0x01]), Err(DecoderStreamError::SectionAcknowledgment));
    }

    #[test]
    fn insert_count_increment_is_refused_even_zero() {
        assert_eq!(feed_split(&[0x00]), Err(DecoderStreamError::InsertCountIncrement));
        assert_eq!(feed_split(&[0x01]), Err(DecoderStreamError::InsertCountIncrement));
    }

    #[test]
    fn an_endless_integer_is_refused() {
        let mut bytes = vec![0x7f];
        bytes.extend([0x80; 12]);
        assert_eq!(DecoderStreamReader::default().feed(&bytes), Err(DecoderStreamError::IntegerTooLong));
    }
}
