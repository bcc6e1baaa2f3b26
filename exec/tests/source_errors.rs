//! Sources that fail: the executor hands back the source's own error, typed
//! (`ExecError::Source`), exactly when a sequential scan of the page would meet it, and never
//! returns wrong rows. The faulty source wraps a `VecSource` and fails at one key: when
//! a scan reaches it, when it is looked up, and (optionally) when a split covers it.

use proptest::prelude::*;
use tableq_exec::{
    Chunk, EntityRef, EntitySource, ExecError, Executor, Key, OkRows, PageOptions, ResultRow, Scan,
    SlotLookup, Tuning, VecRows, VecSource,
};
use tableq_model::{CmpOp, Entity, EntityView, Value};
use tableq_planner::plan::{KeyInterval, KeyRange, KeySet, Plan};
use tableq_planner::predicate::Predicate;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("injected fault at {0}")]
struct Fault(Key);

struct Faulty<'a> {
    inner: &'a VecSource,
    fault: Key,
    fail_split: bool,
}

struct FaultyRows<'a> {
    rows: OkRows<VecRows<'a>>,
    fault: &'a Key,
    failed: bool,
}

impl<'a> Iterator for FaultyRows<'a> {
    type Item = Result<EntityRef<'a>, Fault>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            // A well-behaved executor never asks again after an error.
            panic!("row requested after an error");
        }
        let Ok(row) = self.rows.next()?;
        if self
            .fault
            .cmp_pair(row.partition_key(), row.row_key())
            .is_eq()
        {
            self.failed = true;
            return Some(Err(Fault(self.fault.clone())));
        }
        Some(Ok(row))
    }
}

impl EntitySource for Faulty<'_> {
    type Error = Fault;
    type Row<'a>
        = EntityRef<'a>
    where
        Self: 'a;
    type Rows<'a>
        = FaultyRows<'a>
    where
        Self: 'a;

    fn scan<'a>(&'a self, scan: Scan<'a>) -> FaultyRows<'a> {
        FaultyRows {
            rows: self.inner.scan(scan),
            fault: &self.fault,
            failed: false,
        }
    }

    fn get<'a>(&'a self, pk: &str, rk: &str) -> Result<Option<EntityRef<'a>>, Fault> {
        if self.fault.cmp_pair(pk, rk).is_eq() {
            return Err(Fault(self.fault.clone()));
        }
        let Ok(row) = self.inner.get(pk, rk);
        Ok(row)
    }

    fn split(&self, scan: Scan<'_>, rows: usize, max: usize) -> Result<Vec<Chunk>, Fault> {
        let Ok(chunks) = self.inner.split(scan, rows, max);
        let covered = |c: &Chunk| {
            let piece = Scan {
                range: scan.range,
                from: c.from.as_ref().or(scan.from),
                until: c.until.as_ref(),
            };
            piece.contains(&self.fault.partition_key, &self.fault.row_key)
        };
        if self.fail_split && chunks.iter().any(covered) {
            return Err(Fault(self.fault.clone()));
        }
        Ok(chunks)
    }

    fn property_slot(&self, name: &str) -> SlotLookup {
        self.inner.property_slot(name)
    }
}

fn keys(rows: &[ResultRow]) -> Vec<Key> {
    rows.iter().map(ResultRow::key).collect()
}

/// All pages of `plan`, or the first error.
fn run_all(
    executor: &Executor<'_, Faulty<'_>>,
    plan: &Plan,
    options: &PageOptions,
) -> Result<Vec<Key>, ExecError<Fault>> {
    let mut got = Vec::new();
    for page in executor.pages(plan, options.clone()) {
        got.extend(keys(&page?.rows));
    }
    Ok(got)
}

fn arb_entity() -> impl Strategy<Value = Entity> {
    ("[ab]{0,1}", "[abc]{0,2}", proptest::option::of(0i32..3)).prop_map(|(pk, rk, a)| {
        let mut e = Entity::new(pk, rk);
        if let Some(a) = a {
            e.set("A", Value::Int32(a));
        }
        e
    })
}

