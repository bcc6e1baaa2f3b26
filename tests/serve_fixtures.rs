//! `tableq serve` for test suites (issue 30): `--port 0` with the real port in the banner,
//! `--ready-file` / `--ready-json` written only once the server answers, and `--seed`
//! tables loaded before that — or a start refused with the seed's file and line.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fresh directory for one test, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "tableq-serve-fixtures-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `tableq serve` child with its stdout lines and stderr collected by threads.
struct Child2 {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

fn spawn(args: &[&str]) -> Child2 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .arg("serve")
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tableq serve");
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(String::new()));
    let (out, pipe) = (stdout.clone(), child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            out.lock().unwrap().push(line);
        }
    });
    let (err, mut pipe) = (stderr.clone(), child.stderr.take().unwrap());
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            err.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Child2 {
        child,
        stdout,
        stderr,
    }
}

impl Child2 {
    fn stdout_lines(&self, count: usize) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let lines = self.stdout.lock().unwrap().clone();
            if lines.len() >= count || Instant::now() > until {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// SIGTERM, then the exit status (SIGKILL after 10 s).
    fn stop(&mut self) -> ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.wait(Duration::from_secs(10))
    }

    fn wait(&mut self, limit: Duration) -> ExitStatus {
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(50)); // let the readers drain
                return status;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                return self.child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Child2 {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}

/// One HTTP/1.1 GET on `port` (unsigned: the servers here run with --no-auth, or the path
/// is an operator endpoint); returns (status, body).
/// `tableq serve --in-memory --port 0 ARGS`, which must refuse to start (exit 2): the
/// stopped child, for its output.
fn refused_start(args: &[&str]) -> Child2 {
    let mut all = vec!["--in-memory", "--port", "0"];
    all.extend_from_slice(args);
    let mut serve = spawn(&all);
    let status = serve.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(2), "{}", serve.stderr());
    serve
}

fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-ms-version: 2019-02-02\r\n\
         Accept: application/json;odata=nometadata\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {reply:?}"));
    let body = reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, dechunk(&body))
}

/// The body of a chunked reply (or the body itself when it is not chunked).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else {
            return body.to_owned();
        };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_owned();
        };
        if n == 0 {
            return out;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
}

fn wait_for_file(path: &Path, child: &mut Child2) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        if let Ok(Some(status)) = child.child.try_wait() {
            panic!("serve exited ({status}): {}", child.stderr());
        }
        assert!(Instant::now() < until, "no ready file: {}", child.stderr());
        std::thread::sleep(Duration::from_millis(2));
    }
}

const OTHER_KEY: &str = "b3RoZXIta2V5LW9mLXRoZS1zZWNvbmQtYWNjb3VudA==";

#[test]
fn port_0_ready_file_and_ready_json_describe_the_running_server() {
    let dir = TempDir::new("ready");
    let ready = dir.0.join("ready.json");
    let mut serve = spawn(&[
        "--in-memory",
        "--port",
        "0",
        "--account",
        &format!("second:{OTHER_KEY}"),
        "--ready-file",
        ready.to_str().unwrap(),
        "--ready-json",
    ]);
    let lines = serve.stdout_lines(1);
    assert_eq!(
        lines.len(),
        1,
        "stdout: {lines:?}; stderr: {}",
        serve.stderr()
    );
    let printed: Value = serde_json::from_str(&lines[0]).expect("one JSON object per line");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&ready).unwrap()).unwrap();
    assert_eq!(printed, file, "the file and the line are the same object");

    let port = printed["ports"]["http"].as_u64().expect("an http port") as u16;
    assert_ne!(port, 0);
    let endpoint = format!("http://127.0.0.1:{port}/devstoreaccount1");
    assert_eq!(printed["endpoint"], endpoint.as_str());
    assert_eq!(printed["endpoints"]["http"], endpoint.as_str());
    assert!(printed["endpoints"].get("https").is_none());
    assert_eq!(printed["pid"], serve.child.id());
    assert_eq!(printed["data"], "in-memory");
    let accounts = printed["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 2);
    assert_eq!(accounts[0]["name"], "devstoreaccount1");
    assert_eq!(
        accounts[0]["key"],
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
    );
    assert_eq!(
        printed["connectionString"],
        format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={};\
             TableEndpoint={endpoint};",
            accounts[0]["key"].as_str().unwrap()
        )
        .as_str()
    );
    assert_eq!(accounts[1]["name"], "second");
    assert_eq!(accounts[1]["key"], OTHER_KEY);
    assert_eq!(
        accounts[1]["connectionString"],
        format!(
            "DefaultEndpointsProtocol=http;AccountName=second;AccountKey={OTHER_KEY};\
             TableEndpoint=http://127.0.0.1:{port}/second;"
        )
        .as_str()
    );
    // The banner went to stderr, with the real port in the endpoint and connection string.
    let stderr = serve.stderr();
    assert!(
        stderr.contains(&format!("Table service emulator on {endpoint}\n")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("TableEndpoint={endpoint};")),
        "{stderr}"
    );
    assert_eq!(get(port, "/health").0, 200);

    assert!(serve.stop().success(), "{}", serve.stderr());
    assert!(!ready.exists(), "the ready file is removed on a clean stop");
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
    assert!(left.is_empty(), "no temporary file is left: {left:?}");
}

