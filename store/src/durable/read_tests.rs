//! Tests of the scan's fast paths (`read.rs`) against the general ones they stand for:
//! [`test_value`] against decoding with [`RowRef::value`] (every Edm type, damaged rows),
//! and [`DurableSnapshot::scan_each`] against the merging iterator (with and without
//! memtable entries, early stops, a damaged block).

use super::*;
use crate::codec::Names;
use crate::durable::format::block::{build_block, encode_row};
use crate::durable::format::tables::ROWS;
use crate::durable::{DurableBackend, DurableOptions};
use crate::op::WriteOp;
use crate::{Backend, StoreError};
use proptest::prelude::*;
use std::borrow::Cow;
use tableq_model::{CmpOp, Value};
use tableq_planner::plan::{KeyInterval, KeyRange};

/// An entity with a property of every Edm type (two numbers of each kind), from `seed`.
fn every_type(seed: u64) -> Entity {
    let mut e = Entity::new("p", format!("r{seed}"));
    let i = seed as i64;
    e.set("Bin", Value::Binary(vec![seed as u8, 7]));
    e.set("Bool", Value::Boolean(seed.is_multiple_of(2)));
    e.set(
        "Dt",
        Value::DateTime(DateTime::from_ticks(DateTime::MIN.ticks() + i).unwrap_or(DateTime::MIN)),
    );
    e.set("Dbl", Value::Double(i as f64 / 3.0));
    e.set("Guid", Value::Guid(uuid::Uuid::from_u128(u128::from(seed))));
    e.set("I32", Value::Int32(seed as i32 % 7 - 3));
    e.set("I64", Value::Int64(i - 3));
    e.set("Nan", Value::Double(f64::NAN));
    e.set("Str", Value::String(format!("s{}", seed % 5)));
    e
}

/// Literals of every Edm type, near the values `every_type` stores.
fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-4i32..4).prop_map(Value::Int32),
        (-4i64..4).prop_map(Value::Int64),
        prop_oneof![Just(0.0f64), Just(1.0), Just(-1.5), Just(f64::NAN)].prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        (0i64..4).prop_map(|i| Value::DateTime(
            DateTime::from_ticks(DateTime::MIN.ticks() + i).unwrap_or(DateTime::MIN)
        )),
        (0u128..3).prop_map(|g| Value::Guid(uuid::Uuid::from_u128(g))),
        (0u8..3).prop_map(|b| Value::Binary(vec![b, 7])),
        "s[0-5]".prop_map(Value::String),
    ]
}

/// One block holding `entities`, with the table's names.
fn block(entities: &[Entity]) -> (Vec<u8>, Names) {
    let mut names = Names::default();
    let rows: Vec<Cow<'_, [u8]>> = entities
        .iter()
        .map(|e| {
            let row = encode_row(e, &mut |n| Ok(names.intern(n).unwrap_or(0)));
            Cow::Owned(row.unwrap())
        })
        .collect();
    (build_block("p", &rows).unwrap(), names)
}

