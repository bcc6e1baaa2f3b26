//! Criterion benchmark `durable`: the durable engine (`DurableBackend`) next to the
//! in-memory `MemorySnapshot` on the same synthetic entities (100 partitions, 9 typed
//! properties, like `tableq::datagen`):
//!
//! * `full_scan_residual/{durable,memory}/{10k,1M}` — `Age eq 42 and Score gt 900.0 and
//!   Active` over every entity, the executor on 2 threads (`execute_all`); and
//!   `loop_{durable,memory}_1thread` — a hand-written loop testing `Age eq 42` by slot;
//! * `point_get/{backend_get,source_get}/{10k,1M}` — `Backend::get` (read transaction,
//!   lookup, owned `Entity`) and `EntitySource::get` on an open snapshot;
//! * `durable_insert/{interval,always}/{1,8}_writers` — single-entity inserts from 1 and
//!   from 8 threads, acknowledged once the write-ahead log record is written (`interval`,
//!   the default `--fsync`) or `fsync`ed (`always`; group commit shares `fsync`s);
//! * `durable_insert/{interval,always}/batch_100` — one `write_batch` of 100 inserts;
//! * `recovery/replay_1m` — opening a data directory whose log holds 1 M entities written
//!   since the last checkpoint (100 partitions, batches of 100): the time `open` takes to
//!   replay and checkpoint them (what a restart after a crash waits for).
//!
//! Run: `cargo bench -p tableq-store --bench durable -- --warm-up-time 1 --measurement-time 3`
//! (`TABLEQ_BENCH_BLOCK=rows,bytes` sets the block limits; `TABLEQ_BENCH_SKIP_1M=1` skips the 1 M-entity table and the recovery benchmark; `TABLEQ_BENCH_DIR` chooses where the data directories go; the default is the system
//! temporary directory, which must be on a real disk for the insert numbers to mean
//! anything). Results: `benches/README.md`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tableq_exec::{EntitySource, Executor, PageOptions};
use tableq_model::{DateTime, Entity, EntityView, Property, Value};
use tableq_parser::{FilterOptions, parse_filter};
use tableq_planner::plan::Plan;
use tableq_store::{Backend, DurableBackend, DurableOptions, FsyncPolicy, MemorySnapshot, WriteOp};

const PARTITIONS: u64 = 100;
const NAMES: [&str; 8] = [
    "Ada", "Alan", "Barbara", "Claude", "Grace", "Ken", "Zoë", "José",
];
const CITIES: [&str; 6] = ["Berlin", "Bogotá", "Kraków", "Lima", "São Paulo", "Zürich"];

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Entity `i` of a data set of `n` (partition `i % 100`), like `tableq::datagen`.
fn entity(i: u64) -> Entity {
    let mut rng = Rng(i.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 7);
    let blob_len = rng.below(17) as usize;
    let blob: Vec<u8> = (0..blob_len).map(|_| rng.next() as u8).collect();
    let born = DateTime::from_ticks(611_888_256_000_000_000 + rng.below(1 << 54) as i64)
        .unwrap_or(DateTime::MIN);
    let prop = |name: &str, value: Value| Property {
        name: name.to_owned(),
        value,
    };
    Entity::with_properties(
        format!("p{:03}", i % PARTITIONS),
        format!("r{:08}", i / PARTITIONS),
        None,
        [
            prop("Active", Value::Boolean(rng.next() >> 63 == 1)),
            prop("Age", Value::Int32(rng.below(100) as i32)),
            prop("Big", Value::Int64(rng.next() as i64)),
            prop("Blob", Value::Binary(blob)),
            prop("Born", Value::DateTime(born)),
            prop(
                "City",
                Value::from(CITIES[rng.below(CITIES.len() as u64) as usize]),
            ),
            prop(
                "Id",
                Value::Guid(uuid::Uuid::from_u64_pair(rng.next(), rng.next())),
            ),
            prop(
                "Name",
                Value::from(NAMES[rng.below(NAMES.len() as u64) as usize]),
            ),
            prop("Score", Value::Double(rng.below(1_000_000) as f64 / 1000.0)),
        ],
    )
}

