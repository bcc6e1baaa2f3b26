//! MIME multipart framing (RFC 2046 §5.1) as the Table clients write it: the boundary of a
//! `multipart/mixed` media type, and a body split into parts, each with its header block.
//!
//! Tolerant where the clients differ, strict where it matters:
//!
//! * a delimiter is a line (at the start of the body or after a line break) that is exactly
//!   `--boundary` or, for the last one, `--boundary--`, optionally followed by spaces or
//!   tabs (RFC 2046 "transport padding");
//! * line breaks are CRLF or a bare LF; the line break before a delimiter belongs to the
//!   delimiter (so a part's content never ends with it);
//! * text before the first delimiter (the preamble — the JS SDK leaves an empty line there)
//!   and after the closing one (the epilogue) is ignored;
//! * header names are case-insensitive (they become [`HeaderMap`] keys); a part's header
//!   block ends at its first empty line and is parsed by `httparse`, which accepts CRLF and
//!   LF alike;
//! * a body with no delimiter, or without the closing delimiter, is an error — a truncated
//!   body must not pass as a shorter one — except that a last `--boundary` line (not
//!   `--boundary--`) followed by nothing but white space closes the body: the legacy Rust
//!   SDK (`azure_data_tables` 0.21) ends its batches so, and Azurite accepts them.
//!
//! ```text
//! --batch_1                                         ← delimiter
//! Content-Type: multipart/mixed; boundary=cs_1      ← part headers
//!                                                   ← empty line
//! --cs_1 …                                          ← part content (a nested multipart)
//! --batch_1--                                       ← close delimiter
//! ```

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use memchr::memmem;

/// The most header lines one part (or one embedded request) may carry.
pub(crate) const MAX_HEADERS: usize = 64;

/// Why a multipart body could not be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FramingError {
    /// The media type is not `multipart/mixed` with a usable boundary.
    #[error("{0}")]
    MediaType(String),
    /// No delimiter line `--<boundary>` in the body.
    #[error("no line `--{0}` (the boundary of the Content-Type) in the body")]
    NoDelimiter(String),
    /// The body ends before the close delimiter `--<boundary>--`.
    #[error("the body ends without the closing line `--{0}--` (truncated?)")]
    Unterminated(String),
    /// A part's header block is malformed.
    #[error("part {part}: its headers are malformed ({detail})")]
    Headers {
        /// The part's 0-based index.
        part: usize,
        /// What is wrong.
        detail: String,
    },
}

/// The `boundary` parameter of a `multipart/mixed` media type.
pub(crate) fn boundary(content_type: &str) -> Result<String, FramingError> {
    let media: mime::Mime = content_type.parse().map_err(|e| {
        FramingError::MediaType(format!(
            "the Content-Type `{content_type}` is not a media type ({e})"
        ))
    })?;
    if media.type_() != mime::MULTIPART || media.subtype() != "mixed" {
        return Err(FramingError::MediaType(format!(
            "the Content-Type is `{}`; a $batch body is multipart/mixed; boundary=batch_<id>",
            media.essence_str()
        )));
    }
    let boundary = media
        .get_param(mime::BOUNDARY)
        .map(|b| b.as_str().to_owned())
        .unwrap_or_default();
    // RFC 2046: 1 to 70 characters, none of them a line break.
    if boundary.is_empty() || boundary.len() > 70 || boundary.contains(['\r', '\n']) {
        return Err(FramingError::MediaType(format!(
            "the Content-Type `{content_type}` has no usable boundary parameter (1 to 70 \
             characters)"
        )));
    }
    Ok(boundary)
}

/// One part of a multipart body: its headers and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part<'a> {
    /// The part's headers.
    pub headers: HeaderMap,
    /// Everything after the header block's empty line.
    pub content: &'a [u8],
}

impl Part<'_> {
    /// A header as text (`None` when absent or not visible ASCII).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Splits `body` into its parts (see the module docs).
pub(crate) fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, FramingError> {
    let dash = format!("--{boundary}");
    // (line start, line end after the line break, closing?) of every delimiter line.
    let mut delimiters: Vec<(usize, usize, bool)> = Vec::new();
    for at in memmem::find_iter(body, dash.as_bytes()) {
        if at != 0 && body[at - 1] != b'\n' {
            continue;
        }
        let after = &body[at + dash.len()..];
        let line_len = after
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(after.len());
        let rest = trim_end_whitespace(&after[..line_len]);
        let closing = match rest {
            b"" => false,
            b"--" => true,
            _ => continue, // a longer boundary that starts with this one
        };
        let end = (at + dash.len() + line_len + 1).min(body.len());
        delimiters.push((at, end, closing));
        if closing {
            break;
        }
    }
    match delimiters.last() {
        None => return Err(FramingError::NoDelimiter(boundary.to_owned())),
        // A last `--boundary` line with nothing but white space after it closes the body
        // (the legacy Rust SDK ends its batches so); anything after it is a truncated part.
        Some(&(_, end, false)) if !body[end..].trim_ascii().is_empty() => {
            return Err(FramingError::Unterminated(boundary.to_owned()));
        }
        Some(_) => {}
    }
    delimiters
        .windows(2)
        .enumerate()
        .map(|(index, pair)| {
            let (_, start, _) = pair[0];
            let (next, _, _) = pair[1];
            part(index, strip_line_break(&body[start..next]))
        })
        .collect()
}

