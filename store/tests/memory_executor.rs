//! The executor over the memory engine's versions, by property: a [`MemorySnapshot`] built
//! partly by bulk load and partly by single writes (overlay rows, merged at small
//! thresholds) executes every plan exactly as the naive evaluation does, page by page;
//! continuations resume exactly when versions are derived between pages; readers of a
//! version never see part of a concurrent write. The generators and the naive evaluation
//! are the executor's own (`exec/tests/support/plans.rs`, included by path).

use crate::plans;

use plans::{arb_entity, arb_predicate, arb_ranges, keys, naive};
use proptest::prelude::*;
use std::collections::BTreeSet;
use tableq_exec::{Executor, Key, PageOptions, Tuning, compare_keys};
use tableq_model::{CmpOp, Entity, EntityView, Value};
use tableq_planner::plan::{KeySet, Plan};
use tableq_planner::predicate::Predicate;
use tableq_store::{Change, MemorySnapshot, OverlayLimits};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn executor_equals_naive_scan_over_overlays(
        entities in proptest::collection::vec(arb_entity(), 0..40),
        ranges in arb_ranges(),
        residual in arb_predicate(),
        top in proptest::option::of(1u32..6),
        page_size in proptest::option::of(1usize..8),
        budget in proptest::option::of(1u64..10),
        threads in 1usize..4,
        chunk_rows in 1usize..5,
        small_wave in prop_oneof![Just(0usize), Just(2048)],
        bulk in 0usize..41,
        min_rows in prop_oneof![Just(1usize), Just(3), Just(64)],
    ) {
        // The first `bulk` entities bulk-loaded, the rest written one by one (overlay rows,
        // merged at small thresholds).
        let (first, rest) = entities.split_at(bulk.min(entities.len()));
        let mut snapshot = MemorySnapshot::from_entities(first.to_vec())
            .unwrap()
            .with_overlay_limits(OverlayLimits { min_rows, divisor: 2 });
        for e in rest {
            snapshot = snapshot.with_changes([Change::Put(e.clone())]).unwrap();
        }
        let plan = Plan { ranges, residual, select: None, top };
        let tuning = Tuning { initial_chunk_rows: chunk_rows, max_chunk_rows: 8, small_wave_rows: small_wave };
        let executor = Executor::new(&snapshot).with_threads(threads).unwrap().with_tuning(tuning);
        let options = PageOptions { page_size, max_examined: budget, ..PageOptions::default() };
        let limit = top.map(|t| t as usize).into_iter().chain(page_size).min().unwrap_or(1000);
        let mut got = Vec::new();
        let mut continuation: Option<Key> = None;
        for _ in 0..10_000 {
            let page = executor.execute_page(&plan, continuation.as_ref(), &options).unwrap();
            prop_assert!(page.rows.len() <= limit);
            prop_assert_eq!(page.stats.matched, page.rows.len() as u64);
            if let (Some(next), Some(last)) = (&page.continuation, page.rows.last()) {
                prop_assert!(last.key() < *next, "continuation {} not after last row {}", next, last.key());
            }
            if let (Some(prev), Some(next)) = (&continuation, &page.continuation) {
                prop_assert!(prev < next, "no progress: {} then {}", prev, next);
            }
            got.extend(keys(&page.rows));
            continuation = page.continuation;
            if continuation.is_none() {
                break;
            }
        }
        prop_assert!(continuation.is_none());
        prop_assert_eq!(got, naive(&entities, &plan));
    }

    /// Partitions large enough to get columns (64 rows and more): the residual is tested
    /// over the columns of each run of base rows — Int32 `A` (in one row an Int64 now and
    /// then, which takes the column away), String `B` (no column form), Boolean `C` — and row by row
    /// over the overlay's blocks, and every page still equals the naive evaluation.
    #[test]
    fn columnar_runs_equal_naive_scan(
        rows in proptest::collection::vec(
            (0usize..2, proptest::option::of(0i32..4), any::<bool>(), proptest::option::of("[xy]{0,1}")),
            64..300,
        ),
        int64_row in proptest::option::of(0usize..600),
        written in proptest::collection::vec((0usize..2, 0usize..320, proptest::option::of(0i32..4)), 0..12),
        ranges in arb_ranges(),
        residual in arb_predicate(),
        top in proptest::option::of(1u32..400),
        page_size in proptest::option::of(1usize..200),
        budget in proptest::option::of(1u64..3000),
        threads in 1usize..3,
        chunk_rows in prop_oneof![Just(1usize), Just(64), Just(1024)],
    ) {
        let entity = |pk: usize, rk: usize, a: Option<Value>, c: Option<bool>, b: Option<String>| {
            let mut e = Entity::new(["a", "b"][pk], format!("{rk:03}"));
            if let Some(a) = a {
                e.set("A", a);
            }
            if let Some(b) = b {
                e.set("B", Value::String(b));
            }
            if let Some(c) = c {
                e.set("C", Value::Boolean(c));
            }
            e
        };
        let mut entities: Vec<Entity> = rows
            .iter()
            .enumerate()
            .map(|(i, (pk, a, c, b))| {
                // Now and then one row holds A as an Int64: its partition's A has no column.
                let a = a.map(|a| if int64_row == Some(i) { Value::Int64(i64::from(a)) } else { Value::Int32(a) });
                entity(*pk, i, a, Some(*c), b.clone())
            })
            .collect();
        let mut snapshot = MemorySnapshot::from_entities(entities.clone())
            .unwrap()
            .with_overlay_limits(OverlayLimits { min_rows: 1_000_000, divisor: 1_000_000 });
        for (pk, rk, a) in &written {
            let e = entity(*pk, *rk, a.map(Value::Int32), None, None);
            snapshot = snapshot.with_changes([Change::Put(e.clone())]).unwrap();
            entities.push(e);
        }
        let plan = Plan { ranges, residual, select: None, top };
        // Small chunks make parallel waves (the room shared between chunks); a work budget
        // stops pages between reports of the filtered scan.
        let tuning = Tuning { initial_chunk_rows: chunk_rows, max_chunk_rows: chunk_rows.max(8), small_wave_rows: 0 };
        let executor = Executor::new(&snapshot).with_threads(threads).unwrap().with_tuning(tuning);
        let options = PageOptions { page_size, max_examined: budget, ..PageOptions::default() };
        let mut got = Vec::new();
        let mut continuation: Option<Key> = None;
        loop {
            let page = executor.execute_page(&plan, continuation.as_ref(), &options).unwrap();
            if let (Some(next), Some(last)) = (&page.continuation, page.rows.last()) {
                prop_assert!(last.key() < *next);
            }
            got.extend(keys(&page.rows));
            continuation = page.continuation;
            if continuation.is_none() {
                break;
            }
        }
        prop_assert_eq!(got, naive(&entities, &plan));
    }

    #[test]
    fn continuations_resume_exactly_under_writes(
        initial in proptest::collection::vec(arb_entity(), 0..40),
        inserts in proptest::collection::vec(arb_entity(), 0..20),
        deletes in proptest::collection::vec(0usize..40, 0..10),
        page_size in 1usize..5,
    ) {
        let mut table = MemorySnapshot::from_entities(initial.clone()).unwrap();
        let residual = Predicate::compare("A", CmpOp::Ge, Value::Int32(1));
        let plan = Plan { ranges: KeySet::all(), residual: residual.clone(), select: None, top: None };
        let options = PageOptions::default().with_page_size(page_size);
        let start: BTreeSet<Key> = table.iter().map(|r| Key::new(r.partition_key(), r.row_key())).collect();
        let mut deleted: BTreeSet<Key> = BTreeSet::new();
        let mut got: Vec<Key> = Vec::new();
        let mut continuation: Option<Key> = None;
        let (mut ins, mut del) = (inserts.iter(), deletes.iter());
        loop {
            // A fresh snapshot per page, as a server would take.
            let snapshot = table.clone();
            let page = Executor::new(&snapshot).execute_page(&plan, continuation.as_ref(), &options).unwrap();
            got.extend(keys(&page.rows));
            continuation = page.continuation;
            if continuation.is_none() {
                break;
            }
            // Writes between pages: upsert (insert or replace) one entity, delete one.
            if let Some(e) = ins.next() {
                // Replacing an entity could change whether it matches: count it as deleted.
                deleted.insert(Key::new(e.partition_key(), e.row_key()));
                table = table.with_changes([Change::Put(e.clone())]).unwrap();
            }
            if let Some(&i) = del.next() {
                let all: Vec<Key> = table.iter().map(|r| Key::new(r.partition_key(), r.row_key())).collect();
                if let Some(k) = all.get(i % all.len().max(1)) {
                    table = table.with_changes([Change::delete(k.partition_key.as_str(), k.row_key.as_str())]).unwrap();
                    deleted.insert(k.clone());
                }
            }
        }
        // Strictly ascending: nothing repeated, nothing out of order.
        for w in got.windows(2) {
            prop_assert!(w[0] < w[1]);
        }
        // Every entity present and matching throughout was returned.
        let snap = MemorySnapshot::from_entities(initial).unwrap();
        for k in start.difference(&deleted) {
            let Ok(Some(e)) = tableq_exec::EntitySource::get(&snap, &k.partition_key, &k.row_key) else {
                panic!("{k} is in the snapshot");
            };
            if residual.eval(&e) {
                prop_assert!(got.contains(k), "{} missing", k);
            }
        }
    }
}

