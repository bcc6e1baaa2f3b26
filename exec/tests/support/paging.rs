//! Paging that never reads twice, over any source: a table of `n` entities in 13
//! partitions of uneven sizes, queries of every shape (no filter, selective, unselective,
//! empty, a residual true only in some partitions, key ranges with and without a
//! residual, several ranges), each followed through its continuations at several page
//! sizes. Shared by `exec/tests/paging.rs` (over `VecSource`) and
//! `store/tests/paging.rs` (the memory and durable engines, included by path).
//!
//! [`check`] asserts, for every query and page size:
//! * the pages, concatenated, are exactly one unpaged scan (the same keys in the same
//!   order) and exactly the entities the plan matches by naive evaluation;
//! * no page holds more than its limit, every continuation lies after the page's last row;
//! * the entities examined by all pages together are at most [`MAX_RATIO`] × those of the
//!   unpaged scan (which examines each entity of the plan's ranges once). No constant is
//!   added: a continuation that is not an entity the page examined is resolved by looking
//!   up the next key, which reads that entity but does not examine it (the next page does,
//!   once); only a page that ends inside a parallel chunk examines, again on the next
//!   page, the matches it had no room for — which the bound must absorb.
#![allow(dead_code)]

use tableq_exec::{EntitySource, ExecStats, Executor, Key, PageOptions, compare_keys};
use tableq_model::{Entity, Value};
use tableq_parser::{FilterOptions, parse_filter, parse_top};
use tableq_planner::plan::Plan;

/// The most entities paging may examine, as a multiple of one unpaged scan's. Issue 31's
/// target is 1.01×, measured by `cargo bench -p tableq-store --bench paging` (1.0000× on
/// every shape, benches/README.md); what a page re-reads depends on how far parallel
/// chunks got before the page filled, i.e. on thread timing, and the worst seen under load
/// was 1.0015×. The tests allow 1.05× so that a heavily loaded CI machine cannot fail them,
/// which still fails the executor before issue 31 on every selective shape (1.26× and more).
pub const MAX_RATIO: f64 = 1.05;

/// Partitions of the table (their sizes differ: entities are spread by a hash).
pub const PARTITIONS: u64 = 13;

/// SplitMix64 of `i`: a fixed pseudo-random number per entity.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` entities in key order: PartitionKey `pNN` (hash of the index), RowKey `rNNNNNNN`
/// (the index); `A` uniform in 0..1000, `P` the partition's number.
pub fn entities(n: u64) -> Vec<Entity> {
    let mut all: Vec<Entity> = (0..n)
        .map(|i| {
            let h = mix(i);
            let p = h % PARTITIONS;
            let mut e = Entity::new(format!("p{p:02}"), format!("r{i:07}"));
            e.set("A", Value::Int32(((h >> 20) % 1000) as i32));
            e.set("P", Value::Int32(p as i32));
            e
        })
        .collect();
    all.sort_by(|a, b| {
        compare_keys(
            a.partition_key(),
            a.row_key(),
            b.partition_key(),
            b.row_key(),
        )
    });
    all
}

/// The queries: `$filter` text (empty: none).
pub const FILTERS: &[&str] = &[
    "",
    "A lt 900",
    "A lt 100",
    "A lt 20",
    "A eq 7",
    "A lt 0",
    "P ge 10",
    "P ge 10 and A lt 100",
    "P eq 5 or P eq 11",
    "PartitionKey eq 'p03'",
    "PartitionKey ge 'p02' and PartitionKey lt 'p06' and A lt 500",
    "PartitionKey eq 'p04' and RowKey ge 'r0020000' and RowKey lt 'r0080000'",
    "(PartitionKey eq 'p01' or PartitionKey eq 'p07') and A ge 10",
    "PartitionKey gt 'p10' and A lt 50",
];

