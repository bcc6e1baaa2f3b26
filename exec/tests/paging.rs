//! Pages that never read twice, over [`VecSource`]: a table followed through its
//! continuations gives exactly one unpaged scan and examines each entity about once
//! (`support/paging.rs`, shared with the store's engines), and by property, over random
//! tables, key ranges, residuals, page sizes, budgets, thread counts and chunk sizes, the
//! pages concatenated are exactly the unpaged scan.

mod support;

use proptest::prelude::*;
use support::paging;
use tableq_exec::{Executor, Key, PageOptions, Tuning, VecSource};
use tableq_model::{CmpOp, Entity, Value};
use tableq_planner::plan::{KeyInterval, KeyRange, KeySet, Plan};
use tableq_planner::predicate::Predicate;

/// 100 003 entities (a prime: no chunk size divides it), every query shape, every paging,
/// on 2 threads with the default tuning.
#[test]
fn pages_equal_one_scan_and_examine_each_entity_once() {
    let entities = paging::entities(100_003);
    let source = VecSource::new(entities.clone());
    let executor = Executor::new(&source).with_threads(2).unwrap();
    for line in paging::check(&executor, &entities) {
        println!("{line}");
    }
}

/// A full scan of a dense residual at the service's page size used to read 8 chunks of
/// 1 024 rows per page of 1 000: the first page now examines exactly its rows.
#[test]
fn a_dense_page_examines_only_its_rows() {
    let entities = paging::entities(20_011);
    let source = VecSource::new(entities);
    let executor = Executor::new(&source).with_threads(2).unwrap();
    let plan = paging::plan("", None);
    let page = executor
        .execute_page(&plan, None, &PageOptions::default())
        .unwrap();
    assert_eq!((page.rows.len(), page.stats.examined), (1000, 1000));
    // The continuation is the first entity not examined, right after the last row.
    let next = page.continuation.unwrap();
    let last = page.rows.last().unwrap().key();
    assert!(last < next);
    let second = executor
        .execute_page(&plan, Some(&next), &PageOptions::default())
        .unwrap();
    assert_eq!(second.rows[0].key(), next);
}

/// A table of `0..n` entities over a few partitions, `A` in 0..100 (uniform or growing
/// with the RowKey, so selectivity changes along the scan).
fn arb_table() -> impl Strategy<Value = Vec<Entity>> {
    (0usize..3000, 1u32..6, any::<bool>(), any::<u64>()).prop_map(|(n, parts, growing, seed)| {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            state >> 33
        };
        (0..n)
            .map(|i| {
                let p = next() % u64::from(parts);
                let mut e = Entity::new(format!("p{p}"), format!("r{i:05}"));
                let a = if growing {
                    (i * 100 / n.max(1)) as i32
                } else {
                    (next() % 100) as i32
                };
                e.set("A", Value::Int32(a));
                e
            })
            .collect()
    })
}

fn arb_plan_ranges() -> impl Strategy<Value = KeySet> {
    let key = |prefix: &'static str, most: u32| (0..most).prop_map(move |i| format!("{prefix}{i}"));
    prop_oneof![
        Just(KeySet::all()),
        key("p", 6).prop_map(|p| KeySet::from(KeyRange::partition(p))),
        (key("p", 6), 0u32..3000, 0u32..3000).prop_map(|(p, a, b)| {
            let (lo, hi) = (a.min(b), a.max(b));
            KeySet::from(KeyRange::new(
                KeyInterval::point(p),
                KeyInterval::new(
                    std::ops::Bound::Included(format!("r{lo:05}")),
                    std::ops::Bound::Excluded(format!("r{hi:05}")),
                ),
            ))
        }),
        (key("p", 6), key("p", 6)).prop_map(|(a, b)| {
            KeySet::new([KeyRange::partition(a.clone()), KeyRange::partition(b)])
                .unwrap_or_else(|_| KeySet::from(KeyRange::partition(a)))
        }),
        proptest::collection::vec((key("p", 6), 0u32..3000), 1..20).prop_map(|points| {
            KeySet::new(
                points
                    .into_iter()
                    .map(|(p, r)| KeyRange::point(p, format!("r{r:05}"))),
            )
            .unwrap_or_else(|_| KeySet::none())
        }),
    ]
}

fn arb_residual() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        Just(Predicate::TRUE),
        (0i32..102).prop_map(|a| Predicate::compare("A", CmpOp::Lt, Value::Int32(a))),
        (0i32..100).prop_map(|a| Predicate::compare("A", CmpOp::Eq, Value::Int32(a))),
        (0i32..100).prop_map(|a| Predicate::compare("A", CmpOp::Ge, Value::Int32(a))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn pages_concatenated_are_the_unpaged_scan(
        entities in arb_table(),
        ranges in arb_plan_ranges(),
        residual in arb_residual(),
        top in proptest::option::of(1u32..60),
        page_size in proptest::option::of(1usize..400),
        budget in proptest::option::of(1u64..500),
        threads in 1usize..4,
        initial_chunk_rows in 1usize..64,
        max_chunk_rows in 1usize..300,
        small_wave_rows in prop_oneof![Just(0usize), 0usize..200, Just(2048)],
    ) {
        let source = VecSource::new(entities);
        let tuning = Tuning { initial_chunk_rows, max_chunk_rows, small_wave_rows };
        let executor = Executor::new(&source).with_threads(threads).unwrap().with_tuning(tuning);
        let unpaged = Plan { ranges: ranges.clone(), residual: residual.clone(), select: None, top: None };
        let whole = executor.execute_page(&unpaged, None, &PageOptions::unbounded()).unwrap();
        prop_assert!(whole.continuation.is_none());
        let plan = Plan { top, ..unpaged };
        let options = PageOptions { page_size, max_examined: budget, ..PageOptions::default() };
        let limit = top.map(|t| t as usize).into_iter().chain(page_size).min().unwrap_or(1000);
        let mut got: Vec<Key> = Vec::new();
        let mut continuation: Option<Key> = None;
        let mut examined = 0u64;
        for _ in 0..100_000 {
            let page = executor.execute_page(&plan, continuation.as_ref(), &options).unwrap();
            prop_assert!(page.rows.len() <= limit);
            if let (Some(next), Some(last)) = (&page.continuation, page.rows.last()) {
                prop_assert!(last.key() < *next, "continuation {} not after last row {}", next, last.key());
            }
            if let (Some(prev), Some(next)) = (&continuation, &page.continuation) {
                prop_assert!(prev < next, "no progress: {} then {}", prev, next);
            }
            got.extend(page.rows.iter().map(|r| r.key()));
            examined += page.stats.examined;
            continuation = page.continuation;
            if continuation.is_none() {
                break;
            }
        }
        prop_assert!(continuation.is_none());
        let want: Vec<Key> = whole.rows.iter().map(|r| r.key()).collect();
        prop_assert_eq!(got, want);
        // Without a budget (which stops chunks running side by side anywhere) and on one
        // thread (no chunk reads ahead), paging examines each entity exactly once.
        if budget.is_none() && threads == 1 {
            prop_assert_eq!(examined, whole.stats.examined);
        }
    }
}