#[test]
fn snapshots_stay_consistent_under_concurrent_writes() {
    // The current version behind a lock, as a store keeps it: one writer derives and
    // publishes versions, readers take the current one and scan it.
    let table = std::sync::RwLock::new(
        MemorySnapshot::from_entities((0..2_000).map(|i| {
            let mut e = Entity::new(format!("p{}", i % 7), format!("r{i:05}"));
            e.set("V", Value::Int32(0));
            e
        }))
        .unwrap(),
    );
    let current = || table.read().unwrap().clone();
    std::thread::scope(|s| {
        s.spawn(|| {
            // Each batch bumps every entity of one partition to the same new version.
            for version in 1..40 {
                let snapshot = current();
                let batch: Vec<_> = snapshot
                    .iter()
                    .filter(|r| r.partition_key() == format!("p{}", version % 7))
                    .map(|r| {
                        let mut e = tableq_exec::SourceRow::to_entity(&r);
                        e.set("V", Value::Int32(version));
                        Change::Put(e)
                    })
                    .collect();
                let next = snapshot.with_changes(batch).unwrap();
                *table.write().unwrap() = next;
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..40 {
                    let snapshot = current();
                    let rows: Vec<_> = snapshot.iter().collect();
                    assert_eq!(rows.len(), 2_000);
                    for w in rows.windows(2) {
                        assert!(
                            compare_keys(
                                w[0].partition_key(),
                                w[0].row_key(),
                                w[1].partition_key(),
                                w[1].row_key()
                            )
                            .is_lt()
                        );
                    }
                    // A batch is atomic: all entities of a partition carry one version.
                    for p in 0..7 {
                        let pk = format!("p{p}");
                        let versions: BTreeSet<String> = rows
                            .iter()
                            .filter(|r| r.partition_key() == pk)
                            .map(|r| format!("{:?}", r.custom("V")))
                            .collect();
                        assert_eq!(versions.len(), 1, "{versions:?}");
                    }
                }
            });
        }
    });
}
