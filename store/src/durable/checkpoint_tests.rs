//! Checkpoints beside the writer (`writer/checkpoint.rs`, `wal/tail.rs`): writes go on
//! while the durable commit runs, the log keeps exactly the records after the point, a
//! crash at each step loses nothing, and a table changed during a checkpoint's flush makes
//! it a plain flush.

use super::format::log::{self as log_format, HEADER_LEN, WAL_FILE};
use super::tests::{commit_by, insert, keep_log, open_files, values};
use super::*;
use crate::op::WriteOp;
use std::sync::{Condvar, Mutex};
use tableq_model::Value;

fn put(rk: &str, v: i32) -> WriteOp {
    let mut e = Entity::new("p", rk);
    e.set("V", Value::Int32(v));
    WriteOp::InsertOrReplace { entity: e }
}

fn rk(i: i32) -> String {
    format!("r{i:02}")
}

/// The data file and the log as they are now (a `kill -9` here).
fn files(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(dir.join(DATA_FILE)).unwrap(),
        std::fs::read(dir.join(WAL_FILE)).unwrap(),
    )
}

/// The log's first record number and its records' numbers.
fn log_numbers(log: &[u8]) -> (u64, Vec<u64>) {
    let contents = log_format::read(log, 1).unwrap();
    (
        contents.base_lsn,
        contents.records.iter().map(|(lsn, _)| *lsn).collect(),
    )
}

/// A store that checkpoints and flushes only when asked, in slices of one block, with
/// blocks of two rows, and table `t1x`.
fn sliced_store() -> (tempfile::TempDir, DurableBackend) {
    let dir = tempfile::tempdir().unwrap();
    let options = keep_log(FsyncPolicy::default())
        .with_block_limits(2, 1 << 20)
        .with_memtable_bytes(usize::MAX)
        .with_flush_slice(std::time::Duration::ZERO);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("t1x").unwrap();
    (dir, store)
}

fn release(hold: &writer::Hold) {
    let (lock, wake) = &**hold;
    *lock.lock().unwrap() = false;
    wake.notify_all();
}

/// A checkpoint's flush in slices, its commit held on its thread while the writer commits
/// more writes (they do not wait for it), then landed: the log keeps exactly the records
/// after the point; a copy of the files taken while the commit was held, one taken after
/// the commit with the unfinished copy of the log's tail beside it, and one taken after
/// the log was cut each open with every acknowledged value.
#[test]
fn writes_go_on_beside_a_checkpoint_and_the_log_keeps_what_follows_its_point() {
    let (dir, store) = sliced_store();
    for i in 0..20 {
        store.write("t1x", insert(&rk(i), i)).unwrap();
    }
    let hold: writer::Hold = Arc::new((Mutex::new(true), Condvar::new()));
    let (held, committed, landed, point) = store.gate.with_writer(|w| {
        w.hold_checkpoints = Some(hold.clone());
        let point = w.wal.last_lsn();
        w.begin_checkpoint().unwrap();
        // The flush of twenty rows in blocks of two: slices, with a write between two.
        commit_by(w, put(&rk(3), 300));
        while w.flushing.is_some() {
            w.flush_slice().unwrap();
        }
        assert!(
            w.checkpointing.is_some(),
            "the commit runs beside the writer"
        );
        // Writes while the commit is held: each is acknowledged at once.
        for i in 15..30 {
            commit_by(w, put(&rk(i), 1000 + i));
        }
        let held = files(dir.path());
        release(&hold);
        w.checkpointing.as_mut().unwrap().settle();
        let committed = files(dir.path());
        // The copy of the tail the thread made, beside the log as a crash leaves it.
        let tail = std::fs::read(wal::tail_path(&dir.path().join(WAL_FILE))).unwrap();
        assert!(tail.len() as u64 > HEADER_LEN, "the thread copied the tail");
        commit_by(w, put(&rk(31), 31));
        assert!(w.land_checkpoint(false).unwrap());
        assert!(w.checkpointing.is_none());
        let landed = files(dir.path());
        (held, (committed, tail), landed, point)
    });
    assert!(!wal::tail_path(&dir.path().join(WAL_FILE)).exists());
    // The log now begins after the point and holds the 17 writes made after it.
    let (base, numbers) = log_numbers(&landed.1);
    assert_eq!(base, point + 1);
    assert_eq!(numbers, (point + 1..=point + 17).collect::<Vec<_>>());
    assert_eq!(store.write_log_stats().checkpoints, 1);

    let keys: Vec<String> = (0..32).map(rk).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let want: Vec<Option<i32>> = (0..32)
        .map(|i| match i {
            3 => Some(300),
            15..30 => Some(1000 + i),
            31 => Some(31),
            30 => None,
            _ => Some(i),
        })
        .collect();
    assert_eq!(values(&store, &keys), want);
    store.close().unwrap();

    // A crash while the commit was held: the log's records after the last checkpoint.
    let mut want_held = want.clone();
    want_held[31] = None;
    let (_d, reopened) = open_files(&held.0, &held.1).unwrap();
    assert_eq!(values(&reopened, &keys), want_held);
    drop(reopened);
    // A crash after the commit, before the log was cut: the unfinished copy is removed.
    let ((data, log), tail) = committed;
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join(DATA_FILE), &data).unwrap();
    std::fs::write(d.path().join(WAL_FILE), &log).unwrap();
    std::fs::write(wal::tail_path(&d.path().join(WAL_FILE)), &tail).unwrap();
    let reopened = DurableBackend::open_with(d.path(), keep_log(FsyncPolicy::default())).unwrap();
    assert_eq!(values(&reopened, &keys), want_held);
    assert!(!wal::tail_path(&d.path().join(WAL_FILE)).exists());
    drop(reopened);
    // A crash after the log was cut.
    let (_d, reopened) = open_files(&landed.0, &landed.1).unwrap();
    assert_eq!(values(&reopened, &keys), want);
}