/// Testing a property by decoding it, the general path `test_value` stands for.
fn by_decoding(row: RowRef<'_>, id: u32, test: &ValueTest) -> Result<bool, Corrupt> {
    Ok(row.value(id)?.is_some_and(|v| test.matches(v)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// On intact rows and on rows with any one byte changed: the same answer or the same
    /// error as decoding, for every property (and an absent one), every operator and
    /// literals of every type.
    #[test]
    fn testing_a_slot_agrees_with_decoding_it(
        seed in 0u64..50,
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
        op in proptest::sample::select(CmpOp::ALL.to_vec()),
        lit in literal(),
    ) {
        let (mut bytes, names) = block(&[every_type(seed)]);
        let view = BlockView::parse(&bytes).unwrap();
        let (start, end) = view.span(0);
        if let Some((at, to)) = damage {
            // Any byte of the row (the header and offsets are checked when a block loads).
            let i = start as usize + at.index((end - start) as usize);
            bytes[i] = to;
        }
        let row = RowRef(&bytes[start as usize..end as usize]);
        let test = ValueTest::new(op, &lit);
        for id in 0..=names.len() as u32 {
            prop_assert_eq!(
                test_value(row, id, &test),
                by_decoding(row, id, &test),
                "property {} {:?} {:?}", id, op, lit
            );
        }
    }
}

#[test]
fn damaged_values_fail_the_test_as_they_fail_decoding() {
    let e = every_type(4);
    let (bytes, names) = block(std::slice::from_ref(&e));
    let view = BlockView::parse(&bytes).unwrap();
    let (start, end) = view.span(0);
    let row = bytes[start as usize..end as usize].to_vec();
    let slot_at = |name: &str| {
        let id = names.id(name).unwrap();
        // The slots follow the 12-byte header and the RowKey; numbers are in order.
        12 + e.row_key().len() + 12 * id as usize
    };
    let test = ValueTest::new(CmpOp::Ne, &Value::Int32(0));
    let cases: [(&str, usize, u32); 4] = [
        // A Boolean that is neither 0 nor 1.
        ("Bool", 4, 2),
        // A DateTime past the range (high word).
        ("Dt", 8, u32::MAX >> 1),
        // A string running past the row.
        ("Str", 8, 1 << 20),
        // An unknown type tag on an Int32 slot (keeping its number).
        ("I32", 0, (names.id("I32").unwrap() << 4) | 9),
    ];
    for (name, offset, value) in cases {
        let mut damaged = row.clone();
        let at = slot_at(name) + offset;
        damaged[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let id = names.id(name).unwrap();
        let fast = test_value(RowRef(&damaged), id, &test);
        assert!(fast.is_err(), "{name}: {fast:?}");
        assert_eq!(fast, by_decoding(RowRef(&damaged), id, &test), "{name}");
    }
    // A slot table past the row's end.
    let mut short = row.clone();
    short.truncate(20);
    assert_eq!(
        test_value(RowRef(&short), 0, &test),
        Err(Corrupt("slot table past the row's end"))
    );
}

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
            let dir_at = 12 + view.partition_key().len();
            value[dir_at + 4..dir_at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
            // With a right checksum: the row offsets' own check is what must catch it.
            crate::durable::format::block::reseal(value);
            rows.insert(&key[..], &value[..]).unwrap();
        }
        txn.commit().unwrap();
    }
    let options = DurableOptions::default().with_block_limits(4, 1 << 20);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    let snapshot = store.snapshot("t1x").unwrap();
    let range = KeyRange::full();
    let scan = whole(&range);
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
    assert!(matches!(err, StoreError::Damaged(_)), "{err}");
    assert!(err.to_string().contains("row offsets"), "{err}");
    store.close().unwrap();
}

/// A flushed store of 300 entities in partitions `a` and `b` (blocks of up to 128 rows,
/// so with columns): `A` Int32 `i % 10` (Int64 in row `int64_row`), `C` Boolean, `S` a
/// string; each entity is also returned.
fn columnar_store(
    dir: &std::path::Path,
    int64_row: Option<usize>,
) -> (DurableBackend, Vec<Entity>) {
    columnar_store_with(dir, int64_row, DurableOptions::default().cache_bytes)
}

/// [`columnar_store`] with `cache_bytes` of cache (and half as much for verified copies).
fn columnar_store_with(
    dir: &std::path::Path,
    int64_row: Option<usize>,
    cache_bytes: usize,
) -> (DurableBackend, Vec<Entity>) {
    let options = DurableOptions::default()
        .with_cache_bytes(cache_bytes)
        .with_block_limits(128, 1 << 20)
        .with_memtable_bytes(usize::MAX);
    let store = DurableBackend::open_with(dir, options).unwrap();
    store.create_table("t1x").unwrap();
    let entities: Vec<Entity> = (0..300)
        .map(|i| {
            let mut e = Entity::new(if i < 150 { "a" } else { "b" }, format!("r{i:03}"));
            if Some(i) == int64_row {
                e.set("A", Value::Int64(i as i64 % 10));
            } else {
                e.set("A", Value::Int32(i as i32 % 10));
            }
            e.set("C", Value::Boolean(i % 3 == 0));
            e.set("S", Value::String(format!("s{}", i % 7)));
            e
        })
        .collect();
    let ops = entities
        .iter()
        .map(|e| WriteOp::Insert { entity: e.clone() })
        .collect();
    store.write_batch("t1x", ops).unwrap();
    store.gate.with_writer(|w| w.flush()).unwrap();
    (store, entities)
}

fn filter_plan(filter: &str) -> tableq_planner::plan::Plan {
    tableq_planner::plan(
        &tableq_parser::parse_filter(filter, &Default::default()).unwrap(),
        None,
        None,
    )
}

/// The keys of every page of `plan` over `snapshot` with `threads` threads; the snapshot
/// met no failure.
fn snapshot_keys(
    snapshot: &DurableSnapshot,
    plan: &tableq_planner::plan::Plan,
    options: &tableq_exec::PageOptions,
    threads: usize,
) -> Vec<Key> {
    let (rows, _) = tableq_exec::Executor::new(snapshot)
        .with_threads(threads)
        .unwrap()
        .execute_all(plan, options)
        .unwrap();
    snapshot.take_error().unwrap();
    rows.iter().map(|r| r.key()).collect()
}

/// The keys of every page of `plan` over `entities` in a vector.
fn reference_keys(
    entities: impl IntoIterator<Item = Entity>,
    plan: &tableq_planner::plan::Plan,
    options: &tableq_exec::PageOptions,
) -> Vec<Key> {
    let reference = tableq_exec::VecSource::new(entities);
    let (rows, _) = tableq_exec::Executor::new(&reference)
        .execute_all(plan, options)
        .unwrap();
    rows.iter().map(|r| r.key()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Filtered scans over the blocks' columns (and row by row where a comparison has no
    /// column, or a block's A is mixed) return what the executor returns over the same
    /// entities in a vector, page by page.
    #[test]
    fn filtered_scans_over_columns_equal_rows(
        int64_row in proptest::option::of(0usize..300),
        a in 0i32..11,
        op in proptest::sample::select(vec!["eq", "ne", "lt", "ge"]),
        shape in 0usize..7,
        page_size in proptest::option::of(1usize..120),
        threads in 1usize..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (store, entities) = columnar_store(dir.path(), int64_row);
        let filter = match shape {
            0 => format!("A {op} {a}"),
            1 => format!("A {op} {a} and C"),
            2 => format!("A {op} {a} or S eq 's3'"),
            3 => format!("not (A {op} {a}) and RowKey ge 'r100'"),
            4 => format!("PartitionKey eq 'b' and A {op} {a}L"),
            // RowKey bounds that make scans jump: to the block that may hold r140 (every
            // row of partition a's first block is below it), and past the rest of a
            // partition once its rows reach r140.
            5 => format!("A {op} {a} and RowKey ge 'r140'"),
            _ => format!("RowKey lt 'r140' and A {op} {a}"),
        };
        let plan = filter_plan(&filter);
        let options = tableq_exec::PageOptions { page_size, ..Default::default() };
        let want = reference_keys(entities, &plan, &options);
        // The block map kept, three times: from the stored blocks, then (from the second
        // read of a block on) from their verified copies.
        keep_a_block_map(&store);
        for _ in 0..3 {
            let snapshot = store.snapshot("t1x").unwrap();
            prop_assert_eq!(snapshot_keys(&snapshot, &plan, &options, threads), want.clone(), "{}", filter);
        }
        store.close().unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// Filtered scans of a table whose memtable has entries among its blocks — rows
    /// replaced, removed and added since the flush — return what the executor returns over
    /// the same entities, page by page, and keep none of the blocks they read (block rows
    /// are tested in place; those handed over are copied out).
    #[test]
    fn filtered_scans_merged_with_the_memtable_equal_rows(
        edits in proptest::collection::vec((0usize..400, any::<bool>(), 0i32..10), 1..40),
        a in 0i32..10,
        op in proptest::sample::select(vec!["eq", "ne", "lt", "ge"]),
        shape in 0usize..3,
        page_size in proptest::option::of(1usize..60),
        threads in 1usize..3,
        with_copies in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let cache = if with_copies { DurableOptions::default().cache_bytes } else { 0 };
        let (store, entities) = columnar_store_with(dir.path(), None, cache);
        if with_copies {
            // Two filtered scans: the second reads the blocks' verified copies.
            keep_a_block_map(&store);
            query_keys(&store, "A eq 1").unwrap();
            query_keys(&store, "A eq 1").unwrap();
        }
        let mut model: std::collections::BTreeMap<(String, String), Entity> = entities
            .into_iter()
            .map(|e| ((e.partition_key().to_owned(), e.row_key().to_owned()), e))
            .collect();
        let mut wrote = false;
        for (k, remove, v) in edits {
            // Keys 0..300 are stored (r000.. in a, r150.. in b); the others are new, in
            // a, b and a partition of their own.
            let (pk, rk) = match k {
                0..150 => ("a".to_owned(), format!("r{k:03}")),
                150..300 => ("b".to_owned(), format!("r{k:03}")),
                _ => (["a", "b", "c"][k % 3].to_owned(), format!("r{:03}x", k % 300)),
            };
            let op = if remove {
                if model.remove(&(pk.clone(), rk.clone())).is_none() {
                    continue;
                }
                WriteOp::Delete { partition_key: pk, row_key: rk, if_match: crate::op::IfMatch::Any }
            } else {
                let mut e = Entity::new(pk.as_str(), rk.as_str());
                e.set("A", Value::Int32(v));
                e.set("C", Value::Boolean(v % 2 == 0));
                model.insert((pk, rk), e.clone());
                WriteOp::InsertOrReplace { entity: e }
            };
            store.write_batch("t1x", vec![op]).unwrap();
            wrote = true;
        }
        prop_assume!(wrote, "no write: nothing to merge");
        let filter = match shape {
            0 => format!("A {op} {a}"),
            1 => format!("A {op} {a} and C"),
            _ => format!("A {op} {a} or S eq 's3'"),
        };
        let plan = filter_plan(&filter);
        let options = tableq_exec::PageOptions { page_size, ..Default::default() };
        let want = reference_keys(model.into_values(), &plan, &options);
        let snapshot = store.snapshot("t1x").unwrap();
        prop_assert!(!snapshot.mem.is_empty(), "the writes are not flushed");
        prop_assert_eq!(snapshot_keys(&snapshot, &plan, &options, threads), want, "{}", filter);
        prop_assert_eq!(snapshot.kept().0, 0, "blocks kept");
        store.close().unwrap();
    }
}

/// A scan of all of `range`: no continuation, no end.
fn whole(range: &KeyRange) -> Scan<'_> {
    Scan {
        range,
        from: None,
        until: None,
    }
}

/// Builds and keeps the table's block map (a split of the whole table does: at once, or
/// on a thread of its own when the table's blocks would not all fit in the copy budget).
fn keep_a_block_map(store: &DurableBackend) {
    let snapshot = store.snapshot("t1x").unwrap();
    let range = KeyRange::full();
    let scan = whole(&range);
    snapshot.split(scan, 64, 100).unwrap();
    drop(snapshot);
    wait_for_a_kept_map(store);
}

/// The table's kept block map, once a build on a thread of its own has kept it.
fn wait_for_a_kept_map(store: &DurableBackend) -> Arc<BlockMap> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let snapshot = store.snapshot("t1x").unwrap();
    loop {
        if let Some(map) = snapshot.kept_map() {
            return map;
        }
        assert!(std::time::Instant::now() < deadline, "no map was built");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The kept block map's verified copies, and what the engine's copies take.
fn copies(store: &DurableBackend) -> (Option<usize>, usize) {
    let snapshot = store.snapshot("t1x").unwrap();
    let kept = snapshot.kept_map().map(|m| m.copies());
    (kept, store.shared.copies.used())
}

/// The second filtered scan that reads a block copies it, verified, and the scans after it
/// read the copy; a flush keeps the copies of the blocks it did not touch, and the next
/// scans see the new rows.
#[test]
fn filtered_scans_read_verified_copies_from_their_second_read_of_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = columnar_store(dir.path(), None);
    keep_a_block_map(&store);
    // 300 entities in two partitions, blocks of at most 128 rows: 4 blocks.
    assert_eq!(copies(&store), (Some(0), 0));
    let first = query_keys(&store, "A eq 5").unwrap();
    assert_eq!(first.len(), 30);
    assert_eq!(
        copies(&store),
        (Some(0), 0),
        "a block read once is not copied"
    );
    assert_eq!(query_keys(&store, "A eq 5 or C").unwrap().len(), 120);
    let (kept, used) = copies(&store);
    assert_eq!(kept, Some(4));
    assert!(
        used > 300 * 8,
        "{used} bytes for four blocks' rows and columns"
    );
    // From the copies: the same answers, and the columns still rule blocks out by range.
    assert_eq!(query_keys(&store, "A eq 5").unwrap(), first);
    assert_eq!(query_keys(&store, "A gt 9").unwrap(), Vec::<String>::new());
    assert_eq!(query_keys(&store, "S eq 's3' and A lt 2").unwrap().len(), 9);
    // A write and a flush: the map follows it to the new version, with the copies of the
    // four blocks it left alone, and lists the new partition's block.
    let mut e = Entity::new("c", "r000");
    e.set("A", Value::Int32(5));
    store
        .write_batch("t1x", vec![WriteOp::Insert { entity: e }])
        .unwrap();
    store.gate.with_writer(|w| w.flush()).unwrap();
    assert_eq!(copies(&store), (Some(4), used));
    assert_eq!(store.snapshot("t1x").unwrap().kept_map().unwrap().len(), 5);
    for _ in 0..3 {
        let keys = query_keys(&store, "A eq 5").unwrap();
        assert_eq!(keys.len(), 31);
        assert_eq!(keys.last().map(String::as_str), Some("r000"));
    }
    assert_eq!(copies(&store).0, Some(5));
    store.close().unwrap();
}

/// A filtered scan keeps none of the blocks it reads from redb, only copies of the rows it
/// hands over: what a query page holds is bounded by the rows it returns, not by the
/// blocks it examined (a filter matching nothing in 10 M entities held every block of the
/// table, 4 GB). Rows tested one by one (a string comparison has no column) are read in
/// place.
#[test]
fn filtered_scans_keep_the_rows_they_hand_over_not_the_blocks_they_read() {
    let dir = tempfile::tempdir().unwrap();
    // No budget for verified copies: every block is read from redb.
    let (store, _) = columnar_store_with(dir.path(), None, 0);
    for (filter, matches) in [("A eq 42", 0), ("A eq 5", 30), ("S eq 's3'", 43)] {
        for threads in [1, 2] {
            let snapshot = store.snapshot("t1x").unwrap();
            let keys = snapshot_keys(
                &snapshot,
                &filter_plan(filter),
                &Default::default(),
                threads,
            );
            assert_eq!(keys.len(), matches, "{filter}");
            assert_eq!(
                snapshot.kept(),
                (0, matches),
                "{filter}: blocks and rows kept"
            );
        }
    }
    // Pages of 7: each page also hands over the row after its last (its continuation),
    // copied out too, also when that row starts the next block.
    let snapshot = store.snapshot("t1x").unwrap();
    let options = tableq_exec::PageOptions {
        page_size: Some(7),
        ..Default::default()
    };
    let keys = snapshot_keys(&snapshot, &filter_plan("A eq 5"), &options, 1);
    assert_eq!(keys.len(), 30);
    let (blocks, kept) = snapshot.kept();
    assert!(
        blocks == 0 && (30..=35).contains(&kept),
        "{blocks} blocks, {kept} rows"
    );
    store.close().unwrap();
}

/// Copies beyond the engine's budget are not made: those blocks are read from redb as
/// before, and every answer stays the same.
#[test]
fn copies_beyond_the_budget_are_not_made_and_change_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Room for about one block's copy (128 rows of ≈ 40 bytes and their columns).
    let budget = 12 << 10;
    let (store, entities) = columnar_store_with(dir.path(), None, 2 * budget);
    keep_a_block_map(&store);
    let want: Vec<String> = entities
        .iter()
        .filter(|e| matches!(e.get("A"), Some(tableq_model::ValueRef::Int32(5))))
        .map(|e| e.row_key().to_owned())
        .collect();
    for _ in 0..4 {
        assert_eq!(query_keys(&store, "A eq 5").unwrap(), want);
        let (kept, used) = copies(&store);
        assert!(kept.is_some_and(|k| k < 4), "{kept:?}");
        assert!(used <= budget, "{used} > {budget}");
    }
    assert!(copies(&store).0.is_some_and(|k| k >= 1));
    store.close().unwrap();
}

/// A property's value, owned (to compare).
fn owned(value: Option<tableq_model::ValueRef<'_>>) -> Option<Value> {
    value.map(|v| v.to_owned())
}

/// The store's metrics report what the verified copies hold, and their limit.
#[test]
fn metrics_report_what_the_verified_copies_hold() {
    use crate::metrics::SampleValue;
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = columnar_store_with(dir.path(), None, 1 << 20);
    let gauge = |name: &str| crate::durable::tests::metric(&store, name);
    assert_eq!(gauge("verified_copies_bytes"), SampleValue::Gauge(0.0));
    assert_eq!(
        gauge("verified_copies_limit_bytes"),
        SampleValue::Gauge((512 << 10) as f64)
    );
    keep_a_block_map(&store);
    for _ in 0..2 {
        query_keys(&store, "A eq 5").unwrap();
    }
    let used = store.shared.copies.used();
    assert!(used > 0, "no copy was made");
    assert_eq!(
        gauge("verified_copies_bytes"),
        SampleValue::Gauge(used as f64)
    );
    store.close().unwrap();
}

/// Point gets in a data file small enough for copies of all its blocks keep a block map
/// (built by the first get), find blocks in it, copy a block on its second read and then
/// answer from the copies — the same answers throughout, misses included.
#[test]
fn point_gets_of_a_small_file_read_verified_copies_from_their_second_read_of_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let (store, entities) = columnar_store(dir.path(), None);
    assert_eq!(copies(&store), (None, 0), "no map before the first get");
    let check_all = |store: &DurableBackend| {
        for e in &entities {
            let got = store
                .get("t1x", e.partition_key(), e.row_key())
                .unwrap()
                .unwrap();
            assert_eq!(
                (got.partition_key(), got.row_key()),
                (e.partition_key(), e.row_key())
            );
            for name in ["A", "C", "S"] {
                assert_eq!(
                    owned(got.get(name)),
                    owned(e.get(name)),
                    "{} {name}",
                    e.row_key()
                );
            }
        }
        // Before a partition's first row, between rows, after its last, another partition.
        for (pk, rk) in [
            ("a", "q"),
            ("a", "r000x"),
            ("a", "r149x"),
            ("b", "r000"),
            ("c", "r000"),
            ("", ""),
        ] {
            assert!(store.get("t1x", pk, rk).unwrap().is_none(), "{pk}/{rk}");
        }
    };
    assert!(store.get("t1x", "a", "r000").unwrap().is_some());
    assert_eq!(
        copies(&store),
        (Some(0), 0),
        "the first get built the map and read its block once"
    );
    assert!(store.get("t1x", "a", "r001").unwrap().is_some());
    assert_eq!(
        copies(&store).0,
        Some(1),
        "the block's second read copied it"
    );
    check_all(&store);
    let (kept, used) = copies(&store);
    assert_eq!(kept, Some(4), "every block of the 4 read twice or more");
    assert!(used > 300 * 8, "{used}");
    // Now every answer comes from a copy.
    check_all(&store);
    assert_eq!(copies(&store).0, Some(4));
    // A write: the memtable answers for its row; after the flush, the map of the new
    // version (followed from the old one) without the copy of the block it rewrote.
    let mut e = Entity::new("a", "r000");
    e.set("A", Value::Int32(42));
    store
        .write_batch("t1x", vec![WriteOp::InsertOrReplace { entity: e }])
        .unwrap();
    let got = store.get("t1x", "a", "r000").unwrap().unwrap();
    assert_eq!(owned(got.get("A")), Some(Value::Int32(42)));
    store.gate.with_writer(|w| w.flush()).unwrap();
    assert_eq!(
        copies(&store).0,
        Some(3),
        "the blocks the flush left alone keep their copies"
    );
    for _ in 0..3 {
        let got = store.get("t1x", "a", "r000").unwrap().unwrap();
        assert_eq!(owned(got.get("A")), Some(Value::Int32(42)));
        assert!(got.get("C").is_none(), "replaced whole");
    }
    assert_eq!(
        copies(&store).0,
        Some(4),
        "the rewritten block copied again from its new bytes"
    );
    // The carried copies answer as the blocks do.
    for e in entities.iter().filter(|e| e.row_key() != "r000") {
        let got = store
            .get("t1x", e.partition_key(), e.row_key())
            .unwrap()
            .unwrap();
        assert_eq!(owned(got.get("S")), owned(e.get("S")), "{}", e.row_key());
    }
    store.close().unwrap();
}

