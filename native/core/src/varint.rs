//! QUIC variable-length integers (RFC 9000 section 16), used by every HTTP/3
//! frame and stream header.

pub const MAX: u64 = (1 << 62) - 1;

/// Length in bytes of the varint whose first byte is `first`.
pub fn len_from_first_byte(first: u8) -> usize {
    1 << (first >> 6)
}

pub fn encoded_len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16383 => 2,
        16384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Decodes a varint at the start of `buf`; `None` when `buf` is too short.
pub fn decode(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = len_from_first_byte(first);
    if buf.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for b in &buf[1..len] {
        v = (v << 8) | u64::from(*b);
    }
    Some((v, len))
}

pub fn encode(v: u64, out: &mut Vec<u8>) {
    debug_assert!(v <= MAX);
    match encoded_len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Accumulates one varint that may arrive split across stream reads.
#[derive(Default, Debug)]
pub struct Partial {
    buf: [u8; 8],
    have: usize,
}

impl Partial {
    /// Consumes bytes from `input`; returns the value once complete and how
    /// many bytes of `input` were used.
    pub fn feed(&mut self, input: &[u8]) -> (Option<u64>, usize) {
        let mut used = 0;
        while used < input.len() {
            self.buf[self.have] = input[used];
            self.have += 1;
            used += 1;
            if self.have == len_from_first_byte(self.buf[0]) {
                let v = decode(&self.buf[..self.have]).map(|(v, _)| v);
                self.have = 0;
                return (v, used);
            }
        }
        (None, used)
    }

    pub fn is_empty(&self) -> bool {
        self.have == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_rfc9000_examples() {
        for (v, bytes) in [
            (151_288_809_941_952_652u64, &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..]),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d][..]),
            (15_293, &[0x7b, 0xbd][..]),
            (37, &[0x25][..]),
        ] {
            assert_eq!(decode(bytes), Some((v, bytes.len())));
            let mut out = Vec::new();
            encode(v, &mut out);
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn partial_accepts_byte_at_a_time() {
        let mut p = Partial::default();
        let bytes = [0x9d, 0x7f, 0x3e, 0x7d, 0xff];
        for (i, b) in bytes[..3].iter().enumerate() {
            assert_eq!(p.feed(&[*b]), (None, 1), "byte {i}");
        }
        assert_eq!(p.feed(&bytes[3..]), (Some(494_878_333), 1));
    }
}