/// The engine's options: defaults with a 1 GiB page cache (the default before it became
/// 64 MiB, so that the tables stay in redb's cache and the figures below stay comparable
/// with earlier runs), or the block limits in `TABLEQ_BENCH_BLOCK=rows,bytes` (to compare
/// block sizes).
fn options() -> DurableOptions {
    let options = DurableOptions::default().with_cache_bytes(1 << 30);
    let Some(spec) = std::env::var_os("TABLEQ_BENCH_BLOCK") else {
        return options;
    };
    let spec = spec.to_string_lossy().into_owned();
    let mut parts = spec.split(',').map(|p| p.trim().parse::<usize>());
    match (parts.next(), parts.next()) {
        (Some(Ok(rows)), Some(Ok(bytes))) => options.with_block_limits(rows, bytes),
        _ => panic!("TABLEQ_BENCH_BLOCK must be `rows,bytes`, not {spec:?}"),
    }
}

fn bench_root() -> std::path::PathBuf {
    std::env::var_os("TABLEQ_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(std::env::temp_dir)
}

/// A durable table of `n` entities (loaded partition by partition in batches of 10 000).
struct Loaded {
    store: DurableBackend,
    memory: MemorySnapshot,
    n: u64,
    _dir: tempfile::TempDir,
}

/// Where a loaded table's rows are when the benches read them.
#[derive(Clone, Copy, PartialEq)]
enum Rows {
    /// In redb's blocks: the load is flushed (as the engine does within
    /// [`DurableOptions::flush_interval`] of the last write) before anything is measured.
    Blocks,
    /// In the memtable: flushes are off, so the rows stay where writes put them (the
    /// state of a table's last second of writes).
    Memtable,
}

fn load(n: u64, rows_in: Rows) -> Loaded {
    let dir = tempfile::tempdir_in(bench_root()).expect("temporary directory");
    let options = match rows_in {
        Rows::Blocks => options(),
        Rows::Memtable => options()
            .with_memtable_bytes(usize::MAX)
            .with_flush_interval(Duration::from_secs(24 * 3600)),
    };
    let store = DurableBackend::open_with(dir.path(), options).expect("open");
    store.create_table("bench").expect("create table");
    let started = Instant::now();
    let per = n / PARTITIONS;
    for p in 0..PARTITIONS {
        let mut ops = Vec::new();
        for r in 0..per {
            ops.push(WriteOp::Insert {
                entity: entity(r * PARTITIONS + p),
            });
            if ops.len() == 10_000 {
                store
                    .write_batch("bench", std::mem::take(&mut ops))
                    .expect("load");
            }
        }
        if !ops.is_empty() {
            store.write_batch("bench", ops).expect("load");
        }
    }
    let file = dir.path().join(tableq_store::durable::DATA_FILE);
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "durable table of {n} entities loaded in {:.1} s; file {:.0} MB ({:.0} bytes/entity)",
        started.elapsed().as_secs_f64(),
        bytes as f64 / 1e6,
        bytes as f64 / n as f64
    );
    // Wait for the flush that puts the rows into blocks (or check that none happened).
    let waited = Instant::now();
    while rows_in == Rows::Blocks && store.write_log_stats().memtable_bytes > 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the load was not flushed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    if rows_in == Rows::Memtable {
        assert!(store.write_log_stats().memtable_bytes > 0);
    }
    // The in-memory reference holds the same entities, with the Timestamps the store gave.
    let snapshot = store.snapshot("bench").expect("snapshot");
    let all = Plan {
        ranges: tableq_planner::plan::KeySet::all(),
        residual: tableq_planner::predicate::Predicate::TRUE,
        select: None,
        top: None,
    };
    let (rows, _) = Executor::new(&snapshot)
        .execute_all(&all, &PageOptions::unbounded())
        .expect("read back");
    assert_eq!(rows.len() as u64, n, "every entity was stored");
    let memory =
        MemorySnapshot::from_entities(rows.into_iter().map(|r| r.entity)).expect("memory copy");
    drop(snapshot);
    Loaded {
        store,
        memory,
        n,
        _dir: dir,
    }
}