/// A data file with more blocks than copies of them could fit in the budget: the first
/// point get has the block map built on a thread of its own and goes through redb, as do
/// the gets until the map is kept; then gets use it (and copy what fits).
#[test]
fn point_gets_of_a_larger_file_have_the_block_map_built_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    // 4 blocks; a budget of 96 KiB is less than 4 blocks of the default 32 KiB.
    let (store, entities) = columnar_store_with(dir.path(), None, 192 << 10);
    for _ in 0..3 {
        for e in &entities {
            let got = store
                .get("t1x", e.partition_key(), e.row_key())
                .unwrap()
                .unwrap();
            assert_eq!(owned(got.get("S")), owned(e.get("S")));
        }
    }
    assert!(store.get("t1x", "a", "r000x").unwrap().is_none());
    let map = wait_for_a_kept_map(&store);
    assert_eq!(map.len(), 4);
    for _ in 0..2 {
        for e in &entities {
            let got = store
                .get("t1x", e.partition_key(), e.row_key())
                .unwrap()
                .unwrap();
            assert_eq!(owned(got.get("S")), owned(e.get("S")));
        }
    }
    let (kept, used) = copies(&store);
    assert!(kept.is_some_and(|k| k >= 1), "{kept:?}");
    assert!(used <= 96 << 10, "{used}");
    store.close().unwrap();
}

