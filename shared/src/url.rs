//! Percent-encoding for the paths and query strings the app builds.

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_value_keeps_only_unreserved_characters() {
        assert_eq!(encode_query_value("payments-v1.2_~"), "payments-v1.2_~");
        // A slash or an ampersand would otherwise end the segment or the value; non-ASCII goes as UTF-8.
        assert_eq!(encode_query_value("a b/c&d=é"), "a%20b%2Fc%26d%3D%C3%A9");
    }
}
