//! Criterion benchmark `postgres`: the PostgreSQL engine on one server and on a coordinator
//! with 3 shards (postgres_fdw), next to the embedded engines (in memory, and the durable
//! one on disk, `DurableBackend` with default options), on the same table of
//! 1 M entities (1000 partitions × 1000 rows): a point get, a partition query (one page of
//! 1000 rows, the middle partition), and a selective full scan (100 matches spread over the table) with the
//! residual pushed down and without (every row fetched, the executor filters) — rows
//! transferred are printed for both.
//!
//! Run: `cargo bench -p tableq-store --bench postgres -- --warm-up-time 1 --measurement-time 3`
//!
//! * Servers: `TABLEQ_BENCH_PG_URL` / `TABLEQ_BENCH_PG_SHARDED_URL` name running ones (e.g.
//!   from `scripts/pg-cluster.sh up`; the table, once loaded, is reused by later runs);
//!   otherwise the bench starts both through the script and they stop when it exits.
//! * `TABLEQ_BENCH_DURABLE_DIR=DIR` keeps the durable engine's files in DIR (created if
//!   missing; a loaded table is reused, and `tableq serve --data DIR` serves it — that is how
//!   `benches/README.md` measures a point get through the server); otherwise a temporary
//!   directory under `TABLEQ_BENCH_DIR` (default: the system's), removed at the end.
//! * `TABLEQ_BENCH_ENTITIES=N` changes the table size (default 1 000 000; N/1000 partitions).
//!
//! Results and the reference machine: `benches/README.md` (section `postgres`).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;
use tableq_exec::{Key, PageOptions};
use tableq_model::{Entity, Value};
use tableq_parser::{FilterOptions, parse_filter, parse_top};
use tableq_planner::plan::Plan;
use tableq_store::postgres::{PostgresBackend, PostgresConfig};
use tableq_store::{Backend, DurableBackend, MemoryBackend, WriteOp};

const TABLE: &str = "bench";
const ROWS_PER_PARTITION: u64 = 1000;

fn entities() -> u64 {
    std::env::var("TABLEQ_BENCH_ENTITIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// Entity `i`: partition `p{i/1000:04}`, row `r{i%1000:04}`; `N` a permutation of 0..n
/// (so `N lt 100` matches 100 entities spread over the table), and a few other properties.
fn entity(i: u64, n: u64) -> Entity {
    let mut e = Entity::new(
        format!("p{:04}", i / ROWS_PER_PARTITION),
        format!("r{:04}", i % ROWS_PER_PARTITION),
    );
    let permuted = (i * 7919) % n;
    e.set("N", Value::Int32(permuted as i32));
    e.set("Category", Value::String(format!("category-{}", i % 10)));
    e.set("Price", Value::Double((i % 10_000) as f64 / 100.0));
    e.set("Active", Value::Boolean(i.is_multiple_of(3)));
    e.set("Name", Value::String(format!("customer name {i:08}")));
    e
}

fn load(b: &dyn Backend, n: u64) {
    if b.table(TABLE).is_ok() {
        let last = n - 1;
        let p = format!("p{:04}", last / ROWS_PER_PARTITION);
        let r = format!("r{:04}", last % ROWS_PER_PARTITION);
        if b.get(TABLE, &p, &r).ok().flatten().is_some() {
            eprintln!("{}: reusing the loaded table", b.describe());
            return;
        }
        b.delete_table(TABLE).expect("drop a partly loaded table");
    }
    b.create_table(TABLE).expect("create");
    let started = Instant::now();
    let partitions = n.div_ceil(ROWS_PER_PARTITION);
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                for p in (t..partitions).step_by(4) {
                    let first = p * ROWS_PER_PARTITION;
                    let last = (first + ROWS_PER_PARTITION).min(n);
                    let ids: Vec<u64> = (first..last).collect();
                    for chunk in ids.chunks(100) {
                        let ops = chunk
                            .iter()
                            .map(|&i| WriteOp::InsertOrReplace {
                                entity: entity(i, n),
                            })
                            .collect();
                        b.write_batch(TABLE, ops).expect("load");
                    }
                }
            });
        }
    });
    eprintln!(
        "{}: loaded {n} entities in {:.1} s",
        b.describe(),
        started.elapsed().as_secs_f64()
    );
}

struct Engines {
    memory: MemoryBackend,
    durable: DurableBackend,
    /// Keeps a temporary durable directory alive (removed when the bench exits normally).
    _durable_dir: Option<tempfile::TempDir>,
    single: PostgresBackend,
    sharded: PostgresBackend,
    single_url: String,
    sharded_url: String,
}

fn start_cluster(shards: usize) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args(["up", "--shards", &shards.to_string()])
        .args(["--owner-pid", &std::process::id().to_string()])
        .output()
        .expect("run pg-cluster.sh");
    assert!(
        out.status.success(),
        "pg-cluster.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("TABLEQ_PG_URL=").map(str::to_owned))
        .expect("TABLEQ_PG_URL")
}

