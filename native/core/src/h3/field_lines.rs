//! A decoded field section kept in one buffer: every name and value one
//! after another, and where each line ends. quiche's `Vec<Header>` made a
//! `Vec` per name and per value, and the Huffman memo a copy of each kept
//! string: 16 of the 26 allocations of a W1 request (callgrind callers of
//! `mi_malloc`); this makes two per section whatever its length.

use quiche::h3::qpack::FieldSink;

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
        self.name(name);
        self.value(value);
    }

    fn end(&self) -> u32 {
        // field_section::decode caps a section's decoded size below u32::MAX.
        u32::try_from(self.bytes.len()).unwrap_or(u32::MAX)
    }
}

impl FieldSink for FieldLines {
    fn name(&mut self, name: &[u8]) {
        self.bytes.extend_from_slice(name);
        let end = self.end();
        self.ends.push((end, end));
    }

    fn value(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
        let end = self.end();
        if let Some(line) = self.ends.last_mut() {
            line.1 = end;
        }
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
