//! Validation of a decoded request field section (RFC 9114 sections 4.2,
//! 4.3.1 and 4.4; RFC 9220 for extended CONNECT). A request that breaks
//! these rules is malformed and answered with a stream error of type
//! H3_MESSAGE_ERROR (section 4.1.2).

use super::codes::H3_MESSAGE_ERROR;
use super::error::{H3Error, H3Result};
use super::field_lines::FieldLines;

/// A request's header section, validated. The decoded field lines are kept
/// as the QPACK decoder wrote them (one buffer, field_lines.rs) and the
/// pseudo-headers are found by position, so a request costs no copy of its
/// names and values here.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// The section as decoded: pseudo-header lines first (RFC 9114 section
    /// 4.3 requires it), then the regular field lines in the order received.
    lines: FieldLines,
    /// Where the regular field lines start.
    first_field: usize,
    method: usize,
    scheme: Option<usize>,
    authority: Option<usize>,
    path: Option<usize>,
    /// `:protocol`, present only on an extended CONNECT.
    protocol: Option<usize>,
    pub content_length: Option<u64>,
}

impl RequestHead {
    fn line(&self, i: usize) -> &[u8] {
        // Only the empty default head has no line to point at.
        self.lines.get(i).map_or(&[], |(_, v)| v)
    }

    pub fn method(&self) -> &[u8] {
        self.line(self.method)
    }

    pub fn scheme(&self) -> Option<&[u8]> {
        self.scheme.map(|i| self.line(i))
    }

    pub fn authority(&self) -> Option<&[u8]> {
        self.authority.map(|i| self.line(i))
    }

    pub fn path(&self) -> Option<&[u8]> {
        self.path.map(|i| self.line(i))
    }

    pub fn protocol(&self) -> Option<&[u8]> {
        self.protocol.map(|i| self.line(i))
    }

    /// Regular field lines as (name, value), in the order received (cookie lines included).
    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        self.lines.iter_from(self.first_field)
    }

    /// The first regular field line named `name` (lowercase), if any.
    pub fn field(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    pub fn is_extended_connect(&self) -> bool {
        self.protocol.is_some()
    }

    pub fn is_plain_connect(&self) -> bool {
        self.method() == b"CONNECT" && self.protocol.is_none()
    }
}

const fn malformed(reason: &'static str) -> H3Error {
    H3Error::stream(H3_MESSAGE_ERROR, reason)
}