#[test]
fn without_ready_json_the_banner_stays_on_stdout_with_the_real_port() {
    let mut serve = spawn(&["--in-memory", "--port", "0"]);
    let lines = serve.stdout_lines(3);
    let first = lines.first().cloned().unwrap_or_default();
    let endpoint = first
        .split_once(" on ")
        .map(|(_, e)| e.to_owned())
        .unwrap_or_else(|| panic!("banner {lines:?}; stderr {}", serve.stderr()));
    let port: u16 = endpoint
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/devstoreaccount1")
        .parse()
        .unwrap_or_else(|_| panic!("no port in {endpoint}"));
    assert_ne!(port, 0);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("connection string: ") && l.contains(&endpoint)),
        "{lines:?}"
    );
    assert_eq!(get(port, "/health").0, 200);
    assert!(serve.stop().success());
}

/// Writes `people.jsonl` (`n` entities in partitions of 100) and `cities.jsonl` in `dir`.
fn seed_dir(dir: &Path, n: usize) -> PathBuf {
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    let mut people = String::from("\u{feff}");
    for i in 0..n {
        people.push_str(&format!(
            "{{\"PartitionKey\":\"p{}\",\"RowKey\":\"{i:05}\",\"Age\":{},\"Name\":\"n{i}\"}}\r\n",
            i / 100,
            i % 90
        ));
        if i == 3 {
            people.push('\n'); // a blank line is skipped
        }
    }
    std::fs::write(seed.join("people.jsonl"), people).unwrap();
    std::fs::write(
        seed.join("cities.jsonl"),
        "{\"PartitionKey\":\"fr\",\"RowKey\":\"paris\",\"Population\":2100000}\n\
         {\"PartitionKey\":\"fr\",\"RowKey\":\"paris\",\"Population\":2200000}\n",
    )
    .unwrap();
    std::fs::write(seed.join("README.txt"), "not a table").unwrap();
    seed
}

#[test]
fn seeded_tables_are_queryable_once_ready() {
    let dir = TempDir::new("seed");
    let seed = seed_dir(&dir.0, 250);
    let extra = dir.0.join("extra.ndjson");
    std::fs::write(&extra, "{\"PartitionKey\":\"a\",\"RowKey\":\"b\"}\n").unwrap();
    let mut serve = spawn(&[
        "--in-memory",
        "--no-auth",
        "--port",
        "0",
        "--seed",
        seed.to_str().unwrap(),
        "--seed",
        extra.to_str().unwrap(),
        "--ready-json",
    ]);
    let lines = serve.stdout_lines(1);
    let ready: Value = serde_json::from_str(&lines[0])
        .unwrap_or_else(|e| panic!("{e}: {lines:?}; {}", serve.stderr()));
    let port = ready["ports"]["http"].as_u64().unwrap() as u16;

    let (status, body) = get(
        port,
        "/devstoreaccount1/people()?$filter=PartitionKey%20eq%20'p1'%20and%20Age%20lt%2010",
    );
    assert_eq!(status, 200, "{body}");
    let rows: Value = serde_json::from_str(&body).unwrap();
    let keys: Vec<&str> = rows["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["RowKey"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "00180", "00181", "00182", "00183", "00184", "00185", "00186", "00187", "00188",
            "00189"
        ]
    );
    let (status, body) = get(
        port,
        "/devstoreaccount1/cities(PartitionKey='fr',RowKey='paris')",
    );
    assert_eq!(status, 200, "{body}");
    let paris: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(paris["Population"], 2200000, "the later line wins");
    let (status, body) = get(port, "/devstoreaccount1/Tables");
    assert_eq!(status, 200, "{body}");
    let tables: Value = serde_json::from_str(&body).unwrap();
    let mut names: Vec<&str> = tables["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["cities", "extra", "people"]);
    assert!(serve.stop().success());
    // The log (buffered) says what was loaded.
    let stderr = serve.stderr();
    assert!(
        stderr.contains("seeded people: 250 entities from"),
        "{stderr}"
    );
}

