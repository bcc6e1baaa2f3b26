//! `tableq import` end to end, running the built binary: valid and invalid lines, standard
//! input, `--data` (the durable store, read back after the run; a locked directory),
//! `--endpoint` against an in-process server, duplicate keys (`EntityAlreadyExists`, or
//! replaced with `--upsert`), `$batch` changesets over `--endpoint` (a rejected line inside
//! one, the rest loaded; line order per partition) and SharedKey signing (`--account`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use tableq::model::{Entity, Value};
use tableq_server::{Server, ServerConfig};
use tableq_store::{Backend, DurableBackend, MemoryBackend};

/// A directory removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "tableq-import-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `tableq import …` with `stdin`.
fn import(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .arg("import")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A run that stops early (a refused --account) may not read its input.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The lines of stderr that start with `rejected: `.
fn rejections(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.starts_with("rejected: "))
        .map(str::to_owned)
        .collect()
}

fn dir_arg(dir: &Path) -> String {
    dir.join("data").display().to_string()
}

/// One valid line per (partition, row), with `X` = `value`.
fn lines(partitions: u32, rows: u32, value: i32) -> String {
    let mut text = String::new();
    for p in 0..partitions {
        for r in 0..rows {
            text.push_str(&format!(
                "{{\"PartitionKey\":\"p{p}\",\"RowKey\":\"r{r:04}\",\"X\":{value}}}\n"
            ));
        }
    }
    text
}

/// Valid lines, invalid ones, a duplicate, a payload Timestamp and annotations.
const MIXED: &str = concat!(
    "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"X\":1}\n",
    "not json\n",
    "\n",
    "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"X\":2}\n",
    "{\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"Timestamp\":\"not a date\",\"odata.etag\":\"x\"}\n",
    "{\"RowKey\":\"x\"}\n",
    "{\"PartitionKey\":\"b\",\"RowKey\":\"1\",\"Big\":\"12\",\"Big@odata.type\":\"Edm.Int64\"}\n",
    "{\"PartitionKey\":\"b\",\"RowKey\":\"2\",\"bad name\":1}\n",
);

const MIXED_REJECTIONS: [&str; 4] = [
    "rejected: line 2: InvalidInput: ",
    "rejected: line 4: EntityAlreadyExists: ",
    "rejected: line 6: PropertiesNeedValue: ",
    "rejected: line 8: PropertyNameInvalid: ",
];

fn assert_rejections(out: &Output, expected: &[&str]) {
    let got = rejections(out);
    assert_eq!(got.len(), expected.len(), "{}", stderr(out));
    for (line, prefix) in got.iter().zip(expected) {
        assert!(
            line.starts_with(prefix),
            "{line:?} should start with {prefix:?}"
        );
    }
}

/// The mixed file's survivors, wherever they were loaded.
fn check_mixed(store: &dyn Backend, table: &str) {
    let a1 = store.get(table, "a", "1").unwrap().expect("a/1 loaded");
    assert_eq!(
        a1.get("X").map(|v| v.to_owned()),
        Some(Value::Int32(1)),
        "the first line wins"
    );
    let a2 = store.get(table, "a", "2").unwrap().expect("a/2 loaded");
    assert!(a2.timestamp().is_some(), "the store set a Timestamp");
    assert!(a2.get("odata.etag").is_none());
    let b1 = store.get(table, "b", "1").unwrap().expect("b/1 loaded");
    assert_eq!(b1.get("Big").map(|v| v.to_owned()), Some(Value::Int64(12)));
    assert!(store.get(table, "b", "2").unwrap().is_none());
}

#[test]
fn data_mode_loads_the_valid_lines_and_reports_the_others() {
    let tmp = TempDir::new("mixed");
    let file = tmp.file("mixed.jsonl", MIXED);
    let data = dir_arg(&tmp.0);
    let out = import(
        &["--table", "people", file.to_str().unwrap(), "--data", &data],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("created table people\n"), "{err}");
    assert_rejections(&out, &MIXED_REJECTIONS);
    assert!(
        err.contains("mixed.jsonl: 3 loaded, 4 rejected in "),
        "{err}"
    );
    let store = DurableBackend::open(&data).unwrap();
    check_mixed(&store, "people");
    store.close().unwrap();
}