fn plan(filter: &str) -> Plan {
    let f = parse_filter(filter, &FilterOptions::unlimited()).expect("valid filter");
    tableq_planner::plan(&f, None, None)
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// The executor's scan (2 threads) of `store`'s table, and the same scan as a hand-written
/// loop on one thread (`Age eq 42` by slot: the source's own cost, without the executor)
/// through `scan_each` (the executor's way) and through the `scan` iterator, as
/// `{executor}/{label}`, `{hand_loop}/{label}` and `{hand_loop}_iter/{label}`.
fn durable_scans(
    group: &mut Group<'_>,
    (executor, hand_loop): (&str, &str),
    label: &str,
    store: &DurableBackend,
    n: u64,
    residual: &Plan,
) {
    use tableq_exec::{Scan, SlotLookup, SourceRow};
    use tableq_planner::plan::KeyRange;
    group.bench_function(BenchmarkId::new(executor, label), |b| {
        b.iter(|| {
            let snapshot = store.snapshot("bench").expect("snapshot");
            let executor = Executor::new(&snapshot)
                .with_threads(2)
                .expect("thread pool");
            let (rows, stats) = executor
                .execute_all(residual, &PageOptions::unbounded())
                .expect("scan");
            snapshot.take_error().expect("no storage error");
            assert_eq!(stats.examined, n);
            black_box(rows.len())
        })
    });
    let range = KeyRange::full();
    let snapshot = store.snapshot("bench").expect("snapshot");
    let SlotLookup::Slot(age) = snapshot.property_slot("Age") else {
        panic!()
    };
    group.bench_function(BenchmarkId::new(hand_loop, label), |b| {
        b.iter(|| {
            let scan = Scan {
                range: &range,
                from: None,
                until: None,
            };
            let mut n = 0u64;
            snapshot
                .scan_each(scan, |row| {
                    if let Some(tableq_model::ValueRef::Int32(42)) = row.custom_by_slot(age) {
                        n += 1;
                    }
                    std::ops::ControlFlow::Continue(())
                })
                .expect("scan");
            black_box(n)
        })
    });
    group.bench_function(BenchmarkId::new(format!("{hand_loop}_iter"), label), |b| {
        b.iter(|| {
            let scan = Scan {
                range: &range,
                from: None,
                until: None,
            };
            let mut n = 0u64;
            for row in snapshot.scan(scan) {
                let row = row.expect("scan");
                if let Some(tableq_model::ValueRef::Int32(42)) = row.custom_by_slot(age) {
                    n += 1;
                }
            }
            black_box(n)
        })
    });
}

fn scans_and_gets(c: &mut Criterion) {
    let residual = plan("Age eq 42 and Score gt 900.0 and Active");
    let mut sizes = vec![("10k", 10_000u64)];
    if std::env::var_os("TABLEQ_BENCH_SKIP_1M").is_none() {
        sizes.push(("1M", 1_000_000));
    }
    for (label, n) in sizes {
        let data = load(n, Rows::Blocks);
        let mut group = c.benchmark_group("full_scan_residual");
        group.throughput(Throughput::Elements(data.n));
        if n >= 1_000_000 {
            group.sample_size(20);
        }
        durable_scans(
            &mut group,
            ("durable", "loop_durable_1thread"),
            label,
            &data.store,
            n,
            &residual,
        );
        if n <= 10_000 {
            // The same rows before their flush: every row read from the memtable.
            let fresh = load(n, Rows::Memtable);
            durable_scans(
                &mut group,
                ("durable_memtable", "loop_durable_memtable_1thread"),
                label,
                &fresh.store,
                n,
                &residual,
            );
        }
        {
            use tableq_exec::{Scan, SourceRow};
            use tableq_planner::plan::KeyRange;
            let range = KeyRange::full();
            let memory = &data.memory;
            let Some(mage) = memory.slot("Age") else {
                panic!()
            };
            group.bench_function(BenchmarkId::new("loop_memory_1thread", label), |b| {
                b.iter(|| {
                    let scan = Scan {
                        range: &range,
                        from: None,
                        until: None,
                    };
                    let mut n = 0u64;
                    for row in memory.scan(scan) {
                        if let Some(tableq_model::ValueRef::Int32(42)) = row.custom_by_slot(mage) {
                            n += 1;
                        }
                    }
                    black_box(n)
                })
            });
        }
        let memory = &data.memory;
        let executor = Executor::new(memory).with_threads(2).expect("thread pool");
        group.bench_function(BenchmarkId::new("memory", label), |b| {
            b.iter(|| {
                let (rows, _) = executor
                    .execute_all(&residual, &PageOptions::unbounded())
                    .expect("scan");
                black_box(rows.len())
            })
        });
        group.finish();

        let per = n / PARTITIONS;
        let keys: Vec<(String, String)> = (0..1024u64)
            .map(|i| {
                let p = (i * 37) % PARTITIONS;
                let r = (i * 7919) % per;
                (format!("p{p:03}"), format!("r{r:08}"))
            })
            .collect();
        let mut group = c.benchmark_group("point_get");
        group.throughput(Throughput::Elements(1));
        let mut i = 0;
        group.bench_function(BenchmarkId::new("backend_get", label), |b| {
            b.iter(|| {
                i = (i + 1) % keys.len();
                let (pk, rk) = &keys[i];
                let e = data.store.get("bench", pk, rk).expect("get");
                black_box(e.map(|e| e.len()))
            })
        });
        let snapshot = data.store.snapshot("bench").expect("snapshot");
        group.bench_function(BenchmarkId::new("source_get", label), |b| {
            b.iter(|| {
                i = (i + 1) % keys.len();
                let (pk, rk) = &keys[i];
                black_box(
                    snapshot
                        .get(pk, rk)
                        .expect("get")
                        .map(|r| r.row_key().len()),
                )
            })
        });
        group.finish();
    }
}

fn inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable_insert");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for (mode, fsync) in [
        ("interval", FsyncPolicy::default()),
        ("always", FsyncPolicy::Always),
    ] {
        let dir = tempfile::tempdir_in(bench_root()).expect("temporary directory");
        let store = Arc::new(
            DurableBackend::open_with(dir.path(), options().with_fsync(fsync)).expect("open"),
        );
        store.create_table("ins").expect("create table");
        let next = Arc::new(AtomicU64::new(0));
        for writers in [1usize, 8] {
            group.throughput(Throughput::Elements(writers as u64));
            group.bench_function(format!("{mode}/{writers}_writers"), |b| {
                // Each iteration: every writer inserts one entity and waits for its ack.
                b.iter_custom(|iters| {
                    let started = Instant::now();
                    std::thread::scope(|s| {
                        for _ in 0..writers {
                            let (store, next) = (&store, &next);
                            s.spawn(move || {
                                for _ in 0..iters {
                                    let i = next.fetch_add(1, Ordering::Relaxed);
                                    let mut e = entity(i);
                                    e.set_partition_key(format!("w{}", i % 16));
                                    e.set_row_key(format!("{i:012}"));
                                    store
                                        .write("ins", WriteOp::Insert { entity: e })
                                        .expect("insert");
                                }
                            });
                        }
                    });
                    started.elapsed()
                })
            });
        }
        group.throughput(Throughput::Elements(100));
        group.bench_function(format!("{mode}/batch_100"), |b| {
            b.iter(|| {
                let ops: Vec<WriteOp> = (0..100)
                    .map(|_| {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let mut e = entity(i);
                        e.set_partition_key("batch");
                        e.set_row_key(format!("{i:012}"));
                        WriteOp::Insert { entity: e }
                    })
                    .collect();
                black_box(store.write_batch("ins", ops).expect("batch").len())
            })
        });
    }
    group.finish();
}

