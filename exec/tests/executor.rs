//! Executor vs naive evaluation, by property: all pages concatenated (any page size, work
//! budget, thread count) equal every entity that lies in the plan's ranges and satisfies the
//! residual by `Predicate::eval`, in key order; continuations resume exactly even when
//! entities are inserted and deleted between pages.

use proptest::prelude::*;
use std::collections::BTreeSet;
use std::ops::Bound;
use tableq_exec::{
    Executor, Key, MemorySnapshot, PageOptions, ResultRow, RowChange, Tuning, compare_keys,
};
use tableq_model::{CmpOp, Entity, EntityView, Value};
use tableq_planner::plan::{KeyInterval, KeyRange, KeySet, Plan};
use tableq_planner::predicate::Predicate;

const KEY: &str = "[ab\u{FFFF}\u{10000}]{0,2}";

fn arb_entity() -> impl Strategy<Value = Entity> {
    (
        KEY,
        KEY,
        proptest::option::of(0i32..4),
        proptest::option::of("[xy]{0,1}"),
        any::<bool>(),
    )
        .prop_map(|(pk, rk, a, b, c)| {
            let mut e = Entity::new(pk, rk);
            if let Some(a) = a {
                e.set("A", Value::Int32(a));
            }
            if let Some(b) = b {
                e.set("B", Value::String(b));
            }
            if c {
                e.set("C", Value::Int64(2));
            }
            e
        })
}

fn arb_bound() -> impl Strategy<Value = Bound<String>> {
    prop_oneof![
        Just(Bound::Unbounded),
        KEY.prop_map(Bound::Included),
        KEY.prop_map(Bound::Excluded),
    ]
}

fn arb_interval() -> impl Strategy<Value = KeyInterval> {
    prop_oneof![
        Just(KeyInterval::full()),
        KEY.prop_map(KeyInterval::point),
        (arb_bound(), arb_bound()).prop_map(|(lower, upper)| KeyInterval { lower, upper }),
    ]
}

fn arb_range() -> impl Strategy<Value = KeyRange> {
    (arb_interval(), arb_interval()).prop_map(|(partition_key, row_key)| KeyRange {
        partition_key,
        row_key,
    })
}

/// Key sets: the union of up to four arbitrary ranges (overlapping, unordered, empty) in
/// the normal form `KeySet::new` gives them, or their first range alone when the union
/// cannot be listed in scan order.
fn arb_ranges() -> impl Strategy<Value = KeySet> {
    prop_oneof![
        Just(KeySet::all()),
        proptest::collection::vec(arb_range(), 0..4).prop_map(|rs| {
            let first = rs.first().cloned();
            KeySet::new(rs).unwrap_or_else(|_| first.map_or_else(KeySet::none, KeySet::from))
        }),
        arb_range().prop_map(KeySet::from),
    ]
}

fn arb_predicate() -> impl Strategy<Value = Predicate> {
    let leaf = prop_oneof![
        Just(Predicate::TRUE),
        Just(Predicate::FALSE),
        (
            proptest::sample::select(vec!["A", "B", "C", "PartitionKey", "RowKey", "Missing"]),
            proptest::sample::select(CmpOp::ALL.to_vec()),
            prop_oneof![
                (0i32..4).prop_map(Value::Int32),
                Just(Value::Int64(2)),
                "[abxy]{0,1}".prop_map(Value::String),
            ],
        )
            .prop_map(|(p, op, value)| Predicate::compare(p, op, value)),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(Predicate::negate),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Predicate::and),
            proptest::collection::vec(inner, 2..4).prop_map(Predicate::or),
        ]
    })
}

