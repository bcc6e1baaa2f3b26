//! The request-path oracle, shared by the fuzz target `fuzz/fuzz_targets/request.rs` and
//! the stable tests in `tests/hostile_input.rs` (which replay the kept inputs of
//! `tests/robust_support/regressions/` and a seeded random driver).
//!
//! Input format (bytes, read leniently): an optional first byte choosing the credentials —
//! `!` unsigned, `~` signed with a wrong key, anything else signed with the development
//! account's key (SharedKey, as the Python SDK signs; an `Authorization` header in the
//! input is kept as given) — then a line `METHOD TARGET` (a target not starting with `/`
//! is put under `/devstoreaccount1/`); the following lines up to an empty line are headers
//! `Name: value`; the rest is the body. Methods, targets and headers that HTTP itself
//! cannot carry are dropped (a real listener rejects them before the router).
//!
//! Each input runs through the server's whole router (`tableq_server::router`) in-process,
//! on a fresh in-memory store holding table `tbl` with entity (`p`, `r`). The checks:
//! the reply comes within 10 s; its status is never 5xx; an error (4xx) carries an
//! `odata.error` JSON body whose code equals `x-ms-error-code` (a reply to `HEAD` has no
//! body, only the header); after an error the store is unchanged (table list and the
//! entity, Timestamp included); and an unsigned or wrongly signed request is refused (4xx).
//!
//! ```text
//! PUT tbl(PartitionKey='p',RowKey='r')
//! If-Match: *
//! Content-Type: application/json
//!
//! {"A@odata.type":"Edm.Int64","A":"12"}
//! ```

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Duration;
use tableq_client::sign::{AccountKey, Scheme, SharedKeySigner};
use tableq_model::{Entity, Property, Value};
use tableq_server::DEV_ACCOUNT;
use tableq_store::{Backend, MemoryBackend, WriteOp};
use tower::ServiceExt;

/// The credentials an input is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// Signed with the development account's key (the default).
    Signed,
    /// No `Authorization` header (input starts with `!`).
    Unsigned,
    /// Signed with a key that is not the account's (input starts with `~`).
    WrongKey,
}

/// A decoded input.
pub struct Input {
    /// The request.
    pub request: Request<Body>,
    /// Whether it is a `HEAD` request (whose replies carry no body on the wire).
    pub head: bool,
    /// The credentials it was sent with.
    pub credentials: Credentials,
}

/// Decodes an input; `None` when HTTP could not carry it.
pub fn decode(data: &[u8]) -> Option<Input> {
    let (credentials, data) = match data.first() {
        Some(b'!') => (Credentials::Unsigned, &data[1..]),
        Some(b'~') => (Credentials::WrongKey, &data[1..]),
        _ => (Credentials::Signed, data),
    };
    let (first, rest) = split_line(data);
    let first = strip_cr(first);
    let space = first.iter().position(|&b| b == b' ')?;
    let method = Method::from_bytes(&first[..space]).ok()?;
    let raw_target = &first[space + 1..];
    let mut target = Vec::new();
    if !raw_target.starts_with(b"/") {
        target.extend_from_slice(b"/devstoreaccount1/");
    }
    target.extend_from_slice(raw_target);
    let uri = Uri::try_from(target).ok()?;
    // A listener only passes origin-form targets with a path.
    if uri.scheme().is_some() || uri.authority().is_some() {
        return None;
    }
    let path_and_query = uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| uri.path().to_owned());
    let mut builder = Request::builder().method(method.clone()).uri(uri);
    let mut content_type: Option<Vec<u8>> = None;
    let mut has_authorization = false;
    let mut rest = rest;
    loop {
        let (line, after) = split_line(rest);
        rest = after;
        let line = strip_cr(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(trim(&line[colon + 1..])),
        ) else {
            continue;
        };
        if name == axum::http::header::CONTENT_TYPE && content_type.is_none() {
            content_type = Some(value.as_bytes().to_vec());
        }
        has_authorization |= name == axum::http::header::AUTHORIZATION;
        builder = builder.header(name, value);
    }
    let key = match credentials {
        Credentials::Signed => Some(AccountKey::development()),
        Credentials::WrongKey => AccountKey::new(DEV_ACCOUNT, WRONG_KEY).ok(),
        Credentials::Unsigned => None,
    };
    if let Some(key) = key.filter(|_| !has_authorization) {
        // The server reads `Content-Type` as text: a non-UTF-8 one is signed lossily
        // (and so fails, as a client could not have signed it either).
        let content_type = content_type.map(|c| String::from_utf8_lossy(&c).into_owned());
        let signer = SharedKeySigner::new(key, Scheme::SharedKey);
        for (name, value) in
            signer.headers(method.as_str(), &path_and_query, content_type.as_deref())
        {
            builder = builder.header(name, HeaderValue::from_str(&value).ok()?);
        }
    }
    let request = builder.body(Body::from(rest.to_vec())).ok()?;
    Some(Input {
        request,
        head: method == Method::HEAD,
        credentials,
    })
}

fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// A base64 key that is not the development account's.
const WRONG_KEY: &str = "bm90IHRoZSBhY2NvdW50IGtleSwganVzdCBzb21lIGJ5dGVz";

/// A fresh store: table `tbl` holding entity (`p`, `r`) with `V = 1`.
fn store() -> Arc<MemoryBackend> {
    let backend = Arc::new(MemoryBackend::new());
    backend.create_table("tbl").expect("create tbl");
    let entity = Entity::with_properties(
        "p",
        "r",
        None,
        vec![Property {
            name: "V".into(),
            value: Value::Int32(1),
        }],
    );
    backend
        .write("tbl", WriteOp::Insert { entity })
        .expect("insert p/r");
    backend
}

/// What the store holds, for the unchanged-after-error check.
fn snapshot(backend: &MemoryBackend) -> String {
    let tables: Vec<String> = backend
        .tables()
        .map(|t| t.into_iter().map(|t| format!("{t:?}")).collect())
        .unwrap_or_default();
    format!("{tables:?} {:?}", backend.get("tbl", "p", "r"))
}

/// What the router answered.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The `x-ms-error-code` header.
    pub error_code: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
}

/// Runs one input through the router; `Ok(None)` when HTTP could not carry it,
/// `Err(problem)` when a check fails.
pub fn run(data: &[u8]) -> Result<Option<Answer>, String> {
    let Some(input) = decode(data) else {
        return Ok(None);
    };
    let head = input.head;
    let credentials = input.credentials;
    let backend = store();
    let before = snapshot(&backend);
    let dyn_backend: Arc<dyn Backend> = backend.clone();
    let app = tableq_server::router(dyn_backend, tableq_server::ServerConfig::default())
        .map_err(|e| format!("the router cannot be built: {e}"))?;
    let answer = RUNTIME.with(|rt| {
        rt.block_on(async move {
            let response =
                tokio::time::timeout(Duration::from_secs(10), app.oneshot(input.request))
                    .await
                    .map_err(|_| "no reply within 10 s".to_owned())?
                    .map_err(|e| format!("the router failed: {e}"))?;
            let status = response.status().as_u16();
            let error_code = response
                .headers()
                .get("x-ms-error-code")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body =
                tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
                    .await
                    .map_err(|_| "the body did not end within 10 s".to_owned())?
                    .map_err(|e| format!("the body failed: {e}"))?
                    .to_bytes()
                    .to_vec();
            Ok::<_, String>(Answer {
                status,
                error_code,
                body,
            })
        })
    })?;
    if answer.status >= 500 {
        return Err(format!(
            "status {}: {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ));
    }
    if credentials != Credentials::Signed && answer.status < 400 {
        return Err(format!(
            "a request sent {credentials:?} was answered {}: {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ));
    }
    if answer.status >= 400 {
        if head {
            // A reply to HEAD has no body (HTTP): the code is in the header.
            if answer.error_code.is_none() {
                return Err(format!(
                    "HEAD: status {} without x-ms-error-code",
                    answer.status
                ));
            }
        } else {
            check_error_body(&answer)?;
        }
        let after = snapshot(&backend);
        if after != before {
            return Err(format!(
                "the store changed after a {} reply:\nbefore {before}\nafter  {after}",
                answer.status
            ));
        }
    }
    Ok(Some(answer))
}

/// An error reply's body is an `odata.error` (or the XML error form: the XML operations, a
/// failed authentication without `Accept`) whose code equals `x-ms-error-code`.
pub fn check_error_body(answer: &Answer) -> Result<(), String> {
    let text = String::from_utf8_lossy(&answer.body);
    if let Some(code) = xml_error_code(&text) {
        return if answer.error_code.as_deref() == Some(code) {
            Ok(())
        } else {
            Err(format!(
                "status {}: the XML error's code differs from x-ms-error-code {:?}: {text:?}",
                answer.status, answer.error_code
            ))
        };
    }
    let json: serde_json::Value = serde_json::from_slice(&answer.body)
        .map_err(|e| format!("status {}: body is not JSON ({e}): {text:?}", answer.status))?;
    let code = json["odata.error"]["code"].as_str();
    let message = json["odata.error"]["message"]["value"].as_str();
    match (code, message) {
        (Some(code), Some(_)) if answer.error_code.as_deref() == Some(code) => Ok(()),
        _ => Err(format!(
            "status {}: not a matching odata.error (x-ms-error-code {:?}): {text:?}",
            answer.status, answer.error_code
        )),
    }
}

/// The `<Code>` of an XML error body as the server writes it
/// (`<?xml version="1.0" encoding="utf-8"?><Error><Code>…</Code><Message>…</Message></Error>`).
fn xml_error_code(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>")?
        .strip_suffix("</Message></Error>")?;
    rest.split_once("</Code><Message>").map(|(code, _)| code)
}

/// [`run`], panicking with the input on a failed check (the fuzz target's oracle).
pub fn check(data: &[u8]) {
    if let Err(problem) = run(data) {
        panic!(
            "{problem}\ninput: {:?}",
            String::from_utf8_lossy(&data[..data.len().min(2000)])
        );
    }
}
