//! Decoding a field section (RFC 9204 section 4.5) with quiche's QPACK
//! decoder, plus the one check quiche leaves out because it has no dynamic
//! table: the Required Insert Count.

use quiche::h3::qpack;
use quiche::h3::Header;

#[derive(Debug, PartialEq, Eq)]
pub enum FieldSectionError {
    /// Larger than the advertised SETTINGS_MAX_FIELD_SECTION_SIZE once decoded.
    TooLarge,
    /// Anything else: QPACK_DECOMPRESSION_FAILED (RFC 9204 section 2.2.3).
    Invalid,
}

/// Decodes `block` (a HEADERS frame payload). This server advertises a
/// dynamic table capacity of 0, so MaxEntries is 0 and the only Required
/// Insert Count an encoder can produce is 0, encoded as a single zero byte
/// (section 4.5.1.1); any other value is an error even when the lines that
/// follow reference only the static table, which quiche's decoder accepts.
pub fn decode(decoder: &mut qpack::Decoder, block: &[u8], max_size: u64) -> Result<Vec<Header>, FieldSectionError> {
    if block.first() != Some(&0) {
        return Err(FieldSectionError::Invalid);
    }
    match decoder.decode(block, max_size) {
        Ok(lines) => Ok(lines),
        Err(qpack::Error::HeaderListTooLarge) => Err(FieldSectionError::TooLarge),
        Err(_) => Err(FieldSectionError::Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(block: &[u8], max: u64) -> Result<usize, FieldSectionError> {
        decode(&mut qpack::Decoder::new(), block, max).map(|l| l.len())
    }

    #[test]
    fn static_references_with_required_insert_count_zero_decode() {
        // :method GET, :scheme https, :path /
        assert_eq!(run(&[0x00, 0x00, 0xd1, 0xd7, 0xc1], 1000), Ok(3));
    }

    #[test]
    fn nonzero_required_insert_count_is_invalid_even_with_static_lines() {
        assert_eq!(run(&[0x01, 0x00, 0xd1, 0xd7, 0xc1], 1000), Err(FieldSectionError::Invalid));
        assert_eq!(run(&[0x02, 0x00, 0xd1], 1000), Err(FieldSectionError::Invalid));
    }

    #[test]
    fn dynamic_reference_bad_static_index_and_truncation_are_invalid() {
        assert_eq!(run(&[0x00, 0x00, 0x80], 1000), Err(FieldSectionError::Invalid));
        assert_eq!(run(&[0x00, 0x00, 0xff, 0x7f], 1000), Err(FieldSectionError::Invalid));
        assert_eq!(run(&[0x00, 0x00, 0x27, 0x0a, b'a', b'b'], 1000), Err(FieldSectionError::Invalid));
        assert_eq!(run(&[], 1000), Err(FieldSectionError::Invalid));
    }

    #[test]
    fn too_large_is_told_apart() {
        // :method GET is 7 + 3 + 32 = 42 bytes.
        assert_eq!(run(&[0x00, 0x00, 0xd1], 42), Ok(1));
        assert_eq!(run(&[0x00, 0x00, 0xd1], 41), Err(FieldSectionError::TooLarge));
    }
}
