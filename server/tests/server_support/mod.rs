//! Helpers for the HTTP integration tests: a server started in-process on a free port, and
//! a small client that returns status, headers and body.
//!
//! Every request the client sends is signed with the development account's key
//! (SharedKey, as the Python SDK signs; [`TestServer::send_unsigned`] sends one as given),
//! so the tests run with authorization on, as the server runs by default. [`sign`] signs a
//! `reqwest` request and [`sign_raw`] a raw HTTP/1.1 request text, for tests with their own
//! clients.
#![allow(dead_code)]

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use std::sync::Arc;
use tableq_client::sign::{AccountKey, Scheme, SharedKeySigner};
use tableq_server::{Account, Server, ServerConfig, ServerError};
use tableq_store::{Backend, MemoryBackend};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The development account.
pub const ACCOUNT: &str = "devstoreaccount1";

/// A server running on this test's runtime.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub origin: String,
    /// The port.
    pub port: u16,
    /// The store behind the server.
    pub backend: Arc<MemoryBackend>,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), ServerError>>>,
}

/// One response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    /// The body as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("ASCII header"))
    }

    /// An element's text in an XML error body (`<Error><Code>…</Code><Message>…`), for
    /// the errors of the XML operations; `None` when the reply is not XML.
    pub fn xml_element(&self, name: &str) -> Option<String> {
        if self.header("content-type") != Some("application/xml") {
            return None;
        }
        let open = format!("<{name}>");
        let start = self.body.find(&open)? + open.len();
        let end = start + self.body[start..].find(&format!("</{name}>"))?;
        Some(
            self.body[start..end]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        )
    }

    /// The error code of an error reply (header and body must agree).
    pub fn error_code(&self) -> String {
        if let Some(code) = self.xml_element("Code") {
            assert_eq!(
                self.header("x-ms-error-code"),
                Some(code.as_str()),
                "{}",
                self.body
            );
            return code;
        }
        let body = self.json();
        let code = body["odata.error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("not an odata.error body: {}", self.body))
            .to_owned();
        assert_eq!(
            self.header("x-ms-error-code"),
            Some(code.as_str()),
            "{}",
            self.body
        );
        code
    }

    /// The error message value of an error reply.
    pub fn error_message(&self) -> String {
        if let Some(message) = self.xml_element("Message") {
            return message;
        }
        self.json()["odata.error"]["message"]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("not an odata.error body: {}", self.body))
            .to_owned()
    }

    /// Asserts an error status and code; returns the message.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.error_code(), code, "{}", self.body);
        self.error_message()
    }
}

impl TestServer {
    /// A server with the default configuration over a fresh in-memory store.
    pub async fn start() -> TestServer {
        TestServer::start_with(ServerConfig::default()).await
    }

    /// A server with this configuration over a fresh in-memory store.
    pub async fn start_with(config: ServerConfig) -> TestServer {
        TestServer::start_accounts(config, Vec::new()).await
    }

    /// A server with this configuration and these further accounts, each over a fresh
    /// in-memory store (`backend` is the first account's).
    pub async fn start_accounts(config: ServerConfig, accounts: Vec<Account>) -> TestServer {
        let backend = Arc::new(MemoryBackend::new());
        let dyn_backend: Arc<dyn Backend> = backend.clone();
        let mut server = Server::bind("127.0.0.1:0".parse().unwrap(), dyn_backend, config)
            .await
            .expect("bind a free port");
        for account in accounts {
            server
                .add_account(account, Arc::new(MemoryBackend::new()))
                .expect("add an account");
        }
        let port = server.local_addr().port();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run_until(async move {
            let _ = stopped.await;
        }));
        TestServer {
            origin: format!("http://127.0.0.1:{port}"),
            port,
            backend,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The URL of `path` under the account (`path` without the leading slash).
    pub fn url(&self, path: &str) -> String {
        format!("{}/{ACCOUNT}/{path}", self.origin)
    }

    /// Sends a request to `/{account}/{path}` with these headers and body.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        self.send_url(method, &self.url(path), headers, body).await
    }

    /// Sends a request to an absolute URL, signed with the development account's key.
    pub async fn send_url(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        self.exchange(method, url, headers, body, Some(&dev_signer()))
            .await
    }

    /// Sends a request to `/{account}/{path}` exactly as given: not signed.
    pub async fn send_unsigned(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        self.exchange(method, &self.url(path), headers, body, None)
            .await
    }

