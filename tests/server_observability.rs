//! What an operator sees of a running server (issue 19, "Health and metrics"):
//! `GET /health` (liveness), `GET /health/ready` (readiness: false while a store cannot
//! write), `GET /metrics` (Prometheus' OpenMetrics text), the reserved account names, and
//! the request log in `text` and `json` form (`tableq serve --log-format`).

use crate::server_support;

use serde_json::Value;
use server_support::TestServer;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tableq_exec::{Key, PageOptions, RowView};
use tableq_model::Entity;
use tableq_planner::plan::Plan;
use tableq_server::{Account, Server, ServerConfig, ServerError};
use tableq_store::metrics::StoreMetrics;
use tableq_store::{
    Backend, BatchError, MemoryBackend, QueryPage, ServiceProperties, SignedIdentifier, StoreError,
    TableInfo, WriteOp, Written,
};

async fn get(s: &TestServer, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let response = reqwest::get(format!("{}{path}", s.origin)).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

#[tokio::test]
async fn health_and_metrics_need_no_account_and_count_requests() {
    let s = TestServer::start().await;
    let (status, headers, body) = get(&s, "/health").await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "ok"
    );
    let (status, _, body) = get(&s, "/health/ready").await;
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["ready"], true);
    assert_eq!(ready["accounts"][0]["account"], "devstoreaccount1");

    s.create_table("counted").await;
    assert_eq!(s.get("counted()").await.status, 200);
    assert_eq!(s.get("missing()").await.status, 404);
    let (status, headers, text) = get(&s, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{headers:?}"
    );
    for needle in [
        "tableq_requests_total{operation=\"CreateTable\",status=\"201\"} 1",
        "tableq_requests_total{operation=\"QueryEntities\",status=\"200\"} 1",
        "tableq_requests_total{operation=\"QueryEntities\",status=\"404\"} 1",
        "tableq_request_duration_seconds_count{operation=\"QueryEntities\"} 2",
        "# TYPE tableq_connections_open gauge",
        "tableq_body_budget_bytes 134217728",
        "tableq_body_bytes_in_flight 0",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    assert!(text.ends_with("# EOF\n"));
    // The operator endpoints are not counted as requests of the service.
    assert!(!text.contains("operation=\"Other\""), "{text}");

    // Other methods: 405 with Allow; HEAD: no body.
    let response = reqwest::Client::new()
        .post(format!("{}/metrics", s.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(response.headers()["allow"], "GET, HEAD");
    let response = reqwest::Client::new()
        .head(format!("{}/health", s.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.text().await.unwrap().is_empty());
    s.stop().await.unwrap();
}

/// A memory store whose readiness is switched from outside.
struct Switchable {
    inner: MemoryBackend,
    writable: AtomicBool,
}

impl Backend for Switchable {
    fn describe(&self) -> String {
        "switchable".into()
    }
    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.inner.create_table(name)
    }
    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        self.inner.delete_table(name)
    }
    fn table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.inner.table(name)
    }
    fn tables(&self) -> Result<Vec<TableInfo>, StoreError> {
        self.inner.tables()
    }
    fn get(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        self.inner.get(table, pk, rk)
    }
    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError> {
        self.inner.query(table, plan, continuation, options, visit)
    }
    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError> {
        self.inner.write_batch(table, ops)
    }
    fn service_properties(&self) -> Result<ServiceProperties, StoreError> {
        self.inner.service_properties()
    }
    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError> {
        self.inner.set_service_properties(properties)
    }
    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError> {
        self.inner.table_acl(table)
    }
    fn set_table_acl(&self, table: &str, policies: &[SignedIdentifier]) -> Result<(), StoreError> {
        self.inner.set_table_acl(table, policies)
    }
    fn ready(&self) -> Result<(), StoreError> {
        if self.writable.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err(StoreError::Unavailable("the disk is full".into()))
        }
    }
    fn metrics(&self) -> StoreMetrics {
        let mut m = StoreMetrics::new();
        m.gauge("test_size_bytes", "A size", 42.0);
        m
    }
    fn close(&self) -> Result<(), StoreError> {
        self.inner.close()
    }
}