#[test]
fn stdin_then_existing_keys_are_rejected_or_replaced_with_upsert() {
    let tmp = TempDir::new("stdin");
    let data = dir_arg(&tmp.0);
    // 3 partitions × 250 rows: several batches per partition.
    let out = import(
        &["--table", "Numbers", "-", "--data", &data],
        &lines(3, 250, 1),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("<stdin>: 750 loaded, 0 rejected in "));

    // Again: every line exists (the table is found case-insensitively, not created).
    let out = import(&["--table", "numbers", "--data", &data], &lines(3, 250, 2));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains("created table"), "{err}");
    assert_eq!(rejections(&out).len(), 21, "20 shown and a count: {err}");
    assert!(
        err.contains("rejected: 730 more lines not shown (by code: EntityAlreadyExists 750)"),
        "{err}"
    );
    assert!(err.contains("<stdin>: 0 loaded, 750 rejected in "), "{err}");

    // --upsert: the later lines win.
    let out = import(
        &["--table", "numbers", "--data", &data, "--upsert"],
        &lines(3, 250, 3),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = DurableBackend::open(&data).unwrap();
    for (p, r) in [("p0", "r0000"), ("p2", "r0249")] {
        let e: Entity = store.get("numbers", p, r).unwrap().unwrap();
        assert_eq!(e.get("X").map(|v| v.to_owned()), Some(Value::Int32(3)));
    }
    store.close().unwrap();
}

/// One entity a partition: every batch holds one operation, and the writers get them in
/// parcels of many partitions (their groups when 4 096 operations wait, and at the end),
/// submitted together; a batch that fails in a parcel is rejected on its own while the
/// others load.
#[test]
fn data_mode_loads_one_entity_partitions_in_parcels() {
    let tmp = TempDir::new("parcels");
    let data = dir_arg(&tmp.0);
    let out = import(
        &["--table", "single", "-", "--data", &data],
        &lines(10_000, 1, 1),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("<stdin>: 10000 loaded, 0 rejected in "));

    // Every other partition again, each line beside a new partition's: the parcels mix
    // batches that fail with batches that load.
    let mut text = String::new();
    for k in 0..5_000 {
        for p in [2 * k, 10_000 + k] {
            text.push_str(&format!(
                "{{\"PartitionKey\":\"p{p}\",\"RowKey\":\"r0000\",\"X\":2}}\n"
            ));
        }
    }
    let out = import(&["--table", "single", "-", "--data", &data], &text);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("<stdin>: 5000 loaded, 5000 rejected in "),
        "{err}"
    );
    assert!(err.contains("(by code: EntityAlreadyExists 5000)"), "{err}");
    // The first import's values stay; the new partitions hold the second's.
    let store = DurableBackend::open(&data).unwrap();
    for p in 0..15_000 {
        let e = store.get("single", &format!("p{p}"), "r0000").unwrap();
        let x = e.and_then(|e| e.get("X").map(|v| v.to_owned()));
        let want = if p < 10_000 { 1 } else { 2 };
        assert_eq!(x, Some(Value::Int32(want)), "p{p}");
    }
    store.close().unwrap();
}

#[test]
fn a_data_directory_held_by_a_server_is_refused() {
    let tmp = TempDir::new("locked");
    let data = dir_arg(&tmp.0);
    let held = DurableBackend::open(&data).unwrap();
    let out = import(&["--table", "people", "--data", &data], &lines(1, 1, 1));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("is in use"), "{err}");
    assert!(err.contains("--endpoint URL"), "{err}");
    held.close().unwrap();
}

/// Runs `import` with `args` and no input: a usage error (exit 2) whose message says `says`.
fn assert_usage_error(args: &[&str], says: &str) {
    let out = import(args, "");
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
}