#[test]
fn a_bad_seed_line_refuses_the_start_with_its_file_and_line() {
    let dir = TempDir::new("bad-seed");
    let file = dir.0.join("orders.jsonl");
    std::fs::write(
        &file,
        "{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}\n\n{\"PartitionKey\":\"a\",\"RowKey\":\"2\",\
         \"Bad\":}\n",
    )
    .unwrap();
    let ready = dir.0.join("ready.json");
    // A ready file of an earlier run is removed at start: it must not announce this one.
    std::fs::write(&ready, "{\"stale\":true}").unwrap();
    let serve = refused_start(&[
        "--seed",
        file.to_str().unwrap(),
        "--ready-file",
        ready.to_str().unwrap(),
    ]);
    let stderr = serve.stderr();
    let at = format!("error: {}:3: InvalidInput: ", file.display());
    assert!(stderr.contains(&at), "want {at:?} in {stderr}");
    assert!(
        !ready.exists(),
        "no ready file for a refused start, not even the stale one"
    );
    assert!(serve.stdout_lines(0).is_empty(), "no banner either");

    // A file whose stem is no table name is refused by name too.
    let bad_name = dir.0.join("1orders.jsonl");
    std::fs::write(&bad_name, "").unwrap();
    let stderr = refused_start(&["--seed", bad_name.to_str().unwrap()]).stderr();
    assert!(
        stderr.contains("1orders.jsonl") && stderr.contains("table name"),
        "{stderr}"
    );
}

#[test]
fn the_ready_file_appears_only_once_the_server_answers_with_its_seed_loaded() {
    let dir = TempDir::new("not-before");
    // Enough seed that loading takes a while: the file must not appear meanwhile.
    let seed = seed_dir(&dir.0, 20_000);
    let ready = dir.0.join("state").join("ready.json");
    std::fs::create_dir_all(ready.parent().unwrap()).unwrap();
    let mut serve = spawn(&[
        "--in-memory",
        "--no-auth",
        "--port",
        "0",
        "--seed",
        seed.to_str().unwrap(),
        "--ready-file",
        ready.to_str().unwrap(),
    ]);
    assert!(!ready.exists());
    // Polled as fast as possible: the first time the file is there, it is whole, and the
    // first request — no retry — is answered with every seeded entity in place.
    let text = wait_for_file(&ready, &mut serve);
    let object: Value = serde_json::from_str(&text).expect("a whole JSON object");
    let port = object["ports"]["http"].as_u64().unwrap() as u16;
    let (status, body) = get(
        port,
        "/devstoreaccount1/people(PartitionKey='p199',RowKey='19999')",
    );
    assert_eq!(status, 200, "{body}");
    assert!(serve.stop().success());

    // A ready file that cannot be written stops the server (exit 2) instead of leaving
    // its caller waiting.
    let nowhere = dir.0.join("missing-dir").join("ready.json");
    let stderr = refused_start(&["--ready-file", nowhere.to_str().unwrap()]).stderr();
    assert!(stderr.contains("--ready-file"), "{stderr}");
}

#[test]
fn fault_flags_print_the_seed_and_a_bad_rule_file_refuses_the_start() {
    let dir = TempDir::new("faults");
    let rules = dir.0.join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [{"name": "slow", "table": "t1", "latencyMs": 5}]}"#,
    )
    .unwrap();
    let mut serve = spawn(&[
        "--in-memory",
        "--port",
        "0",
        "--throttle-partition",
        "50",
        "--faults",
        rules.to_str().unwrap(),
        "--fault-seed",
        "77",
    ]);
    let lines = serve.stdout_lines(9);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("throttle: 50 entities/s per partition, 20000 per account")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("faults: rules armed; seed 77 (repeat a run with --fault-seed 77)")),
        "{lines:?}"
    );
    assert!(serve.stop().success());

    std::fs::write(
        &rules,
        r#"{"rules": [{"name": "typo", "operation": "InsertEnity", "error": "ServerBusy"}]}"#,
    )
    .unwrap();
    let serve = refused_start(&["--faults", rules.to_str().unwrap()]);
    let stderr = serve.stderr();
    assert!(
        stderr.contains("fault rule 0 (typo)") && stderr.contains("InsertEnity"),
        "{stderr}"
    );
    assert!(serve.stdout_lines(0).is_empty(), "no banner");
}
