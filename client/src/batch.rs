//! Entity group transactions (`POST {endpoint}/$batch`): one changeset of up to
//! [`MAX_OPERATIONS`] writes on one table and one PartitionKey, applied all or nothing.
//!
//! * [`BatchOperation`]s are framed as the SDKs frame them: a `multipart/mixed` batch
//!   holding one `multipart/mixed` changeset, each operation an `application/http` part
//!   with an absolute request line (`POST {endpoint}/t`, `PUT …/t(PartitionKey=…,RowKey=…)`,
//!   `MERGE …`, `DELETE …`), its `If-Match` and its JSON body. A body may be given as an
//!   [`Entity`] or as JSON text used as is (`tableq import` sends its input lines unchanged).
//!   The framing needs no unique boundary: a JSON body holds no line break, and a delimiter
//!   is only recognised at the start of a line.
//! * The reply ([`read_reply`]) is `202` `multipart/mixed`: every operation's status and
//!   ETag when all succeeded; otherwise a single part with the failed operation's status
//!   and an `odata.error` whose message starts with its index — returned as
//!   [`ClientError::Service`] with [`ServiceError::index`](crate::ServiceError::index) set.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tableq_client::ClientError> {
//! use tableq_client::{BatchOperation, IfMatch, TableServiceClient};
//! use tableq_model::Entity;
//! let table = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?
//!     .table("Orders");
//! let etags = table
//!     .submit_batch(&[
//!         BatchOperation::insert(&Entity::new("p", "1")),
//!         BatchOperation::delete("p", "0", IfMatch::Any),
//!     ])
//!     .await?;
//! assert_eq!(etags.len(), 2);
//! # Ok(()) }
//! ```

use crate::error::{ClientError, ServiceError, service_error};
use crate::path;
use crate::table::{IfMatch, TableClient, UpdateMode, encode};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, RequestBuilder, StatusCode};
use std::borrow::Cow;
use tableq_model::Entity;

/// The most operations in one changeset (the service's limit).
pub const MAX_OPERATIONS: usize = 100;

const BATCH_BOUNDARY: &str = "batch_tableq";
const CHANGESET_BOUNDARY: &str = "changeset_tableq";

/// What one operation of a changeset does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchKind {
    /// Insert Entity (`POST`, `Prefer: return-no-content`).
    Insert,
    /// Update Entity (`PUT` replace or `MERGE`) with `If-Match`.
    Update(UpdateMode, IfMatch),
    /// Insert Or Replace / Insert Or Merge (an update without `If-Match`).
    Upsert(UpdateMode),
    /// Delete Entity with `If-Match`.
    Delete(IfMatch),
}

/// One operation of a changeset: what it does, the entity's keys and its JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchOperation<'a> {
    /// What the operation does.
    pub kind: BatchKind,
    /// The entity's PartitionKey (every operation of a changeset has the same one).
    pub partition_key: Cow<'a, str>,
    /// The entity's RowKey.
    pub row_key: Cow<'a, str>,
    /// The entity as JSON (one line); `None` for a delete.
    pub body: Option<Cow<'a, str>>,
}

impl<'a> BatchOperation<'a> {
    /// An operation of `kind` on `entity` (its keys, its JSON).
    pub fn new(kind: BatchKind, entity: &Entity) -> BatchOperation<'a> {
        BatchOperation {
            kind,
            partition_key: Cow::Owned(entity.partition_key().to_owned()),
            row_key: Cow::Owned(entity.row_key().to_owned()),
            body: Some(Cow::Owned(encode(entity))),
        }
    }

    /// Insert `entity`.
    pub fn insert(entity: &Entity) -> BatchOperation<'a> {
        BatchOperation::new(BatchKind::Insert, entity)
    }

    /// An operation of `kind` whose body is `json` (the entity as JSON text, sent as is).
    pub fn json(
        kind: BatchKind,
        partition_key: &'a str,
        row_key: &'a str,
        json: &'a str,
    ) -> BatchOperation<'a> {
        BatchOperation {
            kind,
            partition_key: Cow::Borrowed(partition_key),
            row_key: Cow::Borrowed(row_key),
            body: Some(Cow::Borrowed(json)),
        }
    }

    /// Delete the entity with these keys.
    pub fn delete(
        partition_key: &'a str,
        row_key: &'a str,
        if_match: IfMatch,
    ) -> BatchOperation<'a> {
        BatchOperation {
            kind: BatchKind::Delete(if_match),
            partition_key: Cow::Borrowed(partition_key),
            row_key: Cow::Borrowed(row_key),
            body: None,
        }
    }
}

