//! A memo of QPACK-encoded field lines, so that a response line the server
//! sends again and again (its content-type, a cookie, cache-control) is
//! encoded once per I/O thread rather than once per response.
//!
//! Why it is worth it: quiche's encoder Huffman-codes every literal value
//! anew, walking the value twice bit by bit (its encoded length, then its
//! bytes); that was 5.9 % of the native handler's instructions per W1
//! request (callgrind, docs/design.md "Cost per request"). Why it is exact:
//! the encoder uses the static table and literals only (no dynamic table),
//! so a line's bytes depend on the line alone, and the bytes kept are the
//! ones quiche produced for it. What goes out on the wire does not change.
//!
//! Bounded: a set-associative memo (native/set-memo, the one the Huffman
//! memo of h3/field_lines.rs uses too) of `SETS` sets of `WAYS` lines of at
//! most `LINE_MAX` bytes each; within a set the line used longest ago makes
//! room.

use std::cell::RefCell;

use quiche::h3::qpack;
use set_memo::SetMemo;

/// Sets in the memo, and lines per set: a response's few lines then never
/// evict each other, as they did one time in eight with one line per slot.
const SETS: usize = 64;
const WAYS: usize = 4;

/// Longer lines (name and value together) are encoded each time: they are
/// rarely repeated word for word, and the memo stays under 64 x 4 x 3 x 256
/// bytes however a handler names its fields.
const LINE_MAX: usize = 256;

/// The bytes quiche's encoder puts before the first line (Required Insert
/// Count and Base, both 0: no dynamic table).
const SECTION_PREFIX: [u8; 2] = [0, 0];

#[derive(Default)]
pub struct EncodedLines {
    /// (name, value) -> the line's encoding.
    memo: SetMemo<Box<[u8]>, SETS, WAYS>,
    /// Lines answered from the memo (tests read it).
    hits: u64,
}

/// A field line borrowed from the caller, in the shape quiche's encoder takes.
struct Line<'a>(&'a [u8], &'a [u8]);

impl quiche::h3::NameValue for Line<'_> {
    fn name(&self) -> &[u8] {
        self.0
    }

    fn value(&self) -> &[u8] {
        self.1
    }
}

/// One line as quiche's encoder writes it, appended to `out`; `None` when
/// the encoder refuses it.
fn encode_one(name: &[u8], value: &[u8], out: &mut Vec<u8>) -> Option<()> {
    // Each byte of a literal takes at most one byte (quiche falls back to
    // the raw string when Huffman would be longer), plus integer prefixes.
    let bound = SECTION_PREFIX.len() + name.len() + value.len() + 16;
    let start = out.len();
    out.resize(start + bound, 0);
    let written = qpack::Encoder::new().encode(&[Line(name, value)], &mut out[start..]).ok();
    // The encoder writes the section prefix before the line: drop it.
    match written {
        Some(n) if n >= SECTION_PREFIX.len() => {
            out.copy_within(start + SECTION_PREFIX.len()..start + n, start);
            out.truncate(start + n - SECTION_PREFIX.len());
            Some(())
        }
        _ => {
            out.truncate(start);
            None
        }
    }
}

impl EncodedLines {
    /// Appends the line's encoding to `out`, from the memo when it holds
    /// the line; `None` (and `out` as it was) when the encoder refuses it.
    pub fn append(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) -> Option<()> {
        if name.len() + value.len() > LINE_MAX {
            return encode_one(name, value, out);
        }
        if let Some(encoded) = self.memo.get(name, value) {
            out.extend_from_slice(encoded);
            self.hits += 1;
            return Some(());
        }
        let start = out.len();
        encode_one(name, value, out)?;
        self.memo.insert(name, value, out[start..].into());
        Some(())
    }
}

thread_local! {
    /// One memo per I/O thread: what one connection sent, the next one
    /// sends too (W2's fresh connections each answer one request).
    static MEMO: RefCell<EncodedLines> = RefCell::new(EncodedLines::default());
}

/// A field section (the prefix, then each line) appended to `out` with this
/// thread's memo; `None` when a line cannot be encoded (`out` is then
/// partly written: the caller drops it).
pub fn encode_section<'a>(lines: impl Iterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(&SECTION_PREFIX);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        for (name, value) in lines {
            memo.append(name, value, out)?;
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiche_section(lines: &[(&[u8], &[u8])]) -> Vec<u8> {
        let fields: Vec<Line<'_>> = lines.iter().map(|(n, v)| Line(n, v)).collect();
        let mut buf = vec![0; 4096];
        let n = qpack::Encoder::new().encode(&fields, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    const LINES: &[(&[u8], &[u8])] = &[
        (b":status", b"200"),
        (b":status", b"299"),
        (b"content-type", b"text/plain"),
        (b"content-type", b"application/x-made-up"),
        (b"content-length", b"4096"),
        (b"set-cookie", b"session=Q2hhbmdlIG1lIQ==; Path=/; HttpOnly; Secure"),
        (b"x-Mixed-Case", b"Keeps Its Case"),
        (b"x-binary", b"\x01\xfe\x7f\x80"),
        (b"x-empty", b""),
    ];

    #[test]
    fn a_section_from_the_memo_is_the_bytes_quiche_writes() {
        let mut memo = EncodedLines::default();
        for round in 0..3 {
            let mut out = SECTION_PREFIX.to_vec();
            for (n, v) in LINES {
                memo.append(n, v, &mut out).unwrap();
            }
            assert_eq!(out, quiche_section(LINES), "round {round}");
        }
        // The first round encoded every line; the next two found them all.
        assert_eq!(memo.hits, 2 * LINES.len() as u64);
    }

    #[test]
    fn it_decodes_to_the_lines_given() {
        let mut out = Vec::new();
        encode_section(LINES.iter().copied(), &mut out).unwrap();
        encode_section(LINES.iter().copied(), &mut out).unwrap();
        let once = out.len() / 2;
        let decoded = qpack::Decoder::new().decode(&out[..once], u64::MAX).unwrap();
        assert_eq!(decoded.len(), LINES.len());
        for (h, (n, v)) in decoded.iter().zip(LINES) {
            use quiche::h3::NameValue;
            // QPACK literal names go lowercase (RFC 9114 section 4.2); values as given.
            assert_eq!(h.name(), n.to_ascii_lowercase().as_slice());
            assert_eq!(h.value(), *v);
        }
        assert_eq!(out[..once], out[once..]);
    }

    #[test]
    fn long_lines_and_colliding_lines_stay_exact() {
        let mut memo = EncodedLines::default();
        let long = vec![b'z'; LINE_MAX + 1];
        let values: Vec<String> = (0..2 * SETS * WAYS).map(|i| format!("value-{i}")).collect();
        for _ in 0..2 {
            for v in &values {
                let mut out = SECTION_PREFIX.to_vec();
                memo.append(b"x-n", v.as_bytes(), &mut out).unwrap();
                memo.append(b"x-long", &long, &mut out).unwrap();
                assert_eq!(out, quiche_section(&[(b"x-n", v.as_bytes()), (b"x-long", &long)]));
            }
        }
        // Twice as many lines as it holds: some were evicted, none kept past
        // the bound, and the long line never kept.
        assert!(memo.memo.len() <= SETS * WAYS);
        assert!(memo.memo.get(b"x-long", &long).is_none());
        assert!(memo.hits < 2 * values.len() as u64);
    }
}