/// The page sizes: `$top` (or none) and the executor's page size (or the default 1 000).
pub const PAGINGS: &[(Option<&str>, Option<usize>)] = &[
    (None, None),
    (Some("7"), None),
    (Some("1000"), None),
    (None, Some(5000)),
];

/// The plan of a `$filter` (empty: none) and `$top`.
pub fn plan(filter: &str, top: Option<&str>) -> Plan {
    let filter = parse_filter(filter, &FilterOptions::default()).expect("the filters parse");
    let top = top.map(|t| parse_top(t).expect("the tops parse"));
    tableq_planner::plan(&filter, None, top.as_ref())
}

/// Checks every filter at every paging over `executor` (whose source holds exactly
/// `entities`, in key order); returns one line per case: the examined ratio and pages.
pub fn check<S: EntitySource + ?Sized>(
    executor: &Executor<'_, S>,
    entities: &[Entity],
) -> Vec<String> {
    let mut report = Vec::new();
    for filter in FILTERS {
        let unpaged_plan = plan(filter, None);
        let naive: Vec<Key> = entities
            .iter()
            .filter(|e| unpaged_plan.matches(*e))
            .map(|e| Key::new(e.partition_key(), e.row_key()))
            .collect();
        let whole = executor
            .execute_page(&unpaged_plan, None, &PageOptions::unbounded())
            .expect("the unpaged scan runs");
        assert!(whole.continuation.is_none(), "{filter}: one page");
        let whole_keys: Vec<Key> = whole.rows.iter().map(|r| r.key()).collect();
        assert_eq!(
            whole_keys, naive,
            "{filter}: the unpaged scan is the naive one"
        );
        for &(top, page_size) in PAGINGS {
            let plan = plan(filter, top);
            let options = PageOptions {
                page_size,
                ..PageOptions::default()
            };
            let (keys, stats, pages) = follow(executor, &plan, &options, filter);
            assert!(
                keys == whole_keys,
                "{filter} ($top {top:?}, page size {page_size:?}): {} rows paged, {} unpaged",
                keys.len(),
                whole_keys.len()
            );
            let ratio = stats.examined as f64 / whole.stats.examined.max(1) as f64;
            let line = format!(
                "{filter:?} $top {top:?} page size {page_size:?}: {} rows, {pages} pages, \
                 examined {} (unpaged {}): {ratio:.4}",
                keys.len(),
                stats.examined,
                whole.stats.examined
            );
            assert!(
                stats.examined as f64 <= MAX_RATIO * whole.stats.examined as f64,
                "{line}"
            );
            report.push(line);
        }
    }
    report
}

/// Follows `plan`'s continuations to the end: the keys of all pages, the summed statistics
/// and the number of pages.
fn follow<S: EntitySource + ?Sized>(
    executor: &Executor<'_, S>,
    plan: &Plan,
    options: &PageOptions,
    filter: &str,
) -> (Vec<Key>, ExecStats, usize) {
    let limit = plan
        .top
        .map(|t| t as usize)
        .into_iter()
        .chain(options.page_size)
        .min()
        .unwrap_or(1000);
    let mut keys: Vec<Key> = Vec::new();
    let mut stats = ExecStats::default();
    let mut continuation: Option<Key> = None;
    let mut pages = 0;
    loop {
        let page = executor
            .execute_page(plan, continuation.as_ref(), options)
            .expect("every page runs");
        pages += 1;
        assert!(page.rows.len() <= limit, "{filter}: a page over its limit");
        if let (Some(next), Some(last)) = (&page.continuation, page.rows.last()) {
            assert!(
                last.key() < *next,
                "{filter}: {next} not after {}",
                last.key()
            );
        }
        if let (Some(prev), Some(next)) = (&continuation, &page.continuation) {
            assert!(prev < next, "{filter}: no progress from {prev} to {next}");
        }
        keys.extend(page.rows.iter().map(|r| r.key()));
        stats += page.stats;
        continuation = page.continuation;
        if continuation.is_none() {
            return (keys, stats, pages);
        }
    }
}