/// A data file with more blocks than copies of them could fit in the budget: the first
/// split of a scan over the whole table does not walk it (the first filtered page after a
/// start at 10 M entities waited 0.74 s for that walk) but has the map built on a thread of
/// its own and walks redb as far as its chunks reach — the same chunks; filtered scans
/// answer the same before and after the map is kept.
#[test]
fn filtered_scans_of_a_larger_file_have_the_block_map_built_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    // 4 blocks; a budget of 96 KiB is less than 4 blocks of the default 32 KiB.
    let (store, entities) = columnar_store_with(dir.path(), None, 192 << 10);
    let want: Vec<String> = entities
        .iter()
        .filter(|e| matches!(e.get("A"), Some(tableq_model::ValueRef::Int32(5))))
        .map(|e| e.row_key().to_owned())
        .collect();
    let range = KeyRange::full();
    let snapshot = store.snapshot("t1x").unwrap();
    let walked = snapshot.split(whole(&range), 64, 100).unwrap();
    assert!(snapshot.map.get().is_none(), "the split built a map itself");
    assert_eq!(query_keys(&store, "A eq 5").unwrap(), want);
    let map = wait_for_a_kept_map(&store);
    assert_eq!(map.len(), 4);
    let mapped = store.snapshot("t1x").unwrap();
    let chunks = mapped.split(whole(&range), 64, 100).unwrap();
    assert!(mapped.map.get().is_some(), "the kept map was not used");
    assert_eq!(chunks, walked);
    assert_eq!(query_keys(&store, "A eq 5").unwrap(), want);
    drop((snapshot, mapped));
    store.close().unwrap();
}