#[test]
fn usage_errors() {
    assert_usage_error(&["--table", "people"], "--data");
    let tmp = TempDir::new("usage");
    let data = dir_arg(&tmp.0);
    assert_usage_error(&["--table", "x", "--data", &data], "OutOfRangeInput");
    let endpoint = ["--table", "people", "--endpoint"];
    assert_usage_error(
        &[&endpoint[..], &["https://example.invalid/a"]].concat(),
        "expected http://",
    );
    // The page cache: a size, only with --data; the signing key only with --endpoint.
    let with_data = ["--table", "people", "--data", &data];
    let cache = "--cache-size";
    assert_usage_error(&[&with_data[..], &[cache, "0"]].concat(), "zero");
    assert_usage_error(
        &[&with_data[..], &[cache, "12 parsecs"]].concat(),
        "unknown size unit",
    );
    assert_usage_error(
        &[&endpoint[..], &["http://127.0.0.1:9/a", cache, "1GiB"]].concat(),
        "serve --cache-size",
    );
    assert_usage_error(
        &[
            &endpoint[..],
            &["http://127.0.0.1:9/a", "--memtable-size", "1GiB"],
        ]
        .concat(),
        "serve --cache-size",
    );
    assert_usage_error(
        &[&with_data[..], &["--memtable-size", "lots"]].concat(),
        "is not a size",
    );
    assert_usage_error(
        &[&with_data[..], &["--block-size", "2K"]].concat(),
        "outside 4KiB..=1MiB",
    );
    assert_usage_error(
        &[
            &endpoint[..],
            &["http://127.0.0.1:9/a", "--block-size", "16K"],
        ]
        .concat(),
        "serve --cache-size, --block-size",
    );
    assert_usage_error(
        &[&with_data[..], &["--account", "a:b"]].concat(),
        "--account signs",
    );
}

