//! Starting and stopping: a taken port is a clear error (library and `tableq serve`),
//! graceful shutdown lets in-flight requests finish and closes the store, and the CLI
//! prints its endpoint and connection string, logs one line per request, and exits 0 on
//! SIGTERM.

use crate::pg;
use crate::server_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tableq_server::{Server, ServerConfig, ServerError};
use tableq_store::{Backend, MemoryBackend, StoreError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_taken_port_is_a_bind_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err = Server::bind(
        addr,
        Arc::new(MemoryBackend::new()),
        ServerConfig::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ServerError::Bind { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot listen on {addr}: ")),
        "{text}"
    );
    assert!(text.contains("another process"), "{text}");
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests_and_closes_the_store() {
    let backend = Arc::new(MemoryBackend::new());
    backend.create_table("life").unwrap();
    let dyn_backend: Arc<dyn Backend> = backend.clone();
    let server = Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        dyn_backend,
        ServerConfig::default(),
    )
    .await
    .unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));

    // A request whose body is still arriving when the shutdown begins.
    let body = r#"{"PartitionKey":"p","RowKey":"r","V":1}"#;
    let (head, tail) = body.split_at(10);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /devstoreaccount1/life HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{head}",
        body.len()
    );
    let request = server_support::sign_raw(&request);
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // No new connections are served once shutdown has begun.
    let refused = tokio::net::TcpStream::connect(addr).await;
    if let Ok(mut late) = refused {
        let _ = late
            .write_all(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n\r\n")
            .await;
        let mut buf = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(2), late.read_to_end(&mut buf)).await;
        assert!(
            matches!(n, Ok(Ok(0)) | Ok(Err(_)) | Err(_)),
            "a late connection was served: {}",
            String::from_utf8_lossy(&buf)
        );
    }
    stream.write_all(tail.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");

    task.await.unwrap().expect("clean shutdown");
    // The write landed, and the store was closed.
    assert!(matches!(backend.tables(), Err(StoreError::Closed)));
}

fn tableq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tableq"))
}

/// A blocking HTTP/1.1 exchange (the CLI tests run without an async runtime).
fn http(port: u16, request: &str) -> String {
    let request = &server_support::sign_raw(request);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let line = request.lines().next().unwrap_or("").to_owned();
    stream
        .write_all(request.as_bytes())
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    let mut out = String::new();
    stream
        .read_to_string(&mut out)
        .unwrap_or_else(|e| panic!("{line}: {e} after {out:?}"));
    out
}