fn engines() -> &'static Engines {
    static E: OnceLock<Engines> = OnceLock::new();
    E.get_or_init(|| {
        let n = entities();
        let single_url = std::env::var("TABLEQ_BENCH_PG_URL").unwrap_or_else(|_| start_cluster(0));
        let sharded_url =
            std::env::var("TABLEQ_BENCH_PG_SHARDED_URL").unwrap_or_else(|_| start_cluster(3));
        let memory = MemoryBackend::new();
        let (durable_path, durable_dir) = match std::env::var_os("TABLEQ_BENCH_DURABLE_DIR") {
            Some(dir) => (std::path::PathBuf::from(dir), None),
            None => {
                let root = std::env::var_os("TABLEQ_BENCH_DIR")
                    .map(Into::into)
                    .unwrap_or_else(std::env::temp_dir);
                let dir = tempfile::tempdir_in(root).expect("temporary directory");
                (dir.path().to_owned(), Some(dir))
            }
        };
        std::fs::create_dir_all(&durable_path).expect("TABLEQ_BENCH_DURABLE_DIR");
        let durable = DurableBackend::open(&durable_path).expect("open durable");
        let single = PostgresBackend::open(&single_url).expect("open single");
        let sharded = PostgresBackend::open(&sharded_url).expect("open sharded");
        for b in [&memory as &dyn Backend, &durable, &single, &sharded] {
            load(b, n);
        }
        Engines {
            memory,
            durable,
            _durable_dir: durable_dir,
            single,
            sharded,
            single_url,
            sharded_url,
        }
    })
}

fn plan(filter: &str, top: Option<&str>) -> Plan {
    let f = parse_filter(filter, &FilterOptions::unlimited()).expect("bench filters are valid");
    let t = top.map(|t| parse_top(t).expect("valid $top"));
    tableq_planner::plan(&f, None, t.as_ref())
}

/// Runs every page of `plan`; returns the number of results.
fn run(b: &dyn Backend, plan: &Plan) -> usize {
    let mut rows = 0;
    let mut next: Option<Key> = None;
    loop {
        let page = b
            .query(
                TABLE,
                plan,
                next.as_ref(),
                &PageOptions::default(),
                &mut |r| {
                    black_box(r);
                    rows += 1;
                },
            )
            .expect("query");
        match page.continuation {
            Some(k) => next = Some(k),
            None => return rows,
        }
    }
}

fn named(e: &Engines) -> [(&'static str, &dyn Backend); 4] {
    [
        ("memory", &e.memory as &dyn Backend),
        ("durable", &e.durable),
        ("postgres_single", &e.single),
        ("postgres_3_shards", &e.sharded),
    ]
}

fn point_get(c: &mut Criterion) {
    let e = engines();
    let partitions = entities().div_ceil(ROWS_PER_PARTITION);
    let mut g = c.benchmark_group("postgres_point_get");
    for (name, b) in named(e) {
        let mut i = 0u64;
        g.bench_function(BenchmarkId::from_parameter(name), |bench| {
            bench.iter(|| {
                i = (i + 7919) % (partitions * ROWS_PER_PARTITION);
                let p = format!("p{:04}", (i / ROWS_PER_PARTITION) % partitions);
                let r = format!("r{:04}", i % ROWS_PER_PARTITION);
                black_box(b.get(TABLE, &p, &r).expect("get"))
            })
        });
    }
    g.finish();
}

fn partition_query(c: &mut Criterion) {
    let e = engines();
    let middle = entities().div_ceil(ROWS_PER_PARTITION) / 2;
    let p = plan(&format!("PartitionKey eq 'p{middle:04}'"), None);
    let mut g = c.benchmark_group("postgres_partition_query");
    g.sample_size(20);
    for (name, b) in named(e) {
        assert_eq!(
            run(b, &p),
            ROWS_PER_PARTITION as usize,
            "{name}: partition {middle}"
        );
        g.bench_function(BenchmarkId::from_parameter(name), |bench| {
            bench.iter(|| black_box(run(b, &p)))
        });
    }
    g.finish();
}

fn selective_scan(c: &mut Criterion) {
    let e = engines();
    let filter = "N lt 100";
    let p = plan(filter, None);
    let expected = 100.min(entities() as usize);
    let unpushed = |url: &str| {
        PostgresBackend::open_with(
            PostgresConfig::from_url(url)
                .expect("url")
                .with_pushdown(false),
        )
        .expect("open without pushdown")
    };
    let single_off = unpushed(&e.single_url);
    let sharded_off = unpushed(&e.sharded_url);
    for (name, b) in [
        ("postgres_single", &e.single),
        ("postgres_3_shards", &e.sharded),
        ("postgres_single_no_pushdown", &single_off),
        ("postgres_3_shards_no_pushdown", &sharded_off),
    ] {
        let before = b.rows_fetched();
        let started = Instant::now();
        assert_eq!(run(b, &p), expected, "{name}");
        eprintln!(
            "selective scan `{filter}` on {name}: {expected} matches, {} rows transferred, {:.1} ms",
            b.rows_fetched() - before,
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let mut g = c.benchmark_group("postgres_selective_scan");
    g.sample_size(10);
    let mut all = named(e).to_vec();
    all.push(("postgres_single_no_pushdown", &single_off));
    all.push(("postgres_3_shards_no_pushdown", &sharded_off));
    for (name, b) in all {
        g.bench_function(BenchmarkId::from_parameter(name), |bench| {
            bench.iter(|| black_box(run(b, &p)))
        });
    }
    g.finish();
}

criterion_group!(benches, point_get, partition_query, selective_scan);
criterion_main!(benches);