    /// Sends a request to an absolute URL, signed by `signer` (or not signed).
    pub async fn exchange(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
        signer: Option<&SharedKeySigner>,
    ) -> Reply {
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.client.request(method, url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(b) = body {
            request = request.body(b.to_owned());
        }
        let mut request = request.build().expect("a valid request");
        if let Some(signer) = signer {
            sign(&mut request, signer);
        }
        let response = self.client.execute(request).await.expect("request sent");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.expect("body read");
        Reply {
            status,
            headers,
            body,
        }
    }

    /// `GET` with the SDKs' usual Accept.
    pub async fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[("Accept", MINIMAL)], None).await
    }

    /// `POST` of a JSON body.
    pub async fn post_json(&self, path: &str, body: &str) -> Reply {
        self.send(
            "POST",
            path,
            &[("Content-Type", "application/json"), ("Accept", MINIMAL)],
            Some(body),
        )
        .await
    }

    /// Creates a table (asserting success).
    pub async fn create_table(&self, name: &str) {
        let r = self
            .post_json("Tables", &format!(r#"{{"TableName":"{name}"}}"#))
            .await;
        assert_eq!(r.status, 201, "create table {name}: {}", r.body);
    }

    /// Inserts an entity (asserting success); returns its ETag.
    pub async fn insert(&self, table: &str, entity: &Value) -> String {
        let r = self.post_json(table, &entity.to_string()).await;
        assert_eq!(r.status, 201, "insert into {table}: {}", r.body);
        r.header("etag").expect("ETag").to_owned()
    }

    /// Stops the server (graceful shutdown) and returns how `run_until` ended.
    pub async fn stop(mut self) -> Result<(), ServerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("server task"),
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The development account's SharedKey signer.
pub fn dev_signer() -> SharedKeySigner {
    SharedKeySigner::new(AccountKey::development(), Scheme::SharedKey)
}

/// Signs a built request (adds `x-ms-date` and `Authorization`, replacing any), as the SDKs
/// do: the path and query exactly as they will be sent, the `Content-Type` header.
pub fn sign(request: &mut reqwest::Request, signer: &SharedKeySigner) {
    let url = request.url();
    let path_and_query = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let method = request.method().as_str().to_owned();
    for (name, value) in signer.headers(&method, &path_and_query, content_type.as_deref()) {
        request
            .headers_mut()
            .insert(name, HeaderValue::from_str(&value).expect("ASCII header"));
    }
}

/// `send()` with the request signed by the development key, for tests with their own
/// `reqwest` clients.
pub trait SendSigned {
    /// Builds the request, signs it ([`sign`]) and sends it.
    fn send_signed(
        self,
    ) -> impl std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send;
}

impl SendSigned for reqwest::RequestBuilder {
    fn send_signed(
        self,
    ) -> impl std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send {
        let (client, request) = self.build_split();
        async move {
            let mut request = request?;
            sign(&mut request, &dev_signer());
            client.execute(request).await
        }
    }
}

/// Signs a raw HTTP/1.1 request text with the development key: the signing headers are
/// inserted after the request line (method, target and `Content-Type` are read from it).
pub fn sign_raw(request: &str) -> String {
    sign_raw_with(request, &dev_signer())
}

/// [`sign_raw`] with another signer.
pub fn sign_raw_with(request: &str, signer: &SharedKeySigner) -> String {
    let (line, rest) = request.split_once("\r\n").expect("a request line");
    let mut words = line.split(' ');
    let method = words.next().expect("a method");
    let target = words.next().expect("a request target");
    let head = rest.split("\r\n\r\n").next().unwrap_or("");
    let content_type = head.split("\r\n").find_map(|h| {
        let (name, value) = h.split_once(':')?;
        name.eq_ignore_ascii_case("content-type")
            .then(|| value.trim().to_owned())
    });
    let mut out = format!("{line}\r\n");
    for (name, value) in signer.headers(method, target, content_type.as_deref()) {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(rest);
    out
}

/// `Accept` for minimal metadata.
pub const MINIMAL: &str = "application/json;odata=minimalmetadata";
/// `Accept` for no metadata.
pub const NOMETA: &str = "application/json;odata=nometadata";
/// `Accept` for full metadata.
pub const FULL: &str = "application/json;odata=fullmetadata";

/// A path segment with every byte outside unreserved characters percent-encoded (as
/// clients encode entity keys).
pub fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of an entity: `t(PartitionKey='…',RowKey='…')`, keys quoted and encoded.
pub fn entity_path(table: &str, pk: &str, rk: &str) -> String {
    format!(
        "{table}(PartitionKey='{}',RowKey='{}')",
        encode(&pk.replace('\'', "''")),
        encode(&rk.replace('\'', "''"))
    )
}

/// A query path with `$filter` etc.: `t()?` + the encoded parameters.
pub fn query_path(table: &str, params: &[(&str, &str)]) -> String {
    let q: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    format!("{table}()?{}", q.join("&"))
}