/// Parses one part: its header block, then the content.
fn part(index: usize, raw: &[u8]) -> Result<Part<'_>, FramingError> {
    let (headers, used) = header_block(raw).map_err(|detail| FramingError::Headers {
        part: index,
        detail,
    })?;
    Ok(Part {
        headers,
        content: &raw[used..],
    })
}

/// Parses a header block that ends with an empty line (or the end of the input) into a
/// [`HeaderMap`]; returns it and the number of bytes it took, the empty line included.
pub(crate) fn header_block(raw: &[u8]) -> Result<(HeaderMap, usize), String> {
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    // `httparse` wants the terminating empty line; a part may have no content at all.
    let (used, parsed) = match httparse::parse_headers(raw, &mut storage) {
        Ok(httparse::Status::Complete((used, parsed))) => (used, parsed),
        Ok(httparse::Status::Partial) => {
            let mut owned = raw.to_vec();
            owned.extend_from_slice(b"\r\n\r\n");
            let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
            return match httparse::parse_headers(&owned, &mut storage) {
                Ok(httparse::Status::Complete((_, parsed))) => {
                    Ok((to_header_map(parsed)?, raw.len()))
                }
                Ok(httparse::Status::Partial) => Err("the header block does not end".into()),
                Err(e) => Err(e.to_string()),
            };
        }
        Err(e) => return Err(e.to_string()),
    };
    Ok((to_header_map(parsed)?, used))
}

/// `httparse` headers as a [`HeaderMap`] (names lowercased; repeated names kept).
pub(crate) fn to_header_map(parsed: &[httparse::Header<'_>]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::with_capacity(parsed.len());
    for h in parsed {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| format!("`{}` is not a header name", h.name))?;
        let value = HeaderValue::from_bytes(h.value)
            .map_err(|_| format!("the value of `{}` is not a header value", h.name))?;
        map.append(name, value);
    }
    Ok(map)
}

fn trim_end_whitespace(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

/// Drops the line break that precedes the next delimiter (it belongs to the delimiter).
fn strip_line_break(s: &[u8]) -> &[u8] {
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    s.strip_suffix(b"\r").unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries() {
        assert_eq!(
            boundary("multipart/mixed; boundary=batch_1").unwrap(),
            "batch_1"
        );
        assert_eq!(boundary("Multipart/Mixed;Boundary=\"b c\"").unwrap(), "b c");
        for bad in [
            "application/json",
            "multipart/mixed",
            "multipart/form-data; boundary=x",
            "multipart/mixed; boundary=\"\"",
            "",
        ] {
            assert!(boundary(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn crlf_and_lf_framing() {
        for eol in ["\r\n", "\n"] {
            let body = format!(
                "preamble{eol}--b{eol}Content-Type: a{eol}{eol}one{eol}--b  {eol}content-type: B{eol}X-Y: 1{eol}{eol}{eol}two{eol}{eol}--b--{eol}epilogue"
            );
            let parts = parts(body.as_bytes(), "b").unwrap();
            assert_eq!(parts.len(), 2, "{eol:?}");
            assert_eq!(parts[0].header("content-type"), Some("a"));
            assert_eq!(parts[0].content, b"one");
            assert_eq!(parts[1].header("Content-Type"), Some("B"));
            assert_eq!(parts[1].header("x-y"), Some("1"));
            assert_eq!(parts[1].content, format!("{eol}two{eol}").as_bytes());
        }
    }

    #[test]
    fn delimiters_must_be_whole_lines() {
        // `--b` inside a line, and a longer boundary, are content.
        let body = b"--b\r\n\r\nx --b y\r\n--bb\r\n--b--";
        let parts = parts(body, "b").unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].content, b"x --b y\r\n--bb");
    }

    #[test]
    fn truncated_and_missing() {
        assert_eq!(
            parts(b"--b\r\n\r\nx\r\n", "b").unwrap_err(),
            FramingError::Unterminated("b".into())
        );
        assert_eq!(
            parts(b"--b\r\n\r\nx\r\n--b\r\n\r\ny", "b").unwrap_err(),
            FramingError::Unterminated("b".into())
        );
        // A last plain delimiter with only white space after it closes the body.
        for end in ["--b\r\n", "--b\n", "--b", "--b\r\n\r\n"] {
            let body = format!("--b\r\n\r\nx\r\n{end}");
            let p = parts(body.as_bytes(), "b").unwrap();
            assert_eq!((p.len(), p[0].content), (1, &b"x"[..]), "{end:?}");
        }
        assert_eq!(
            parts(b"nothing here", "b").unwrap_err(),
            FramingError::NoDelimiter("b".into())
        );
        assert!(matches!(
            parts(b"--b\r\nbad header line\r\n\r\n--b--", "b").unwrap_err(),
            FramingError::Headers { part: 0, .. }
        ));
        // A part without an empty line after its headers is all headers.
        let p = parts(b"--b\r\nA: 1\r\n--b--", "b").unwrap();
        assert_eq!((p[0].header("a"), p[0].content), (Some("1"), &b""[..]));
        // No parts at all.
        assert!(parts(b"--b--", "b").unwrap().is_empty());
    }
}
