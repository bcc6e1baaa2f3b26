//! The backend suite and the durable suite on the durable engine, plus what only a durable
//! engine has: reopening, block splits and merges seen through the contract, open errors
//! (locked, unusable directory, foreign or damaged files).

use crate::suite;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tableq_store::{Backend, DurableBackend, DurableOptions};

/// Small blocks, so that the suite's small tables span many blocks and exercise splits,
/// merges and cross-block scans.
fn small_blocks() -> DurableOptions {
    DurableOptions::default()
        .with_block_limits(4, 512)
        .with_cache_bytes(16 << 20)
}

fn open(dir: &Path, options: &DurableOptions) -> Arc<dyn Backend> {
    Arc::new(DurableBackend::open_with(dir, options.clone()).expect("open the data directory"))
}

fn fixture_with(options: DurableOptions) -> suite::Fixture {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path: PathBuf = dir.path().join("data");
    let backend = open(&path, &options);
    suite::Fixture::reopenable(backend, move || open(&path, &options), dir)
}

fn fixture() -> suite::Fixture {
    fixture_with(small_blocks())
}

mod small_blocks {
    use super::*;
    backend_suite!(fixture);
    durable_suite!(fixture);
}

mod default_blocks {
    use super::*;
    fn fixture() -> suite::Fixture {
        fixture_with(DurableOptions::default().with_cache_bytes(16 << 20))
    }
    backend_suite!(fixture);
    durable_suite!(fixture);
}

/// Memtables flushed into redb after every write (by the background thread, while the
/// next writes queue): every read meets memtables and blocks in every proportion.
mod tiny_memtable {
    use super::*;
    fn fixture() -> suite::Fixture {
        fixture_with(small_blocks().with_memtable_bytes(1))
    }
    backend_suite!(fixture);
    durable_suite!(fixture);
}

/// The contract holds in both durability modes (the default is the fsync interval).
mod fsync_always {
    use super::*;
    fn fixture() -> suite::Fixture {
        fixture_with(small_blocks().with_fsync(tableq_store::FsyncPolicy::Always))
    }
    backend_suite!(fixture);
    durable_suite!(fixture);
}

// ---------------------------------------------------------------------------------------
// Opening: every unusable data directory is a clear, typed error.

use tableq_model::{Entity, Value};
use tableq_store::{OpenError, StoreError, WriteOp};

fn entity(pk: &str, rk: &str, v: i32) -> Entity {
    let mut e = Entity::new(pk, rk);
    e.set("V", Value::Int32(v));
    e
}

#[test]
fn a_second_open_in_this_process_is_locked_out_until_close() {
    let dir = tempfile::tempdir().unwrap();
    let first = DurableBackend::open(dir.path()).unwrap();
    let err = DurableBackend::open(dir.path()).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("in use"), "{err}");
    first.close().unwrap();
    let second = DurableBackend::open(dir.path()).unwrap();
    drop(second);
    // Dropping without `close` releases the lock too.
    DurableBackend::open(dir.path()).unwrap();
}

#[test]
fn another_process_holding_the_directory_locks_it_out() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    // The other process: `tests/bin/lock_holder.rs`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq-store-lock-holder"))
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the lock holder");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let held = lines.any(|line| line.is_ok_and(|l| l.contains("tableq-lock-held")));
    assert!(held, "the child did not open the directory");
    let err = DurableBackend::open(dir.path()).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }), "{err}");
    drop(child.stdin.take());
    lines.for_each(drop);
    assert!(child.wait().unwrap().success());
    DurableBackend::open(dir.path()).expect("free once the other process exited");
}

#[test]
fn a_file_in_place_of_the_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let err = DurableBackend::open(&file).unwrap_err();
    assert!(matches!(err, OpenError::NotADirectory { .. }), "{err}");
    assert_eq!(err.path(), file);
    let err = DurableBackend::open(file.join("sub")).unwrap_err();
    assert!(matches!(err, OpenError::CreateDirectory { .. }), "{err}");
}

#[test]
fn missing_directories_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a").join("b").join("data");
    let store = DurableBackend::open(&deep).unwrap();
    assert!(deep.join(tableq_store::durable::DATA_FILE).is_file());
    assert!(store.describe().contains("durable"));
}

#[cfg(target_os = "linux")]
#[test]
fn unwritable_directories_are_reported() {
    // sysfs refuses new files and directories even to root (which ignores permissions, so
    // a read-only mode would not do); a sandbox without sysfs cannot run this check.
    if !std::path::Path::new("/sys/kernel").is_dir() {
        eprintln!("sysfs is not mounted: nothing to check");
        return;
    }
    let err = DurableBackend::open("/sys/kernel").unwrap_err();
    assert!(matches!(err, OpenError::NotWritable { .. }), "{err}");
    assert!(err.to_string().contains("not writable"), "{err}");
    let err = DurableBackend::open("/sys/tableq-data").unwrap_err();
    assert!(matches!(err, OpenError::CreateDirectory { .. }), "{err}");
}

