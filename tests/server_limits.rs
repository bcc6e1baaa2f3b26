//! Hostile and broken clients against the server's connection handling and request-body
//! reading (issue 19, D1 and D2; issue 16's "413 reaches the client"), over raw sockets, with
//! short timeouts set in the configuration (or by `tableq serve`'s flags) so that each test
//! takes seconds:
//!
//! * a partial header, a header trickled byte by byte, an idle keep-alive connection, a
//!   stalled body and a client that never reads its response are each cut off by their
//!   timeout — and the header timeout starts at a request's first byte, not when the
//!   connection goes idle;
//! * at the connection cap, the connections that waited longest for a request make room,
//!   so normal clients are served while 2 000 slow connections are held (with the cap that
//!   `tableq serve` derives from `ulimit -n 1024`);
//! * bodies beyond the in-flight budget get 503 `ServerBusy`; the server's peak memory stays
//!   near the budget however many clients stall with almost-complete bodies, and comes back
//!   down once they are gone;
//! * an over-limit body is answered 413 with its JSON error after the rest was read, and
//!   the connection serves the next request;
//! * a request answered before its body was read says `Connection: close` and is closed.

use crate::server_support;

use server_support::{TestServer, sign_raw};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tableq_server::{ConnectionLimits, ServerConfig};
use tableq_store::Backend as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn short_timeouts() -> ServerConfig {
    ServerConfig {
        connections: ConnectionLimits {
            header_timeout: Duration::from_millis(400),
            body_timeout: Duration::from_millis(600),
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_millis(1500),
            max_connections: None,
        },
        ..ServerConfig::default()
    }
}

/// Reads until the server closes the connection (or `limit` passes); returns what was read
/// and when the close came.
async fn read_until_closed(
    stream: &mut tokio::net::TcpStream,
    limit: Duration,
) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&out).into_owned(),
                    Some(started.elapsed()),
                );
            }
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), None),
        }
    }
}

async fn server_metrics(s: &TestServer) -> String {
    reqwest::get(format!("{}/metrics", s.origin))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text")
}

