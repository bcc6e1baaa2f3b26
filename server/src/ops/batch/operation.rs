//! One operation of a batch: an `application/http` part holding a whole HTTP request —
//! request line, headers, empty line, body.
//!
//! * The request line's target is an absolute URL (`POST http://127.0.0.1:10002/acct/t
//!   HTTP/1.1`, what the SDKs send) or a path (`POST /acct/t HTTP/1.1`); only its path and
//!   query are used (the host is the outer request's).
//! * Header names in any case; CRLF or bare LF line breaks; empty lines before the request
//!   line are skipped (`httparse` reads the request head).
//! * The body is everything after the empty line, without the blank lines and spaces
//!   around it (the JS SDK puts an extra CRLF before it; bodies are JSON, for which the
//!   whitespace means nothing). `Content-Length`, when given, is not needed and not used.
//! * `Content-ID` is optional; it is read from the part's MIME headers (Python) or else the
//!   embedded request's headers, and echoed in the operation's response.
//!
//! ```text
//! Content-Type: application/http             ← MIME part headers (Part)
//! Content-Transfer-Encoding: binary
//! Content-ID: 0
//!
//! PUT http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p',RowKey='r') HTTP/1.1
//! If-Match: *                                ← the operation's own headers
//!
//! {"N":1}                                    ← its body
//! ```

use axum::http::{HeaderMap, Method, Uri};

use super::multipart::{MAX_HEADERS, Part, to_header_map};

/// One HTTP request carried by a batch part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Operation {
    /// `Content-ID`, if the part has one.
    pub content_id: Option<String>,
    /// The request method.
    pub method: Method,
    /// The request target's path (still percent-encoded).
    pub path: String,
    /// The request target's query (without `?`).
    pub query: Option<String>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The body (trimmed; empty when there is none).
    pub body: Vec<u8>,
}

/// Parses the `application/http` part `part`; the error is a sentence about what is wrong.
pub(crate) fn parse(part: &Part<'_>) -> Result<Operation, String> {
    let transfer = part.header("content-transfer-encoding");
    if let Some(t) = transfer
        && !t.trim().eq_ignore_ascii_case("binary")
    {
        return Err(format!(
            "its Content-Transfer-Encoding is `{t}`; batch operations are `binary`"
        ));
    }
    let raw = skip_blank_lines(part.content);
    if raw.is_empty() {
        return Err("it holds no HTTP request".into());
    }
    let (method, target, headers, head) = match request_head(raw)? {
        Some(parsed) => parsed,
        // The head runs to the end of the part (a body-less request whose empty line was
        // taken as the delimiter's line break): complete it.
        None => {
            let mut owned = raw.to_vec();
            owned.extend_from_slice(b"\r\n\r\n");
            let (method, target, headers, _) = request_head(&owned)?
                .ok_or("its HTTP request head has no empty line after the headers")?;
            (method, target, headers, raw.len())
        }
    };
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|_| format!("`{method}` is not an HTTP method"))?;
    let uri: Uri = target
        .parse()
        .map_err(|e| format!("its request URL `{target}` is not a URL ({e})"))?;
    if !uri.path().starts_with('/') {
        return Err(format!(
            "its request URL `{target}` has no path: use http://host/{{account}}/{{table}}… or \
             /{{account}}/{{table}}…"
        ));
    }
    let content_id = part
        .header("content-id")
        .or_else(|| headers.get("content-id").and_then(|v| v.to_str().ok()))
        .map(|s| s.trim().to_owned());
    Ok(Operation {
        content_id,
        method,
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers,
        body: raw[head.min(raw.len())..].trim_ascii().to_vec(),
    })
}

/// The request line and headers: (method, target, headers, bytes used), `None` when the
/// head does not end.
type Head = (String, String, HeaderMap, usize);

fn request_head(raw: &[u8]) -> Result<Option<Head>, String> {
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut storage);
    let used = match request.parse(raw) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(format!(
                "its HTTP request head is malformed ({e}): expected `METHOD URL HTTP/1.1`, \
                 header lines, an empty line and the body"
            ));
        }
    };
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return Err("its HTTP request line is incomplete".into());
    };
    let headers = to_header_map(request.headers)?;
    Ok(Some((method.to_owned(), target.to_owned(), headers, used)))
}

fn skip_blank_lines(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n' | b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::batch::multipart::parts;

    fn one(body: &str) -> Result<Operation, String> {
        let parts = parts(body.as_bytes(), "c").map_err(|e| e.to_string())?;
        parse(&parts[0])
    }

    #[test]
    fn python_style() {
        let op = one(
            "--c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\
             Content-ID: 3\r\n\r\nPUT http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p',RowKey='r')?x=1 HTTP/1.1\r\n\
             Content-Type: application/json\r\nContent-Length: 7\r\nIf-Match: *\r\n\r\n{\"A\":1}\r\n--c--\r\n",
        )
        .unwrap();
        assert_eq!(op.content_id.as_deref(), Some("3"));
        assert_eq!(op.method, Method::PUT);
        assert_eq!(op.path, "/devstoreaccount1/t(PartitionKey='p',RowKey='r')");
        assert_eq!(op.query.as_deref(), Some("x=1"));
        assert_eq!(op.headers.get("if-match").unwrap(), "*");
        assert_eq!(op.body, b"{\"A\":1}");
    }

    #[test]
    fn js_style_lf_and_path_only() {
        // Lower-case part headers, no Content-ID, an extra line break before the body.
        let op = one(
            "--c\r\ncontent-type: application/http\r\ncontent-transfer-encoding: binary\r\n\r\n\
             POST http://127.0.0.1:10002/devstoreaccount1/t HTTP/1.1\r\nPrefer: return-no-content\r\n\r\n\r\n{\"A\":1}\r\n--c--",
        )
        .unwrap();
        assert_eq!(op.content_id, None);
        assert_eq!(op.body, b"{\"A\":1}");
        let op = one(
            "--c\n\nMERGE /a/t(PartitionKey='p',RowKey='r') HTTP/1.1\ncontent-id: 7\n\n{}\n--c--\n",
        )
        .unwrap();
        assert_eq!(
            (op.method.as_str(), op.path.as_str()),
            ("MERGE", "/a/t(PartitionKey='p',RowKey='r')")
        );
        assert_eq!(op.content_id.as_deref(), Some("7"));
        assert_eq!(op.body, b"{}");
        let op =
            one("--c\n\nDELETE /a/t(PartitionKey='p',RowKey='r') HTTP/1.1\nIf-Match: *\n\n--c--")
                .unwrap();
        assert!(op.body.is_empty());
        // A head that runs to the end of the part (its empty line taken as the delimiter's
        // line break) is a request without a body.
        let op = one(
            "--c\r\n\r\nDELETE /a/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\nIf-Match: *\r\n--c--",
        )
        .unwrap();
        assert_eq!((op.method, op.body.len()), (Method::DELETE, 0));
        assert_eq!(op.headers.get("if-match").unwrap(), "*");
    }

    #[test]
    fn malformed() {
        for body in [
            "--c\r\n\r\n--c--",
            "--c\r\n\r\nnot a request\r\n\r\n--c--",
            "--c\r\n\r\nPOST /a/t HTTP/1.1\r\nBroken header\r\n\r\n--c--",
            "--c\r\n\r\nPOST * HTTP/1.1\r\n\r\n--c--",
            "--c\r\nContent-Transfer-Encoding: base64\r\n\r\nPOST /a/t HTTP/1.1\r\n\r\n--c--",
        ] {
            assert!(one(body).is_err(), "{body:?}");
        }
    }
}