#[test]
fn garbage_and_foreign_files_are_not_tableq_data() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(tableq_store::durable::DATA_FILE);
    std::fs::write(
        &file,
        b"this is not a database, just some text that is long enough",
    )
    .unwrap();
    let err = DurableBackend::open(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            OpenError::NotTableqData { .. } | OpenError::Corrupt { .. }
        ),
        "{err}"
    );
    // A redb database of another program.
    std::fs::remove_file(&file).unwrap();
    {
        let db = redb::Database::create(&file).unwrap();
        let txn = db.begin_write().unwrap();
        let def: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("other");
        txn.open_table(def).unwrap().insert("k", 1).unwrap();
        txn.commit().unwrap();
    }
    let err = DurableBackend::open(dir.path()).unwrap_err();
    assert!(matches!(err, OpenError::NotTableqData { .. }), "{err}");
    assert!(err.to_string().contains("another program"), "{err}");
    // A directory where the data file should be.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let err = DurableBackend::open(dir.path()).unwrap_err();
    assert!(matches!(err, OpenError::NotTableqData { .. }), "{err}");
}

#[test]
fn another_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    DurableBackend::open(dir.path()).unwrap().close().unwrap();
    let file = dir.path().join(tableq_store::durable::DATA_FILE);
    {
        let db = redb::Database::open(&file).unwrap();
        let txn = db.begin_write().unwrap();
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("tableq_meta");
        txn.open_table(meta).unwrap().insert("format", 99).unwrap();
        txn.commit().unwrap();
    }
    let err = DurableBackend::open(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            OpenError::IncompatibleFormat {
                found: 99,
                supported: tableq_store::durable::FORMAT_VERSION,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_damaged_file_is_reported_when_verified() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = DurableBackend::open(dir.path()).unwrap();
        store.create_table("t1x").unwrap();
        let ops = (0..2000)
            .map(|i| WriteOp::Insert {
                entity: entity("p", &format!("r{i:05}"), i),
            })
            .collect();
        store.write_batch("t1x", ops).unwrap();
        store.close().unwrap();
    }
    let file = dir.path().join(tableq_store::durable::DATA_FILE);
    let mut bytes = std::fs::read(&file).unwrap();
    // Flip bytes in the middle of the file, past redb's header.
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 4096] {
        *b ^= 0x5A;
    }
    std::fs::write(&file, &bytes).unwrap();
    let options = DurableOptions::default().with_verify_on_open(true);
    let err = DurableBackend::open_with(dir.path(), options).unwrap_err();
    assert!(matches!(err, OpenError::Corrupt { .. }), "{err}");
}

// ---------------------------------------------------------------------------------------
// Lifecycle and group commit.

#[test]
fn closed_backends_refuse_work_and_close_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = DurableBackend::open(dir.path()).unwrap();
    store.create_table("t1x").unwrap();
    store.close().unwrap();
    store.close().unwrap();
    assert!(matches!(store.tables().unwrap_err(), StoreError::Closed));
    assert!(matches!(
        store.get("t1x", "p", "r").unwrap_err(),
        StoreError::Closed
    ));
    let err = store
        .write(
            "t1x",
            WriteOp::Insert {
                entity: entity("p", "r", 1),
            },
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Closed));
    assert!(matches!(
        store.create_table("t2x").unwrap_err(),
        StoreError::Closed
    ));
}

#[test]
fn concurrent_writers_are_all_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DurableBackend::open_with(dir.path(), small_blocks()).unwrap());
    store.create_table("many").unwrap();
    let written: Vec<(String, String, tableq_model::DateTime)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let store = store.clone();
                s.spawn(move || {
                    (0..40)
                        .map(|i| {
                            let (pk, rk) = (format!("p{}", i % 3), format!("t{t}-{i:03}"));
                            let w = store
                                .write(
                                    "many",
                                    WriteOp::Insert {
                                        entity: entity(&pk, &rk, i),
                                    },
                                )
                                .unwrap();
                            (pk, rk, w.timestamp)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    drop(store);
    let store = DurableBackend::open(dir.path()).unwrap();
    for (pk, rk, t) in &written {
        let got = store
            .get("many", pk, rk)
            .unwrap()
            .expect("acknowledged write is there");
        assert_eq!(got.timestamp(), Some(*t), "with its acknowledged ETag");
    }
    assert_eq!(
        suite::query_all(&store, "many", &suite::plan("", None, None)).len(),
        320
    );
}

#[test]
fn big_tables_keep_order_and_property_names_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let options = small_blocks();
    {
        let store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
        store.create_table("big").unwrap();
        // Keys inserted out of order, in several partitions, with per-row property names.
        let mut ops = Vec::new();
        for i in (0..600).rev() {
            let mut e = entity(
                &format!("p{}", i % 5),
                &format!("r{:04}", (i * 7919) % 600),
                i,
            );
            e.set(format!("N{}", i % 17), Value::Boolean(true));
            ops.push(WriteOp::InsertOrReplace { entity: e });
        }
        store.write_batch("big", ops).unwrap();
        store.close().unwrap();
    }
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    let all = suite::query_all(&store, "big", &suite::plan("", None, None));
    assert_eq!(all.len(), 600);
    assert!(all.windows(2).all(|w| {
        tableq_exec::compare_keys(
            w[0].partition_key(),
            w[0].row_key(),
            w[1].partition_key(),
            w[1].row_key(),
        )
        .is_lt()
    }));
    let n5 = suite::query_all(&store, "big", &suite::plan("N5 eq true", None, None));
    assert_eq!(n5.len(), 600 / 17 + usize::from(600 % 17 > 5));
}