/// Characters allowed in a field name: RFC 9110 `tchar` without upper case.
fn is_name_char(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*'
        | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// RFC 9114 section 10.3: CR, LF and NUL make a message malformed. Leading
/// or trailing whitespace is passed on untrimmed, so handlers compare what
/// the client actually sent (an `authorization` value with a trailing space
/// is simply not the token).
fn valid_value(v: &[u8]) -> bool {
    !v.iter().any(|b| matches!(b, 0 | b'\r' | b'\n'))
}

fn is_connection_specific(name: &[u8]) -> bool {
    matches!(name, b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade")
}

fn set_once(slot: &mut Option<usize>, line: usize) -> H3Result<()> {
    if slot.is_some() {
        return Err(malformed("duplicate pseudo-header"));
    }
    *slot = Some(line);
    Ok(())
}

pub fn validate_request(lines: FieldLines) -> H3Result<RequestHead> {
    let mut method = None;
    let mut head = RequestHead::default();
    let mut first_field = None;

    for (i, (name, value)) in lines.iter().enumerate() {
        if !valid_value(value) {
            return Err(malformed("invalid characters in field value"));
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if first_field.is_some() {
                return Err(malformed("pseudo-header after a regular field"));
            }
            let slot = match pseudo {
                b"method" => &mut method,
                b"scheme" => &mut head.scheme,
                b"authority" => &mut head.authority,
                b"path" => &mut head.path,
                b"protocol" => &mut head.protocol,
                _ => return Err(malformed("unknown or response pseudo-header")),
            };
            set_once(slot, i)?;
            continue;
        }
        first_field.get_or_insert(i);
        if name.is_empty() || !name.iter().all(|b| is_name_char(*b)) {
            return Err(malformed("field name is not a lowercase token"));
        }
        if is_connection_specific(name) {
            return Err(malformed("connection-specific field"));
        }
        if name == b"te" && value != b"trailers" {
            return Err(malformed("te other than trailers"));
        }
        if name == b"content-length" {
            let n = parse_content_length(value)?;
            if head.content_length.is_some_and(|prev| prev != n) {
                return Err(malformed("conflicting content-length"));
            }
            head.content_length = Some(n);
        }
    }
    head.method = method.ok_or(malformed("missing :method"))?;
    head.first_field = first_field.unwrap_or(lines.len());
    head.lines = lines;

    let method = head.method();
    if method.is_empty() || !method.iter().all(|b| b.is_ascii_graphic()) {
        return Err(malformed("invalid :method"));
    }
    let is_connect = method == b"CONNECT";
    if head.protocol.is_some() && !is_connect {
        return Err(malformed(":protocol on a method other than CONNECT"));
    }
    if is_connect && head.protocol.is_none() {
        // RFC 9114 section 4.4: a plain CONNECT names only an authority.
        if head.scheme.is_some() || head.path.is_some() || head.authority.is_none() {
            return Err(malformed("CONNECT must carry :authority and no :scheme or :path"));
        }
        return Ok(head);
    }
    let path = head.path().ok_or(malformed("missing :path"))?;
    if path.is_empty() {
        return Err(malformed("empty :path"));
    }
    let scheme = head.scheme().ok_or(malformed("missing :scheme"))?;
    if matches!(scheme, b"https" | b"http") && head.authority.is_none() && head.field(b"host").is_none() {
        return Err(malformed("missing :authority and host"));
    }
    if head.protocol.is_some() && head.authority.is_none() {
        return Err(malformed("extended CONNECT without :authority"));
    }
    Ok(head)
}

fn parse_content_length(v: &[u8]) -> H3Result<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(malformed("invalid content-length"));
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// Validates trailers: no pseudo-headers, same name rules as the header section.
pub fn validate_trailers(lines: &FieldLines) -> H3Result<()> {
    for (name, value) in lines.iter() {
        if name.first() == Some(&b':') {
            return Err(malformed("pseudo-header in trailers"));
        }
        if name.is_empty() || !name.iter().all(|b| is_name_char(*b)) || is_connection_specific(name) {
            return Err(malformed("invalid trailer field name"));
        }
        if !valid_value(value) {
            return Err(malformed("invalid characters in trailer value"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(lines: &[(&str, &str)]) -> FieldLines {
        lines.iter().copied().collect()
    }

    const GOOD: &[(&str, &str)] = &[(":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", "/a")];

    #[test]
    fn accepts_a_plain_get_with_split_cookies() {
        let mut lines = GOOD.to_vec();
        lines.push(("cookie", "a=1"));
        lines.push(("cookie", "b=2"));
        let head = validate_request(h(&lines)).unwrap();
        assert_eq!(head.method(), b"GET");
        assert_eq!(head.fields().len(), 2);
        assert_eq!(head.field(b"cookie"), Some(&b"a=1"[..]));
    }

    #[test]
    fn rejects_malformed_sections() {
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![(":scheme", "https"), (":authority", "x"), (":path", "/")],
            vec![(":method", "GET"), (":scheme", "https"), (":authority", "x")],
            vec![(":method", "GET"), ("a", "b"), (":scheme", "https"), (":authority", "x"), (":path", "/")],
            [GOOD, &[("X-Upper", "1")]].concat(),
            [GOOD, &[("connection", "close")]].concat(),
            [GOOD, &[("transfer-encoding", "chunked")]].concat(),
            [GOOD, &[("content-length", "1"), ("content-length", "2")]].concat(),
            [GOOD, &[(":method", "GET")]].concat(),
            vec![(":method", "CONNECT"), (":scheme", "https"), (":authority", "x"), (":path", "/")],
            vec![(":method", "GET"), (":protocol", "webtransport"), (":scheme", "https"), (":authority", "x"), (":path", "/")],
        ];
        for (i, lines) in cases.into_iter().enumerate() {
            let err = validate_request(h(&lines)).unwrap_err();
            assert_eq!(err.code, H3_MESSAGE_ERROR, "case {i}");
            assert!(!err.connection);
        }
    }

    #[test]
    fn accepts_extended_connect() {
        let head = validate_request(h(&[
            (":method", "CONNECT"),
            (":protocol", "webtransport"),
            (":scheme", "https"),
            (":authority", "x"),
            (":path", "/wt"),
        ]))
        .unwrap();
        assert!(head.is_extended_connect());
    }
}
