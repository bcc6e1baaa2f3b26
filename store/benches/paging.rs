//! Benchmark `paging`: a scan followed through its continuations at the service's page
//! size (1 000 rows, no `$top`), as a client pages through a table, on the memory engine
//! (`MemorySnapshot`) and the durable engine (rows in blocks), 2 threads: the entities
//! examined by all pages together against the table's (the figure of issue 31 §4), the
//! pages, and the time of the whole walk (median of 5, visitor: nothing copied per row).
//!
//! Queries over 100 partitions, `Age` uniform in 0..100: no filter; `Age lt 90`; `Age lt
//! 10`; `Age eq 42` (1 %, several pages); `Age lt 0` (nothing); a key range
//! (`PartitionKey ge 'p010' and PartitionKey lt 'p020'`) with and without `Age lt 50`.
//!
//! Run: `cargo bench -p tableq-store --bench paging` (`TABLEQ_BENCH_SIZES=100000,1000000`
//! sets the table sizes; `TABLEQ_BENCH_DIR` where the durable data goes). Not a criterion
//! bench: the examined figures are exact, the times indicative. Results:
//! `benches/README.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};
use tableq_exec::{EntitySource, ExecStats, Executor, Key, PageOptions};
use tableq_model::{Entity, Value};
use tableq_parser::{FilterOptions, parse_filter};
use tableq_planner::plan::Plan;
use tableq_store::{Backend, DurableBackend, DurableOptions, MemorySnapshot, WriteOp};

const PARTITIONS: u64 = 100;

const FILTERS: &[&str] = &[
    "",
    "Age lt 90",
    "Age lt 10",
    "Age eq 42",
    "Age lt 0",
    "PartitionKey ge 'p010' and PartitionKey lt 'p020'",
    "PartitionKey ge 'p010' and PartitionKey lt 'p020' and Age lt 50",
];

/// Entity `i` (partition `i % 100`), `Age` from a hash of `i`.
fn entity(i: u64) -> Entity {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let mut e = Entity::new(
        format!("p{:03}", i % PARTITIONS),
        format!("r{:08}", i / PARTITIONS),
    );
    e.set("Age", Value::Int32((z % 100) as i32));
    e.set("Score", Value::Double((z >> 40) as f64 / 1000.0));
    e
}

fn plan(filter: &str) -> Plan {
    let f = parse_filter(filter, &FilterOptions::default()).expect("bench filters parse");
    tableq_planner::plan(&f, None, None)
}

/// Every page of `plan`, following continuations: the summed statistics and the pages.
fn walk<S: EntitySource + ?Sized>(executor: &Executor<'_, S>, plan: &Plan) -> (ExecStats, u64) {
    let mut next: Option<Key> = None;
    let mut stats = ExecStats::default();
    let mut pages = 0;
    loop {
        let (continuation, page) = executor
            .execute_page_with(plan, next.as_ref(), &PageOptions::default(), |row| {
                black_box(row);
            })
            .expect("the page runs");
        stats += page;
        pages += 1;
        next = continuation;
        if next.is_none() {
            return (stats, pages);
        }
    }
}

fn run<S: EntitySource + ?Sized>(engine: &str, n: u64, source: &S) {
    let executor = Executor::new(source).with_threads(2).expect("a pool");
    for filter in FILTERS {
        let plan = plan(filter);
        let (_, whole) = executor
            .execute_page_with(&plan, None, &PageOptions::unbounded(), |row| {
                black_box(row);
            })
            .expect("the scan runs");
        let mut times: Vec<Duration> = Vec::new();
        let mut result = (ExecStats::default(), 0);
        for _ in 0..5 {
            let started = Instant::now();
            result = walk(&executor, &plan);
            times.push(started.elapsed());
        }
        times.sort();
        let (stats, pages) = result;
        println!(
            "| {engine} | {n} | `{filter}` | {} | {pages} | {} | {} | **{:.4}×** | {:.1} ms |",
            stats.matched,
            whole.examined,
            stats.examined,
            stats.examined as f64 / whole.examined.max(1) as f64,
            times[2].as_secs_f64() * 1e3
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let sizes: Vec<u64> = std::env::var("TABLEQ_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000]);
    println!(
        "| engine | entities | `$filter` | rows | pages | examined, one scan | examined, paged | ratio | paged walk (median of 5) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in sizes {
        let entities: Vec<Entity> = {
            let mut all: Vec<Entity> = (0..n).map(entity).collect();
            all.sort_by(|a, b| {
                tableq_exec::compare_keys(
                    a.partition_key(),
                    a.row_key(),
                    b.partition_key(),
                    b.row_key(),
                )
            });
            all
        };
        let memory = MemorySnapshot::from_entities(entities.iter().cloned()).expect("memory table");
        run("memory", n, &memory);
        drop(memory);
        let root = std::env::var_os("TABLEQ_BENCH_DIR")
            .map(Into::into)
            .unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::tempdir_in(root).expect("temporary directory");
        let store = DurableBackend::open_with(dir.path(), DurableOptions::default())
            .expect("open the durable engine");
        store.create_table("paging").expect("create the table");
        for batch in entities.chunks(10_000) {
            let ops = batch
                .iter()
                .map(|e| WriteOp::Insert { entity: e.clone() })
                .collect();
            store.write_batch("paging", ops).expect("load");
        }
        let waited = Instant::now();
        while store.write_log_stats().memtable_bytes > 0 {
            assert!(waited.elapsed() < Duration::from_secs(300), "not flushed");
            std::thread::sleep(Duration::from_millis(10));
        }
        let snapshot = store.snapshot("paging").expect("snapshot");
        run("durable", n, &snapshot);
    }
}