/// Changes one byte of the first block (at `at(view)`) through redb, keeping the file
/// valid; returns the block's bytes as they were.
fn damage_first_block(dir: &std::path::Path, at: impl Fn(&BlockView<'_>) -> usize) {
    let db = redb::Database::open(dir.join(crate::durable::DATA_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        use redb::ReadableTable;
        let mut rows = txn.open_table(ROWS).unwrap();
        let (key, mut value) = {
            let mut it = rows.iter().unwrap();
            let (k, v) = it.next().unwrap().unwrap();
            (k.value().to_vec(), v.value().to_vec())
        };
        let i = at(&BlockView::parse(&value).unwrap());
        value[i] ^= 0x40;
        rows.insert(&key[..], &value[..]).unwrap();
    }
    txn.commit().unwrap();
}

/// Query results, or the error's text.
fn query_keys(store: &DurableBackend, filter: &str) -> Result<Vec<String>, String> {
    let snapshot = store.snapshot("t1x").unwrap();
    let result = tableq_exec::Executor::new(&snapshot)
        .execute_all(&filter_plan(filter), &Default::default())
        .map(|(rows, _)| rows.iter().map(|r| r.entity.row_key().to_owned()).collect())
        .map_err(|e| e.to_string());
    match snapshot.take_error() {
        Err(e) => Err(e.to_string()),
        Ok(()) => result,
    }
}

/// A filtered scan verifies what it reads: the columns always, a row when it returns it
/// or tests it one by one. Damage in a row it does not read leaves its answer right (and
/// `tableq check` still finds it); damage in a row it reads, or in the columns, fails it.
#[test]
fn filtered_scans_verify_the_columns_and_the_rows_they_read() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = columnar_store(dir.path(), None);
    let intact_a5 = query_keys(&store, "A eq 5").unwrap();
    assert_eq!(intact_a5.len(), 30);
    store.close().unwrap();
    // Row r001 (A = 1): its last byte, inside its string.
    damage_first_block(dir.path(), |v| v.span(1).1 as usize - 1);
    let options = DurableOptions::default().with_block_limits(128, 1 << 20);
    let store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
    // `A eq 5` never reads r001: the right answer.
    assert_eq!(query_keys(&store, "A eq 5").unwrap(), intact_a5);
    // `A eq 1` returns it, `S eq 's1'` tests every row one by one, no filter reads all:
    // each fails, naming the damage.
    for filter in [
        "A eq 1",
        "S eq 's1'",
        "A ge 0",
        "RowKey lt 'r002' and A eq 0",
    ] {
        let err = query_keys(&store, filter).unwrap_err();
        assert!(err.contains("a row fails its checksum"), "{filter}: {err}");
    }
    // A RowKey bound inside the block: its binary search verifies the rows it compares
    // (never r001 here), not the whole block.
    let bounded = "PartitionKey eq 'a' and RowKey ge 'r100' and A eq 1";
    let want: Vec<String> = (101..150).step_by(10).map(|i| format!("r{i:03}")).collect();
    assert_eq!(query_keys(&store, bounded).unwrap(), want);
    store.close().unwrap();
    let report = crate::durable::check_data_dir(dir.path()).unwrap();
    assert_eq!(report.damaged_blocks.len(), 1, "{report:?}");

    // Damage in one column's data (the last column, C's): a filtered scan that reads C
    // fails; one that reads A only is right. The columns' directory: every one fails.
    for (damage, fails, passes, get_reads_it) in [
        (
            (|v: &BlockView<'_>| v.bytes().len() - 3) as fn(&BlockView<'_>) -> usize,
            &["C eq true", "A eq 5 or C eq true"][..],
            &["A eq 5"][..],
            true,
        ),
        // A's values (after the 8-byte head and 3 entries of 32 bytes, 16 bytes of
        // presence): `A lt 0` is excluded by A's range (0 to 9) and never reads them.
        (
            |v: &BlockView<'_>| v.span(v.len() - 1).1 as usize + 8 + 3 * 32 + 20,
            &["A eq 5", "A ne 5 and C eq true"][..],
            &["A lt 0", "C eq true"][..],
            true,
        ),
        // A range in the directory.
        (
            |v: &BlockView<'_>| v.span(v.len() - 1).1 as usize + 8 + 16,
            &["A eq 5", "C eq true", "A lt 0"][..],
            &[][..],
            true,
        ),
        // A RowKey hash in the block directory (which the column directory does not
        // vouch for): verified before the block's first row is read, so a scan that
        // reads none of its rows is right, and one that reads any fails.
        (
            |v: &BlockView<'_>| 12 + v.partition_key().len() + 4 * (v.len() + 1) + 2,
            &["A eq 5", "S eq 's1'"][..],
            &["A lt 0", "A eq 3 and A eq 4"][..],
            false,
        ),
        // The PartitionKey, which the column directory vouches for: every scan fails.
        (
            |_: &BlockView<'_>| 12,
            &["A lt 0", "A eq 3 and A eq 4", "A eq 5"][..],
            &[][..],
            false,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (store, entities) = columnar_store(dir.path(), None);
        store.close().unwrap();
        damage_first_block(dir.path(), damage);
        let store = DurableBackend::open_with(dir.path(), options.clone()).unwrap();
        // Through redb's cursor, then twice through a kept block map (whose copies are
        // made from a block's second read: never of the damaged block, which fails them).
        for walk in ["cursor", "map", "map again"] {
            if walk == "map" {
                keep_a_block_map(&store);
            }
            for filter in fails {
                let err = query_keys(&store, filter).unwrap_err();
                assert!(err.contains("checksum"), "{walk}: {filter}: {err}");
            }
            for filter in passes {
                let p = tableq_parser::parse_filter(filter, &Default::default()).unwrap();
                let want: Vec<String> = entities
                    .iter()
                    .filter(|e| tableq_planner::plan(&p, None, None).matches(*e))
                    .map(|e| e.row_key().to_owned())
                    .collect();
                assert_eq!(
                    query_keys(&store, filter).unwrap(),
                    want,
                    "{walk}: {filter}"
                );
            }
        }
        // A point get reads the block directory and its row, not the columns.
        let got = store
            .snapshot("t1x")
            .unwrap()
            .get("a", "r005")
            .map(|r| r.is_some());
        assert_eq!(got.is_ok(), get_reads_it, "{got:?}");
        store.close().unwrap();
        let report = crate::durable::check_data_dir(dir.path()).unwrap();
        assert_eq!(report.damaged_blocks.len(), 1, "{report:?}");
    }
}

/// Blocks of format 3 (data format 4: no columns) are still read, row by row.
#[test]
fn blocks_without_columns_are_read_row_by_row() {
    let entities: Vec<Entity> = (0..100).map(every_type).collect();
    let mut names = Names::default();
    let rows: Vec<Cow<'_, [u8]>> = entities
        .iter()
        .map(|e| Cow::Owned(encode_row(e, &mut |n| Ok(names.intern(n).unwrap_or(0))).unwrap()))
        .collect();
    let old = crate::durable::format::block::build_block_rows("p", &rows);
    let view = BlockView::parse(&old).unwrap();
    assert!(!view.has_columns());
    assert_eq!(view.columns().unwrap(), crate::codec::ColumnSet::none());
    let new = build_block("p", &rows).unwrap();
    let view = BlockView::parse(&new).unwrap();
    assert!(view.has_columns());
    view.check_columns().unwrap();
    assert!(matches!(
        view.columns().unwrap().column(names.id("I32").unwrap()),
        tableq_exec::batch::Column::Int32 { .. }
    ));
}

/// Blocks with columns stay within the byte limit: the writer counts what each row's
/// fixed-width properties add to the columns (a block over it would take twice the redb
/// pages).
#[test]
fn blocks_with_columns_stay_within_the_byte_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 16 * 1024;
    let options = DurableOptions::default()
        .with_block_limits(10_000, limit)
        .with_memtable_bytes(usize::MAX);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("t1x").unwrap();
    let ops = (0..2000)
        .map(|i| WriteOp::Insert {
            entity: every_type(i),
        })
        .collect();
    store.write_batch("t1x", ops).unwrap();
    store.gate.with_writer(|w| w.flush()).unwrap();
    store.close().unwrap();
    let db = redb::Database::open(dir.path().join(crate::durable::DATA_FILE)).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let rows = txn.open_table(ROWS).unwrap();
    let mut blocks = 0;
    for item in redb::ReadableTable::iter(&rows).unwrap() {
        let (_, v) = item.unwrap();
        let view = BlockView::parse(v.value()).unwrap();
        assert!(view.has_columns());
        assert!(v.value().len() <= limit, "{} bytes", v.value().len());
        blocks += 1;
    }
    assert!(blocks > 10, "{blocks} blocks");
}

// ---------------------------------------------------------------------------------------
// `split` through the block map against the walk through redb.

/// Chunk boundaries and row counts, comparable.
fn chunk_shapes(chunks: &[Chunk]) -> Vec<(Option<Key>, Option<Key>, Option<usize>)> {
    chunks
        .iter()
        .map(|c| (c.from.clone(), c.until.clone(), c.rows))
        .collect()
}

#[test]
fn splits_through_the_block_map_cut_where_the_walk_through_redb_cuts() {
    for flushed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), flushed);
        // Memtable entries over the blocks, counted into the chunks around them.
        store
            .write_batch(
                "t1x",
                vec![WriteOp::Insert {
                    entity: entity("b", "r05", 105),
                }],
            )
            .unwrap();
        let snapshot = store.snapshot("t1x").unwrap();
        let map = BlockMap::build(
            &snapshot.rows,
            snapshot.table,
            snapshot.blocks_version,
            &snapshot.copies,
        )
        .unwrap();
        assert_eq!(map.len(), if flushed { 9 } else { 0 });
        let mut scans = scans();
        scans.push((
            KeyRange::new(
                KeyInterval::new(Bound::Excluded("a".into()), Bound::Unbounded),
                KeyInterval::new(Bound::Unbounded, Bound::Included("r11".into())),
            ),
            None,
            Some(Key::new("c", "r09")),
        ));
        for (range, from, until) in scans {
            let scan = Scan {
                range: &range,
                from: from.as_ref(),
                until: until.as_ref(),
            };
            for (chunk_rows, most) in [(1, 100), (3, 100), (4, 2), (5, 3), (100, 100)] {
                let walked = snapshot.split_with(None, scan, chunk_rows, most).unwrap();
                let mapped = snapshot
                    .split_with(Some(&map), scan, chunk_rows, most)
                    .unwrap();
                assert_eq!(
                    chunk_shapes(&mapped),
                    chunk_shapes(&walked),
                    "{range:?} from {from:?} until {until:?}, {chunk_rows} rows, {most} chunks"
                );
                assert!(!walked.is_empty() || !flushed);
            }
        }
        store.close().unwrap();
    }
}

