//! [`ClientError`]: why a request did not succeed — the service refused it
//! ([`ServiceError`], carrying the service's error code), it never got an answer, or the
//! answer could not be read.

use tableq_model::ErrorCode;

/// The service's refusal of a request: its HTTP status, its error code (the
/// `x-ms-error-code` header, also in the `odata.error` body) and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// The HTTP status, e.g. 409.
    pub status: u16,
    /// The error code as sent (`EntityAlreadyExists`, …); empty when the answer had none.
    pub code: String,
    /// The service's message: the first line of `odata.error.message.value` (without the
    /// operation index of a `$batch` failure and without `RequestId:`/`Time:` lines).
    pub message: String,
    /// For a `$batch` failure: the index of the operation that failed (the service's
    /// message starts with `index:`).
    pub index: Option<usize>,
    /// The `x-ms-request-id` of the answer, when there was one.
    pub request_id: Option<String>,
}

impl ServiceError {
    /// The error code as tableq's [`ErrorCode`], when the service sent one it knows.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_name(&self.code)
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the service answered {}", self.status)?;
        if !self.code.is_empty() {
            write!(f, " {}", self.code)?;
        }
        if let Some(i) = self.index {
            write!(f, " for operation {i}")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ServiceError {}

/// Why a client call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The service answered with an error status.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// No answer: the connection could not be made or broke (the message lists the causes).
    #[error("cannot reach {endpoint}: {message}")]
    Unreachable {
        /// The endpoint that was asked.
        endpoint: String,
        /// What went wrong, with its causes.
        message: String,
    },
    /// The endpoint, connection string or account given to the client is not usable.
    #[error("{0}")]
    Config(String),
    /// The endpoint's account is not the account of the key the client signs with.
    #[error(
        "endpoint {endpoint} names account {endpoint_account:?}, but requests are signed with \
         the key of {key_account:?}"
    )]
    AccountMismatch {
        /// The endpoint.
        endpoint: String,
        /// The account in the endpoint's path.
        endpoint_account: String,
        /// The account of the key.
        key_account: String,
    },
    /// The request could not be built (e.g. a header value that is not ASCII).
    #[error("cannot build the request: {0}")]
    Request(String),
    /// The answer is not what the protocol says (bad JSON, a `$batch` reply that does not
    /// parse, an entity that does not decode).
    #[error("unexpected answer: {0}")]
    Protocol(String),
}

impl ClientError {
    /// The service's error, when the service refused the request.
    pub fn service(&self) -> Option<&ServiceError> {
        match self {
            ClientError::Service(e) => Some(e),
            _ => None,
        }
    }

    /// The service's error code, when the service refused the request with one it knows.
    pub fn code(&self) -> Option<ErrorCode> {
        self.service().and_then(ServiceError::error_code)
    }

    /// The HTTP status, when the service answered.
    pub fn status(&self) -> Option<u16> {
        self.service().map(|e| e.status)
    }

    /// A transport failure as an [`ClientError::Unreachable`], with the error's causes.
    pub(crate) fn unreachable(endpoint: &str, error: &dyn std::error::Error) -> ClientError {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            // reqwest repeats hyper's message in its own; keep each text once.
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        ClientError::Unreachable {
            endpoint: endpoint.to_owned(),
            message,
        }
    }
}

/// Reads an error answer: the code from `x-ms-error-code` (else the body's
/// `odata.error.code`), the message's first line from the body, and a `$batch` index.
pub(crate) fn service_error(
    status: u16,
    header_code: Option<&str>,
    request_id: Option<&str>,
    body: &[u8],
) -> ServiceError {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let error = json.as_ref().map(|v| &v["odata.error"]);
    let code = header_code
        .map(str::to_owned)
        .or_else(|| error.and_then(|e| e["code"].as_str()).map(str::to_owned))
        .unwrap_or_default();
    let text = match error.and_then(|e| e["message"]["value"].as_str()) {
        Some(m) => m.to_owned(),
        None => {
            let raw = String::from_utf8_lossy(body);
            xml_message(&raw).unwrap_or_else(|| raw.into_owned())
        }
    };
    let first = text.lines().next().unwrap_or("").trim_end();
    let (index, message) = match first.split_once(':') {
        Some((i, rest)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => {
            (i.parse().ok(), rest.to_owned())
        }
        _ => (None, first.to_owned()),
    };
    ServiceError {
        status,
        code,
        message,
        index,
        request_id: request_id.map(str::to_owned),
    }
}

/// The `<Message>` of an XML error body (`<Error><Code>…</Code><Message>…</Message>`, the
/// form of the XML operations), its character references decoded.
fn xml_message(body: &str) -> Option<String> {
    let start = body.find("<Message>")? + "<Message>".len();
    let end = start + body[start..].find("</Message>")?;
    let text = &body[start..end];
    Some(
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&#10;", "\n")
            .replace("&amp;", "&"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_error_bodies_give_their_message() {
        let body = "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ResourceNotFound</Code>\
                    <Message>The specified resource does not exist.\ntable `a&amp;b`\nRequestId:r\n\
                    Time:t</Message></Error>";
        let e = service_error(404, Some("ResourceNotFound"), None, body.as_bytes());
        assert_eq!(e.code, "ResourceNotFound");
        assert_eq!(e.message, "The specified resource does not exist.");
        assert_eq!(
            xml_message(body).as_deref(),
            Some("The specified resource does not exist.\ntable `a&b`\nRequestId:r\nTime:t")
        );
        assert_eq!(xml_message("{}"), None);
    }

    #[test]
    fn error_answers_are_read() {
        let body = br#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"3:The specified entity already exists.\nRequestId:x\nTime:y"}}}"#;
        let e = service_error(409, None, Some("rid"), body);
        assert_eq!(e.code, "EntityAlreadyExists");
        assert_eq!(e.error_code(), Some(ErrorCode::EntityAlreadyExists));
        assert_eq!(e.index, Some(3));
        assert_eq!(e.message, "The specified entity already exists.");
        assert_eq!(e.request_id.as_deref(), Some("rid"));
        assert_eq!(
            e.to_string(),
            "the service answered 409 EntityAlreadyExists for operation 3: The specified entity already exists."
        );
        // The header wins; a body that is not JSON is the message.
        let e = service_error(403, Some("AuthenticationFailed"), None, b"no\nmore");
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("AuthenticationFailed", "no")
        );
        assert_eq!(e.index, None);
        // A message whose first word is not a number has no index.
        let e = service_error(400, Some("InvalidInput"), None, b"$filter: bad");
        assert_eq!((e.index, e.message.as_str()), (None, "$filter: bad"));
    }
}