/// A table written and deleted between the slices of a checkpoint's flush: the deletion's
/// commit holds a record after the point, so the flush ends as a plain one (no commit
/// beside the writer, the log whole) — a commit naming the point would hold the deletion,
/// and a replay from the point would write into a table the data file no longer has. The
/// next checkpoint makes it, and a crash after either opens with every value.
#[test]
fn a_table_deleted_during_a_checkpoints_flush_makes_it_a_plain_flush() {
    let (dir, store) = sliced_store();
    store.create_table("t2x").unwrap();
    for i in 0..10 {
        store.write("t1x", insert(&rk(i), i)).unwrap();
    }
    let landed = store.gate.with_writer(|w| {
        // Blocks to fold into (a slice ends at a block's end), then every row replaced.
        w.checkpoint().unwrap();
        for i in 0..10 {
            commit_by(w, put(&rk(i), 100 + i));
        }
        let log_before = std::fs::read(dir.path().join(WAL_FILE)).unwrap();
        w.begin_checkpoint().unwrap();
        assert!(w.flushing.is_some());
        let (reply, written) = oneshot::channel();
        let (deleted, answer) = oneshot::channel();
        w.commit(vec![
            writer::Request::Write {
                table: "t2x".into(),
                ops: crate::check_ops(vec![insert("x", 1)]),
                reply,
            },
            writer::Request::DeleteTable {
                name: "t2x".into(),
                reply: deleted,
            },
        ]);
        written.recv().unwrap().unwrap();
        answer.recv().unwrap().unwrap();
        commit_by(w, put(&rk(20), 20));
        while w.flushing.is_some() {
            w.flush_slice().unwrap();
        }
        let beside = w.checkpointing.is_some();
        w.land_checkpoint(true).unwrap();
        // A crash now: the data file and its log agree.
        let (data, log) = files(dir.path());
        let (_d, reopened) = open_files(&data, &log).unwrap();
        assert!(reopened.get("t2x", "p", "x").is_err(), "t2x is deleted");
        assert_eq!(values(&reopened, &["r03", "r20"]), [Some(103), Some(20)]);
        drop(reopened);
        assert!(!beside, "a plain flush: no commit beside");
        assert!(log.starts_with(&log_before), "the log is whole");
        // The next checkpoint: nothing left in the memtables but the write after.
        w.begin_checkpoint().unwrap();
        while w.flushing.is_some() {
            w.flush_slice().unwrap();
        }
        assert!(w.land_checkpoint(true).unwrap());
        files(dir.path())
    });
    let (_, numbers) = log_numbers(&landed.1);
    assert!(
        numbers.is_empty(),
        "everything was before the point: {numbers:?}"
    );
    let (_d, reopened) = open_files(&landed.0, &landed.1).unwrap();
    assert!(reopened.get("t2x", "p", "x").is_err(), "t2x is deleted");
    let keys: Vec<String> = (0..10).chain([20]).map(rk).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let want: Vec<Option<i32>> = (100..110).chain([20]).map(Some).collect();
    assert_eq!(values(&reopened, &keys), want);
}

/// Under a steady stream of writes and checkpoints due every 20 ms, checkpoints are made
/// (beside the writer) and a reopen has every value — with the log synced in the
/// background and before every reply.
#[test]
fn checkpoints_due_by_time_keep_up_with_steady_writes() {
    for fsync in [FsyncPolicy::default(), FsyncPolicy::Always] {
        steady_writes_under_checkpoints(fsync);
    }
}

fn steady_writes_under_checkpoints(fsync: FsyncPolicy) {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default()
        .with_fsync(fsync)
        .with_cache_bytes(8 << 20)
        .with_flush_interval(std::time::Duration::from_millis(5))
        .with_checkpoints(u64::MAX / 4, std::time::Duration::from_millis(20));
    let store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
    store.create_table("t1x").unwrap();
    let started = std::time::Instant::now();
    let mut i = 0;
    while started.elapsed() < std::time::Duration::from_millis(800) || i < 500 {
        store.write("t1x", put(&rk(i % 97), i)).unwrap();
        i += 1;
    }
    let stats = store.write_log_stats();
    assert!(
        stats.checkpoints >= 3,
        "{fsync}: checkpoints: {}",
        stats.checkpoints
    );
    let keys: Vec<String> = (0..97).map(rk).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let want = values(&store, &keys);
    assert!(want.iter().all(Option::is_some));
    store.close().unwrap();
    let reopened = DurableBackend::open_with(dir.path(), options).unwrap();
    assert_eq!(values(&reopened, &keys), want);
}