/// What a crash leaves after `n` entities were written since the last checkpoint, `per`
/// entities a write (one log record each): the durable file as of that checkpoint and the
/// log holding the writes.
fn crashed_directory(n: u64, per_write: usize) -> (tempfile::TempDir, Vec<u8>, std::path::PathBuf) {
    let dir = tempfile::tempdir_in(bench_root()).expect("temporary directory");
    let never = options().with_checkpoints(u64::MAX, Duration::from_secs(24 * 3600));
    let store = DurableBackend::open_with(dir.path(), never.clone()).expect("open");
    store.create_table("bench").expect("create table");
    store.close().expect("close");
    let durable = std::fs::read(dir.path().join(tableq_store::durable::DATA_FILE))
        .expect("read the data file");
    let store = DurableBackend::open_with(dir.path(), never).expect("reopen");
    let started = Instant::now();
    let per = n / PARTITIONS;
    for p in 0..PARTITIONS {
        let mut ops = Vec::with_capacity(100);
        for r in 0..per {
            ops.push(WriteOp::Insert {
                entity: entity(r * PARTITIONS + p),
            });
            if ops.len() == per_write {
                store
                    .write_batch("bench", std::mem::take(&mut ops))
                    .expect("load");
            }
        }
        if !ops.is_empty() {
            store.write_batch("bench", ops).expect("load");
        }
    }
    let log = dir.path().join("log-copy");
    std::fs::copy(dir.path().join(tableq_store::durable::WAL_FILE), &log).expect("copy the log");
    eprintln!(
        "recovery: {n} entities written {per_write} a record in {:.1} s; log of {:.0} MiB",
        started.elapsed().as_secs_f64(),
        std::fs::metadata(&log).map_or(0, |m| m.len()) as f64 / (1 << 20) as f64
    );
    // Dropping the store would checkpoint: the copies are the crash.
    std::mem::forget(store);
    (dir, durable, log)
}

