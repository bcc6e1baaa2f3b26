//! Executor vs naive evaluation, by property, over [`VecSource`]: all pages concatenated
//! (any page size, work budget, thread count) equal every entity that lies in the plan's
//! ranges and satisfies the residual by `Predicate::eval`, in key order; continuations
//! resume exactly even when entities are inserted and deleted between pages. The same
//! properties over the memory engine's versions (with write overlays) are in
//! `store/tests/memory_executor.rs`.

mod support;

use proptest::prelude::*;
use std::collections::BTreeSet;
use support::plans::{arb_entity, arb_predicate, arb_ranges, keys, naive};
use tableq_exec::{Executor, Key, PageOptions, ResultRow, Tuning, VecSource};
use tableq_model::{CmpOp, Entity, Value};
use tableq_planner::plan::{KeyRange, KeySet, Plan};
use tableq_planner::predicate::Predicate;

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
    ) {
        let snapshot = VecSource::new(entities.clone());
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
        let mut table = VecSource::new(initial.clone());
        let residual = Predicate::compare("A", CmpOp::Ge, Value::Int32(1));
        let plan = Plan { ranges: KeySet::all(), residual: residual.clone(), select: None, top: None };
        let options = PageOptions::default().with_page_size(page_size);
        let start: BTreeSet<Key> = table.entities().iter().map(|r| Key::new(r.partition_key(), r.row_key())).collect();
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
                table = VecSource::new(table.entities().iter().cloned().chain([e.clone()]));
            }
            if let Some(&i) = del.next() {
                let all: Vec<Key> = table.entities().iter().map(|r| Key::new(r.partition_key(), r.row_key())).collect();
                if let Some(k) = all.get(i % all.len().max(1)) {
                    table = VecSource::new(table.entities().iter().filter(|e| k.cmp_pair(e.partition_key(), e.row_key()).is_ne()).cloned());
                    deleted.insert(k.clone());
                }
            }
        }
        // Strictly ascending: nothing repeated, nothing out of order.
        for w in got.windows(2) {
            prop_assert!(w[0] < w[1]);
        }
        // Every entity present and matching throughout was returned.
        let snap = VecSource::new(initial);
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
    let snapshot = VecSource::new([e]);
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
    let snapshot = VecSource::new((0..200_000).map(|i| {
        let mut e = Entity::new(format!("p{:02}", i % 10), format!("r{i:07}"));
        e.set("A", Value::Int32(i % 10));
        e
    }));
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
    let snapshot = VecSource::new((0..100).map(|i| Entity::new("p", format!("r{i:03}"))));
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
    let snapshot = VecSource::new((0..20_000).map(|i| Entity::new("p", format!("r{i:05}"))));
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
        let snapshot = VecSource::new(entities);
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
