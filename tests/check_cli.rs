//! `tableq check --data DIR [--json]`: exit status 0 for a clean directory, 1 for damage
//! or lost log records (each listed), 2 when the directory cannot be checked (missing,
//! held by a server) or for a usage error. The damaged-block case through a real server's
//! data file is in `tests/data_trust.rs`.

use crate::robust_support;

use robust_support::TempDir;
use std::process::Command;
use tableq_model::{Entity, Value};
use tableq_store::{Backend, DurableBackend, WriteOp};

fn check(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .arg("check")
        .args(args)
        .output()
        .expect("run tableq check");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A closed data directory with one table of 10 rows.
fn data_dir(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    let store = DurableBackend::open(&dir.0).expect("open");
    store.create_table("cli").expect("create");
    let ops = (0..10)
        .map(|i| {
            let mut e = Entity::new("p", format!("r{i}"));
            e.set("Name", Value::String(format!("name-{i}")));
            WriteOp::Insert { entity: e }
        })
        .collect();
    store.write_batch("cli", ops).expect("write");
    store.close().expect("close");
    dir
}

#[test]
fn a_clean_directory_exits_0_with_a_summary() {
    let dir = data_dir("check-clean");
    let path = dir.path();
    let (code, out, err) = check(&["--data", path]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("checked 1 table, 1 block (10 rows)"), "{out}");
    assert!(out.contains("0 damaged blocks, 0 log problems"), "{out}");
    let (code, out, _) = check(&["--data", path, "--json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (v["clean"].as_bool(), v["rows"].as_u64()),
        (Some(true), Some(10))
    );
}

#[test]
fn flipped_bytes_and_a_missing_log_exit_1_with_each_problem() {
    let dir = data_dir("check-damage");
    let path = dir.path();
    let file = dir.0.join("tableq.redb");
    let mut bytes = std::fs::read(&file).expect("read");
    let at = bytes
        .windows(6)
        .position(|w| w == b"name-7")
        .expect("the value is in the file");
    bytes[at..at + 6].copy_from_slice(b"nbme-7");
    std::fs::write(&file, bytes).expect("write");
    std::fs::remove_file(dir.0.join("tableq.wal")).expect("delete the log");
    let (code, out, err) = check(&["--data", path]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("damaged block:") && out.contains("table `cli`") && out.contains("\"r0\""),
        "{out}"
    );
    assert!(out.contains("log:") && out.contains("is missing"), "{out}");
    assert!(out.contains("1 damaged block, 1 log problem"), "{out}");
}

#[test]
fn an_unusable_directory_or_usage_exits_2() {
    let missing = TempDir::new("check-missing");
    let (code, _, err) = check(&["--data", missing.path()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot check"), "{err}");
    // Held by a server (here: an open store of this process).
    let dir = data_dir("check-locked");
    let store = DurableBackend::open(&dir.0).expect("open");
    let (code, _, err) = check(&["--data", dir.path()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("in use"), "{err}");
    drop(store);
    let (code, _, _) = check(&[]);
    assert_eq!(code, Some(2), "--data is required");
}
