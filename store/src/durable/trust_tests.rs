//! Tests of what the durable engine promises about damage (issue 28, "Trust"): a damaged
//! row is never served as data (checksums on every read path, `format/block.rs`: a scan
//! fails on any damage in a block it reads, a point get on damage in the directory or its
//! own row), data files of format 3 (one checksum a block) are still read, a log that
//! does not reach as far as the data file says refuses to open (`log_check.rs`), damage is
//! reported under the right file's name, and `check_data_dir` finds all of it.

use super::tests::{crashed_with, insert, keep_log, open_files, open_files_with, values};
use super::*;
use crate::error::Damage;
use crate::op::WriteOp;
use tableq_exec::{EntitySource, Executor, Key, PageOptions, Scan};
use tableq_model::{EntityView, Value};
use tableq_planner::plan::{KeyRange, KeySet, Plan};
use tableq_planner::predicate::Predicate;

const TABLE: &str = "Trust1";

/// A closed data directory of table [`TABLE`] with rows `r000`..`r039` of partition `p`
/// (4 rows a block), each with the string `value-of-rNNN`.
fn stored_rows() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default().with_block_limits(4, 64 * 1024);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table(TABLE).unwrap();
    let ops = (0..40)
        .map(|i| {
            let mut e = Entity::new("p", format!("r{i:03}"));
            e.set("S", Value::String(format!("value-of-r{i:03}")));
            WriteOp::Insert { entity: e }
        })
        .collect();
    store.write_batch(TABLE, ops).unwrap();
    store.close().unwrap();
    dir
}