#[test]
fn the_block_map_follows_each_flush_and_one_partition_builds_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), true);
    let kept = |store: &DurableBackend| {
        let snapshot = store.snapshot("t1x").unwrap();
        snapshot
            .entry
            .block_map
            .lock()
            .unwrap()
            .as_ref()
            .map(|m| (m.version, m.len(), m.version == snapshot.blocks_version))
    };
    let split = |store: &DurableBackend, range: &KeyRange| {
        let snapshot = store.snapshot("t1x").unwrap();
        let scan = whole(range);
        let chunks = snapshot.split(scan, 4, 100).unwrap();
        chunks.iter().map(|c| c.rows.unwrap_or(0)).sum::<usize>()
    };
    // A scan of one partition walks redb and keeps no map.
    assert_eq!(split(&store, &KeyRange::partition("b")), 10);
    assert_eq!(kept(&store), None);
    // A scan of the table builds one of the snapshot's version and keeps it.
    assert_eq!(split(&store, &KeyRange::full()), 30);
    let (version, blocks, current) = kept(&store).unwrap();
    assert_eq!((blocks, current), (9, true));
    // Written and flushed: the kept map follows the flush to the new version, listing the
    // new blocks (no walk), and the next split counts the new rows.
    let ops = (0..8)
        .map(|i| WriteOp::Insert {
            entity: entity("d", &format!("r{i:02}"), i),
        })
        .collect();
    store.write_batch("t1x", ops).unwrap();
    store.gate.with_writer(|w| w.flush()).unwrap();
    let (newer, blocks, current) = kept(&store).unwrap();
    assert_eq!((newer, blocks, current), (version + 1, 11, true));
    assert_map_is_what_a_walk_builds(&store);
    assert_eq!(split(&store, &KeyRange::full()), 38);
    store.close().unwrap();
}