async fn connect(s: &TestServer) -> tokio::net::TcpStream {
    tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_partial_or_trickled_header_is_cut_off_by_the_header_timeout() {
    let s = TestServer::start_with(short_timeouts()).await;
    let mut partial = connect(&s).await;
    partial
        .write_all(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (_, closed) = read_until_closed(&mut partial, Duration::from_secs(10)).await;
    let closed = closed.expect("a partial header is not kept open");
    assert!(
        closed >= Duration::from_millis(300),
        "closed after {closed:?}"
    );
    assert!(closed < Duration::from_secs(4), "closed after {closed:?}");

    // One byte every 50 ms: the header would take 3 s, but the timeout counts from its
    // first byte, whatever arrives after.
    let mut trickle = connect(&s).await;
    let started = Instant::now();
    let header =
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: aaaaaaaaaa\r\n\r\n";
    let mut cut_off = false;
    for byte in header {
        if trickle.write_all(&[*byte]).await.is_err() {
            cut_off = true;
            break;
        }
        let mut buf = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(50), trickle.read(&mut buf)).await
        {
            cut_off = true;
            break;
        }
    }
    assert!(cut_off, "a trickled header outlived the header timeout");
    assert!(started.elapsed() < Duration::from_secs(4));
    s.stop().await.unwrap();
}

#[tokio::test]
async fn idle_keep_alive_connections_close_after_the_idle_timeout_only() {
    let s = TestServer::start_with(short_timeouts()).await;
    let mut stream = connect(&s).await;
    let request = sign_raw("GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 8192];
    let n = stream.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Idle longer than the header timeout: still open (the header timeout starts with a
    // request's first byte), and a second request is served.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let request = sign_raw("GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let n = stream.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Then idle past the idle timeout: closed.
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let closed = closed.expect("an idle keep-alive connection is closed");
    assert!(
        closed >= Duration::from_millis(1400),
        "closed after {closed:?}"
    );
    s.stop().await.unwrap();
}

#[tokio::test]
async fn a_stalled_body_gets_408_and_its_connection_is_closed() {
    let s = TestServer::start_with(short_timeouts()).await;
    s.create_table("slow").await;
    let mut stream = connect(&s).await;
    let head = sign_raw(
        "POST /devstoreaccount1/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n",
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(br#"{"PartitionKey":"#).await.unwrap();
    let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed.is_some(), "the connection stays open: {response}");
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("RequestTimeout"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    let metrics = server_metrics(&s).await;
    assert!(
        metrics.contains("tableq_body_timeouts_total 1"),
        "{metrics}"
    );
    s.stop().await.unwrap();
}

/// Reads one response whose body is `Content-Length` long (or none) off a kept-alive
/// connection.
async fn read_response(stream: &mut tokio::net::TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&out).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("a response within 10 s")
            .expect("read");
        assert!(n > 0, "closed before a whole response: {text}");
        out.extend_from_slice(&buf[..n]);
    }
}

/// A request answered before its body was read (here refused by authentication before the
/// body arrived) says `Connection: close`, and the server does close it: a client that
/// pooled the connection would otherwise send its next request into a connection the
/// server is closing (Python's urllib3 under load: "remote end closed connection without
/// response"). A request whose body was read, and a bodiless one refused, keep it.
#[tokio::test]
async fn a_request_answered_before_its_body_was_read_closes_its_connection() {
    let s = TestServer::start_with(short_timeouts()).await;
    s.create_table("early").await;

    // Unsigned, with its body still to come: 403 at once, closing.
    let mut refused = connect(&s).await;
    refused
        .write_all(
            b"POST /devstoreaccount1/early HTTP/1.1\r\nHost: 127.0.0.1\r\n\
              Content-Type: application/json\r\nContent-Length: 40\r\n\r\n",
        )
        .await
        .unwrap();
    let response = read_response(&mut refused).await;
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    let _ = refused
        .write_all(br#"{"PartitionKey":"p","RowKey":"r","n":1}"#)
        .await;
    let (rest, closed) = read_until_closed(&mut refused, Duration::from_secs(10)).await;
    assert!(closed.is_some(), "the connection stays open: {rest}");
    assert!(
        rest.is_empty(),
        "a second answer on a closing connection: {rest}"
    );

    // A signed insert (its body read) and then a bodiless refusal: the connection serves
    // both and a third request after them.
    let mut kept = connect(&s).await;
    let body = r#"{"PartitionKey":"p","RowKey":"r","n":1}"#;
    let insert = sign_raw(&format!(
        "POST /devstoreaccount1/early HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    kept.write_all(insert.as_bytes()).await.unwrap();
    let response = read_response(&mut kept).await;
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    kept.write_all(b"GET /devstoreaccount1/early() HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let response = read_response(&mut kept).await;
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    let list = sign_raw("GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    kept.write_all(list.as_bytes()).await.unwrap();
    let response = read_response(&mut kept).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    s.stop().await.unwrap();
}

/// Issue 28, item 3: under a small `max_connections`, every slot is held by a client
/// trickling its body one byte every 200 ms (well within the body timeout; the body would
/// take 20 s). Each trickled request gets 408 at its total deadline (`request_timeout`
/// after its first byte), and every one of a burst of fresh `/health` probes gets an
/// answer — none is closed unanswered to make room for the next.
#[tokio::test]
async fn trickled_bodies_cannot_hold_the_cap_and_waiting_probes_are_all_answered() {
    let s = TestServer::start_with(ServerConfig {
        connections: ConnectionLimits {
            header_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_millis(800),
            request_timeout: Duration::from_millis(1500),
            idle_timeout: Duration::from_secs(10),
            max_connections: Some(4),
        },
        ..ServerConfig::default()
    })
    .await;
    s.backend.create_table("slow").expect("create the table");
    let mut trickles = Vec::new();
    for _ in 0..4 {
        let stream = connect(&s).await;
        let (mut rx, mut tx) = stream.into_split();
        let head = sign_raw(
            "POST /devstoreaccount1/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: 100\r\n\r\n",
        );
        tx.write_all(head.as_bytes()).await.unwrap();
        let writer = tokio::spawn(async move {
            for _ in 0..100 {
                if tx.write_all(b" ").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        trickles.push(tokio::spawn(async move {
            let started = Instant::now();
            let mut out = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(Ok(n @ 1..)) =
                tokio::time::timeout(Duration::from_secs(15), rx.read(&mut buf)).await
            {
                out.extend_from_slice(&buf[..n]);
            }
            writer.abort();
            (
                String::from_utf8_lossy(&out).into_owned(),
                started.elapsed(),
            )
        }));
    }
    // The four slots are taken; now the probes arrive, all at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let probes: Vec<_> = (0..8)
        .map(|_| {
            let port = s.port;
            tokio::spawn(async move {
                let mut c = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                c.write_all(
                    b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                )
                .await
                .unwrap();
                read_until_closed(&mut c, Duration::from_secs(15)).await
            })
        })
        .collect();
    for (i, probe) in probes.into_iter().enumerate() {
        let (response, closed) = probe.await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "probe {i} got no answer (closed after {closed:?}): {response:?}"
        );
    }
    for trickle in trickles {
        let (response, took) = trickle.await.unwrap();
        assert!(response.starts_with("HTTP/1.1 408"), "{response:?}");
        assert!(response.contains("RequestTimeout"), "{response}");
        assert!(response.contains("--request-timeout"), "{response}");
        assert!(
            response.to_ascii_lowercase().contains("connection: close"),
            "{response}"
        );
        assert!(took < Duration::from_secs(10), "408 after {took:?}");
    }
    s.stop().await.unwrap();
}

#[tokio::test]
async fn a_client_that_never_reads_its_response_is_cut_off() {
    let s = TestServer::start_with(short_timeouts()).await;
    s.create_table("wide").await;
    // About 6 MB of entities, read back in 1000-entity pages of ~1 MB.
    let big = "w".repeat(30_000);
    for k in 0..200 {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{k:04}","A":"{big}","B":"{big}"}}"#);
        assert_eq!(s.post_json("wide", &body).await.status, 201);
    }
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket
        .connect(format!("127.0.0.1:{}", s.port).parse().unwrap())
        .await
        .unwrap();
    let request = sign_raw("GET /devstoreaccount1/wide() HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    // Never read: once the socket buffers are full the server's write blocks; after the
    // body timeout (600 ms) it closes the connection.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let metrics = server_metrics(&s).await;
        if metrics.contains("reason=\"write_timeout\"") {
            break;
        }
        assert!(Instant::now() < deadline, "no write timeout:\n{metrics}");
    }
    drop(stream);
    s.stop().await.unwrap();
}

#[tokio::test]
async fn an_over_limit_body_is_413_after_the_rest_is_read() {
    let s = TestServer::start().await;
    s.create_table("big").await;
    let body = format!(
        r#"{{"PartitionKey":"p","RowKey":"r","S":"{}"}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let mut stream = connect(&s).await;
    let head = sign_raw(&format!(
        "POST /devstoreaccount1/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    ));
    // Like Node's and Python's stacks: the whole body first, then read.
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let n = stream.read(&mut buf).await.unwrap();
    let response = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(
        response.contains(r#""code":"RequestBodyTooLarge""#),
        "{response}"
    );
    // The body was read: the same connection takes the next request.
    let small = r#"{"PartitionKey":"p","RowKey":"ok"}"#;
    let next = sign_raw(&format!(
        "POST /devstoreaccount1/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{small}",
        small.len()
    ));
    stream.write_all(next.as_bytes()).await.unwrap();
    let n = stream.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 201"));

    // With `Expect: 100-continue` the client has sent nothing yet: answered at once.
    let mut stream = connect(&s).await;
    let head = sign_raw(&format!(
        "POST /devstoreaccount1/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Expect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).await.unwrap();
    let (response, _) = read_until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(!response.contains("100 Continue"), "{response}");
    s.stop().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// `tableq serve` under many connections (D1) and stalled bodies (D2).

/// A `tableq serve --in-memory --no-auth` child started under `ulimit -n nofile`, killed
/// (by pid) when dropped.
struct Serve {
    child: Child,
    port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_limited(nofile: u32, flags: &str) -> Serve {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n {nofile} && exec \"$0\" serve --in-memory --no-auth --port 0 {flags}"
        ))
        .arg(env!("CARGO_BIN_EXE_tableq"))
        .stdout(Stdio::piped())
        // Not piped: nobody would read it, and a full pipe would stall the server's log.
        .stderr(Stdio::null())
        .spawn()
        .expect("start tableq serve");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("banner");
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    Serve { child, port }
}

fn status_of(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
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
    let _ = stream.read_to_string(&mut response);
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

fn metrics(port: u16) -> String {
    status_of(port, "GET", "/metrics", "").1
}

/// The open-file limit of this process (the clients' sockets count against it).
fn own_fd_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        })
        .and_then(|soft| soft.parse().ok())
        .unwrap_or(1024)
}

#[test]
fn normal_clients_are_served_while_2000_slow_connections_are_held() {
    // Each held connection costs this process one descriptor.
    let held = 2000.min(own_fd_limit().saturating_sub(200) as usize);
    if held < 2000 {
        eprintln!(
            "note: holding {held} connections (this process may open too few files for 2000)"
        );
    }
    let s = serve_limited(1024, "--header-timeout 30s --idle-timeout 5min");
    let m = metrics(s.port);
    assert!(
        m.contains("tableq_connection_cap 896"),
        "the cap from ulimit -n 1024:\n{m}"
    );
    assert_eq!(
        status_of(
            s.port,
            "POST",
            "/devstoreaccount1/Tables",
            r#"{"TableName":"live"}"#
        )
        .0,
        201
    );
    let mut slow = Vec::with_capacity(held);
    for i in 0..held {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", s.port)) else {
            break;
        };
        if i % 2 == 0 {
            // Half of them a header that never ends; half idle from the start.
            let _ = c.write_all(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n");
        }
        slow.push(c);
    }
    assert!(
        slow.len() >= held * 9 / 10,
        "connected only {} of {held}",
        slow.len()
    );
    for k in 0..20 {
        let started = Instant::now();
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{k}"}}"#);
        let (status, response) = status_of(s.port, "POST", "/devstoreaccount1/live", &body);
        assert_eq!(status, 201, "{response}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "served after {:?}",
            started.elapsed()
        );
    }
    let m = metrics(s.port);
    let open = m
        .lines()
        .find_map(|l| l.strip_prefix("tableq_connections_open "))
        .and_then(|v| v.parse::<u64>().ok())
        .expect("open connections");
    assert!(open <= 896, "{open} open over the cap");
    assert!(m.contains("reason=\"evicted\""), "{m}");
    drop(slow);
    drop(s);
}

/// `VmRSS` and `VmHWM` of a process, in kB.
fn memory_of(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `clients` connections each send the headers of a 3.9 MB insert and all but 1 KB of its
/// body, then stall; returns once every client has sent what it will (or was refused).
fn stall_bodies(port: u16, clients: usize) -> Vec<TcpStream> {
    let len = 3_999_000usize;
    let head = format!(
        "POST /devstoreaccount1/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {len}\r\n\r\n"
    );
    let body = vec![b'x'; len - 1000];
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..12)
            .map(|w| {
                let (head, body) = (&head, &body);
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for _ in (w..clients).step_by(12) {
                        let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else {
                            continue;
                        };
                        c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                        let _ = c
                            .write_all(head.as_bytes())
                            .and_then(|()| c.write_all(body));
                        out.push(c);
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    })
}

#[test]
fn stalled_bodies_beyond_the_budget_get_503_and_memory_stays_bounded() {
    let s = serve_limited(
        4096,
        "--body-budget 32MiB --body-budget-wait 100ms --body-timeout 30s",
    );
    let pid = s.child.id();
    assert_eq!(
        status_of(
            s.port,
            "POST",
            "/devstoreaccount1/Tables",
            r#"{"TableName":"live"}"#
        )
        .0,
        201
    );
    let (start_rss, _) = memory_of(pid);
    let mut peaks = Vec::new();
    for round in 0..2 {
        // 150 clients offer 600 MB of bodies; 8 fit the 32 MiB budget.
        let stalled = stall_bodies(s.port, 150);
        assert!(
            stalled.len() >= 140,
            "round {round}: {} clients",
            stalled.len()
        );
        // Served meanwhile: a read (it has no body to wait for room with).
        let (status, response) = status_of(s.port, "GET", "/devstoreaccount1/Tables", "");
        assert_eq!(status, 200, "{response}");
        let (_, peak) = memory_of(pid);
        peaks.push(peak);
        drop(stalled);
        std::thread::sleep(Duration::from_millis(500));
    }
    let m = metrics(s.port);
    let rejected = m
        .lines()
        .find_map(|l| l.strip_prefix("tableq_body_budget_rejections_total "))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(rejected >= 200, "{rejected} refused:\n{m}");
    assert!(m.contains("tableq_body_bytes_in_flight 0"), "{m}");
    // 32 MiB of budget, the copies a request makes of its body, the runtime: far below the
    // 1.2 GB the clients offered (before the budget: every body buffered whole).
    let peak = *peaks.iter().max().unwrap_or(&0);
    assert!(
        peak < start_rss + 160 * 1024,
        "peak {peak} kB (start {start_rss} kB)"
    );
    // No growth from one round to the next.
    assert!(peaks[1] < peaks[0] + 32 * 1024, "peaks {peaks:?} kB");
    // What is left once the clients are gone is no more than the budget above the start
    // (before the budget, 1 000 such clients left 4–5 GB behind).
    let (after, _) = memory_of(pid);
    assert!(
        after < start_rss + 48 * 1024,
        "rss {after} kB after (start {start_rss} kB, peak {peak} kB)"
    );
    assert_eq!(
        status_of(
            s.port,
            "POST",
            "/devstoreaccount1/live",
            r#"{"PartitionKey":"p","RowKey":"r"}"#
        )
        .0,
        201
    );
}
