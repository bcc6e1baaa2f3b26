//! [`ApiError`]: every failure of a request, as the Table service reports it — an HTTP
//! status, an error code (also sent as `x-ms-error-code`) and an `odata.error` JSON body;
//! for the XML operations (service properties and stats, table ACLs) an
//! `<Error><Code>…</Code><Message>…</Message></Error>` body as `application/xml`
//! ([`BodyFormat`]), and for a request whose authentication fails the front end's forms
//! (plain `application/json`, or XML when the request sent no `Accept`).
//!
//! The message (`odata.error.message.value`) is built in this order:
//!
//! ```text
//! <the service's sentence for the code>
//! <tableq's diagnostic: what exactly was wrong, where, and how to fix it>   (when known)
//! RequestId:<uuid>
//! Time:<UTC, 7 fraction digits>
//! ```
//!
//! The first line is exactly the service's sentence, so SDKs that match on it (the Python
//! SDK turns the two table-name sentences into a `ValueError`) keep working; the diagnostic
//! follows on its own lines. Query errors (`$filter`, `$select`, `$top`) carry the parser's
//! one-line summary and its caret rendering.
//!
//! ```
//! use tableq_model::ErrorCode;
//! use tableq_server::ApiError;
//! let e = ApiError::new(ErrorCode::TableNotFound, "table `t` does not exist");
//! assert_eq!((e.status().as_u16(), e.code()), (404, "TableNotFound"));
//! let text = e.message_value("0f7e…", "2024-01-01T00:00:00.0000000Z");
//! assert_eq!(
//!     text,
//!     "The table specified does not exist.\ntable `t` does not exist\nRequestId:0f7e…\nTime:2024-01-01T00:00:00.0000000Z"
//! );
//! ```

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tableq_model::{ErrorCode, ModelError};
use tableq_parser::ParseError;
use tableq_planner::QueryError;
use tableq_store::StoreError;

use crate::protocol::formats;

/// The response header that repeats the error code.
pub const ERROR_CODE_HEADER: &str = "x-ms-error-code";

/// A request's failure (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    sentence: &'static str,
    detail: Option<String>,
    allow: Option<&'static str>,
    /// A `WWW-Authenticate` challenge (bearer-token failures; boxed to keep the error small).
    challenge: Option<Box<str>>,
    /// What only the server's log may see (a storage failure's own text, which can name
    /// the database server and its configuration).
    logged: Option<String>,
    /// A write the store refused for now (a full disk): logged at a limited rate.
    writes_refused: bool,
    /// How the body is written (JSON unless the operation is an XML one).
    format: BodyFormat,
}

/// The form of an error body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyFormat {
    /// `odata.error` JSON, `application/json;odata=minimalmetadata;…` (the OData
    /// operations).
    #[default]
    OData,
    /// The same JSON as plain `application/json` (the service's front end: a request whose
    /// authentication fails, when it accepts JSON).
    PlainJson,
    /// `<Error><Code>…</Code><Message>…</Message></Error>`, `application/xml` (the XML
    /// operations, and the front end's answer to a request without `Accept`).
    Xml,
}