#[test]
fn cli_serve_prints_the_connection_string_logs_requests_and_stops_on_sigterm() {
    let mut child = tableq()
        .args(["serve", "--in-memory", "--port", "0"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    for _ in 0..3 {
        stdout.read_line(&mut banner).unwrap();
    }
    assert!(banner.contains("storage: in-memory"), "{banner}");
    let endpoint = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .expect("endpoint")
        .to_owned();
    assert!(endpoint.ends_with("/devstoreaccount1"), "{endpoint}");
    let port: u16 = endpoint["http://127.0.0.1:".len()..]
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(banner.contains(&format!(
        "connection string: DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
         AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;\
         TableEndpoint={endpoint};"
    )), "{banner}");

    let body = r#"{"TableName":"cli"}"#;
    let response = http(
        port,
        &format!(
            "POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("POST /devstoreaccount1/Tables 201"),
        "one log line per request: {stderr}"
    );
    assert!(stderr.contains("request_id="), "{stderr}");
    assert!(stderr.contains("the store is closed"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour codes when not a terminal: {stderr:?}"
    );
}

#[test]
fn cli_serve_honours_rust_log() {
    let mut child = tableq()
        .args(["serve", "--in-memory", "--port", "0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let port: u16 = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    let response = http(
        port,
        "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
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
    assert!(!stderr.contains("GET /devstoreaccount1/Tables"), "{stderr}");
}

#[test]
fn cli_serve_on_a_taken_port_fails_clearly() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = tableq()
        .args(["serve", "--in-memory", "--port", &port.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: cannot listen on 127.0.0.1:{port}: ")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
    // The durable default: the port is claimed before the store is opened, so a failed
    // start leaves no data directory (nor keys) behind.
    let dir = std::env::temp_dir().join(format!("tableq-taken-{}", uuid::Uuid::new_v4()));
    let data = dir.join("tableq-data");
    std::fs::create_dir_all(&dir).unwrap();
    let out = tableq()
        .args(["serve", "--port", &port.to_string(), "--tls", "self-signed"])
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!data.exists(), "a failed start made {}", data.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The banner names the data directory absolutely, wherever the server was started from.
#[test]
fn the_banner_names_the_data_directory_absolutely() {
    let dir = std::env::temp_dir().join(format!("tableq-banner-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = tableq()
        .args(["serve", "--port", "0", "--data", "rel-data"])
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut storage = String::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut out, &mut line).unwrap() == 0 {
            break;
        }
        if line.starts_with("storage:") {
            storage = line;
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let absolute = dir.join("rel-data");
    assert!(
        storage.contains(&absolute.display().to_string()),
        "{storage} does not name {}",
        absolute.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn idle_keep_alive_connections_do_not_delay_shutdown() {
    let s = server_support::TestServer::start().await;
    // A pooled keep-alive connection stays open after this request.
    assert_eq!(s.get("Tables").await.status, 200);
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(10), s.stop())
        .await
        .expect("shutdown does not wait for idle connections")
        .expect("clean shutdown");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn cli_serve_on_postgres() {
    // Errors first: no server needed.
    for (url, needle) in [
        ("mysql://x/y", "only PostgreSQL URLs"),
        (
            "postgres://postgres@127.0.0.1:1/x?connect_timeout=2",
            "cannot connect",
        ),
    ] {
        let out = tableq()
            .args(["serve", "--port", "0", "--store", url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(
            stderr.starts_with("error: --store") && stderr.contains(needle),
            "{stderr}"
        );
    }
    let Some(url) = pg::server_url("cli_serve_on_postgres") else {
        return;
    };
    let mut child = tableq()
        .args(["serve", "--port", "0", "--store", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    for _ in 0..2 {
        stdout.read_line(&mut banner).unwrap();
    }
    assert!(banner.contains("storage: PostgreSQL at"), "{banner}");
    let port: u16 = banner
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {banner:?}"));
    let body = r#"{"TableName":"pgcli"}"#;
    let response = http(
        port,
        &format!(
            "POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
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
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("the store is closed"), "{stderr}");
}

/// POSTs JSON `body` to `path` (signed by [`http`] with the development account's key)
/// and expects `201 Created`.
fn post_created(port: u16, path: &str, body: &str) {
    let response = http(
        port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(response.starts_with("HTTP/1.1 201"), "{path}: {response}");
}

/// `tableq serve --port 0 ARGS` exits with status 2 before serving, saying `says`.
fn assert_refused_at_start(args: &[&str], says: &str) {
    let out = tableq()
        .args(["serve", "--port", "0"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
}

/// Starts `tableq serve` with `args`; returns the child and its port. Its stdout is left
/// to the child (closing it early must not matter, see `cli_serve_survives_a_closed_stdout`).
fn spawn_serve(args: &[&str]) -> (std::process::Child, u16) {
    let mut child = tableq()
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (child, port)
}

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

#[test]
fn cli_serve_data_survives_a_restart_and_a_second_server_is_refused() {
    let dir = std::env::temp_dir().join(format!("tableq-serve-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().unwrap();
    let (child, port) = spawn_serve(&["--port", "0", "--data", data]);
    for (method, path, body) in [
        (
            "POST",
            "/devstoreaccount1/Tables",
            r#"{"TableName":"kept"}"#,
        ),
        (
            "POST",
            "/devstoreaccount1/kept",
            r#"{"PartitionKey":"p","RowKey":"r","V":7}"#,
        ),
    ] {
        let response = http(
            port,
            &format!(
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    }
    // The directory is locked while the first server runs.
    let second = tableq()
        .args(["serve", "--port", "0", "--data", data])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: --data: ") && stderr.contains("in use"),
        "{stderr}"
    );
    stop(child);

    let (child, port) = spawn_serve(&["--port", "0", "--data", data]);
    let response = http(
        port,
        "GET /devstoreaccount1/kept(PartitionKey='p',RowKey='r') HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Accept: application/json;odata=nometadata\r\nConnection: close\r\n\r\n",
    );
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#""V":7"#), "{response}");
    stop(child);

    // A path that is not a directory.
    let file = dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    let out = tableq()
        .args(["serve", "--port", "0", "--data", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a directory"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--block-size`: the blocks this server writes are cut at it (100 entities of ≈ 150 bytes:
/// one block at the default 32 KiB, several at 4 KiB); a size outside 4KiB..=1MiB, or one
/// beside a store without blocks, is refused at start.
#[test]
fn cli_serve_cuts_blocks_at_its_block_size() {
    let dir = std::env::temp_dir().join(format!("tableq-serve-blocks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().unwrap();
    let (child, port) = spawn_serve(&["--port", "0", "--data", data, "--block-size", "4KiB"]);
    let pad = "x".repeat(100);
    let mut requests = vec![(
        "/devstoreaccount1/Tables".to_owned(),
        r#"{"TableName":"blocks"}"#.to_owned(),
    )];
    for i in 0..100 {
        requests.push((
            "/devstoreaccount1/blocks".to_owned(),
            format!(r#"{{"PartitionKey":"p","RowKey":"r{i:03}","Pad":"{pad}","N":{i}}}"#),
        ));
    }
    for (path, body) in requests {
        post_created(port, &path, &body);
    }
    // A clean stop folds what the memtable holds into blocks.
    stop(child);
    let report = tableq_store::check_data_dir(&dir).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.rows, 100, "{report:?}");
    // 100 rows of ≈ 150 bytes: ≈ 15 KB, at most 4 KiB a block.
    assert!(report.blocks >= 4, "{report:?}");

    for (args, says) in [
        (
            vec!["--data", data, "--block-size", "1K"],
            "outside 4KiB..=1MiB",
        ),
        (
            vec!["--data", data, "--block-size", "2MiB"],
            "outside 4KiB..=1MiB",
        ),
        (vec!["--data", data, "--block-size", "0"], "zero"),
        (vec!["--in-memory", "--block-size", "16KiB"], "--in-memory"),
    ] {
        assert_refused_at_start(&args, says);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server on a free port over the data directory `dir`, emptied first, with `flags`.
fn serve_fresh(dir: &std::path::Path, flags: &[&str]) -> (std::process::Child, u16) {
    let _ = std::fs::remove_dir_all(dir);
    let mut args = vec!["--port", "0", "--data", dir.to_str().unwrap()];
    args.extend_from_slice(flags);
    spawn_serve(&args)
}

/// The default account's durable-store metric `tableq_store_NAME` from `/metrics`.
fn store_metric(port: u16, name: &str) -> f64 {
    let metrics = http(
        port,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    let prefix = format!("tableq_store_{name}{{account=\"devstoreaccount1\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name} in {metrics}"))
        .trim()
        .parse()
        .unwrap()
}

/// `--cache-size` sets what the verified copies of blocks may hold — half of it
/// (`tableq_store_verified_copies_limit_bytes`: 32 MiB of the default 64 MiB) — and
/// `tableq_store_verified_copies_bytes` reports what they hold.
#[test]
fn cli_serve_cache_size_bounds_the_verified_copies() {
    let dir = std::env::temp_dir().join(format!("tableq-serve-cache-{}", std::process::id()));
    for (cache, limit) in [(None, 32 << 20), (Some("8MiB"), 4 << 20)] {
        let flags: &[&str] = match cache {
            Some(cache) => &["--cache-size", cache],
            None => &[],
        };
        let (child, port) = serve_fresh(&dir, flags);
        assert_eq!(
            store_metric(port, "verified_copies_limit_bytes"),
            f64::from(limit),
            "{cache:?}"
        );
        assert_eq!(store_metric(port, "verified_copies_bytes"), 0.0);
        stop(child);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--checkpoint-interval` and `--checkpoint-log-size`: a write is checkpointed within a
/// short interval (`tableq_store_checkpoints_total` counts it, and the log drops its record:
/// `tableq_store_wal_log_bytes` is back to the header), not before a long one while the
/// log is small; a log past the size is checkpointed before the interval (and keeps only
/// the records after the checkpoint's point, less than the size); zero, a bad
/// duration, more than a day, a zero size, or either beside a store without a data file is
/// refused at start.
#[test]
fn cli_serve_checkpoints_at_its_interval_and_log_size() {
    let dir = std::env::temp_dir().join(format!("tableq-serve-ckpt-{}", std::process::id()));
    let metric = store_metric;
    let write = |port: u16, rows: usize| {
        post_created(port, "/devstoreaccount1/Tables", r#"{"TableName":"ckpt"}"#);
        let pad = "x".repeat(200);
        for i in 0..rows {
            post_created(
                port,
                "/devstoreaccount1/ckpt",
                &format!(r#"{{"PartitionKey":"p","RowKey":"r{i:03}","Pad":"{pad}"}}"#),
            );
        }
    };
    // (interval, size, rows written, the log's size after a checkpoint at most)
    for (interval, size, rows, log_after) in [
        ("100ms", "64MiB", 1, Some(64.0)),
        ("1h", "64MiB", 1, None),
        ("1h", "4KiB", 40, Some(64.0 + 4096.0)),
    ] {
        let (child, port) = serve_fresh(
            &dir,
            &[
                "--checkpoint-interval",
                interval,
                "--checkpoint-log-size",
                size,
            ],
        );
        let before = metric(port, "checkpoints_total");
        write(port, rows);
        if let Some(log_after) = log_after {
            let deadline = Instant::now() + Duration::from_secs(10);
            while metric(port, "checkpoints_total") == before
                || metric(port, "wal_log_bytes") > log_after
            {
                assert!(
                    Instant::now() < deadline,
                    "no checkpoint within 10 s at {interval} / {size}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        } else {
            std::thread::sleep(Duration::from_millis(2500));
            assert_eq!(
                metric(port, "checkpoints_total"),
                before,
                "a checkpoint before {interval}"
            );
            assert!(
                metric(port, "wal_log_bytes") > 64.0,
                "the log holds the write"
            );
        }
        stop(child);
    }
    let data = dir.to_str().unwrap();
    for (args, says) in [
        (vec!["--data", data, "--checkpoint-interval", "0"], "zero"),
        (
            vec!["--data", data, "--checkpoint-interval", "soon"],
            "duration",
        ),
        (
            vec!["--data", data, "--checkpoint-interval", "25h"],
            "at most 24h",
        ),
        (vec!["--data", data, "--checkpoint-log-size", "0"], "zero"),
        (
            vec!["--in-memory", "--checkpoint-interval", "5s"],
            "--in-memory",
        ),
        (
            vec!["--in-memory", "--checkpoint-log-size", "1MiB"],
            "--in-memory",
        ),
    ] {
        assert_refused_at_start(&args, says);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--flush-interval` and `--memtable-size`: written rows reach the blocks within the
/// interval (`tableq_store_flushes_total` counts the flush), and not before it when it is
/// long and the memtable has room; zero, a bad duration, or either beside a store without
/// blocks is refused at start.
#[test]
fn cli_serve_flushes_at_its_flush_interval() {
    let dir = std::env::temp_dir().join(format!("tableq-serve-flush-{}", std::process::id()));
    let counter = |port: u16, name: &str| store_metric(port, name) as u64;
    let flushes = |port: u16| counter(port, "flushes_total");
    let write = |port: u16, table: &str| {
        for (path, body) in [
            (
                "/devstoreaccount1/Tables".to_owned(),
                format!(r#"{{"TableName":"{table}"}}"#),
            ),
            (
                format!("/devstoreaccount1/{table}"),
                r#"{"PartitionKey":"p","RowKey":"r","N":1}"#.to_owned(),
            ),
        ] {
            post_created(port, &path, &body);
        }
    };
    for (interval, flushed) in [("50ms", true), ("1h", false)] {
        let (child, port) = serve_fresh(
            &dir,
            &[
                "--flush-interval",
                interval,
                "--memtable-size",
                "64MiB",
                "--flush-slice",
                "0ms",
            ],
        );
        let before = flushes(port);
        write(port, "flushed");
        // Past the default interval (1 s), well past 50 ms.
        let deadline = Instant::now() + Duration::from_secs(10);
        if flushed {
            while flushes(port) == before {
                assert!(
                    Instant::now() < deadline,
                    "no flush within 10 s at {interval}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            // A flush is folded in one slice at least (one block a slice with 0ms).
            let slices = counter(port, "flush_slices_total");
            assert!(slices >= flushes(port), "{slices} slices");
        } else {
            std::thread::sleep(Duration::from_millis(2500));
            assert_eq!(flushes(port), before, "a flush before {interval}");
        }
        stop(child);
    }
    let data = dir.to_str().unwrap();
    for (args, says) in [
        (vec!["--data", data, "--flush-interval", "0"], "zero"),
        (vec!["--data", data, "--flush-interval", "soon"], "duration"),
        (vec!["--data", data, "--memtable-size", "0"], "zero"),
        (vec!["--in-memory", "--flush-interval", "5s"], "--in-memory"),
        (vec!["--data", data, "--flush-slice", "soon"], "duration"),
        (vec!["--data", data, "--flush-slice", "2min"], "at most"),
        (vec!["--in-memory", "--flush-slice", "5ms"], "--in-memory"),
        (
            vec!["--in-memory", "--memtable-size", "1MiB"],
            "--in-memory",
        ),
    ] {
        assert_refused_at_start(&args, says);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_serve_survives_a_closed_stdout() {
    // Read the first banner line, then close stdout before the rest is written (or after):
    // the server must keep serving either way.
    for _ in 0..5 {
        let (child, port) = spawn_serve(&["--port", "0", "--in-memory"]);
        let response = http(
            port,
            "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        );
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let stderr = stop(child);
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// One signed insert of `rk` on a new connection, sent up to `split` bytes of its body;
/// the rest is sent when `rest` fires. Returns the response.
async fn insert_on_new_connection(
    addr: std::net::SocketAddr,
    rk: String,
    rest: Option<tokio::sync::watch::Receiver<bool>>,
) -> String {
    let body = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}","V":1}}"#);
    let (head, tail) = body.split_at(10);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /devstoreaccount1/threads HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{head}",
        body.len()
    );
    let request = server_support::sign_raw(&request);
    stream.write_all(request.as_bytes()).await.unwrap();
    if let Some(mut rest) = rest {
        let _ = rest.wait_for(|go| *go).await;
    }
    stream.write_all(tail.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_serving_threads_share_the_port_and_finish_in_flight_requests() {
    let backend = Arc::new(MemoryBackend::new());
    backend.create_table("threads").unwrap();
    let dyn_backend: Arc<dyn Backend> = backend.clone();
    let config = ServerConfig {
        threads: 4,
        ..ServerConfig::default()
    };
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), dyn_backend, config)
        .await
        .unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    // Many connections at once: whichever thread accepts each, every one is served.
    let served: Vec<_> = (0..24)
        .map(|i| tokio::spawn(insert_on_new_connection(addr, format!("a{i:02}"), None)))
        .collect();
    for (i, response) in served.into_iter().enumerate() {
        let response = response.await.unwrap();
        assert!(response.starts_with("HTTP/1.1 201"), "a{i:02}: {response}");
    }
    // Three more threads serve beside the one running `run_until` (a thread takes its name
    // once it first runs: allow for a busy machine).
    let named = std::time::Instant::now();
    while serving_threads() < 3 && named.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(serving_threads(), 3, "{:?}", thread_names());
    // Requests still arriving when the shutdown begins finish, on every thread.
    let (go, rest) = tokio::sync::watch::channel(false);
    let in_flight: Vec<_> = (0..12)
        .map(|i| {
            tokio::spawn(insert_on_new_connection(
                addr,
                format!("b{i:02}"),
                Some(rest.clone()),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    go.send(true).unwrap();
    for (i, response) in in_flight.into_iter().enumerate() {
        let response = response.await.unwrap();
        assert!(response.starts_with("HTTP/1.1 201"), "b{i:02}: {response}");
    }
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the server stops")
        .unwrap()
        .expect("clean shutdown");
    // Every serving thread was joined before the store was closed. `join` returns once a
    // thread's code has finished, which the kernel reports a moment before it takes the
    // thread out of /proc: a joined thread that is gone within a second has ended.
    let joined = std::time::Instant::now();
    while serving_threads() > 0 && joined.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(serving_threads(), 0, "{:?}", thread_names());
    assert!(matches!(backend.tables(), Err(StoreError::Closed)));
}

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .collect()
}

/// The threads of this process named as the server's extra serving threads.
fn serving_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("tableq-serve-"))
        .count()
}
