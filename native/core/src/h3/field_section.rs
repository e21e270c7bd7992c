//! Decoding a field section (RFC 9204 section 4.5) with quiche's QPACK
//! decoder, plus the one check quiche leaves out because it has no dynamic
//! table: the Required Insert Count.

use quiche::h3::qpack;

use super::field_lines::FieldLines;

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
pub fn decode(decoder: &mut qpack::Decoder, block: &[u8], max_size: u64) -> Result<FieldLines, FieldSectionError> {
    if block.first() != Some(&0) {
        return Err(FieldSectionError::Invalid);
    }
    let mut lines = FieldLines::for_block(block.len());
    // FieldLines counts in u32: no limit lets a section decode past it.
    let max_size = max_size.min(u64::from(u32::MAX));
    match lines.decode(decoder, block, max_size) {
        Ok(()) => Ok(lines),
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

    fn encoded(lines: &[(&[u8], &[u8])]) -> Vec<u8> {
        use quiche::h3::Header;
        let headers: Vec<Header> = lines.iter().map(|(n, v)| Header::new(n, v)).collect();
        let mut out = vec![0; 8192];
        let n = qpack::Encoder::new().encode(&headers, &mut out).unwrap();
        out.truncate(n);
        out
    }

    // quiche's decoder writes lines into FieldLines and hands it each
    // Huffman string (patch 08, native/patches), which FieldLines keeps per
    // thread: the same block decodes to the same lines each time, past the
    // memo's bound (600 values, 256 entries) and its string length (the
    // cookie) too, and the size limit holds on every decode.
    #[test]
    fn repeated_huffman_strings_decode_the_same_every_time() {
        let values: Vec<String> = (0..600).map(|i| format!("Mozilla/5.0 (X11; Linux x86_64) build {i}")).collect();
        let cookie = "session=".to_string() + &"0123456789abcdef".repeat(16);
        let decodes = crate::h3::field_lines::huffman_decodes();
        for _ in 0..3 {
            for v in &values {
                let lines: [(&[u8], &[u8]); 4] = [
                    (b":method", b"GET"),
                    (b"user-agent", v.as_bytes()),
                    (b"x-Custom-Name", b"some value"),
                    (b"cookie", cookie.as_bytes()),
                ];
                let block = encoded(&lines);
                let need: u64 = lines.iter().map(|(n, v)| (n.len() + v.len() + 32) as u64).sum();
                let got = decode(&mut qpack::Decoder::new(), &block, need).unwrap();
                let got: Vec<(Vec<u8>, Vec<u8>)> = got.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
                assert_eq!(got[1], (b"user-agent".to_vec(), v.as_bytes().to_vec()));
                assert_eq!(got[2], (b"x-custom-name".to_vec(), b"some value".to_vec()));
                assert_eq!(got[3], (b"cookie".to_vec(), cookie.as_bytes().to_vec()));
                assert_eq!(run(&block, need - 1), Err(FieldSectionError::TooLarge));
            }
        }
        // 3 x 600 sections of 4 Huffman strings (the name x-custom-name and
        // the values but GET): decoded each time, that would be 7,200.
        let decoded = crate::h3::field_lines::huffman_decodes() - decodes;
        assert!(decoded < 3 * 600 * 4 - 600, "the memo was used: {decoded} decodes");
    }

    #[test]
    fn a_huffman_string_decoded_before_comes_from_the_memo() {
        use crate::h3::field_lines::huffman_decodes;
        // Strings no other test sends: this thread's memo has not seen them.
        let lines: [(&[u8], &[u8]); 2] = [(b":method", b"GET"), (b"x-memo-probe", b"a value only this test sends")];
        let block = encoded(&lines);
        let need: u64 = lines.iter().map(|(n, v)| (n.len() + v.len() + 32) as u64).sum();
        let before = huffman_decodes();
        let first = decode(&mut qpack::Decoder::new(), &block, need).unwrap();
        assert_eq!(huffman_decodes(), before + 2, "the first time the name and the value are decoded");
        let second = decode(&mut qpack::Decoder::new(), &block, need).unwrap();
        assert_eq!(huffman_decodes(), before + 2, "the second time both are found");
        assert_eq!(first, second);
        assert_eq!(second.get(1), Some((&b"x-memo-probe"[..], &b"a value only this test sends"[..])));
        // A string found still counts against the limit.
        assert_eq!(run(&block, need - 1), Err(FieldSectionError::TooLarge));
        assert_eq!(huffman_decodes(), before + 2);
    }

    #[test]
    fn a_bad_huffman_string_fails_every_time() {
        // user-agent (static 95) with a Huffman value of 32 one bits: it
        // holds EOS, an error (RFC 7541 section 5.2). quiche reports it as too large.
        let block = [0x00, 0x00, 0x5f, 0x50, 0x84, 0xff, 0xff, 0xff, 0xff];
        let first = run(&block, 10_000);
        assert!(first.is_err());
        let decodes = crate::h3::field_lines::huffman_decodes();
        assert_eq!(run(&block, 10_000), first);
        assert_eq!(crate::h3::field_lines::huffman_decodes(), decodes + 1, "a string that did not decode was not kept");
    }

    /// What one request header section costs to decode, memo warm: a
    /// Chromium-like GET (its lines, order and letter case), encoded as
    /// quiche's encoder does (Huffman where shorter), decoded 100,000 times.
    ///   cargo test -p h3core --release --lib chromium_like_section_decode_cost -- --ignored --nocapture
    #[test]
    #[ignore]
    fn chromium_like_section_decode_cost() {
        let lines: [(&[u8], &[u8]); 15] = [
            (b":method", b"GET"),
            (b":authority", b"example.test:4433"),
            (b":scheme", b"https"),
            (b":path", b"/static/app.js?v=3f2c1a"),
            (b"sec-ch-ua", b"\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\""),
            (b"sec-ch-ua-mobile", b"?0"),
            (b"sec-ch-ua-platform", b"\"Linux\""),
            (
                b"user-agent",
                b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            ),
            (b"accept", b"*/*"),
            (b"sec-fetch-site", b"same-origin"),
            (b"sec-fetch-mode", b"no-cors"),
            (b"sec-fetch-dest", b"script"),
            (b"referer", b"https://example.test:4433/"),
            (b"accept-encoding", b"gzip, deflate, br, zstd"),
            (b"accept-language", b"en-US,en;q=0.9"),
        ];
        let block = encoded(&lines);
        let mut decoder = qpack::Decoder::new();
        let rounds = 100_000;
        let start = std::time::Instant::now();
        let mut total = 0;
        for _ in 0..rounds {
            total += std::hint::black_box(decode(&mut decoder, std::hint::black_box(&block), 16 * 1024).unwrap()).len();
        }
        let took = start.elapsed();
        assert_eq!(total, rounds * lines.len());
        println!(
            "{rounds} decodes of a {}-byte section of {} lines: {:?}, {:.0} ns each",
            block.len(),
            lines.len(),
            took,
            took.as_nanos() as f64 / rounds as f64
        );
    }
}