impl ApiError {
    /// An error with the code's status and sentence, and tableq's diagnostic.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> ApiError {
        ApiError {
            detail: Some(detail.into()),
            ..ApiError::bare(code)
        }
    }

    /// An error with only the service's sentence.
    pub fn bare(code: ErrorCode) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(code.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code: code.as_str(),
            sentence: code.service_message(),
            detail: None,
            allow: None,
            challenge: None,
            logged: None,
            writes_refused: false,
            format: BodyFormat::OData,
        }
    }

    /// The same error with another of the service's sentences (the first line of its
    /// message): `ServerBusy` says which limit refused the request.
    pub(crate) fn with_sentence(self, sentence: &'static str) -> ApiError {
        ApiError { sentence, ..self }
    }

    /// The same error with a `WWW-Authenticate` challenge.
    pub fn with_challenge(self, challenge: impl Into<String>) -> ApiError {
        ApiError {
            challenge: Some(challenge.into().into_boxed_str()),
            ..self
        }
    }

    /// A data-model violation: its code, and its message as the diagnostic.
    pub fn model(error: ModelError) -> ApiError {
        ApiError::new(error.code, error.message)
    }

    /// A table-name violation. Like [`ApiError::model`], but a bad length
    /// (`OutOfRangeInput`) gets the service's own sentence for names
    /// ([`ErrorCode::TABLE_NAME_LENGTH_MESSAGE`]), which SDKs recognise.
    pub fn table_name(error: ModelError) -> ApiError {
        let mut e = ApiError::model(error);
        if e.code == ErrorCode::OutOfRangeInput.as_str() {
            e.sentence = ErrorCode::TABLE_NAME_LENGTH_MESSAGE;
        }
        e
    }

    /// A store failure: the store's code, and its message as the diagnostic — except for
    /// the engine's own failures (5xx), whose text can name the database server and its
    /// configuration: the response says what kind of failure it was and that the server's
    /// log has the details under the request id; the text goes to the log only
    /// ([`Display`](std::fmt::Display) shows it).
    ///
    /// ```
    /// use tableq_server::ApiError;
    /// use tableq_store::StoreError;
    /// let e = ApiError::store(StoreError::storage("cannot reach app@db:5432/tables"));
    /// assert_eq!(e.code(), "InternalError");
    /// assert!(!e.body("id", "now").contains("app@db"));
    /// assert!(e.to_string().contains("app@db:5432/tables"));
    /// ```
    ///
    /// Writes refused for now ([`StoreError::WritesRefused`], 503 `ServerBusy`) are the
    /// exception: the store's own sentence says what the client needs to know — e.g. that
    /// the disk holding the data directory (named) is full, and that reads go on.
    ///
    /// ```
    /// use tableq_server::ApiError;
    /// use tableq_store::StoreError;
    /// let e = ApiError::store(StoreError::WritesRefused(
    ///     "the disk holding /srv/tableq/wal is full (No space left on device)".into(),
    /// ));
    /// assert_eq!((e.status().as_u16(), e.code()), (503, "ServerBusy"));
    /// assert!(e.body("id", "now").contains("the disk holding /srv/tableq/wal is full"));
    /// ```
    pub fn store(error: StoreError) -> ApiError {
        match error {
            StoreError::Invalid(e) => ApiError::model(e),
            StoreError::WritesRefused(reason) => ApiError {
                writes_refused: true,
                ..ApiError::new(ErrorCode::ServerBusy, reason)
            },
            other if other.code().http_status() >= 500 => {
                let what = match &other {
                    StoreError::Timeout(_) => {
                        "the storage engine did not answer in time (the operation may or may \
                         not have been applied)"
                    }
                    StoreError::Unavailable(_) | StoreError::Closed => {
                        "the storage engine is unavailable right now; retry the request"
                    }
                    StoreError::Damaged(_) => {
                        "stored data this request needs is damaged (it is never served as \
                         data; `tableq check` lists every damaged block)"
                    }
                    _ => "the storage engine failed",
                };
                ApiError {
                    logged: Some(other.to_string()),
                    ..ApiError::new(
                        other.code(),
                        format!("{what}; the server's log has the details under this RequestId"),
                    )
                }
            }
            other => ApiError::new(other.code(), other.to_string()),
        }
    }

    /// An invalid query option (`$filter`, `$select`, `$top`, …): `InvalidInput` with the
    /// parser's one-line summary and its caret rendering.
    pub fn query(option: &str, error: &ParseError) -> ApiError {
        ApiError::parse(ErrorCode::InvalidInput, option, error)
    }

    /// An invalid query option ([`QueryError`]) as 400 `InvalidInput`: the option's name,
    /// the summary and the caret rendering of its text.
    pub fn invalid_query(error: &QueryError) -> ApiError {
        ApiError::query(error.option().name(), error.error())
    }

    /// A parse error as `code`, the diagnostic being `<what>: <summary>` followed by the
    /// caret rendering.
    pub fn parse(code: ErrorCode, what: &str, error: &ParseError) -> ApiError {
        let rendered = error.to_string();
        // The first line of the rendering repeats the headline that the summary carries.
        let carets = rendered
            .split_once('\n')
            .map_or("", |(_, rest)| rest)
            .trim_end();
        let mut detail = format!("{what}: {}", error.summary());
        if !carets.is_empty() {
            detail.push('\n');
            detail.push_str(carets);
        }
        ApiError::new(code, detail)
    }

    /// 405 `MethodNotAllowed`, with the methods the resource supports (sent as `Allow`).
    pub fn method_not_allowed(method: &str, resource: &str, allow: &'static str) -> ApiError {
        ApiError {
            allow: Some(allow),
            ..ApiError::new(
                ErrorCode::MethodNotAllowed,
                format!("{method} is not supported on {resource}; use {allow}"),
            )
        }
    }

    /// 501 `NotImplemented`: a resource of the protocol this server does not serve yet.
    pub fn not_implemented(detail: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_IMPLEMENTED,
            code: "NotImplemented",
            sentence: "The requested operation is not implemented on the specified resource.",
            detail: Some(detail.into()),
            allow: None,
            challenge: None,
            logged: None,
            writes_refused: false,
            format: BodyFormat::OData,
        }
    }

    /// 408 `RequestTimeout`: the client stopped sending its request (the body stalled).
    pub(crate) fn request_timeout(detail: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::REQUEST_TIMEOUT,
            code: "RequestTimeout",
            sentence: "The request did not arrive within the time the server allows.",
            detail: Some(detail.into()),
            allow: None,
            challenge: None,
            logged: None,
            writes_refused: false,
            format: BodyFormat::OData,
        }
    }

    /// 500 `InternalError` for a failure inside the server.
    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InternalError, detail)
    }

    /// Whether this is a write the store refused for now (a full disk), which the server
    /// logs at a limited rate.
    pub(crate) fn is_refused_write(&self) -> bool {
        self.writes_refused
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The error code, e.g. `"TableNotFound"`.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// tableq's diagnostic, if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// The text of `odata.error.message.value` (see the module docs).
    pub fn message_value(&self, request_id: &str, time: &str) -> String {
        let mut text = String::from(self.sentence);
        if let Some(d) = &self.detail {
            text.push('\n');
            text.push_str(d);
        }
        text.push_str("\nRequestId:");
        text.push_str(request_id);
        text.push_str("\nTime:");
        text.push_str(time);
        text
    }

    /// The JSON body `{"odata.error":{"code":…,"message":{"lang":"en-US","value":…}}}`.
    pub fn body(&self, request_id: &str, time: &str) -> String {
        self.prefixed_body("", request_id, time)
    }

    /// [`ApiError::body`] with `prefix` before the message.
    fn prefixed_body(&self, prefix: &str, request_id: &str, time: &str) -> String {
        serde_json::json!({
            "odata.error": {
                "code": self.code,
                "message": {
                    "lang": "en-US",
                    "value": format!("{prefix}{}", self.message_value(request_id, time)),
                },
            }
        })
        .to_string()
    }

    /// This error with its body in `format`.
    pub fn in_format(self, format: BodyFormat) -> ApiError {
        ApiError { format, ..self }
    }

    /// The form of this error's body.
    pub fn format(&self) -> BodyFormat {
        self.format
    }

    /// The XML body: `<?xml …?><Error><Code>…</Code><Message>…</Message></Error>`, the
    /// message as in [`ApiError::message_value`], escaped.
    pub fn xml_body(&self, request_id: &str, time: &str) -> String {
        let mut out = String::from(formats::DECLARATION);
        out.push_str("<Error><Code>");
        out.push_str(&formats::escape(self.code));
        out.push_str("</Code><Message>");
        out.push_str(&formats::escape(&self.message_value(request_id, time)));
        out.push_str("</Message></Error>");
        out
    }

    /// The complete response: status, `x-ms-error-code`, `Allow` for 405, and the body in
    /// this error's [`BodyFormat`].
    pub fn into_response_for(self, request_id: &str) -> Response {
        self.response("", request_id)
    }

    /// The response of the failed operation `index` (0-based) of a `$batch` changeset: as
    /// [`ApiError::into_response_for`], with the message prefixed `<index>:` as the service
    /// does (the SDKs read the failing operation's index from it).
    pub(crate) fn into_operation_response_for(self, index: usize, request_id: &str) -> Response {
        self.response(&format!("{index}:"), request_id)
    }

    fn response(self, prefix: &str, request_id: &str) -> Response {
        let time = service_time(chrono::Utc::now());
        let (body, content_type) = match self.format {
            BodyFormat::OData => (
                self.prefixed_body(prefix, request_id, &time),
                formats::content_type(tableq_model::json::MetadataLevel::MinimalMetadata),
            ),
            BodyFormat::PlainJson => (
                self.prefixed_body(prefix, request_id, &time),
                HeaderValue::from_static("application/json"),
            ),
            BodyFormat::Xml => (
                self.xml_body(request_id, &time),
                HeaderValue::from_static("application/xml"),
            ),
        };
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, content_type);
        headers.insert(ERROR_CODE_HEADER, HeaderValue::from_static(self.code));
        if let Some(allow) = self.allow {
            headers.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if let Some(challenge) = self.challenge.as_deref()
            && let Ok(value) = HeaderValue::from_str(challenge)
        {
            headers.insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// A time as error messages carry it: `2024-01-02T03:04:05.1234567Z` (7 fraction digits).
fn service_time(t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Timelike;
    format!(
        "{}.{:07}Z",
        t.format("%Y-%m-%dT%H:%M:%S"),
        t.nanosecond() % 1_000_000_000 / 100
    )
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code,
            self.status.as_u16(),
            self.sentence
        )?;
        if let Some(d) = &self.detail {
            write!(f, " {d}")?;
        }
        if let Some(l) = &self.logged {
            write!(f, " [{l}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_parser::{FilterOptions, parse_filter};

    #[test]
    fn table_name_length_gets_the_services_sentence() {
        let e = tableq_model::validate::table_name("ab").unwrap_err();
        let api = ApiError::table_name(e);
        assert_eq!(api.code(), "OutOfRangeInput");
        assert!(api.message_value("r", "t").starts_with(
            "The specified resource name length is not within the permissible limits.\n"
        ));
        let e = tableq_model::validate::table_name("a_b").unwrap_err();
        let api = ApiError::table_name(e);
        assert!(
            api.message_value("r", "t")
                .starts_with("The specified resource name contains invalid characters.\n")
        );
    }

    #[test]
    fn query_errors_carry_summary_and_carets() {
        let err = parse_filter("PartitionKey EQ 'a'", &FilterOptions::default()).unwrap_err();
        let api = ApiError::query("$filter", &err);
        let text = api.message_value("id", "now");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "One of the request inputs is not valid.");
        assert!(lines[1].starts_with("$filter: unknown operator `EQ` at byte 13 (column 14)"));
        assert!(text.contains("^^ keywords are lowercase: did you mean `eq`?"));
        assert_eq!(lines[lines.len() - 2], "RequestId:id");
        assert_eq!(lines[lines.len() - 1], "Time:now");
    }

    #[test]
    fn time_has_seven_fraction_digits() {
        let t = chrono::DateTime::parse_from_rfc3339("2024-01-02T03:04:05.123456789Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(service_time(t), "2024-01-02T03:04:05.1234567Z");
        let response = ApiError::bare(ErrorCode::InvalidInput).into_response_for("id");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn refused_writes_carry_the_stores_reason_and_are_marked() {
        let reason = "the disk holding /data/tableq/wal is full (No space left on device \
                      (os error 28)): writes are refused until space is freed; reads go on";
        let e = ApiError::store(StoreError::WritesRefused(reason.into()));
        assert_eq!((e.status().as_u16(), e.code()), (503, "ServerBusy"));
        assert!(e.is_refused_write());
        let body: serde_json::Value = serde_json::from_str(&e.body("r", "t")).unwrap();
        let message = body["odata.error"]["message"]["value"].as_str().unwrap();
        assert!(message.contains(reason), "{message}");
        // Other 5xx store failures keep their text for the log only, and are not marked.
        let e = ApiError::store(StoreError::Closed);
        assert!(!e.is_refused_write());
        assert!(!e.body("r", "t").contains("closed"));
    }

    #[test]
    fn body_is_the_odata_error_shape() {
        let e = ApiError::bare(ErrorCode::EntityAlreadyExists);
        let body: serde_json::Value = serde_json::from_str(&e.body("r", "t")).unwrap();
        assert_eq!(body["odata.error"]["code"], "EntityAlreadyExists");
        assert_eq!(body["odata.error"]["message"]["lang"], "en-US");
        assert_eq!(
            body["odata.error"]["message"]["value"],
            "The specified entity already exists.\nRequestId:r\nTime:t"
        );
        assert_eq!(e.status(), StatusCode::CONFLICT);
    }
}
