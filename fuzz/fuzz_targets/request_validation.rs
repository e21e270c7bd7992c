//! Request validation (native/src/h3/request.rs) behind quiche's QPACK
//! decoder, as the server runs it: the input is a HEADERS payload decoded
//! with the server's field-section limit (through the core's memo of
//! Huffman strings, FieldLines::decode), then checked as a request and as
//! trailers. Whatever is accepted must satisfy RFC 9114 section 4.3.1 and
//! 4.2: a method, lowercase valid names, no CR/LF/NUL in values, no
//! connection-specific fields, and a path unless it is a plain CONNECT.
#![no_main]

use h3core::h3::field_lines::FieldLines;
use h3core::h3::request::{validate_request, validate_trailers};
use libfuzzer_sys::fuzz_target;

fn check_name(name: &[u8]) {
    assert!(!name.is_empty());
    assert!(name.iter().all(|b| !b.is_ascii_uppercase() && *b > b' ' && *b < 0x7f && *b != b':'));
    assert!(!matches!(name, b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"));
}

fn check_value(v: &[u8]) {
    assert!(!v.iter().any(|b| matches!(b, 0 | b'\r' | b'\n')));
}

fuzz_target!(|input: &[u8]| {
    let mut decoder = quiche::h3::qpack::Decoder::new();
    let mut lines = FieldLines::for_block(input.len());
    if lines.decode(&mut decoder, input, 16 * 1024).is_err() {
        return;
    }
    if validate_trailers(&lines).is_ok() {
        for (n, v) in lines.iter() {
            check_name(n);
            check_value(v);
        }
    }
    if let Ok(head) = validate_request(lines) {
        assert!(!head.method().is_empty());
        check_value(head.method());
        for (n, v) in head.fields() {
            check_name(n);
            check_value(v);
        }
        if head.is_plain_connect() {
            assert!(head.authority().is_some());
        } else {
            assert!(head.path().is_some_and(|p| !p.is_empty()));
        }
        if let Some(cl) = head.content_length {
            let value = head.field(b"content-length").expect("content-length field kept");
            assert_eq!(std::str::from_utf8(value).ok().and_then(|s| s.parse::<u64>().ok()), Some(cl));
        }
    }
});
