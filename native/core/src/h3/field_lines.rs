//! A decoded field section kept in one buffer: every name and value one
//! after another, and where each line ends. quiche's `Vec<Header>` made a
//! `Vec` per name and per value, and the Huffman memo a copy of each kept
//! string: 16 of the 26 allocations of a W1 request (callgrind callers of
//! `mi_malloc`); this makes two per section whatever its length.
//!
//! Decoding into it also keeps Huffman-decoded strings. A client sends the
//! same literals with every request (user-agent, accept, its cookie, the
//! authority), Huffman-coded each time since this server offers no dynamic
//! table; decoding them bit by bit was 5.5 % of the instructions per W1
//! request of the native handler (callgrind). A string's decoded bytes
//! depend on its encoded bytes alone, so quiche's decoder (patch 08) hands
//! each Huffman string to the sink (`FieldSink::huffman`), and one decoded
//! before on this thread is copied from a bounded memo (native/set-memo: 64
//! sets of 4 strings of at most 128 encoded bytes, the one used longest ago
//! makes room, sets picked by a hash seeded at random per thread). Only
//! strings that decoded are kept; the size limit is checked on every use.

use std::cell::RefCell;

use quiche::h3::qpack::{self, FieldPart, FieldSink};
use set_memo::SetMemo;

/// Encoded bytes -> what they decode to.
type HuffmanMemo = SetMemo<Box<[u8]>, 64, 4>;

/// Longer Huffman strings are decoded each time (a long cookie or path):
/// the memo then holds at most 64 x 4 strings of 128 encoded bytes and the
/// 204 at most that they decode to (the shortest code is 5 bits), whatever
/// a client sends.
const MEMO_ENCODED_MAX: usize = 128;

thread_local! {
    static HUFFMAN_MEMO: RefCell<HuffmanMemo> = const { RefCell::new(SetMemo::new()) };
}

#[cfg(test)]
thread_local! {
    static DECODES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Huffman strings this thread has decoded rather than found in the memo
/// (tests: counted off the path a string found takes, so that a test's
/// timing of that path is the shipped one).
#[cfg(test)]
pub(crate) fn huffman_decodes() -> u64 {
    DECODES.get()
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FieldLines {
    bytes: Vec<u8>,
    /// Per line: where its name ends and where its value ends in `bytes`
    /// (the line starts where the one before it ends).
    ends: Vec<(u32, u32)>,
}

impl FieldLines {
    /// Room for a section QPACK-encoded in `encoded_len` bytes: static
    /// table entries and Huffman codes decode to more than they take.
    pub fn for_block(encoded_len: usize) -> Self {
        FieldLines { bytes: Vec::with_capacity(64 + 2 * encoded_len), ends: Vec::with_capacity(8) }
    }

    /// Appends the lines of `block` (a field section) as quiche's decoder
    /// decodes them, with at most `max_size` bytes by its count, taking
    /// Huffman strings decoded before on this thread from the memo. On an
    /// error the lines are incomplete: discard them. The memo is borrowed
    /// once per section, not once per string.
    pub fn decode(&mut self, decoder: &mut qpack::Decoder, block: &[u8], max_size: u64) -> qpack::Result<()> {
        HUFFMAN_MEMO.with_borrow_mut(|memo| decoder.decode_to(block, max_size, &mut Filling { lines: self, memo }))
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Line `i` as (name, value).
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(name_end, value_end) = self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        Some((&self.bytes[start as usize..name_end as usize], &self.bytes[name_end as usize..value_end as usize]))
    }

    /// Lines `from..` as (name, value), in order.
    pub fn iter_from(&self, from: usize) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        (from.min(self.len())..self.len()).map(move |i| self.get(i).expect("in range"))
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        self.iter_from(0)
    }

    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        self.push_name(name);
        self.push_value(value);
    }

    /// Starts a line.
    #[inline(always)]
    fn push_name(&mut self, name: &[u8]) {
        self.bytes.extend_from_slice(name);
        let end = self.end();
        self.ends.push((end, end));
    }

    /// Ends the line `push_name` started.
    #[inline(always)]
    fn push_value(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
        let end = self.end();
        if let Some(line) = self.ends.last_mut() {
            line.1 = end;
        }
    }

    #[inline(always)]
    fn push_part(&mut self, part: FieldPart, bytes: &[u8]) {
        match part {
            FieldPart::Name => self.push_name(bytes),
            FieldPart::Value => self.push_value(bytes),
        }
    }

    fn end(&self) -> u32 {
        // field_section::decode caps a section's decoded size below u32::MAX.
        u32::try_from(self.bytes.len()).unwrap_or(u32::MAX)
    }
}

/// What quiche's decoder writes into: the lines, and this thread's memo.
struct Filling<'a> {
    lines: &'a mut FieldLines,
    memo: &'a mut HuffmanMemo,
}

impl Filling<'_> {
    /// quiche's decode (`qpack::huffman_decode`), kept in the memo if short
    /// enough; a string that does not decode, or decodes to more than
    /// `max_len` bytes, is not kept. Cold and out of line, so that the path
    /// of a string the memo holds is inlined whole into the decoder (without
    /// `cold` LLVM called out of it, 10 to 15 % more instructions per section).
    #[cold]
    #[inline(never)]
    fn decode_and_keep(&mut self, part: FieldPart, encoded: &[u8], max_len: usize) -> qpack::Result<usize> {
        #[cfg(test)]
        DECODES.set(DECODES.get() + 1);
        let decoded = qpack::huffman_decode(encoded, max_len)?;
        self.lines.push_part(part, &decoded);
        let len = decoded.len();
        if encoded.len() <= MEMO_ENCODED_MAX {
            self.memo.insert(encoded, &[], decoded.into_boxed_slice());
        }
        Ok(len)
    }
}

impl FieldSink for Filling<'_> {
    #[inline(always)]
    fn name(&mut self, name: &[u8]) {
        self.lines.push_name(name);
    }

    #[inline(always)]
    fn value(&mut self, value: &[u8]) {
        self.lines.push_value(value);
    }

    /// From the memo when it holds the string, else `decode_and_keep`.
    /// Inlined into the decoder: it runs for most strings of every request.
    #[inline(always)]
    fn huffman(&mut self, part: FieldPart, encoded: &[u8], max_len: usize) -> qpack::Result<usize> {
        if encoded.len() <= MEMO_ENCODED_MAX {
            if let Some(decoded) = self.memo.get(encoded, &[]) {
                if decoded.len() > max_len {
                    return Err(qpack::Error::HeaderListTooLarge);
                }
                self.lines.push_part(part, decoded);
                return Ok(decoded.len());
            }
        }
        self.decode_and_keep(part, encoded, max_len)
    }
}

impl<N: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(N, V)> for FieldLines {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(lines: I) -> Self {
        let mut out = FieldLines::default();
        for (n, v) in lines {
            out.push(n.as_ref(), v.as_ref());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_as_pushed() {
        let lines: FieldLines = [("a", "1"), ("", ""), ("name", ""), ("", "value"), ("cookie", "x=y")].into_iter().collect();
        let back: Vec<(&[u8], &[u8])> = lines.iter().collect();
        assert_eq!(back, [(&b"a"[..], &b"1"[..]), (b"", b""), (b"name", b""), (b"", b"value"), (b"cookie", b"x=y")]);
        assert_eq!(lines.iter_from(3).len(), 2);
        assert_eq!(lines.iter_from(9).len(), 0);
        assert_eq!(lines.get(5), None);
    }
}
