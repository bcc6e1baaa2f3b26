//! Trust in the durable store (issue 28), end to end through `tableq serve` and
//! `tableq check`:
//! * a data file damaged while the server was stopped (bytes of a string flipped, which
//!   no structural check sees) answers 500 `InternalError` for every read of the damaged
//!   row and every query through its block — never 200 with the wrong value — and logs
//!   the table and the key range (a point get of another row of the block, which passes
//!   its own checksum, is served);
//!   `tableq check` lists the block and exits 1;
//! * a write-ahead log deleted or cut after a crash (`kill -9`) refuses the start (exit 2,
//!   naming the log, what it should hold and what it holds) unless `--accept-log-loss`,
//!   which starts and warns; a torn record after the last one starts, with a warning
//!   naming its offset and size.
//!
//! Servers are started on free ports and stopped by pid.

use crate::robust_support;

use robust_support::{Client, Request, ServeProcess, TempDir, entity_target};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TABLE: &str = "trust";

/// Inserts `p`/`r000`..`r{n-1}` with `S = "value-of-rNNN"` (one block: a partition's rows
/// share blocks of up to 256), and `q`/`r000` (a block of its own).
fn insert_rows(client: &Client, n: usize) {
    client.create_table(TABLE);
    let other = r#"{"PartitionKey":"q","RowKey":"r000","S":"other"}"#;
    let r = client.call(Request::new("POST", Client::target(TABLE)).json(other));
    assert_eq!(r.status, 201, "insert q/r000: {}", r.text());
    for i in 0..n {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"r{i:03}","S":"value-of-r{i:03}"}}"#);
        let r = client.call(Request::new("POST", Client::target(TABLE)).json(&body));
        assert_eq!(r.status, 201, "insert r{i:03}: {}", r.text());
    }
}

/// Flips one bit of every copy of `needle` in the data file ('v' becomes 'w').
fn flip(dir: &TempDir, needle: &[u8]) {
    let path = dir.0.join("tableq.redb");
    let mut bytes = std::fs::read(&path).expect("read the data file");
    let mut found = 0;
    let mut at = 0;
    while let Some(i) = bytes[at..].windows(needle.len()).position(|w| w == needle) {
        bytes[at + i] ^= 0x01;
        found += 1;
        at += i + needle.len();
    }
    assert!(found > 0, "{needle:?} is not in the data file");
    std::fs::write(&path, bytes).expect("write the data file");
}

/// Runs `tableq <args>` to its end (killed by pid after 30 s): exit code, stdout, stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tableq");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = Command::new("kill")
                .args(["-KILL", &child.id().to_string()])
                .status();
            let out = child.wait_with_output().expect("output");
            panic!(
                "tableq {args:?} still runs after 30 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_damaged_block_answers_500_and_is_listed_by_check() {
    let dir = TempDir::new("trust-damage");
    let server = ServeProcess::start(&["--data", dir.path(), "--no-auth"]);
    insert_rows(&Client::new(server.port).unsigned(), 40);
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0), "a clean stop");
    let (code, out, err) = run(&["check", "--data", dir.path()]);
    assert_eq!(code, Some(0), "clean before the damage: {out}{err}");

    flip(&dir, b"value-of-r013");
    // The offline check lists the block and exits 1.
    let (code, out, err) = run(&["check", "--data", dir.path()]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("damaged block:")
            && out.contains("table `trust`")
            && out.contains("PartitionKey \"p\"")
            && out.contains("checksum"),
        "{out}"
    );
    let (code, out, _) = run(&["check", "--data", dir.path(), "--json"]);
    assert_eq!(code, Some(1));
    let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(report["clean"], false);
    let blocks = report["damaged_blocks"].as_array().expect("damaged_blocks");
    assert_eq!(blocks.len(), 1, "{out}");
    assert_eq!(blocks[0]["table"], TABLE);
    assert!(
        blocks[0]["first_row_key"].as_str().unwrap() <= "r013",
        "{out}"
    );

    // The server answers 500 for the damaged block, never the flipped value.
    let server = ServeProcess::start(&["--data", dir.path(), "--no-auth"]);
    let client = Client::new(server.port).unsigned();
    let get = |pk: &str, rk: &str| {
        client.call(
            Request::new("GET", entity_target(TABLE, pk, rk))
                .header("Accept", "application/json;odata=nometadata"),
        )
    };
    let damaged = get("p", "r013");
    assert_eq!(damaged.status, 500, "{}", damaged.text());
    assert_eq!(damaged.error_code().as_deref(), Some("InternalError"));
    assert!(!damaged.text().contains("walue"), "{}", damaged.text());
    assert_eq!(get("q", "r000").status, 200, "other blocks are served");
    // A row beside the damaged one passed its own checksum: it is served as stored.
    let same_block = get("p", "r012");
    assert_eq!(same_block.status, 200, "{}", same_block.text());
    assert!(
        same_block.text().contains("value-of-r012"),
        "{}",
        same_block.text()
    );
    let query = client.call(
        Request::new("GET", Client::target(&format!("{TABLE}()")))
            .header("Accept", "application/json;odata=nometadata"),
    );
    assert_eq!(query.status, 500, "{}", query.text());
    assert!(!query.text().contains("walue"));
    let (_, log) = server.terminate();
    assert!(
        log.contains("table `trust`") && log.contains("PartitionKey \"p\""),
        "the log names the table and key range: {log}"
    );
}