/// Changes one letter of every copy of `needle` in the data file (a flip that keeps the
/// string valid UTF-8, which no structural check can see); returns how many copies.
fn flip_in_data_file(dir: &Path, needle: &[u8]) -> usize {
    let path = dir.join(DATA_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut copies = 0;
    let mut at = 0;
    while let Some(i) = bytes[at..].windows(needle.len()).position(|w| w == needle) {
        bytes[at + i] ^= 0x01; // 'v' -> 'w'
        copies += 1;
        at += i + needle.len();
    }
    std::fs::write(&path, bytes).unwrap();
    copies
}

fn damage_of(e: StoreError) -> Damage {
    match e {
        StoreError::Damaged(d) => *d,
        other => panic!("expected Damaged, got {other:?}"),
    }
}

fn all() -> Plan {
    Plan {
        ranges: KeySet::all(),
        residual: Predicate::TRUE,
        select: None,
        top: None,
    }
}

#[test]
fn a_damaged_value_is_never_served_by_any_read_path() {
    let dir = stored_rows();
    assert!(flip_in_data_file(dir.path(), b"value-of-r013") > 0);
    let store = DurableBackend::open(dir.path()).unwrap();
    // Rows of other blocks read as stored.
    let fine = store.get(TABLE, "p", "r001").unwrap().unwrap();
    assert_eq!(
        fine.custom("S"),
        Some(&Value::String("value-of-r001".into()))
    );
    // A point get of the damaged block: the typed error naming the table and key range.
    let d = damage_of(store.get(TABLE, "p", "r013").unwrap_err());
    assert_eq!(
        (d.table.as_str(), d.partition_key.as_str()),
        (TABLE, "p"),
        "{d}"
    );
    assert!(d.first_row_key.as_str() <= "r013", "{d}");
    assert!(d.last_row_key.as_deref() >= Some("r013"), "{d}");
    assert!(
        d.file.ends_with(DATA_FILE) && d.what.contains("checksum"),
        "{d}"
    );
    assert_eq!(
        StoreError::Damaged(Box::new(d)).code(),
        tableq_model::ErrorCode::InternalError
    );
    // Another row of the same block passed its own checksum: a point get returns it.
    let neighbour = store.get(TABLE, "p", "r012").unwrap().unwrap();
    assert_eq!(
        neighbour.custom("S"),
        Some(&Value::String("value-of-r012".into()))
    );
    // A query through the backend.
    let page = store.query(TABLE, &all(), None, &PageOptions::default(), &mut |_| {});
    assert!(matches!(page, Err(StoreError::Damaged(_))));
    let snapshot = store.snapshot(TABLE).unwrap();
    // The iterator …
    let full = KeyRange::full();
    let scan = Scan {
        range: &full,
        from: None,
        until: None,
    };
    let rows: Vec<Result<String, StoreError>> = snapshot
        .scan(scan)
        .map(|r| r.map(|row| row.row_key().to_owned()))
        .collect();
    assert!(
        rows.iter()
            .any(|r| matches!(r, Err(StoreError::Damaged(_)))),
        "the iterator ended without the damage"
    );
    assert!(
        !rows
            .iter()
            .any(|r| matches!(r, Ok(k) if k.as_str() >= "r012" && k.as_str() <= "r015")),
        "rows of the damaged block were served"
    );
    drop(snapshot);
    // … scan_each …
    let snapshot = store.snapshot(TABLE).unwrap();
    let mut values_seen = Vec::new();
    let each = snapshot.scan_each(scan, |row| {
        if let Some(v) = row.custom("S") {
            values_seen.push(v.to_owned());
        }
        std::ops::ControlFlow::Continue(())
    });
    assert!(matches!(each, Err(StoreError::Damaged(_))), "{each:?}");
    assert!(!values_seen.contains(&Value::String("walue-of-r013".into())));
    drop(snapshot);
    // … the executor over a snapshot, and EntitySource::get.
    let snapshot = store.snapshot(TABLE).unwrap();
    assert!(
        Executor::new(&snapshot)
            .execute_all(&all(), &PageOptions::default())
            .is_err()
    );
    assert!(matches!(
        EntitySource::get(&snapshot, "p", "r013"),
        Err(StoreError::Damaged(_))
    ));
    drop(snapshot);
    // A write that must read the damaged block fails rather than rewrite it.
    let mut e = Entity::new("p", "r013");
    e.set("S", Value::String("new".into()));
    let merge = store.write(
        TABLE,
        WriteOp::Merge {
            entity: e,
            if_match: crate::op::IfMatch::Any,
        },
    );
    assert!(matches!(merge, Err(StoreError::Damaged(_))));
    store.close().unwrap();
    // The offline check names the block.
    let report = check_data_dir(dir.path()).unwrap();
    assert!(!report.is_clean());
    assert_eq!(report.damaged_blocks.len(), 1, "{report:?}");
    let d = &report.damaged_blocks[0];
    assert_eq!((d.table.as_str(), d.partition_key.as_str()), (TABLE, "p"));
    assert_eq!(report.blocks, 10);
    assert_eq!(report.rows, 36);
}

#[test]
fn a_clean_directory_checks_clean_and_a_served_directory_is_refused() {
    let dir = stored_rows();
    let report = check_data_dir(dir.path()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!((report.tables, report.blocks, report.rows), (1, 10, 40));
    let store = DurableBackend::open(dir.path()).unwrap();
    let err = check_data_dir(dir.path()).expect_err("a served directory is refused");
    assert!(matches!(err, OpenError::Locked { .. }), "{err}");
    drop(store);
    let missing = tempfile::tempdir().unwrap();
    assert!(check_data_dir(missing.path()).is_err());
}

#[test]
fn a_damaged_block_met_by_the_replay_is_reported_under_the_data_file() {
    // A block whose row offsets are damaged (caught without the checksum, too), and log
    // records for its partition, which the replay folds into it.
    let dir = stored_rows();
    let path = dir.path().join(DATA_FILE);
    // The log of a write into that partition, made on an undamaged copy.
    let log = {
        let session = tempfile::tempdir().unwrap();
        std::fs::copy(&path, session.path().join(DATA_FILE)).unwrap();
        std::fs::copy(dir.path().join(WAL_FILE), session.path().join(WAL_FILE)).unwrap();
        let store =
            DurableBackend::open_with(session.path(), keep_log(FsyncPolicy::default())).unwrap();
        store.write(TABLE, insert("r0215", 1)).unwrap();
        let log = std::fs::read(session.path().join(WAL_FILE)).unwrap();
        drop(store);
        log
    };
    let mut durable = std::fs::read(&path).unwrap();
    let at = durable
        .windows(13)
        .position(|w| w == b"value-of-r021")
        .unwrap();
    durable[at - 40..at].iter_mut().for_each(|b| *b ^= 0xFF);
    let options = DurableOptions::default().with_memtable_bytes(1);
    let err = open_files_with(&durable, &log, options).expect_err("damaged data must not open");
    assert!(
        err.path().ends_with(DATA_FILE),
        "reported under {}: {err}",
        err.path().display()
    );
    let text = err.to_string();
    assert!(!text.contains(WAL_FILE), "{text}");
    assert!(
        text.contains("table `Trust1`") || text.contains("table id"),
        "{text}"
    );
}

#[test]
fn a_log_cut_before_its_fsynced_records_refuses_to_open() {
    let (_d, durable, log) = crashed_with(
        FsyncPolicy::Always,
        &[("a", 1)],
        &[("b", 2), ("c", 3), ("d", 4)],
    );
    // Intact, it replays everything.
    let (_e, store) = open_files(&durable, &log).unwrap();
    assert_eq!(values(&store, &["b", "d"]), [Some(2), Some(4)]);
    drop(store);
    // Cut to its header (the attack), or inside any fsynced record: refused.
    let header = HEADER_LEN as usize;
    for cut in [header, header + 10, log.len() - 1] {
        let err = open_files(&durable, &log[..cut]).expect_err("a cut log must not open");
        match &err {
            OpenError::LogTruncated {
                path,
                expected,
                found,
            } => {
                assert!(path.ends_with(WAL_FILE), "{err}");
                assert!(expected.contains("records up to number"), "{err}");
                assert!(found.contains("bytes"), "{err}");
            }
            other => panic!("cut {cut}: {other}"),
        }
    }
    // The last record damaged (fsynced under `always`): refused, not dropped.
    let mut flipped = log.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 0x20;
    let err = open_files(&durable, &flipped).expect_err("a damaged fsynced record");
    assert!(matches!(err, OpenError::LogTruncated { .. }), "{err}");
    // Accepted: what is intact is replayed.
    let accept = keep_log(FsyncPolicy::default()).with_accept_log_loss(true);
    let (_e, store) = open_files_with(&durable, &flipped, accept).unwrap();
    assert_eq!(values(&store, &["a", "c", "d"]), [Some(1), Some(3), None]);
}

#[test]
fn a_torn_unsynced_tail_still_opens() {
    // Under an interval nothing was fsynced after the writes: a torn last record is the
    // normal trace of a crash, discarded (with a warning).
    let (_d, durable, log) = crashed_with(
        FsyncPolicy::Interval(std::time::Duration::from_secs(60)),
        &[("a", 1)],
        &[("b", 2), ("c", 3)],
    );
    // (Cutting the last record would depend on whether the background fsync ran before the
    // copy: a torn record after the last one never does.)
    let mut torn = log.clone();
    torn.extend_from_slice(&[40, 0, 0, 0, 7, 7, 7]);
    let (_e, store) = open_files(&durable, &torn).unwrap();
    assert_eq!(
        values(&store, &["a", "b", "c"]),
        [Some(1), Some(2), Some(3)]
    );
}

#[test]
fn a_log_of_another_data_directory_is_refused() {
    let (_d, durable, _) = crashed_with(FsyncPolicy::default(), &[("a", 1)], &[("b", 2)]);
    let (_o, _, other_log) = crashed_with(FsyncPolicy::default(), &[("x", 1)], &[("y", 2)]);
    let err = open_files(&durable, &other_log).expect_err("another directory's log");
    assert!(matches!(err, OpenError::LogMismatch { .. }), "{err}");
    // Accepted: set aside (kept), not replayed.
    let accept = keep_log(FsyncPolicy::default()).with_accept_log_loss(true);
    let (dir, store) = open_files_with(&durable, &other_log, accept).unwrap();
    assert_eq!(values(&store, &["a", "y"]), [Some(1), None]);
    let aside = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("tableq.wal.discarded-")
        });
    assert!(aside, "the foreign log was kept aside");
}