fn naive(entities: &[Entity], plan: &Plan) -> Vec<Key> {
    let mut all: Vec<&Entity> = entities.iter().collect();
    all.sort_by(|a, b| {
        compare_keys(
            a.partition_key(),
            a.row_key(),
            b.partition_key(),
            b.row_key(),
        )
    });
    // Later duplicates replace earlier ones in the source: keep the last of each key.
    let mut dedup: Vec<Key> = Vec::new();
    let mut chosen: Vec<&Entity> = Vec::new();
    for e in entities.iter().rev() {
        if !chosen
            .iter()
            .any(|c| c.partition_key() == e.partition_key() && c.row_key() == e.row_key())
        {
            chosen.push(e);
        }
    }
    chosen.sort_by(|a, b| {
        compare_keys(
            a.partition_key(),
            a.row_key(),
            b.partition_key(),
            b.row_key(),
        )
    });
    for e in chosen {
        if plan.ranges.contains(e.partition_key(), e.row_key()) && plan.residual.eval(e) {
            dedup.push(Key::new(e.partition_key(), e.row_key()));
        }
    }
    dedup
}

fn keys(rows: &[ResultRow]) -> Vec<Key> {
    rows.iter().map(ResultRow::key).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn executor_equals_naive_scan(
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
            .with_overlay_limits(tableq_exec::OverlayLimits { min_rows, divisor: 2 });
        for e in rest {
            snapshot = snapshot.with_changes([RowChange::Put(e.clone())]).unwrap();
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
                table = table.with_changes([RowChange::Put(e.clone())]).unwrap();
            }
            if let Some(&i) = del.next() {
                let all: Vec<Key> = table.iter().map(|r| Key::new(r.partition_key(), r.row_key())).collect();
                if let Some(k) = all.get(i % all.len().max(1)) {
                    table = table.with_changes([RowChange::remove(k.partition_key.as_str(), k.row_key.as_str())]).unwrap();
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
fn select_projects_and_reports_nulls() {
    let mut e = Entity::new("p", "r");
    e.set("A", Value::Int32(1));
    e.set("B", Value::from("x"));
    let snapshot = MemorySnapshot::from_entities([e]).unwrap();
    let plan = Plan {
        ranges: KeySet::all(),
        residual: Predicate::TRUE,
        select: Some(vec!["B".into(), "Nope".into(), "PartitionKey".into()]),
        top: None,
    };
    let page = Executor::new(&snapshot)
        .execute_page(&plan, None, &PageOptions::default())
        .unwrap();
    let row = &page.rows[0];
    assert!(row.entity.custom("A").is_none());
    assert_eq!(row.entity.custom("B"), Some(&Value::from("x")));
    let names: Vec<&str> = row.fields().map(|(n, _)| n).collect();
    assert_eq!(names, ["B", "Nope", "PartitionKey"]);
    assert_eq!(row.nulls().collect::<Vec<_>>(), ["Nope"]);
}

#[test]
fn top_stops_early_and_budget_pages_can_be_empty() {
    let snapshot = MemorySnapshot::from_entities((0..200_000).map(|i| {
        let mut e = Entity::new(format!("p{:02}", i % 10), format!("r{i:07}"));
        e.set("A", Value::Int32(i % 10));
        e
    }))
    .unwrap();
    let executor = Executor::new(&snapshot).with_threads(2).unwrap();
    let matches_a0 = Predicate::compare("A", CmpOp::Eq, Value::Int32(0));
    // A full scan whose matches all lie in partition p00: the first page reads little.
    let plan = Plan {
        ranges: KeySet::all(),
        residual: matches_a0,
        select: None,
        top: Some(10),
    };
    let page = executor
        .execute_page(&plan, None, &PageOptions::default())
        .unwrap();
    assert_eq!(page.rows.len(), 10);
    assert!(
        page.stats.examined < 20_000,
        "examined {}",
        page.stats.examined
    );
    // Nothing matches: a small budget gives empty pages that still carry a continuation.
    let none = Predicate::compare("A", CmpOp::Gt, Value::Int32(100));
    let plan = Plan {
        ranges: KeySet::all(),
        residual: none,
        select: None,
        top: None,
    };
    let page = executor
        .execute_page(&plan, None, &PageOptions::default().with_max_examined(1000))
        .unwrap();
    assert!(page.rows.is_empty());
    assert!(page.continuation.is_some());
    assert!(
        page.stats.examined < 10_000,
        "examined {}",
        page.stats.examined
    );
}

#[test]
fn point_lookup_and_empty_plans() {
    let snapshot =
        MemorySnapshot::from_entities((0..100).map(|i| Entity::new("p", format!("r{i:03}"))))
            .unwrap();
    let executor = Executor::new(&snapshot);
    let plan = Plan {
        ranges: KeySet::from(KeyRange::point("p", "r042")),
        residual: Predicate::TRUE,
        select: None,
        top: None,
    };
    let page = executor
        .execute_page(&plan, None, &PageOptions::default())
        .unwrap();
    assert_eq!(keys(&page.rows), [Key::new("p", "r042")]);
    assert_eq!((page.stats.examined, page.continuation), (1, None));
    let empty = Plan {
        ranges: KeySet::none(),
        residual: Predicate::TRUE,
        select: None,
        top: None,
    };
    let page = executor
        .execute_page(&empty, None, &PageOptions::default())
        .unwrap();
    assert!(page.rows.is_empty() && page.continuation.is_none());
    assert!(
        executor
            .execute_page(&plan, None, &PageOptions::default().with_page_size(0))
            .is_err()
    );
}

#[test]
fn deadline_in_the_past_still_progresses() {
    let snapshot =
        MemorySnapshot::from_entities((0..20_000).map(|i| Entity::new("p", format!("r{i:05}"))))
            .unwrap();
    let executor = Executor::new(&snapshot).with_threads(2).unwrap();
    let plan = Plan {
        ranges: KeySet::all(),
        residual: Predicate::TRUE,
        select: None,
        top: None,
    };
    let options = PageOptions::unbounded().with_deadline(std::time::Instant::now());
    let mut pages = 0;
    let mut total = 0;
    for page in executor.pages(&plan, options) {
        let page = page.unwrap();
        pages += 1;
        total += page.rows.len();
        assert!(page.stats.examined >= 1);
    }
    assert_eq!(total, 20_000);
    assert!(pages > 1, "a past deadline must end pages early");
    let (rows, stats) = executor
        .execute_all(&plan, &PageOptions::default())
        .unwrap();
    assert_eq!((rows.len(), stats.matched), (20_000, 20_000));
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
                        RowChange::Put(e)
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

fn owned_fields(row: &ResultRow) -> Vec<(String, Option<Value>)> {
    row.fields()
        .map(|(n, v)| (n.to_owned(), v.map(|v| v.to_owned())))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]
    #[test]
    fn visitor_pages_equal_owned_pages(
        entities in proptest::collection::vec(arb_entity(), 0..30),
        residual in arb_predicate(),
        select in proptest::option::of(proptest::sample::subsequence(vec!["A", "B", "Nope", "RowKey", "Timestamp"], 0..4)),
        page_size in 1usize..5,
    ) {
        let snapshot = MemorySnapshot::from_entities(entities).unwrap();
        let select = select.map(|s| s.into_iter().map(String::from).collect::<Vec<_>>());
        let plan = Plan { ranges: KeySet::all(), residual, select, top: None };
        let executor = Executor::new(&snapshot);
        let options = PageOptions::default().with_page_size(page_size);
        let mut continuation: Option<Key> = None;
        loop {
            let page = executor.execute_page(&plan, continuation.as_ref(), &options).unwrap();
            let mut seen: Vec<Vec<(String, Option<Value>)>> = Vec::new();
            let mut owned: Vec<ResultRow> = Vec::new();
            let (next, stats) = executor
                .execute_page_with(&plan, continuation.as_ref(), &options, |row| {
                    let mut fields = Vec::new();
                    row.fields(&mut |n, v| fields.push((n.to_owned(), v.map(|v| v.to_owned()))));
                    seen.push(fields);
                    owned.push(row.to_result_row());
                })
                .unwrap();
            prop_assert_eq!(&next, &page.continuation);
            prop_assert_eq!(stats.matched as usize, page.rows.len());
            prop_assert_eq!(&owned, &page.rows);
            let want: Vec<_> = page.rows.iter().map(owned_fields).collect();
            prop_assert_eq!(seen, want);
            continuation = next;
            if continuation.is_none() {
                break;
            }
        }
    }
}
