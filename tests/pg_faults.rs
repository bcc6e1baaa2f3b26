//! `tableq serve --store postgres://…` while PostgreSQL misbehaves (issue 19):
//!
//! * **frozen** (every server process stopped with SIGSTOP: connections stay open, nothing
//!   answers) — requests get 500 `OperationTimedOut` or 503 `ServerBusy` within the
//!   configured timeouts, with no database configuration in the error body, readiness
//!   turns false while liveness stays true, and service resumes by itself after SIGCONT
//!   (D5, D7);
//! * **restarted** (`pg_ctl restart -m fast` closes every pooled connection) — reads and
//!   writes right after the restart all succeed (D6).
//!
//! Each test starts its own throwaway server (`scripts/pg-cluster.sh`, as the user
//! `postgres` under root) because it freezes or restarts it; timeouts are set short in the
//! URL so that the tests take seconds. Without PostgreSQL's binaries each prints `SKIPPED`.

use crate::pg::cluster;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `tableq serve` child, killed (by its pid) when dropped.
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

fn serve(url: &str) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["serve", "--no-auth", "--port", "0", "--store", url])
        .stdout(Stdio::piped())
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

/// The cluster's servers frozen until dropped.
struct Frozen<'c>(&'c cluster::Cluster);

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        pg_cluster(&["thaw", &self.0.dir]);
    }
}

fn pg_cluster(args: &[&str]) {
    let out = Command::new("bash")
        .arg(cluster::script())
        .args(args)
        .output()
        .expect("run pg-cluster.sh");
    assert!(
        out.status.success(),
        "pg-cluster.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One request on its own connection: status and body.
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json;odata=nometadata\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The same request from `n` threads at once.
fn parallel(
    port: u16,
    n: usize,
    request: impl Fn(usize) -> (String, String, String) + Sync,
) -> Vec<(u16, String, Duration)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (method, path, body) = request(i);
                scope.spawn(move || {
                    let started = Instant::now();
                    let (status, body) = http(port, &method, &path, &body);
                    (status, body, started.elapsed())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("request thread"))
            .collect()
    })
}