impl TableClient {
    /// The request of one changeset of `operations` (`POST {endpoint}/$batch`).
    pub fn batch_request(&self, operations: &[BatchOperation<'_>]) -> RequestBuilder {
        let body = changeset_body(self.service().endpoint(), self.name(), operations);
        self.service()
            .request(Method::POST, "$batch")
            .header(
                CONTENT_TYPE,
                format!("multipart/mixed; boundary={BATCH_BOUNDARY}"),
            )
            .body(body)
    }

    /// Runs one changeset atomically: every operation's ETag (`None` for a delete) in order,
    /// or the failed operation's error ([`ServiceError::index`](crate::ServiceError::index)
    /// names it) with nothing written.
    pub async fn submit_batch(
        &self,
        operations: &[BatchOperation<'_>],
    ) -> Result<Vec<Option<String>>, ClientError> {
        let service = self.service();
        let response = service.send(self.batch_request(operations)).await?;
        if response.status() != StatusCode::ACCEPTED {
            if response.status().is_success() {
                return Err(ClientError::Protocol(format!(
                    "the $batch was answered with {} instead of 202",
                    response.status()
                )));
            }
            return Err(service.refusal(response).await);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = service.body(response).await?;
        read_reply(&content_type, &body, operations.len())
    }
}

/// The `multipart/mixed` body of one changeset; `base` is the endpoint (request lines are
/// absolute URLs, as the SDKs send them).
pub fn changeset_body(base: &str, table: &str, operations: &[BatchOperation<'_>]) -> String {
    let size: usize = operations
        .iter()
        .map(|o| o.body.as_ref().map_or(0, |b| b.len()) + 300)
        .sum();
    let mut out = String::with_capacity(size + 200);
    out.push_str(&format!(
        "--{BATCH_BOUNDARY}\r\nContent-Type: multipart/mixed; boundary={CHANGESET_BOUNDARY}\r\n\r\n"
    ));
    for (i, op) in operations.iter().enumerate() {
        out.push_str(&format!(
            "--{CHANGESET_BOUNDARY}\r\nContent-Type: application/http\r\n\
             Content-Transfer-Encoding: binary\r\nContent-ID: {i}\r\n\r\n"
        ));
        let link = || path::entity_link(table, &op.partition_key, &op.row_key);
        let (method, target, if_match) = match &op.kind {
            BatchKind::Insert => ("POST", path::entity_set_link(table), None),
            BatchKind::Update(mode, m) => (mode_name(*mode), link(), Some(m)),
            BatchKind::Upsert(mode) => (mode_name(*mode), link(), None),
            BatchKind::Delete(m) => ("DELETE", link(), Some(m)),
        };
        out.push_str(&format!("{method} {base}/{target} HTTP/1.1\r\n"));
        if op.kind == BatchKind::Insert {
            out.push_str("Prefer: return-no-content\r\n");
        }
        if let Some(m) = if_match {
            out.push_str(&format!("If-Match: {}\r\n", m.as_header()));
        }
        out.push_str("Accept: application/json;odata=minimalmetadata\r\n");
        match &op.body {
            Some(body) => {
                out.push_str("Content-Type: application/json\r\n\r\n");
                out.push_str(body);
                out.push_str("\r\n");
            }
            None => out.push_str("\r\n"),
        }
    }
    out.push_str(&format!(
        "--{CHANGESET_BOUNDARY}--\r\n--{BATCH_BOUNDARY}--\r\n"
    ));
    out
}

fn mode_name(mode: UpdateMode) -> &'static str {
    match mode {
        UpdateMode::Replace => "PUT",
        UpdateMode::Merge => "MERGE",
    }
}

/// One `application/http` part of a reply: its status, headers and body.
struct Answer<'a> {
    status: u16,
    headers: Vec<(String, String)>,
    body: &'a [u8],
}

impl Answer<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a `202` reply to a changeset of `count` operations (`content_type` is the reply's
/// `Content-Type`, which names the boundary): every operation's ETag, or the failure.
pub fn read_reply(
    content_type: &str,
    body: &[u8],
    count: usize,
) -> Result<Vec<Option<String>>, ClientError> {
    let mut answers = Vec::new();
    collect_answers(content_type, body, &mut answers, 0)?;
    if let Some(failed) = answers.iter().find(|a| a.status >= 300) {
        let mut error: ServiceError = service_error(
            failed.status,
            failed.header("x-ms-error-code"),
            failed.header("x-ms-request-id"),
            failed.body,
        );
        if error.index.is_none() && count == 1 {
            error.index = Some(0);
        }
        return Err(ClientError::Service(error));
    }
    if answers.len() != count {
        return Err(ClientError::Protocol(format!(
            "the $batch reply holds {} answers for {count} operations",
            answers.len()
        )));
    }
    Ok(answers
        .iter()
        .map(|a| a.header("ETag").map(str::to_owned))
        .collect())
}

/// The `application/http` answers inside a multipart body, depth first.
fn collect_answers<'a>(
    content_type: &str,
    body: &'a [u8],
    out: &mut Vec<Answer<'a>>,
    depth: usize,
) -> Result<(), ClientError> {
    let bad = |why: String| ClientError::Protocol(format!("a $batch reply {why}"));
    let mime: mime::Mime = content_type
        .parse()
        .map_err(|_| bad(format!("has the content type {content_type:?}")))?;
    if depth > 2 || mime.type_() != mime::MULTIPART {
        return Err(bad(format!("is not multipart ({content_type:?})")));
    }
    let boundary = mime
        .get_param(mime::BOUNDARY)
        .ok_or_else(|| bad("names no boundary".into()))?
        .as_str();
    for part in parts(body, boundary) {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let (end, headers) = match httparse::parse_headers(part, &mut headers) {
            Ok(httparse::Status::Complete((end, headers))) => (end, headers),
            _ => return Err(bad("has a part whose headers do not parse".into())),
        };
        let part_type = headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-type"))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .unwrap_or("");
        let inner = &part[end..];
        if part_type.to_ascii_lowercase().starts_with("multipart/") {
            collect_answers(part_type, inner, out, depth + 1)?;
        } else {
            out.push(answer(inner).ok_or_else(|| bad("has an answer that does not parse".into()))?);
        }
    }
    Ok(())
}

/// The parts between `--boundary` delimiter lines (up to the closing `--boundary--`).
fn parts<'a>(body: &'a [u8], boundary: &str) -> Vec<&'a [u8]> {
    let delimiter = format!("--{boundary}");
    let d = delimiter.as_bytes();
    // Delimiters at the start of the body or of a line. (A boundary holds no line break,
    // so a delimiter found inside a line never hides one that starts a line.)
    let starts: Vec<usize> = memchr::memmem::find_iter(body, d)
        .filter(|&at| at == 0 || body[at - 1] == b'\n')
        .collect();
    let mut out = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let after = start + d.len();
        if body[after..].starts_with(b"--") {
            break;
        }
        // The part starts after the delimiter line's line break.
        let Some(eol) = body[after..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let from = after + eol + 1;
        let to = starts.get(i + 1).copied().unwrap_or(body.len());
        // The line break before the next delimiter belongs to the delimiter.
        let mut part = &body[from..to.max(from)];
        if let Some(p) = part.strip_suffix(b"\n") {
            part = p.strip_suffix(b"\r").unwrap_or(p);
        }
        out.push(part);
    }
    out
}