/// A walk that flushes overtook (it began before them, as a walk of a large table does)
/// is kept at the version after the last of them, listing what a walk of that version
/// lists; one that more commits overtook than are recorded, or that began before a change
/// the writer did not record, is not kept. A snapshot keeps the map it used after the kept
/// one moved on.
#[test]
fn a_map_whose_walk_flushes_overtook_is_kept_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), true);
    let kept_version = |store: &DurableBackend| {
        let snapshot = store.snapshot("t1x").unwrap();
        let kept = snapshot.entry.block_map.lock().unwrap().clone();
        kept.map(|m| (m.version, m.version == snapshot.blocks_version))
    };
    let write_and_flush = |store: &DurableBackend, pk: &str| {
        let ops = (0..5)
            .map(|i| WriteOp::Insert {
                entity: entity(pk, &format!("r{i:02}"), i),
            })
            .collect();
        store.write_batch("t1x", ops).unwrap();
        store.gate.with_writer(|w| w.flush()).unwrap();
    };
    // The walk begins (a snapshot of the current version), two flushes land, it ends.
    let before = store.snapshot("t1x").unwrap();
    write_and_flush(&store, "d");
    write_and_flush(&store, "e");
    assert_eq!(kept_version(&store), None, "no map to follow");
    let map = before.build_map().unwrap();
    assert_eq!(
        map.version, before.blocks_version,
        "the snapshot holds its own"
    );
    assert_eq!(
        kept_version(&store),
        Some((before.blocks_version + 2, true))
    );
    assert_map_is_what_a_walk_builds(&store);
    // The snapshot goes on with the map of its version (no walk again).
    let range = KeyRange::full();
    assert!(Arc::ptr_eq(
        &before.block_map(&whole(&range)).unwrap(),
        &map
    ));
    drop(before);

    // More commits than are recorded overtook this walk: it is not kept.
    store.gate.with_writer(|w| w.flush()).unwrap();
    let old = store.snapshot("t1x").unwrap();
    for i in 0..=crate::durable::block_map::RECENT_COMMITS {
        write_and_flush(&store, &format!("f{i:02}"));
    }
    *old.entry.block_map.lock().unwrap() = None;
    old.build_map().unwrap();
    assert_eq!(kept_version(&store), None);

    // A change the writer did not record (a replay's unpublished flush) ends the history.
    let old = store.snapshot("t1x").unwrap();
    write_and_flush(&store, "g");
    store.shared.map_builds.recent.forget();
    old.build_map().unwrap();
    assert!(
        kept_version(&store).is_none_or(|(_, current)| !current),
        "never taken for the current version"
    );
    // The next recorded commit starts a new history: a walk of the version after the
    // unrecorded change is brought forward again.
    let fresh = store.snapshot("t1x").unwrap();
    write_and_flush(&store, "h");
    fresh.build_map().unwrap();
    assert_eq!(kept_version(&store).map(|(_, current)| current), Some(true));
    assert_map_is_what_a_walk_builds(&store);
    store.close().unwrap();
}

