//! Tests of the scan's fast paths (`read.rs`) against the general ones they stand for:
//! [`DurableSnapshot::scan_each`] against the merging iterator (with and without memtable
//! entries, early stops, a damaged block).

use super::*;
use crate::durable::{DurableBackend, DurableOptions};
use crate::op::WriteOp;
use crate::{Backend, StoreError};
use tableq_model::Value;
use tableq_planner::plan::{KeyInterval, KeyRange};

// ---------------------------------------------------------------------------------------
// `scan_each` against the iterator.

fn entity(pk: &str, rk: &str, v: i32) -> Entity {
    let mut e = Entity::new(pk, rk);
    e.set("V", Value::Int32(v));
    e.set("S", Value::String(format!("v{v}")));
    e
}

/// A store with small blocks over three partitions; `flushed` rows are in blocks, the
/// others in the memtable.
fn store(dir: &std::path::Path, flushed: bool) -> DurableBackend {
    let options = DurableOptions::default()
        .with_cache_bytes(8 << 20)
        .with_block_limits(4, 1 << 20)
        .with_memtable_bytes(usize::MAX);
    let store = DurableBackend::open_with(dir, options).unwrap();
    store.create_table("t1x").unwrap();
    for pk in ["a", "b", "c"] {
        let ops = (0..20)
            .step_by(2)
            .map(|i| WriteOp::Insert {
                entity: entity(pk, &format!("r{i:02}"), i),
            })
            .collect();
        store.write_batch("t1x", ops).unwrap();
    }
    if flushed {
        store.gate.with_writer(|w| w.flush()).unwrap();
    }
    store
}

/// The scans the comparison runs: everything, a partition, a RowKey slice across
/// partitions, and bounded chunks.
fn scans() -> Vec<(KeyRange, Option<Key>, Option<Key>)> {
    let rk = |lo: &str, hi: &str| {
        KeyInterval::new(
            Bound::Included(lo.to_owned()),
            Bound::Excluded(hi.to_owned()),
        )
    };
    vec![
        (KeyRange::full(), None, None),
        (KeyRange::partition("b"), None, None),
        (
            KeyRange::new(KeyInterval::full(), rk("r05", "r13")),
            None,
            None,
        ),
        (
            KeyRange::full(),
            Some(Key::new("a", "r07")),
            Some(Key::new("c", "r03")),
        ),
        (KeyRange::full(), Some(Key::new("b", "r00")), None),
    ]
}

/// The keys and `V`s a scan yields through the iterator, and how it ended.
fn by_iterator(snapshot: &DurableSnapshot, scan: Scan<'_>, most: usize) -> (Vec<String>, String) {
    let mut seen = Vec::new();
    for row in snapshot.scan(scan) {
        match row {
            Ok(row) => {
                if seen.len() == most {
                    return (seen, "stopped".into());
                }
                seen.push(describe(&row));
            }
            Err(e) => return (seen, e.to_string()),
        }
    }
    (seen, "end".into())
}

/// The same through `scan_each`.
fn by_visitor(snapshot: &DurableSnapshot, scan: Scan<'_>, most: usize) -> (Vec<String>, String) {
    let mut seen = Vec::new();
    let mut stopped = false;
    let result = snapshot.scan_each(scan, |row| {
        if seen.len() == most {
            stopped = true;
            return ControlFlow::Break(());
        }
        seen.push(describe(&row));
        ControlFlow::Continue(())
    });
    let end = match result {
        Err(e) => e.to_string(),
        Ok(()) if stopped => "stopped".into(),
        Ok(()) => "end".into(),
    };
    (seen, end)
}

fn describe(row: &DurableRow<'_>) -> String {
    let v = row.custom_by_slot(PropertySlot(0)).map(|v| v.to_owned());
    format!("{}/{} {v:?}", row.partition_key(), row.row_key())
}

fn compare_scans(snapshot: &DurableSnapshot) {
    for (range, from, until) in scans() {
        for most in [0, 1, 5, usize::MAX] {
            let scan = Scan {
                range: &range,
                from: from.as_ref(),
                until: until.as_ref(),
            };
            let want = by_iterator(snapshot, scan, most);
            let got = by_visitor(snapshot, scan, most);
            assert_eq!(
                got, want,
                "{range:?} from {from:?} until {until:?}, {most} rows"
            );
        }
    }
}

#[test]
fn scan_each_yields_what_the_iterator_yields() {
    for flushed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), flushed);
        compare_scans(&store.snapshot("t1x").unwrap());
        // Memtable entries over flushed blocks: inserts between rows, replacements and
        // removals of stored rows.
        let mut ops = vec![
            WriteOp::Insert {
                entity: entity("a", "r05", 105),
            },
            WriteOp::InsertOrReplace {
                entity: entity("b", "r04", 104),
            },
        ];
        ops.push(WriteOp::Delete {
            partition_key: "c".into(),
            row_key: "r10".into(),
            if_match: crate::IfMatch::Any,
        });
        store.write_batch("t1x", ops).unwrap();
        compare_scans(&store.snapshot("t1x").unwrap());
        store.close().unwrap();
    }
}

#[test]
fn scan_each_meets_a_damaged_block_as_the_iterator_does() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = store(dir.path(), true);
        store.close().unwrap();
    }
    // Damage the third block's row offsets (through redb, so the file stays valid).
    {
        let db = redb::Database::open(dir.path().join(crate::durable::DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            use redb::ReadableTable;
            let mut rows = txn.open_table(ROWS).unwrap();
            let (key, mut value) = {
                let mut it = rows.iter().unwrap();
                let (k, v) = it.nth(2).unwrap().unwrap();
                (k.value().to_vec(), v.value().to_vec())
            };
            let value: &mut Vec<u8> = &mut value;
            let view = BlockView::parse(value).unwrap();
            let dir_at = 8 + view.partition_key().len();
            value[dir_at + 4..dir_at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
            rows.insert(&key[..], &value[..]).unwrap();
        }
        txn.commit().unwrap();
    }
    let options = DurableOptions::default().with_block_limits(4, 1 << 20);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    let snapshot = store.snapshot("t1x").unwrap();
    let range = KeyRange::full();
    let scan = Scan {
        range: &range,
        from: None,
        until: None,
    };
    let want = by_iterator(&snapshot, scan, usize::MAX);
    assert!(want.1.contains("row offsets"), "{want:?}");
    assert_eq!(by_visitor(&snapshot, scan, usize::MAX), want);
    // Through the executor: the page fails with the block's error.
    let plan = tableq_planner::plan(
        &tableq_parser::parse_filter("V ge 0", &Default::default()).unwrap(),
        None,
        None,
    );
    let err = store
        .query("t1x", &plan, None, &Default::default(), &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, StoreError::Storage(_)), "{err}");
    assert!(err.to_string().contains("row offsets"), "{err}");
    store.close().unwrap();
}