fn metric(port: u16, name: &str) -> f64 {
    let (status, text) = http(port, "GET", "/metrics", "");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[test]
fn a_frozen_database_gets_bounded_errors_then_service_resumes() {
    let Some(cluster) = cluster::start(0) else {
        cluster::skipped("a_frozen_database_gets_bounded_errors_then_service_resumes");
        return;
    };
    let url = format!(
        "{}?schema=frozen&pool_size=2&statement_timeout=1500&pool_timeout=1500&connect_timeout=1",
        cluster.url
    );
    let s = serve(&url);
    let port = s.port;
    assert_eq!(
        http(
            port,
            "POST",
            "/devstoreaccount1/Tables",
            r#"{"TableName":"cold"}"#
        )
        .0,
        201
    );
    let entity = r#"{"PartitionKey":"p","RowKey":"r","N":1}"#;
    assert_eq!(http(port, "POST", "/devstoreaccount1/cold", entity).0, 201);
    let point = "/devstoreaccount1/cold(PartitionKey='p',RowKey='r')";
    assert_eq!(http(port, "GET", point, "").0, 200);
    assert_eq!(http(port, "GET", "/health/ready", "").0, 200);

    pg_cluster(&["freeze", &cluster.dir]);
    let frozen = Frozen(&cluster);
    let answers = parallel(port, 6, |i| match i % 3 {
        0 => ("GET".into(), point.into(), String::new()),
        1 => (
            "POST".into(),
            "/devstoreaccount1/cold".into(),
            format!(r#"{{"PartitionKey":"p","RowKey":"n{i}"}}"#),
        ),
        _ => (
            "GET".into(),
            "/devstoreaccount1/cold()?$filter=N%20gt%200".into(),
            String::new(),
        ),
    });
    // The bound: pool_timeout 1.5 s + statement_timeout 1.5 s + 1 s margin (+ slack for a
    // loaded machine); without timeouts these requests wait for as long as the freeze.
    let port_text = cluster
        .url
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    for (status, body, took) in &answers {
        assert!(
            (*status == 500 && body.contains("OperationTimedOut"))
                || (*status == 503 && body.contains("ServerBusy")),
            "{status} {body}"
        );
        assert!(*took < Duration::from_secs(10), "answered after {took:?}");
        // D7: nothing of the database's configuration in what the client sees.
        assert!(!body.contains("postgres@"), "{body}");
        assert!(!body.contains(&port_text), "{body}");
        assert!(!body.contains("frozen"), "the schema name leaked: {body}");
    }
    let started = Instant::now();
    let (status, body) = http(port, "GET", "/health/ready", "");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""ready":false"#), "{body}");
    assert!(!body.contains("postgres@"), "{body}");
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(http(port, "GET", "/health", "").0, 200);

    drop(frozen);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = http(port, "GET", point, "");
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no recovery after the thaw: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let answers = parallel(port, 4, |i| {
        (
            "POST".into(),
            "/devstoreaccount1/cold".into(),
            format!(r#"{{"PartitionKey":"q","RowKey":"after{i}"}}"#),
        )
    });
    assert!(answers.iter().all(|(s, _, _)| *s == 201), "{answers:?}");
    assert_eq!(http(port, "GET", "/health/ready", "").0, 200);
    assert!(metric(port, "tableq_store_pg_connections_timed_out_total") >= 1.0);
}

#[test]
fn a_restarted_database_costs_no_failed_request() {
    let Some(cluster) = cluster::start(0) else {
        cluster::skipped("a_restarted_database_costs_no_failed_request");
        return;
    };
    let url = format!("{}?schema=restarted&pool_size=8", cluster.url);
    let s = serve(&url);
    let port = s.port;
    assert_eq!(
        http(
            port,
            "POST",
            "/devstoreaccount1/Tables",
            r#"{"TableName":"warm"}"#
        )
        .0,
        201
    );
    assert_eq!(
        http(
            port,
            "POST",
            "/devstoreaccount1/warm",
            r#"{"PartitionKey":"p","RowKey":"r"}"#
        )
        .0,
        201
    );
    let point = "/devstoreaccount1/warm(PartitionKey='p',RowKey='r')";
    let query = "/devstoreaccount1/warm()?$filter=RowKey%20eq%20'r'";
    // Point gets (pipelined on the event loop's connections) and queries (on the blocking
    // pool's), half and half.
    let reads = |i: usize| {
        let target = if i.is_multiple_of(2) { point } else { query };
        ("GET".to_owned(), target.to_owned(), String::new())
    };
    // Fill both pools with connections the restart will close.
    let warm = parallel(port, 32, reads);
    assert!(warm.iter().all(|(s, _, _)| *s == 200), "{warm:?}");
    let opened = metric(port, "tableq_store_pg_nonblocking_connections_opened_total");
    assert!(opened >= 1.0);

    pg_cluster(&["restart", &cluster.dir]);
    let after = parallel(port, 32, reads);
    assert!(
        after.iter().all(|(s, _, _)| *s == 200),
        "reads right after the restart: {:?}",
        after.iter().map(|(s, b, _)| (s, b)).collect::<Vec<_>>()
    );
    assert!(metric(port, "tableq_store_pg_read_retries_total") >= 1.0);
    // The gets' closed connections left their pool and new ones were opened.
    assert!(metric(port, "tableq_store_pg_nonblocking_connections_opened_total") > opened);

    pg_cluster(&["restart", &cluster.dir]);
    let writes = parallel(port, 16, |i| {
        (
            "POST".to_owned(),
            "/devstoreaccount1/warm".to_owned(),
            format!(r#"{{"PartitionKey":"w","RowKey":"{i}"}}"#),
        )
    });
    assert!(
        writes.iter().all(|(s, _, _)| *s == 201),
        "writes right after a restart: {:?}",
        writes.iter().map(|(s, b, _)| (s, b)).collect::<Vec<_>>()
    );
    let (status, body) = http(
        port,
        "GET",
        "/devstoreaccount1/warm()?$filter=PartitionKey%20eq%20'w'",
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(body.matches("\"RowKey\"").count(), 16, "{body}");
}