#[test]
fn check_reports_a_missing_or_cut_log() {
    let (dir, _, _) = crashed_with(FsyncPolicy::Always, &[("a", 1)], &[("b", 2)]);
    let report = check_data_dir(dir.path()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    std::fs::remove_file(dir.path().join(WAL_FILE)).unwrap();
    let report = check_data_dir(dir.path()).unwrap();
    assert_eq!(report.log_problems.len(), 1, "{report:?}");
    assert!(report.log_problems[0].what.contains("missing"));
    std::fs::write(dir.path().join(WAL_FILE), b"").unwrap();
    let report = check_data_dir(dir.path()).unwrap();
    assert!(
        report.log_problems[0].what.contains("cut short"),
        "{report:?}"
    );
}

#[test]
fn scans_that_end_before_a_damaged_block_do_not_fail() {
    // Reads that never touch the damaged block go on (the damage is the block's alone).
    let dir = stored_rows();
    flip_in_data_file(dir.path(), b"value-of-r037");
    let store = DurableBackend::open(dir.path()).unwrap();
    let snapshot = store.snapshot(TABLE).unwrap();
    let until = Key::new("p", "r020");
    let full = KeyRange::full();
    let scan = Scan {
        range: &full,
        from: None,
        until: Some(&until),
    };
    let n = snapshot.scan(scan).filter(|r| r.is_ok()).count();
    assert_eq!(n, 20);
    snapshot.take_error().unwrap();
}

/// Rewrites every block of a closed data directory in the layout of data format 3 (one
/// checksum over the whole block) and marks the file format 3: a directory as an older
/// build left it.
fn as_data_format_3(dir: &Path) {
    use super::format::block::{BlockView, build_block_whole};
    use super::format::tables::{META, META_FORMAT, ROWS};
    use redb::{ReadableDatabase, ReadableTable};
    use std::borrow::Cow;
    let db = redb::Database::open(dir.join(DATA_FILE)).unwrap();
    let blocks: Vec<(Vec<u8>, Vec<u8>)> = {
        let txn = db.begin_read().unwrap();
        let rows = txn.open_table(ROWS).unwrap();
        rows.iter()
            .unwrap()
            .map(|item| {
                let (key, value) = item.unwrap();
                let view = BlockView::parse(value.value()).unwrap();
                let rows: Vec<Cow<'_, [u8]>> = (0..view.len())
                    .map(|i| Cow::Borrowed(view.row(i).bytes()))
                    .collect();
                let old = build_block_whole(view.partition_key(), &rows);
                (key.value().to_vec(), old)
            })
            .collect()
    };
    let txn = db.begin_write().unwrap();
    {
        let mut rows = txn.open_table(ROWS).unwrap();
        for (key, block) in &blocks {
            rows.insert(key.as_slice(), block.as_slice()).unwrap();
        }
        txn.open_table(META)
            .unwrap()
            .insert(META_FORMAT, 3)
            .unwrap();
    }
    txn.commit().unwrap();
}

/// How many rows a query of the whole table returns.
fn rows_queried(store: &DurableBackend) -> usize {
    let mut seen = 0;
    store
        .query(TABLE, &all(), None, &PageOptions::default(), &mut |_| {
            seen += 1
        })
        .unwrap();
    seen
}

fn stored_format(dir: &Path) -> u64 {
    use super::format::tables::{META, META_FORMAT};
    use redb::ReadableDatabase;
    let db = redb::Database::open(dir.join(DATA_FILE)).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    meta.get(META_FORMAT).unwrap().unwrap().value()
}

#[test]
fn a_data_directory_of_format_3_is_read_marked_4_and_rewritten_block_by_block() {
    let dir = stored_rows();
    as_data_format_3(dir.path());
    assert_eq!(stored_format(dir.path()), 3);
    let store = DurableBackend::open(dir.path()).unwrap();
    // Every row reads as stored, by point get and by query.
    for i in [0, 13, 39] {
        let e = store.get(TABLE, "p", &format!("r{i:03}")).unwrap().unwrap();
        assert_eq!(
            e.custom("S"),
            Some(&Value::String(format!("value-of-r{i:03}")))
        );
    }
    assert_eq!(rows_queried(&store), 40);
    // A write rewrites its block in the new layout, beside blocks of the old one.
    let mut e = Entity::new("p", "r013");
    e.set("S", Value::String("rewritten".into()));
    store
        .write(TABLE, WriteOp::InsertOrReplace { entity: e })
        .unwrap();
    store.close().unwrap();
    assert_eq!(
        stored_format(dir.path()),
        FORMAT_VERSION,
        "marked when opened"
    );
    let report = check_data_dir(dir.path()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.rows, 40);
    let store = DurableBackend::open(dir.path()).unwrap();
    assert_eq!(rows_queried(&store), 40);
    let e = store.get(TABLE, "p", "r013").unwrap().unwrap();
    assert_eq!(e.custom("S"), Some(&Value::String("rewritten".into())));
    store.close().unwrap();
}

#[test]
fn damage_in_a_block_of_format_3_fails_every_read_of_the_block() {
    let dir = stored_rows();
    as_data_format_3(dir.path());
    assert!(flip_in_data_file(dir.path(), b"value-of-r013") > 0);
    let store = DurableBackend::open(dir.path()).unwrap();
    assert!(
        store.get(TABLE, "p", "r001").unwrap().is_some(),
        "another block"
    );
    // One checksum covers the whole old block: the neighbour is untrusted too.
    for rk in ["r012", "r013"] {
        let d = damage_of(store.get(TABLE, "p", rk).unwrap_err());
        assert!(d.what.contains("checksum"), "{d}");
    }
    let page = store.query(TABLE, &all(), None, &PageOptions::default(), &mut |_| {});
    assert!(matches!(page, Err(StoreError::Damaged(_))));
    store.close().unwrap();
}