/// `HTTP/1.1 NNN Reason`, headers, empty line, body.
fn answer(part: &[u8]) -> Option<Answer<'_>> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(end) = response.parse(part).ok()? else {
        return None;
    };
    Some(Answer {
        status: response.code?,
        headers: response
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_owned(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect(),
        body: &part[end..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::ErrorCode;

    #[test]
    fn a_changeset_body_frames_every_operation() {
        let ops = [
            BatchOperation::json(
                BatchKind::Insert,
                "p",
                "a",
                r#"{"PartitionKey":"p","RowKey":"a"}"#,
            ),
            BatchOperation::json(
                BatchKind::Upsert(UpdateMode::Replace),
                "p",
                "b c",
                r#"{"PartitionKey":"p","RowKey":"b c"}"#,
            ),
            BatchOperation::delete("p", "d", IfMatch::ETag("W/\"x\"".into())),
        ];
        let body = changeset_body("http://h:1/acct", "t", &ops);
        assert!(body.contains("POST http://h:1/acct/t HTTP/1.1\r\nPrefer: return-no-content\r\n"));
        assert!(body.contains("PUT http://h:1/acct/t(PartitionKey='p',RowKey='b%20c') HTTP/1.1"));
        assert!(body.contains(
            "DELETE http://h:1/acct/t(PartitionKey='p',RowKey='d') HTTP/1.1\r\nIf-Match: W/\"x\"\r\n"
        ));
        assert!(body.ends_with("--changeset_tableq--\r\n--batch_tableq--\r\n"));
    }

    const REPLY_TYPE: &str = "multipart/mixed; boundary=batchresponse_1";

    fn reply(answers: &[&str]) -> String {
        let mut out = String::from(
            "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n",
        );
        for a in answers {
            out.push_str(&format!(
                "--changesetresponse_2\r\nContent-Type: application/http\r\n\
                 Content-Transfer-Encoding: binary\r\n\r\n{a}\r\n"
            ));
        }
        out.push_str("--changesetresponse_2--\r\n--batchresponse_1--\r\n");
        out
    }

    #[test]
    fn replies_are_read() {
        let ok = reply(&[
            "HTTP/1.1 204 No Content\r\nETag: W/\"1\"\r\n\r\n",
            "HTTP/1.1 204 No Content\r\n\r\n",
        ]);
        assert_eq!(
            read_reply(REPLY_TYPE, ok.as_bytes(), 2).unwrap(),
            [Some("W/\"1\"".to_owned()), None]
        );
        assert!(matches!(
            read_reply(REPLY_TYPE, ok.as_bytes(), 3),
            Err(ClientError::Protocol(_))
        ));
        let failed = reply(&[
            "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\r\n\
             {\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\
             \"value\":\"1:The specified entity already exists.\\nRequestId:x\"}}}",
        ]);
        let e = read_reply(REPLY_TYPE, failed.as_bytes(), 2).unwrap_err();
        let service = e.service().unwrap();
        assert_eq!(
            (service.status, service.index, service.error_code()),
            (409, Some(1), Some(ErrorCode::EntityAlreadyExists))
        );
        assert_eq!(service.message, "The specified entity already exists.");
        assert!(matches!(
            read_reply("application/json", b"{}", 1),
            Err(ClientError::Protocol(_))
        ));
        assert!(matches!(
            read_reply(REPLY_TYPE, b"--batchresponse_1\r\nnot headers", 1),
            Err(ClientError::Protocol(_))
        ));
    }
}