fn arb_keys() -> impl Strategy<Value = KeySet> {
    let key = || prop::sample::select(vec!["", "a", "b", "ab", "c"]).prop_map(str::to_owned);
    prop_oneof![
        Just(KeySet::all()),
        (key(), key()).prop_map(|(p, r)| KeySet::from(KeyRange::point(p, r))),
        key().prop_map(|p| KeySet::from(KeyRange::partition(p))),
        prop::collection::vec((key(), key()), 1..4).prop_map(|points| {
            KeySet::new(points.into_iter().map(|(p, r)| KeyRange::point(p, r)))
                .unwrap_or_else(|_| KeySet::none())
        }),
        key().prop_map(|p| KeySet::from(KeyRange::new(
            KeyInterval::new(std::ops::Bound::Included(p), std::ops::Bound::Unbounded),
            KeyInterval::full(),
        ))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn errors_are_typed_and_never_corrupt_results(
        entities in prop::collection::vec(arb_entity(), 1..30),
        fault_index in any::<prop::sample::Index>(),
        fail_split in any::<bool>(),
        ranges in arb_keys(),
        residual in prop_oneof![
            Just(Predicate::TRUE),
            (0i32..3).prop_map(|a| Predicate::compare("A", CmpOp::Ge, Value::Int32(a))),
        ],
        page_size in 1usize..6,
        threads in 1usize..3,
        chunk_rows in 1usize..4,
    ) {
        let snapshot = VecSource::new(entities);
        let all: Vec<Key> = snapshot.entities().iter().map(|r| Key::new(r.partition_key(), r.row_key())).collect();
        let fault = fault_index.get(&all).clone();
        let plan = Plan { ranges, residual, select: None, top: None };
        let expected: Vec<Key> = snapshot
            .entities()
            .iter()
            .filter(|r| plan.matches(*r))
            .map(|r| Key::new(r.partition_key(), r.row_key()))
            .collect();
        let source = Faulty { inner: &snapshot, fault: fault.clone(), fail_split };
        let tuning = Tuning { initial_chunk_rows: chunk_rows, max_chunk_rows: 8, small_wave_rows: 0 };
        let executor = Executor::new(&source).with_threads(threads).unwrap().with_tuning(tuning);
        match run_all(&executor, &plan, &PageOptions::default().with_page_size(page_size)) {
            Ok(got) => {
                prop_assert_eq!(&got, &expected);
                // A matching entity has to be read to be returned: its fault cannot be missed.
                prop_assert!(!expected.contains(&fault), "the fault at {} went unnoticed", fault);
            }
            Err(ExecError::Source(Fault(at))) => prop_assert_eq!(at, fault),
            Err(other) => prop_assert!(false, "unexpected error {}", other),
        }
    }
}

/// 10 000 entities of one partition.
fn one_partition() -> VecSource {
    VecSource::new((0..10_000).map(|i| Entity::new("p", format!("r{i:05}"))))
}

/// Two threads, 16-row chunks, every wave of more than one chunk on both threads.
fn parallel<'s>(source: &'s Faulty<'s>) -> Executor<'s, Faulty<'s>> {
    let tuning = Tuning {
        initial_chunk_rows: 16,
        max_chunk_rows: 16,
        small_wave_rows: 0,
    };
    Executor::new(source)
        .with_threads(2)
        .unwrap()
        .with_tuning(tuning)
}

#[test]
fn a_fault_past_the_page_end_is_not_met() {
    let snapshot = one_partition();
    let source = Faulty {
        inner: &snapshot,
        fault: Key::new("p", "r00100"),
        fail_split: false,
    };
    let executor = parallel(&source);
    let plan = Plan {
        ranges: KeySet::all(),
        residual: Predicate::TRUE,
        select: None,
        top: None,
    };
    // The fault lies 50 rows past a page of 50: the page is exactly the sequential one.
    let page = executor
        .execute_page(&plan, None, &PageOptions::default().with_page_size(50))
        .unwrap();
    assert_eq!(page.rows.len(), 50);
    assert_eq!(page.continuation, Some(Key::new("p", "r00050")));
    // A page of 100 needs the key after its last row, r00100, for its continuation.
    let err = executor
        .execute_page(&plan, None, &PageOptions::default().with_page_size(100))
        .unwrap_err();
    assert!(matches!(err, ExecError::Source(Fault(k)) if k == Key::new("p", "r00100")));
    // A page of 99 ends on r00098 with the continuation r00099: like a sequential scan, it
    // never reads the fault one row further (waves no longer read past the page's end).
    let page = executor
        .execute_page(&plan, None, &PageOptions::default().with_page_size(99))
        .unwrap();
    assert_eq!(page.rows.len(), 99);
    assert_eq!(page.continuation, Some(Key::new("p", "r00099")));
    // Resuming after the fault skips it.
    let after = Key::new("p", "r00101");
    let page = executor
        .execute_page(
            &plan,
            Some(&after),
            &PageOptions::default().with_page_size(10),
        )
        .unwrap();
    assert_eq!(page.rows[0].key(), after);
    // A wave sized by a low selectivity that rises: rows 0..200 match one in 50, every row
    // from 200 on matches. A page of 20 fills at row 215 inside a parallel wave (rows
    // 96..416, sized by the one-in-50 selectivity) whose later chunks may be scanned (and
    // meet the fault at r00300) or skipped: either way the page is the sequential one.
    let rising = VecSource::new((0..10_000).map(|i| {
        let mut e = Entity::new("p", format!("r{i:05}"));
        e.set("A", Value::Int32(i32::from(i >= 200 || i % 50 == 0)));
        e
    }));
    let rising_source = Faulty {
        inner: &rising,
        fault: Key::new("p", "r00300"),
        fail_split: false,
    };
    let executor = parallel(&rising_source);
    let plan = Plan {
        residual: Predicate::compare("A", CmpOp::Eq, Value::Int32(1)),
        ..plan
    };
    let page = executor
        .execute_page(&plan, None, &PageOptions::default().with_page_size(20))
        .unwrap();
    let got: Vec<String> = page
        .rows
        .iter()
        .map(|r| r.entity.row_key().to_owned())
        .collect();
    let want: Vec<String> = [0, 50, 100, 150]
        .into_iter()
        .chain(200..216)
        .map(|i| format!("r{i:05}"))
        .collect();
    assert_eq!(got, want);
    assert_eq!(page.continuation, Some(Key::new("p", "r00216")));
    assert!(page.stats.chunks > 1);
}

#[test]
fn point_lookups_and_splits_fail_with_the_source_error() {
    let snapshot = one_partition();
    let fault = Key::new("p", "r05000");
    let source = Faulty {
        inner: &snapshot,
        fault: fault.clone(),
        fail_split: true,
    };
    let executor = parallel(&source);
    let point = Plan {
        ranges: KeySet::from(KeyRange::point("p", "r05000")),
        residual: Predicate::TRUE,
        select: None,
        top: None,
    };
    let err = executor
        .execute_page(&point, None, &PageOptions::default())
        .unwrap_err();
    assert_eq!(err.to_string(), "injected fault at (\"p\", \"r05000\")");
    assert!(std::error::Error::source(&err).is_none());
    let whole = Plan {
        ranges: KeySet::from(KeyRange::partition("p")),
        ..point
    };
    let mut visited = 0;
    let err = executor
        .execute_page_with(&whole, None, &PageOptions::unbounded(), |_| visited += 1)
        .unwrap_err();
    assert!(matches!(err, ExecError::Source(Fault(k)) if k == fault));
    // Rows of waves before the failing split were handed over; the page then failed.
    assert!(visited < 5000, "{visited}");
}
