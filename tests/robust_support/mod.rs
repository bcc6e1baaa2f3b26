//! Support for the robustness tests (`crash_safety`, `concurrency`, `hostile_input`): a
//! blocking HTTP/1.1 client over raw TCP (so a test can send any bytes, and tell "never
//! connected" from "sent, outcome unknown"), a seeded random generator, servers started
//! in-process on a free port or as the `tableq serve` binary, and the wire forms of entity
//! group transactions (`$batch`).
//!
//! Every request goes through [`Client::send`], the single place where credentials are
//! added ([`Client::authorize`]): by default a SharedKey signature with the development
//! account's key (`tableq_client::sign`), as the Python SDK signs.
#![allow(dead_code)]

pub mod request_oracle;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tableq_client::sign::{AccountKey, Scheme, SharedKeySigner};

/// The development account.
pub const ACCOUNT: &str = "devstoreaccount1";
/// The development account's key.
pub const ACCOUNT_KEY: &str = tableq_server::DEV_ACCOUNT_KEY;
/// `Accept` for minimal metadata.
pub const MINIMAL: &str = "application/json;odata=minimalmetadata";

// ---------------------------------------------------------------------------------------
// Random numbers

/// A small seeded generator (SplitMix64): reproducible from the printed seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The seed from the environment variable `var` if set (to replay a failure), else
    /// from the clock; printed so a failing run can be repeated.
    pub fn from_env(var: &str) -> (Rng, u64) {
        let seed = std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(42)
            });
        eprintln!("seed: {var}={seed}");
        (Rng::new(seed), seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p` percent.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

// ---------------------------------------------------------------------------------------
// Requests and replies

/// One request: method, target (path and query, as sent), headers, body.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The request target, e.g. `/devstoreaccount1/t()?$top=1`.
    pub target: String,
    /// Headers in order (`Host`, `Content-Length` and `Connection` are added when sent,
    /// unless present).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// A request without headers or body.
    pub fn new(method: &str, target: impl Into<String>) -> Request {
        Request {
            method: method.into(),
            target: target.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// A JSON body with the SDKs' headers.
    pub fn json(self, body: &str) -> Request {
        self.header("Content-Type", "application/json")
            .header("Accept", MINIMAL)
            .body(body.as_bytes().to_vec())
    }

    fn has(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    }

    /// The bytes on the wire.
    pub fn to_bytes(&self, host: &str) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        if !self.has("host") {
            out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
        }
        for (k, v) in &self.headers {
            out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        if !self.has("content-length") && !self.has("transfer-encoding") {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        if !self.has("connection") {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// One reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON, if it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The ETag header (panics when absent).
    #[track_caller]
    pub fn etag(&self) -> String {
        self.header("etag")
            .unwrap_or_else(|| panic!("no ETag in a {} reply: {}", self.status, self.text()))
            .to_owned()
    }

    /// Why this reply is not a well-formed service error (a 4xx whose body is an
    /// `odata.error` with a code equal to `x-ms-error-code` and a message), if it is not.
    pub fn service_error_problem(&self) -> Option<String> {
        if !(400..500).contains(&self.status) {
            return Some(format!("status {} is not a 4xx", self.status));
        }
        if let Some((code, _)) = xml_error(&self.text()) {
            // The XML form: the XML operations, and a failed authentication without `Accept`.
            return (self.header("x-ms-error-code") != Some(code.as_str())).then(|| {
                format!(
                    "x-ms-error-code {:?} differs from the XML body's code {code:?}",
                    self.header("x-ms-error-code")
                )
            });
        }
        let Some(json) = self.json() else {
            return Some(format!("the body is not JSON: {:?}", excerpt(&self.text())));
        };
        let code = json["odata.error"]["code"].as_str();
        let message = json["odata.error"]["message"]["value"].as_str();
        match (code, message) {
            (Some(code), Some(_)) if self.header("x-ms-error-code") == Some(code) => None,
            (Some(code), Some(_)) => Some(format!(
                "x-ms-error-code {:?} differs from the body's code {code:?}",
                self.header("x-ms-error-code")
            )),
            _ => Some(format!(
                "not an odata.error body: {:?}",
                excerpt(&self.text())
            )),
        }
    }

    /// The `odata.error.code` (or the XML body's `<Code>`), if the body has one.
    pub fn error_code(&self) -> Option<String> {
        if let Some((code, _)) = xml_error(&self.text()) {
            return Some(code);
        }
        self.json()?["odata.error"]["code"]
            .as_str()
            .map(str::to_owned)
    }
}

/// The code and message of an XML error body as the server writes it
/// (`<?xml version="1.0" encoding="utf-8"?><Error><Code>…</Code><Message>…</Message></Error>`:
/// the XML operations, and a failed authentication of a request without `Accept`).
pub fn xml_error(text: &str) -> Option<(String, String)> {
    let rest = text
        .strip_prefix("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>")?
        .strip_suffix("</Message></Error>")?;
    let (code, message) = rest.split_once("</Code><Message>")?;
    Some((code.to_owned(), message.to_owned()))
}

/// The first 300 characters of a text.
pub fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(300).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// How a request ended.
#[derive(Debug)]
pub enum Outcome {
    /// A complete reply.
    Reply(Reply),
    /// No connection could be made: the request was certainly not seen by the server.
    NotSent(std::io::Error),
    /// Connected, but no complete reply: the request may or may not have taken effect.
    Unknown(String),
}

impl Outcome {
    /// The reply; panics (with `what`) on anything else.
    #[track_caller]
    pub fn reply(self, what: &str) -> Reply {
        match self {
            Outcome::Reply(r) => r,
            other => panic!("{what}: no reply: {other:?}"),
        }
    }
}

/// Credentials added to every request a [`Client`] sends.
#[derive(Debug, Clone)]
pub enum Auth {
    /// None: the request goes out as built (the server answers 403).
    None,
    /// Signed with this signer (`x-ms-date` and `Authorization` added), unless the request
    /// already carries an `Authorization` header (a test's deliberately wrong one).
    Signed(SharedKeySigner),
}

/// The development account's SharedKey signer (what the Python SDK sends).
pub fn dev_signer() -> SharedKeySigner {
    SharedKeySigner::new(AccountKey::development(), Scheme::SharedKey)
}

/// Signs `request` with `signer` as the SDKs do: the method, the target exactly as sent,
/// the `Content-Type` header; `x-ms-date` (now) and `Authorization` are added.
pub fn sign_request(mut request: Request, signer: &SharedKeySigner) -> Request {
    let content_type = request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone());
    request.headers.retain(|(k, _)| {
        !k.eq_ignore_ascii_case("x-ms-date") && !k.eq_ignore_ascii_case("authorization")
    });
    for (name, value) in signer.headers(&request.method, &request.target, content_type.as_deref()) {
        request.headers.push((name.to_owned(), value));
    }
    request
}

/// A blocking client of one server (one connection per request, `Connection: close`).
#[derive(Debug, Clone)]
pub struct Client {
    /// The server's address.
    pub addr: SocketAddr,
    /// How long a reply may take before the request counts as hung.
    pub timeout: Duration,
    /// Credentials added to every request.
    pub auth: Auth,
}

impl Client {
    /// A client of `127.0.0.1:port` signing with the development account's key.
    pub fn new(port: u16) -> Client {
        Client {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            timeout: Duration::from_secs(20),
            auth: Auth::Signed(dev_signer()),
        }
    }

    /// `/<account>/<path>`.
    pub fn target(path: &str) -> String {
        format!("/{ACCOUNT}/{path}")
    }

    /// The same client sending requests as built (unsigned).
    pub fn unsigned(&self) -> Client {
        Client {
            auth: Auth::None,
            ..self.clone()
        }
    }

    /// Adds the credentials to a request: with [`Auth::Signed`], a SharedKey signature
    /// unless the request already has an `Authorization` header.
    pub fn authorize(&self, request: Request) -> Request {
        match &self.auth {
            Auth::None => request,
            Auth::Signed(_) if request.has("authorization") => request,
            Auth::Signed(signer) => sign_request(request, signer),
        }
    }

    /// Sends a request (with credentials) and reads the whole reply.
    pub fn send(&self, request: Request) -> Outcome {
        let request = self.authorize(request);
        self.send_bytes(&request.to_bytes(&self.addr.to_string()))
    }

    /// Sends a request and expects a reply (panics otherwise).
    #[track_caller]
    pub fn call(&self, request: Request) -> Reply {
        let what = format!("{} {}", request.method, excerpt(&request.target));
        self.send(request).reply(&what)
    }

    /// Sends raw bytes and reads the reply up to the end of the connection.
    pub fn send_bytes(&self, bytes: &[u8]) -> Outcome {
        self.send_raw(bytes, false)
    }

    /// Sends raw bytes, then closes the sending half (so a server waiting for the rest of
    /// an incomplete request sees the end), and reads the reply up to the end.
    pub fn send_bytes_then_close(&self, bytes: &[u8]) -> Outcome {
        self.send_raw(bytes, true)
    }

    fn send_raw(&self, bytes: &[u8], close_after: bool) -> Outcome {
        let mut stream = match TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)) {
            Ok(s) => s,
            Err(e) => return Outcome::NotSent(e),
        };
        let _ = stream.set_read_timeout(Some(self.timeout));
        let _ = stream.set_write_timeout(Some(self.timeout));
        let _ = stream.set_nodelay(true);
        // A server may answer (e.g. 413) before reading a large body, and close: a large
        // request is written by another thread while this one reads, and write errors are
        // kept apart from the reply, which is what counts.
        let mut raw = Vec::new();
        let (write_error, read_error) = if bytes.len() > 64 * 1024 {
            let mut writer = match stream.try_clone() {
                Ok(w) => w,
                Err(e) => return Outcome::Unknown(format!("cannot clone the socket: {e}")),
            };
            let owned = bytes.to_vec();
            let handle = std::thread::spawn(move || {
                let e = writer.write_all(&owned).err();
                if close_after {
                    let _ = writer.shutdown(std::net::Shutdown::Write);
                }
                e
            });
            let read_error = read_reply(&mut stream, &mut raw).err();
            let write_error = handle.join().ok().flatten();
            (write_error, read_error)
        } else {
            let write_error = stream.write_all(bytes).err();
            if close_after {
                let _ = stream.shutdown(std::net::Shutdown::Write);
            }
            (write_error, read_reply(&mut stream, &mut raw).err())
        };
        match parse_reply(&raw) {
            Some(reply) => Outcome::Reply(reply),
            None => Outcome::Unknown(format!(
                "incomplete reply ({} bytes: {:?}); write error: {write_error:?}; read error: \
                 {read_error:?}",
                raw.len(),
                excerpt(&String::from_utf8_lossy(&raw))
            )),
        }
    }

    /// `POST /Tables` (asserting 201 or 409 TableAlreadyExists).
    pub fn create_table(&self, name: &str) {
        let r = self.call(
            Request::new("POST", Client::target("Tables"))
                .json(&format!(r#"{{"TableName":"{name}"}}"#)),
        );
        assert!(
            r.status == 201 || r.error_code().as_deref() == Some("TableAlreadyExists"),
            "create table {name}: {} {}",
            r.status,
            r.text()
        );
    }

    /// Every entity of a table matching `filter` (following continuations with `$top`),
    /// as JSON objects in the order served.
    pub fn query_all(&self, table: &str, filter: &str, top: u32) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        let mut next: Option<(String, String)> = None;
        loop {
            let mut target = format!("{table}()?$top={top}");
            if !filter.is_empty() {
                target.push_str(&format!("&$filter={}", encode(filter)));
            }
            if let Some((pk, rk)) = &next {
                target.push_str(&format!(
                    "&NextPartitionKey={}&NextRowKey={}",
                    encode(pk),
                    encode(rk)
                ));
            }
            let r =
                self.call(Request::new("GET", Client::target(&target)).header("Accept", MINIMAL));
            assert_eq!(r.status, 200, "query {table}: {}", r.text());
            let json = r.json().expect("JSON page");
            out.extend(json["value"].as_array().cloned().unwrap_or_default());
            match (
                r.header("x-ms-continuation-nextpartitionkey"),
                r.header("x-ms-continuation-nextrowkey"),
            ) {
                (Some(pk), Some(rk)) if !pk.is_empty() => next = Some((pk.into(), rk.into())),
                _ => return out,
            }
        }
    }
}

/// Reads until one complete reply is in `raw` (a connection kept alive is not waited on)
/// or the connection ends.
fn read_reply(stream: &mut TcpStream, raw: &mut Vec<u8>) -> std::io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        raw.extend_from_slice(&buf[..n]);
        if reply_is_complete(raw) {
            return Ok(());
        }
    }
}

/// Whether `raw` holds a whole reply framed by `Content-Length` or chunked encoding (or
/// one without a body: 1xx, 204, 304).
fn reply_is_complete(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let Ok(head) = std::str::from_utf8(&raw[..end]) else {
        return false;
    };
    let status = head.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok());
    if matches!(status, Some(100..=199 | 204 | 304)) {
        return true;
    }
    let rest = &raw[end + 4..];
    for line in head.split("\r\n").skip(1) {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k.trim().eq_ignore_ascii_case("content-length") {
            return v.trim().parse::<usize>().is_ok_and(|n| rest.len() >= n);
        }
        if k.trim().eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked") {
            return dechunk(rest).is_some();
        }
    }
    false
}

/// Parses a complete HTTP/1.1 reply (`Content-Length`, chunked, or up to the end).
pub fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let get = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    let body = if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(rest)?
    } else if let Some(len) = get("content-length") {
        let len: usize = len.parse().ok()?;
        if rest.len() < len {
            return None;
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Some(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        if data.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

/// Percent-encodes every byte outside the unreserved characters.
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

/// The target of an entity: `/<account>/t(PartitionKey='…',RowKey='…')`.
pub fn entity_target(table: &str, pk: &str, rk: &str) -> String {
    Client::target(&format!(
        "{table}(PartitionKey='{}',RowKey='{}')",
        encode(&pk.replace('\'', "''")),
        encode(&rk.replace('\'', "''"))
    ))
}

// ---------------------------------------------------------------------------------------
// Batches

/// One operation of an entity group transaction.
#[derive(Debug, Clone)]
pub enum BatchOp {
    /// Insert (`POST /t`) of a JSON entity.
    Insert(serde_json::Value),
    /// Replace (`PUT` with `If-Match`) of an entity.
    Replace {
        /// PartitionKey.
        pk: String,
        /// RowKey.
        rk: String,
        /// The `If-Match` value.
        if_match: String,
        /// The new properties.
        body: serde_json::Value,
    },
}

/// The `POST /$batch` request of one changeset on `table` (the Python SDK's form).
pub fn batch_request(origin: &str, table: &str, ops: &[BatchOp]) -> Request {
    let batch = format!("batch_{}", uuid_like(ops.len() as u64));
    let changeset = format!("changeset_{}", uuid_like(ops.len() as u64 + 7));
    let mut body =
        format!("--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n");
    for (i, op) in ops.iter().enumerate() {
        let (line, if_match, json) = match op {
            BatchOp::Insert(entity) => (
                format!("POST {origin}/{ACCOUNT}/{table} HTTP/1.1"),
                None,
                entity.to_string(),
            ),
            BatchOp::Replace {
                pk,
                rk,
                if_match,
                body,
            } => (
                format!("PUT {origin}{} HTTP/1.1", entity_target(table, pk, rk)),
                Some(if_match.clone()),
                body.to_string(),
            ),
        };
        body.push_str(&format!(
            "--{changeset}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: \
             binary\r\nContent-ID: {}\r\n\r\n{line}\r\nContent-Type: application/json\r\n\
             Accept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\n\
             DataServiceVersion: 3.0\r\n",
            i + 1
        ));
        if let Some(m) = if_match {
            body.push_str(&format!("If-Match: {m}\r\n"));
        }
        body.push_str(&format!("Content-Length: {}\r\n\r\n{json}\r\n", json.len()));
    }
    body.push_str(&format!("--{changeset}--\r\n\r\n--{batch}--\r\n"));
    Request::new("POST", Client::target("$batch"))
        .header("Content-Type", format!("multipart/mixed; boundary={batch}"))
        .header("Accept", "application/json")
        .header("DataServiceVersion", "3.0")
        .header("MaxDataServiceVersion", "3.0;NetFx")
        .body(body.into_bytes())
}

fn uuid_like(salt: u64) -> String {
    let mut rng = Rng::new(
        salt ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    );
    format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())
}

/// The statuses and ETags of the parts of a `$batch` reply, in order.
pub fn batch_parts(reply: &Reply) -> Vec<(u16, Option<String>)> {
    let text = reply.text();
    let mut parts = Vec::new();
    for chunk in text.split("HTTP/1.1 ").skip(1) {
        let status = chunk.get(..3).and_then(|s| s.parse().ok()).unwrap_or(0);
        let head = chunk.split("\r\n\r\n").next().unwrap_or("");
        let etag = head.split("\r\n").find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("etag"))
                .map(|(_, v)| v.trim().to_owned())
        });
        parts.push((status, etag));
    }
    parts
}

// ---------------------------------------------------------------------------------------
// Servers

/// A server run in-process on its own runtime thread, on a free loopback port.
pub struct InProcess {
    /// The port.
    pub port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    /// Serves `backend` with `config`.
    pub fn start(
        backend: Arc<dyn tableq_store::Backend>,
        config: tableq_server::ServerConfig,
    ) -> InProcess {
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let server = tableq_server::Server::bind(
                    "127.0.0.1:0".parse().expect("address"),
                    backend,
                    config,
                )
                .await
                .expect("bind");
                port_tx.send(server.local_addr().port()).expect("port");
                server
                    .run_until(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("the server stops cleanly");
            });
        });
        let port = port_rx.recv().expect("the server started");
        InProcess {
            port,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// A client of this server.
    pub fn client(&self) -> Client {
        Client::new(self.port)
    }

    /// Stops the server gracefully and waits for it (panics if it failed).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
            && !std::thread::panicking()
        {
            panic!("the server thread panicked");
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A `tableq serve` child process.
pub struct ServeProcess {
    /// The child.
    pub child: Child,
    /// Its port.
    pub port: u16,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl ServeProcess {
    /// Starts `tableq serve --port 0 <args>` and waits until it listens (its banner names
    /// the port).
    pub fn start(args: &[&str]) -> ServeProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
            .args(["serve", "--port", "0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tableq serve");
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr_pipe.read_to_string(&mut s);
            s
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        let started = Instant::now();
        let _ = stdout.read_line(&mut first);
        let port = first
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|p| p.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "tableq serve did not start after {:?}: stdout {first:?}, stderr {err}",
                started.elapsed()
            );
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = stdout.read_to_end(&mut sink);
        });
        ServeProcess {
            child,
            port,
            stderr: Some(stderr),
        }
    }

    /// Kills the process with SIGKILL (by pid) and returns its stderr.
    pub fn kill9(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// Stops the process with SIGTERM (by pid); returns its exit code and stderr.
    pub fn terminate(mut self) -> (Option<i32>, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().ok().and_then(|s| s.code());
        let err = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        (status, err)
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill")
                .args(["-KILL", &self.child.id().to_string()])
                .status();
            let _ = self.child.wait();
        }
    }
}

/// A fresh temporary directory (removed on drop).
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// `$TMPDIR/tableq-<name>-<pid>-<nanos>`.
    pub fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("tableq-{name}-{}-{nanos}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    /// The path as text.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("UTF-8 temp path")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