/// A data directory served under `--fsync always`, written to, and killed: the log holds
/// every write (fsynced), the data file none of them.
fn crashed_directory(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    let server = ServeProcess::start(&["--data", dir.path(), "--no-auth", "--fsync", "always"]);
    insert_rows(&Client::new(server.port).unsigned(), 30);
    server.kill9();
    dir
}

#[test]
fn a_deleted_or_cut_log_refuses_the_start_unless_the_loss_is_accepted() {
    let dir = crashed_directory("trust-log");
    let log = dir.0.join("tableq.wal");
    let whole = std::fs::read(&log).expect("the log");
    for (what, cut) in [
        ("deleted", None),
        ("cut to 0", Some(0)),
        ("cut to its header", Some(64)),
    ] {
        match cut {
            None => std::fs::remove_file(&log).expect("delete the log"),
            Some(n) => std::fs::write(&log, &whole[..n]).expect("cut the log"),
        }
        let (code, out, err) = run(&["serve", "--port", "0", "--data", dir.path(), "--no-auth"]);
        assert_eq!(code, Some(2), "{what}: {out}{err}");
        assert!(
            err.contains("tableq.wal") && err.contains("--accept-log-loss"),
            "{what}: {err}"
        );
    }
    // The intact log, with a torn record after its last one (a crash during a write that
    // was never acknowledged): starts with every write, and warns of the tail it discards.
    let mut torn = whole.clone();
    torn.extend_from_slice(&[40, 0, 0, 0, 7, 7, 7]);
    std::fs::write(&log, &torn).expect("restore the log");
    let server = ServeProcess::start(&["--data", dir.path(), "--no-auth"]);
    let rows = Client::new(server.port)
        .unsigned()
        .query_all(TABLE, "", 1000);
    assert_eq!(rows.len(), 31);
    let (_, err) = server.terminate();
    let offset = format!("7 bytes at offset {}", whole.len());
    assert!(err.contains("torn tail") && err.contains(&offset), "{err}");
    // Accepted: starts on the checkpoint alone and says what was lost.
    let dir = crashed_directory("trust-accept");
    std::fs::remove_file(dir.0.join("tableq.wal")).expect("delete the log");
    let server = ServeProcess::start(&["--data", dir.path(), "--no-auth", "--accept-log-loss"]);
    let (_, err) = server.terminate();
    assert!(
        err.contains("missing") && err.contains("acknowledged writes are lost"),
        "{err}"
    );
}