/// The kept map is of the current version and lists what a walk through that version's
/// blocks lists; every verified copy it holds is its block's stored bytes.
fn assert_map_is_what_a_walk_builds(store: &DurableBackend) {
    let snapshot = store.snapshot("t1x").unwrap();
    let kept = snapshot.kept_map().expect("a map of the current version");
    let walked = BlockMap::build(
        &snapshot.rows,
        snapshot.table,
        snapshot.blocks_version,
        &snapshot.copies,
    )
    .unwrap();
    assert_eq!(kept.entries(), walked.entries());
    for (at, entry) in kept.entries().iter().enumerate() {
        if let Some(copy) = kept.copy_made(at) {
            let stored = snapshot.rows.get(&*entry.key).unwrap().unwrap();
            assert_eq!(copy.bytes(), stored.value(), "the copy of block {at}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Through any writes, deletes and flushes — blocks split, merged, emptied, rewritten
    /// under their keys, partitions added and removed — the block map that follows each
    /// flush is the map a walk builds, and the copies it keeps are the blocks' bytes; gets
    /// and scans through it answer as the writes say.
    #[test]
    fn a_followed_block_map_is_the_one_a_walk_builds(
        rounds in proptest::collection::vec(
            proptest::collection::vec((0u8..4, 0u8..40, proptest::option::weighted(0.7, 0i32..100)), 1..40),
            1..6,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), true);
        let mut model: std::collections::BTreeMap<(String, String), i32> = ["a", "b", "c"]
            .iter()
            .flat_map(|pk| (0..20).step_by(2).map(move |i| ((pk.to_string(), format!("r{i:02}")), i)))
            .collect();
        keep_a_block_map(&store);
        for round in rounds {
            // Read every block twice through the map: copies of all.
            for _ in 0..2 {
                for (pk, rk) in model.keys() {
                    prop_assert!(store.get("t1x", pk, rk).unwrap().is_some());
                }
            }
            let mut ops = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for (p, r, v) in round {
                let (pk, rk) = (["a", "b", "c", "d"][p as usize].to_string(), format!("r{r:02}"));
                if !seen.insert((pk.clone(), rk.clone())) {
                    continue;
                }
                match v {
                    Some(v) => {
                        ops.push(WriteOp::InsertOrReplace { entity: entity(&pk, &rk, v) });
                        model.insert((pk, rk), v);
                    }
                    None if model.remove(&(pk.clone(), rk.clone())).is_some() => {
                        ops.push(WriteOp::Delete { partition_key: pk, row_key: rk, if_match: crate::op::IfMatch::Any });
                    }
                    None => {}
                }
            }
            if !ops.is_empty() {
                store.write_batch("t1x", ops).unwrap();
            }
            store.gate.with_writer(|w| w.flush()).unwrap();
            assert_map_is_what_a_walk_builds(&store);
            for ((pk, rk), v) in &model {
                let got = store.get("t1x", pk, rk).unwrap().unwrap();
                prop_assert_eq!(owned(got.get("V")), Some(Value::Int32(*v)));
            }
            prop_assert!(store.get("t1x", "a", "r99").unwrap().is_none());
        }
        store.close().unwrap();
    }
}

/// The writers print a stored row's properties as stored when its names were numbered in
/// the replies' order (`Names::ordered`), and sort them otherwise: either way, exactly
/// what they print for the row as an owned entity — from blocks and from the memtable.
#[test]
fn rows_print_their_properties_in_reply_order_with_or_without_sorting() {
    use tableq_model::json::{EntityWriter, EnvelopeRef, ListProperties, MetadataLevel};
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default().with_memtable_bytes(usize::MAX);
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    // Names first used in order; out of order; in byte order but across U+E000, where
    // UTF-16 order parts from it ("B\u{10000}" precedes "B\u{FF5A}", a fullwidth z, in
    // UTF-16; names hold letters, digits and `_`).
    // With each, how many of its first names are in order (`Names::ordered`).
    let tables: [(&str, &[&str], usize); 3] = [
        ("inorder", &["A", "Big", "C", "D"], 4),
        ("outoforder", &["C", "A", "D", "Big"], 1),
        ("private", &["A", "B\u{FF5A}", "B\u{10000}", "C"], 1),
    ];
    for (table, names, _) in tables {
        store.create_table(table).unwrap();
        let entity = |i: usize, subset: &[&str]| {
            let mut e = Entity::new("p", format!("r{i:02}"));
            for (k, n) in subset.iter().enumerate() {
                let v = match k % 3 {
                    0 => Value::Int32(i as i32),
                    1 => Value::Int64(i as i64 * 7),
                    _ => Value::String(format!("s{i}")),
                };
                e.set(*n, v);
            }
            e
        };
        // Entity i < 4 brings name i (numbered in the listed order: an entity numbers its
        // new names in its own order, by name); later ones use subsets. Both halves of the
        // table: flushed blocks, then the memtable.
        let ops = |from: usize| {
            (from..from + 4)
                .map(|i| {
                    let subset: Vec<&str> = if i < 4 {
                        names[..=i].to_vec()
                    } else {
                        names
                            .iter()
                            .copied()
                            .skip(i % 2)
                            .step_by(1 + i % 3)
                            .collect()
                    };
                    WriteOp::Insert {
                        entity: entity(i, &subset),
                    }
                })
                .collect()
        };
        store.write_batch(table, ops(0)).unwrap();
        store.gate.with_writer(|w| w.flush()).unwrap();
        store.write_batch(table, ops(4)).unwrap();
    }
    let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
    for (table, names, ordered) in tables {
        let snapshot = store.snapshot(table).unwrap();
        let range = KeyRange::full();
        let scan = whole(&range);
        let mut rows = 0;
        for row in snapshot.scan(scan) {
            let row = row.unwrap();
            let (mut stored, mut owned) = (Vec::new(), Vec::new());
            writer.write(&mut stored, &row, EnvelopeRef::default());
            writer.write(&mut owned, &row.to_entity(), EnvelopeRef::default());
            assert_eq!(
                String::from_utf8(stored).unwrap(),
                String::from_utf8(owned).unwrap(),
                "{table}"
            );
            // Printed as stored exactly when every name of the row is in the ordered ones.
            let fast = row
                .to_entity()
                .properties()
                .iter()
                .all(|p| names[..ordered].contains(&p.name.as_str()));
            assert_eq!(row.for_each_custom_sorted(&mut |_, _| ()), fast, "{table}");
            rows += 1;
        }
        assert_eq!(rows, 8, "{table}");
        snapshot.take_error().unwrap();
    }
    store.close().unwrap();
}