/// The store's memory: a page cache, and a memtable of 4 KiB, so that the load flushes
/// many times, with RowKeys in descending order that land in blocks written before.
#[test]
fn data_mode_takes_the_store_memory() {
    let tmp = TempDir::new("cache");
    let data = dir_arg(&tmp.0);
    let mut input: Vec<String> = lines(3, 200, 5).lines().map(str::to_owned).collect();
    input.reverse();
    let out = import(
        &[
            "--table",
            "rows",
            "--data",
            &data,
            "--cache-size",
            "8MiB",
            "--memtable-size",
            "4K",
        ],
        &(input.join("\n") + "\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("600 loaded, 0 rejected"),
        "{}",
        stderr(&out)
    );
    let store = DurableBackend::open(&data).unwrap();
    for (pk, rk) in [("p0", "r0000"), ("p1", "r0199"), ("p2", "r0100")] {
        let entity = store.get("rows", pk, rk).unwrap();
        assert_eq!(
            entity.and_then(|e| e.get("X").map(|v| v.to_owned())),
            Some(Value::Int32(5)),
            "{pk}/{rk}"
        );
    }
    store.close().unwrap();
}

/// `--block-size` cuts the loaded rows into blocks of that size: the same 600 rows take
/// one block a partition at the default (32 KiB, at most 256 rows) and several at 4 KiB.
#[test]
fn data_mode_cuts_blocks_at_the_block_size() {
    let input = lines(3, 200, 5);
    let mut blocks = Vec::new();
    for size in [None, Some("4KiB")] {
        let tmp = TempDir::new("blocks");
        let data = dir_arg(&tmp.0);
        let mut args = vec!["--table", "rows", "--data", &data];
        if let Some(size) = size {
            args.extend(["--block-size", size]);
        }
        let out = import(&args, &input);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let report = tableq_store::check_data_dir(tmp.0.join("data").as_path()).unwrap();
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(report.rows, 600, "{report:?}");
        blocks.push(report.blocks);
    }
    assert_eq!(
        blocks[0], 3,
        "one block a partition at the default: {blocks:?}"
    );
    assert!(blocks[1] > blocks[0], "{blocks:?}");
}

/// A server over a fresh in-memory store, on a free port, in a runtime of its own.
struct InProcess {
    endpoint: String,
    backend: Arc<MemoryBackend>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    fn start() -> InProcess {
        let backend = Arc::new(MemoryBackend::new());
        let store: Arc<dyn Backend> = backend.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, endpoint) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async move {
                let server = Server::bind(
                    "127.0.0.1:0".parse().unwrap(),
                    store,
                    ServerConfig::default(),
                )
                .await
                .unwrap();
                ready.send(server.table_endpoint()).unwrap();
                server
                    .run_until(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        InProcess {
            endpoint: endpoint.recv().unwrap(),
            backend,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn endpoint_mode_sends_to_a_running_server() {
    let server = InProcess::start();
    let tmp = TempDir::new("endpoint");
    let file = tmp.file("mixed.jsonl", MIXED);
    let out = import(
        &[
            "--table",
            "people",
            file.to_str().unwrap(),
            "--endpoint",
            &server.endpoint,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("created table people\n"));
    assert_rejections(&out, &MIXED_REJECTIONS);
    check_mixed(server.backend.as_ref(), "people");

    // Many entities over several connections, then --upsert over them.
    let out = import(
        &[
            "--table",
            "people",
            "--endpoint",
            &server.endpoint,
            "--connections",
            "3",
        ],
        &lines(4, 50, 1),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("created table"));
    assert!(stderr(&out).contains("<stdin>: 200 loaded, 0 rejected"));
    let out = import(
        &[
            "--table",
            "people",
            "--endpoint",
            &server.endpoint,
            "--upsert",
        ],
        &lines(4, 50, 7),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let e = server
        .backend
        .get("people", "p3", "r0049")
        .unwrap()
        .unwrap();
    assert_eq!(e.get("X").map(|v| v.to_owned()), Some(Value::Int32(7)));
}

#[test]
fn endpoint_mode_stops_when_the_server_is_unreachable() {
    // A port that was free a moment ago: nobody listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}/devstoreaccount1");
    let out = import(
        &["--table", "people", "--endpoint", &endpoint],
        &lines(1, 3, 1),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot reach"), "{}", stderr(&out));
}

#[test]
fn endpoint_batches_reject_one_line_and_load_the_rest() {
    let server = InProcess::start();
    let endpoint = server.endpoint.as_str();
    // p0/r0003 exists: the first changeset of p0 fails on it, the rest is sent again.
    let out = import(
        &["--table", "people", "--endpoint", endpoint],
        "{\"PartitionKey\":\"p0\",\"RowKey\":\"r0003\",\"X\":9}\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // 2 partitions of 150 rows (changesets of 100 and 50 each), then p1/r0010 again.
    let mut input = lines(2, 150, 1);
    input.push_str("{\"PartitionKey\":\"p1\",\"RowKey\":\"r0010\",\"X\":5}\n");
    let out = import(
        &[
            "--table",
            "people",
            "--endpoint",
            endpoint,
            "--connections",
            "2",
        ],
        &input,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_rejections(
        &out,
        &[
            "rejected: line 4: EntityAlreadyExists: ",
            "rejected: line 301: EntityAlreadyExists: ",
        ],
    );
    assert!(
        stderr(&out).contains("<stdin>: 299 loaded, 2 rejected"),
        "{}",
        stderr(&out)
    );
    let x = |pk: &str, rk: &str| {
        server
            .backend
            .get("people", pk, rk)
            .unwrap()
            .and_then(|e| e.get("X").map(|v| v.to_owned()))
    };
    assert_eq!(
        x("p0", "r0003"),
        Some(Value::Int32(9)),
        "the stored one stays"
    );
    assert_eq!(x("p0", "r0002"), Some(Value::Int32(1)));
    assert_eq!(x("p0", "r0149"), Some(Value::Int32(1)));
    assert_eq!(
        x("p1", "r0010"),
        Some(Value::Int32(1)),
        "the first line wins"
    );
    assert_eq!(x("p1", "r0149"), Some(Value::Int32(1)));

    // --upsert: the same keys many times, partitions interleaved: the last line wins.
    let mut input = String::new();
    for v in 0..250 {
        for p in 0..3 {
            input.push_str(&format!(
                "{{\"PartitionKey\":\"q{p}\",\"RowKey\":\"r{}\",\"X\":{v}}}\n",
                v % 7
            ));
        }
    }
    let out = import(
        &["--table", "people", "--endpoint", endpoint, "--upsert"],
        &input,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for p in 0..3 {
        // The last value written to r{k} is the largest v < 250 with v % 7 == k.
        assert_eq!(x(&format!("q{p}"), "r4"), Some(Value::Int32(249)));
        assert_eq!(x(&format!("q{p}"), "r0"), Some(Value::Int32(245)));
    }
}

#[test]
fn endpoint_requests_are_signed_with_the_account_key() {
    let server = InProcess::start();
    let endpoint = server.endpoint.as_str();
    let good = format!("devstoreaccount1:{}", tableq_server::DEV_ACCOUNT_KEY);
    let out = import(
        &[
            "--table",
            "people",
            "--endpoint",
            endpoint,
            "--account",
            &good,
        ],
        &lines(1, 3, 1),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Another key for the same account: the server refuses the first request.
    let wrong = "devstoreaccount1:d3Jvbmcga2V5IHdyb25nIGtleQ==";
    let out = import(
        &[
            "--table",
            "other",
            "--endpoint",
            endpoint,
            "--account",
            wrong,
        ],
        &lines(1, 3, 1),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("AuthenticationFailed"),
        "{}",
        stderr(&out)
    );
    assert!(
        server.backend.table("other").is_err(),
        "nothing was created"
    );

    // A key of another account than the endpoint's, and a malformed --account.
    for (account, says) in [
        (
            "someone:d3Jvbmcga2V5",
            "give --account devstoreaccount1:KEY",
        ),
        ("devstoreaccount1", "want NAME:BASE64KEY"),
        ("devstoreaccount1:not base64!", "not base64"),
    ] {
        let out = import(
            &[
                "--table",
                "people",
                "--endpoint",
                endpoint,
                "--account",
                account,
            ],
            &lines(1, 3, 1),
        );
        assert_eq!(out.status.code(), Some(2), "{account}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{account}: {}", stderr(&out));
    }
}

/// Lines are decoded in parallel batches of 1 024 and handed on in order: rejections keep
/// their line numbers across batches, a duplicate key in a later batch meets the first as
/// an existing entity, and a line that cannot be read (not UTF-8) stops the run with every
/// line before it loaded, however far into its batch it lies.
#[test]
fn data_mode_keeps_line_order_across_decode_batches() {
    let tmp = TempDir::new("batches");
    let mut bytes = Vec::new();
    for i in 1..=3000u32 {
        let line = match i {
            1500 => "not json".to_owned(),
            2100 => "{\"PartitionKey\":\"p\",\"RowKey\":\"r00007\",\"X\":-1}".to_owned(),
            _ => format!("{{\"PartitionKey\":\"p\",\"RowKey\":\"r{i:05}\",\"X\":{i}}}"),
        };
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(b"{\"PartitionKey\":\"p\",\"RowKey\":\"\xff\"}\n");
    bytes.extend_from_slice(b"{\"PartitionKey\":\"p\",\"RowKey\":\"after\"}\n");
    let path = tmp.0.join("batches.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let data = dir_arg(&tmp.0);
    let out = import(
        &["--table", "rows", path.to_str().unwrap(), "--data", &data],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_rejections(
        &out,
        &[
            "rejected: line 1500: InvalidInput: ",
            "rejected: line 2100: EntityAlreadyExists: ",
        ],
    );
    let err = stderr(&out);
    assert!(err.contains("2998 loaded, 2 rejected"), "{err}");
    assert!(
        err.contains("error: cannot read") && err.contains("line 3001"),
        "{err}"
    );
    let store = DurableBackend::open(&data).unwrap();
    let first = store
        .get("rows", "p", "r00007")
        .unwrap()
        .expect("r00007 loaded");
    assert_eq!(first.get("X").map(|v| v.to_owned()), Some(Value::Int32(7)));
    assert!(store.get("rows", "p", "r03000").unwrap().is_some());
    assert!(store.get("rows", "p", "r01500").unwrap().is_none());
    assert!(store.get("rows", "p", "after").unwrap().is_none());
    store.close().unwrap();
}