#[tokio::test]
async fn readiness_follows_the_stores_and_store_metrics_carry_the_account() {
    let store = Arc::new(Switchable {
        inner: MemoryBackend::new(),
        writable: AtomicBool::new(true),
    });
    let mut server = Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(MemoryBackend::new()),
        ServerConfig::default(),
    )
    .await
    .unwrap();
    let key = "c2Vjb25kIGFjY291bnQga2V5IGZvciB0ZXN0cyBvbmx5IDAxMjM0NTY3ODk=";
    server
        .add_account(
            Account {
                name: "second".into(),
                key: key.into(),
            },
            store.clone(),
        )
        .unwrap();
    // The operator endpoints take these names.
    for reserved in ["health", "metrics"] {
        let refused = server.add_account(
            Account {
                name: reserved.into(),
                key: key.into(),
            },
            Arc::new(MemoryBackend::new()),
        );
        assert!(
            matches!(&refused, Err(ServerError::Account { reason, .. }) if reason.contains("/health")),
            "{refused:?}"
        );
    }
    let origin = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    let fetch = |path: &'static str| {
        let url = format!("{origin}{path}");
        async move {
            let r = reqwest::get(url).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(fetch("/health/ready").await.0, 200);
    store.writable.store(false, Ordering::Relaxed);
    let (status, body) = fetch("/health/ready").await;
    assert_eq!(status, 503, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["ready"], false);
    let second = ready["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["account"] == "second")
        .unwrap();
    assert_eq!(second["ready"], false);
    assert!(
        second["reason"]
            .as_str()
            .unwrap()
            .contains("the disk is full"),
        "{body}"
    );
    // Liveness does not depend on the stores.
    assert_eq!(fetch("/health").await.0, 200);
    store.writable.store(true, Ordering::Relaxed);
    assert_eq!(fetch("/health/ready").await.0, 200);
    let (_, text) = fetch("/metrics").await;
    assert!(
        text.contains("tableq_store_test_size_bytes{account=\"second\"} 42"),
        "{text}"
    );
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

fn serve(args: &[&str]) -> (std::process::Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["serve", "--in-memory", "--no-auth", "--port", "0"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (child, port)
}

fn http(port: u16, method: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Stops the child with SIGTERM (by its pid) and returns its stderr.
fn stop(mut child: std::process::Child) -> String {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    stderr
}

fn exercise(port: u16) {
    assert!(
        http(
            port,
            "POST",
            "/devstoreaccount1/Tables",
            r#"{"TableName":"logged"}"#
        )
        .starts_with("HTTP/1.1 201")
    );
    for k in 0..5 {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{k}","N":{k}}}"#);
        assert!(http(port, "POST", "/devstoreaccount1/logged", &body).starts_with("HTTP/1.1 201"));
    }
    let r = http(
        port,
        "GET",
        "/devstoreaccount1/logged()?$filter=N%20ge%203",
        "",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(http(port, "GET", "/devstoreaccount1/nothere()", "").starts_with("HTTP/1.1 404"));
}

#[test]
fn json_request_logs_carry_operation_table_status_duration_and_rows() {
    let (child, port) = serve(&["--log-format", "json"]);
    exercise(port);
    let stderr = stop(child);
    let requests: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "tableq_server::request")
        .collect();
    assert_eq!(requests.len(), 8, "{stderr}");
    let query = requests
        .iter()
        .find(|r| r["operation"] == "QueryEntities" && r["status"] == 200)
        .unwrap_or_else(|| panic!("no query line in {stderr}"));
    assert_eq!(query["method"], "GET");
    assert_eq!(query["path"], "/devstoreaccount1/logged()");
    assert_eq!(query["account"], "devstoreaccount1");
    assert_eq!(query["table"], "logged");
    assert_eq!(query["rows_examined"], 5);
    assert_eq!(query["rows_returned"], 2);
    assert!(
        query["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{query}"
    );
    assert!(
        query["request_id"]
            .as_str()
            .is_some_and(|id| id.len() == 36),
        "{query}"
    );
    let missing = requests
        .iter()
        .find(|r| r["status"] == 404)
        .unwrap_or_else(|| panic!("no 404 line in {stderr}"));
    assert_eq!(missing["error_code"], "TableNotFound");
    assert!(requests.iter().all(|r| r["level"] == "INFO"));
    // Every line of the log is JSON, the start-up and shutdown lines too.
    for line in stderr.lines().filter(|l| !l.starts_with("!!!")) {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "not JSON: {line}"
        );
    }
}

#[test]
fn text_request_logs_name_the_operation_and_the_rows() {
    // One worker thread (`--workers 1`, as `scripts/request-cost.sh` runs it) serves the
    // same.
    let (child, port) = serve(&["--workers", "1"]);
    exercise(port);
    let stderr = stop(child);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("GET /devstoreaccount1/logged() 200")
                && l.contains("operation=QueryEntities table=logged rows=5/2")),
        "{stderr}"
    );
    assert!(
        stderr.contains("POST /devstoreaccount1/Tables 201"),
        "{stderr}"
    );
    assert!(stderr.contains("limits: at most"), "{stderr}");
}

#[test]
fn reserved_account_names_and_bad_limits_are_refused_at_start() {
    let key = "c2Vjb25kIGFjY291bnQga2V5IGZvciB0ZXN0cyBvbmx5IDAxMjM0NTY3ODk=";
    for args in [
        vec!["--account".to_owned(), format!("health:{key}")],
        vec!["--account".to_owned(), format!("metrics:{key}")],
        vec!["--header-timeout".to_owned(), "0s".to_owned()],
        vec!["--body-budget".to_owned(), "lots".to_owned()],
        vec!["--max-connections".to_owned(), "0".to_owned()],
        vec!["--workers".to_owned(), "0".to_owned()],
        vec!["--workers".to_owned(), "all".to_owned()],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_tableq"))
            .args(["serve", "--in-memory", "--port", "0"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        if args[0] == "--account" {
            assert!(stderr.contains("/health"), "{stderr}");
            // One sentence, no run of spaces from a broken line continuation.
            assert!(!stderr.contains("  "), "{stderr}");
        }
    }
}
