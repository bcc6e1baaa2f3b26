//! The `$batch` reply: `202 Accepted`, `multipart/mixed; boundary=batchresponse_<uuid>`,
//! holding either a `changesetresponse_<uuid>` multipart (a changeset: one part per
//! operation, or the single failure part) or one `application/http` part (a query).
//!
//! Each operation's answer is the very [`Response`] its handler built (status, headers,
//! body), written as an HTTP/1.1 response inside an `application/http` part, with
//! `Content-ID` echoed. Header names are written in the service's case (`ETag`,
//! `Content-Type`, `DataServiceId`, …): the JS SDK matches `ETag: ` case-sensitively. Line
//! breaks are CRLF; JSON bodies are one line (the JS SDK finds them with a one-line regex).
//!
//! ```text
//! --batchresponse_…
//! Content-Type: multipart/mixed; boundary=changesetresponse_…
//!
//! --changesetresponse_…
//! Content-Type: application/http
//! Content-Transfer-Encoding: binary
//!
//! HTTP/1.1 204 No Content
//! Content-ID: 1
//! DataServiceVersion: 3.0;
//! ETag: W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"
//!
//!
//! --changesetresponse_…--
//! --batchresponse_…--
//! ```

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;
use std::borrow::Cow;
use std::io::Write;

use crate::protocol::error::ApiError;

const CRLF: &str = "\r\n";

/// One operation's answer, ready to be written into the reply.
pub(crate) struct Answer {
    /// The operation's `Content-ID`, echoed.
    pub content_id: Option<String>,
    /// Its status.
    pub status: StatusCode,
    /// Its headers, in the order to write them (names as written).
    pub headers: Vec<(Cow<'static, str>, HeaderValue)>,
    /// Its body.
    pub body: Vec<u8>,
}

impl Answer {
    /// Takes a handler's response apart (its body is in memory: the handlers build their
    /// bodies before they answer).
    pub(crate) async fn of(response: Response, content_id: Option<String>) -> Answer {
        let (parts, body) = response.into_parts();
        let mut headers: Vec<(Cow<'static, str>, HeaderValue)> = parts
            .headers
            .iter()
            .filter(|(name, value)| **name != header::CONTENT_LENGTH && value.to_str().is_ok())
            .map(|(name, value)| (service_case(name), value.clone()))
            .collect();
        headers.push((
            Cow::Borrowed("DataServiceVersion"),
            HeaderValue::from_static("3.0;"),
        ));
        headers.sort_by(|a, b| a.0.cmp(&b.0));
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes().to_vec(),
            // In-memory bodies do not fail; if one did, the reply says so.
            Err(e) => format!("(the response body could not be read: {e})").into_bytes(),
        };
        Answer {
            content_id,
            status: parts.status,
            headers,
            body,
        }
    }
}

/// A header name in the service's case: known names as the service writes them, others
/// with each dash-separated word capitalised (`x-ms-error-code` stays lower-case, as the
/// service sends it).
fn service_case(name: &HeaderName) -> Cow<'static, str> {
    Cow::Borrowed(match name.as_str() {
        "etag" => "ETag",
        "content-type" => "Content-Type",
        "content-id" => "Content-ID",
        "location" => "Location",
        "dataserviceid" => "DataServiceId",
        "dataserviceversion" => "DataServiceVersion",
        "preference-applied" => "Preference-Applied",
        "cache-control" => "Cache-Control",
        other if other.starts_with("x-ms-") => return Cow::Owned(other.to_owned()),
        other => {
            return Cow::Owned(
                other
                    .split('-')
                    .map(|word| {
                        let mut chars = word.chars();
                        match chars.next() {
                            Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                            None => String::new(),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("-"),
            );
        }
    })
}

/// What the batch answers.
pub(crate) enum Reply {
    /// A changeset: one answer per operation, or the single answer of the failing one.
    Changeset(Vec<Answer>),
    /// A query operation outside a changeset.
    Query(Answer),
}

impl Reply {
    /// The `202 Accepted` multipart response.
    pub(crate) fn into_response(self) -> Result<Response, ApiError> {
        let batch = format!("batchresponse_{}", uuid::Uuid::new_v4());
        let mut bytes: Vec<u8> = Vec::with_capacity(match &self {
            Reply::Changeset(answers) => 256 + answers.len() * 512,
            Reply::Query(answer) => 512 + answer.body.len(),
        });
        // Writes into a `Vec` do not fail.
        let _ = write!(bytes, "--{batch}{CRLF}");
        match self {
            Reply::Changeset(answers) => {
                let changeset = format!("changesetresponse_{}", uuid::Uuid::new_v4());
                let _ = write!(
                    bytes,
                    "Content-Type: multipart/mixed; boundary={changeset}{CRLF}{CRLF}"
                );
                for answer in &answers {
                    let _ = write!(bytes, "--{changeset}{CRLF}");
                    write_answer(&mut bytes, answer);
                    bytes.extend_from_slice(CRLF.as_bytes());
                }
                let _ = write!(bytes, "--{changeset}--{CRLF}");
            }
            Reply::Query(answer) => {
                write_answer(&mut bytes, &answer);
                bytes.extend_from_slice(CRLF.as_bytes());
            }
        }
        let _ = write!(bytes, "--{batch}--{CRLF}");
        let mut response = Response::new(Body::from(bytes));
        *response.status_mut() = StatusCode::ACCEPTED;
        let content_type = HeaderValue::from_str(&format!("multipart/mixed; boundary={batch}"))
            .map_err(|_| ApiError::internal("the batch boundary is not a header value"))?;
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
        Ok(response)
    }
}

/// Writes one `application/http` part (its MIME headers, the HTTP response), without the
/// line break that precedes the next delimiter.
fn write_answer(out: &mut Vec<u8>, answer: &Answer) {
    out.extend_from_slice(
        b"Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n",
    );
    // Writes into a `Vec` do not fail.
    let _ = write!(
        out,
        "HTTP/1.1 {} {}{CRLF}",
        answer.status.as_u16(),
        answer.status.canonical_reason().unwrap_or("")
    );
    if let Some(id) = &answer.content_id {
        let _ = write!(out, "Content-ID: {id}{CRLF}");
    }
    for (name, value) in &answer.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(CRLF.as_bytes());
    }
    out.extend_from_slice(CRLF.as_bytes());
    out.extend_from_slice(&answer.body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_in_the_services_case() {
        let case = |n: &'static str| service_case(&HeaderName::from_static(n));
        assert_eq!(case("etag"), "ETag");
        assert_eq!(case("dataserviceid"), "DataServiceId");
        assert_eq!(case("x-ms-error-code"), "x-ms-error-code");
        assert_eq!(case("x-content-type-options"), "X-Content-Type-Options");
    }
}