fn recovery(c: &mut Criterion) {
    if std::env::var_os("TABLEQ_BENCH_SKIP_1M").is_some() {
        return;
    }
    let n = 1_000_000;
    let mut group = c.benchmark_group("recovery");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n));
    // `replay_1m`: records of 100 entities (`$batch` changesets, `tableq import`);
    // `replay_1m_single`: one entity a record (single inserts).
    for (name, per_write) in [("replay_1m", 100), ("replay_1m_single", 1)] {
        let (dir, durable, log) = crashed_directory(n, per_write);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let restart = tempfile::tempdir_in(bench_root()).expect("temporary directory");
                    std::fs::write(
                        restart.path().join(tableq_store::durable::DATA_FILE),
                        &durable,
                    )
                    .expect("data file");
                    std::fs::copy(&log, restart.path().join(tableq_store::durable::WAL_FILE))
                        .expect("log");
                    let started = Instant::now();
                    let store =
                        DurableBackend::open_with(restart.path(), options()).expect("replay");
                    total += started.elapsed();
                    assert_eq!(
                        store
                            .get("bench", "p000", "r00000000")
                            .map(|e| e.is_some())
                            .ok(),
                        Some(true)
                    );
                    drop(store);
                }
                total
            })
        });
        drop(dir);
    }
    group.finish();
}

criterion_group!(benches, scans_and_gets, inserts, recovery);
criterion_main!(benches);
