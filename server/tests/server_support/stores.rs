//! In-process servers over each store engine — in memory, durable (in a temporary
//! directory), PostgreSQL (where it is installed; else skipped with a `SKIPPED` message, see
//! `pg.rs`) — for the raw-HTTP tests of behaviours that touch storage, and a raw HTTP/1.1
//! exchange that sends the exact bytes a client sends.
//!
//! A test file includes it with `pg.rs` and `server_support`:
//!
//! ```text
//! #[path = "server_support/pg.rs"] mod pg;
//! #[path = "server_support/stores.rs"] mod stores;
//! mod server_support;
//! ```
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tableq_server::{Server, ServerConfig, ServerError};
use tableq_store::{Backend, DurableBackend, MemoryBackend, PostgresBackend};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::pg;

/// A server on one store engine, stopped (and its directory removed) when dropped.
pub struct StoreServer {
    /// Which store: `memory`, `durable` or `postgres`.
    pub store: &'static str,
    /// The server's port on 127.0.0.1.
    pub port: u16,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), ServerError>>>,
    dir: Option<std::path::PathBuf>,
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

async fn start(
    store: &'static str,
    backend: Arc<dyn Backend>,
    dir: Option<std::path::PathBuf>,
) -> StoreServer {
    let server = Server::bind(
        "127.0.0.1:0".parse().expect("an address"),
        backend,
        ServerConfig::default(),
    )
    .await
    .expect("bind a free port");
    let port = server.local_addr().port();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    StoreServer {
        store,
        port,
        stop: Some(stop),
        task: Some(task),
        dir,
    }
}

/// A server on each store engine available here (PostgreSQL is skipped, with a message
/// naming `test`, where it is not installed).
pub async fn on_every_store(test: &str) -> Vec<StoreServer> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let mut servers = vec![start("memory", Arc::new(MemoryBackend::new()), None).await];
    let dir = std::env::temp_dir().join(format!(
        "tableq-stores-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let open = dir.clone();
    let durable = tokio::task::spawn_blocking(move || DurableBackend::open(&open))
        .await
        .expect("the opening task")
        .expect("open the durable store");
    servers.push(start("durable", Arc::new(durable), Some(dir)).await);
    if let Some(url) = pg::server_url(test) {
        // The engine's client blocks on its own runtime: open it off the async workers.
        let backend = tokio::task::spawn_blocking(move || PostgresBackend::open(&url))
            .await
            .expect("the opening task")
            .expect("open the PostgreSQL store");
        servers.push(start("postgres", Arc::new(backend), None).await);
    }
    servers
}

/// A server over a fresh in-memory store (for behaviours that do not touch storage).
pub async fn in_memory() -> StoreServer {
    start("memory", Arc::new(MemoryBackend::new()), None).await
}

/// One raw response.
#[derive(Debug)]
pub struct RawReply {
    /// The status code.
    pub status: u16,
    /// The headers, names lower-cased (the last of repeated names).
    pub headers: HashMap<String, String>,
    /// The body (de-chunked).
    pub body: String,
}

impl RawReply {
    /// A header by its lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// A request's text: the request line, `Host`, these headers, `Content-Length` when there
/// is a body, `Connection: close`, and the body — exactly these bytes, nothing normalised.
pub fn request(method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "MERGE" | "PATCH") {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("Connection: close\r\n\r\n");
    text.push_str(body);
    text
}

impl StoreServer {
    /// Sends `request` as given (sign it first with `server_support::sign_raw` if it is to
    /// be signed with the development key) and reads the whole response.
    pub async fn raw(&self, request: &str) -> RawReply {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("connect");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut out = Vec::new();
        stream.read_to_end(&mut out).await.expect("read");
        parse_reply(&out)
    }
}

fn parse_reply(bytes: &[u8]) -> RawReply {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of the response head: {bytes:?}"));
    let head = String::from_utf8_lossy(&bytes[..end]);
    let rest = &bytes[end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head:?}"));
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    RawReply {
        status,
        headers,
        body: String::from_utf8(body).expect("a UTF-8 body"),
    }
}

/// The body of a `Transfer-Encoding: chunked` response.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..line_end]).expect("a chunk size line");
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .expect("a chunk size");
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        body.extend_from_slice(&rest[start..start + size]);
        rest = rest[start + size..]
            .strip_prefix(b"\r\n")
            .unwrap_or(&rest[start + size..]);
    }
    body
}
