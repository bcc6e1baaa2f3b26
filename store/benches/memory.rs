//! Criterion benchmark `memory`: streams of single writes into the in-memory engine, and
//! whether their cost stays flat as the table grows (issue 8 §2: 100 000 single inserts
//! into one partition at ≥ 200 000 inserts/s, flat from the first to the last).
//!
//! Every benchmark runs a whole stream of `N` = 100 000 inserts into a fresh table per
//! iteration and reports one stretch of it (the entities are built before the clock
//! starts; the table is dropped after it stops):
//!
//! * `memory_insert/one_partition/{all,first_10k,last_10k}` — `Backend::write` of an
//!   `Insert` (the real write path: catalog lookup, writer lock, [`resolve`] — validation,
//!   existence check, Timestamp — and the commit of the next version), every entity in
//!   the same partition, RowKeys ascending;
//! * `memory_insert/one_partition_shuffled/…` — the same with RowKeys in random order;
//! * `memory_insert/own_partition/…` — every entity in a partition of its own;
//! * `memory_layout/one_partition/…` — the bare layout primitive
//!   `MemorySnapshot::with_changes` with one `Change::Put` per call (no semantics, no
//!   locks).
//!
//! Times are on-CPU time of the benchmarking thread by default (see [`Stopwatch`]; the
//! machine this project is measured on is shared); `TABLEQ_BENCH_CLOCK=wall` times
//! wall-clock. Entities have 9 typed properties, like `tableq::datagen`. Run:
//! `cargo bench -p tableq-store --bench memory -- --warm-up-time 1 --measurement-time 3`.
//! Results: `benches/README.md`, section "memory".
//!
//! [`resolve`]: tableq_store::resolve()

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tableq_model::{DateTime, Entity, Property, Value};
use tableq_store::{Backend, Change, MemoryBackend, MemorySnapshot, WriteOp};

/// Inserts per stream.
const N: usize = 100_000;
/// The stretch reported by `first_10k` and `last_10k`.
const STRETCH: usize = 10_000;

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

/// An entity with the 9 typed properties of `tableq::datagen`.
fn entity(partition_key: String, row_key: String, seed: u64) -> Entity {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 7);
    let blob: Vec<u8> = (0..rng.below(17)).map(|_| rng.next() as u8).collect();
    let born = DateTime::from_ticks(611_888_256_000_000_000 + rng.below(1 << 54) as i64)
        .unwrap_or(DateTime::MIN);
    let prop = |name: &str, value: Value| Property {
        name: name.to_owned(),
        value,
    };
    Entity::with_properties(
        partition_key,
        row_key,
        None,
        [
            prop("Active", Value::Boolean(rng.next() >> 63 == 1)),
            prop("Age", Value::Int32(rng.below(100) as i32)),
            prop("Big", Value::Int64(rng.next() as i64)),
            prop("Blob", Value::Binary(blob)),
            prop("Born", Value::DateTime(born)),
            prop("City", Value::from(CITIES[rng.below(6) as usize])),
            prop(
                "Id",
                Value::Guid(uuid::Uuid::from_u64_pair(rng.next(), rng.next())),
            ),
            prop("Name", Value::from(NAMES[rng.below(8) as usize])),
            prop("Score", Value::Double(rng.below(1_000_000) as f64 / 1000.0)),
        ],
    )
}

#[derive(Clone, Copy)]
enum Keys {
    /// One partition, RowKeys ascending.
    OnePartition,
    /// One partition, RowKeys in random order.
    OnePartitionShuffled,
    /// One partition per entity.
    OwnPartition,
}

fn entities(keys: Keys) -> Vec<Entity> {
    let mut order: Vec<u64> = (0..N as u64).collect();
    if let Keys::OnePartitionShuffled = keys {
        let mut rng = Rng(42);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
    }
    order
        .into_iter()
        .map(|i| match keys {
            Keys::OnePartition | Keys::OnePartitionShuffled => {
                entity("p".into(), format!("r{i:08}"), i)
            }
            Keys::OwnPartition => entity(format!("p{i:08}"), "r".into(), i),
        })
        .collect()
}

/// Which stretch of the stream a benchmark reports.
#[derive(Clone, Copy)]
enum Stretch {
    All,
    First,
    Last,
}

impl Stretch {
    fn name(self) -> &'static str {
        match self {
            Stretch::All => "all",
            Stretch::First => "first_10k",
            Stretch::Last => "last_10k",
        }
    }

    fn elements(self) -> u64 {
        match self {
            Stretch::All => N as u64,
            Stretch::First | Stretch::Last => STRETCH as u64,
        }
    }

    /// Runs `insert` over the stream, timing only this stretch.
    fn time<T>(self, stream: Vec<T>, mut insert: impl FnMut(T)) -> Duration {
        let (from, until) = match self {
            Stretch::All => (0, N),
            Stretch::First => (0, STRETCH),
            Stretch::Last => (N - STRETCH, N),
        };
        let mut stream = stream.into_iter();
        for item in stream.by_ref().take(from) {
            insert(item);
        }
        let started = Stopwatch::start();
        for item in stream.by_ref().take(until - from) {
            insert(item);
        }
        let elapsed = started.elapsed();
        stream.for_each(insert);
        elapsed
    }
}

/// What the benchmarks time: by default the time the benchmarking thread spent on a CPU
/// (Linux: `/proc/thread-self/schedstat`), so that a machine shared with other jobs does
/// not inflate the figures by the time the thread waited to run (the work is
/// single-threaded: on an idle machine both clocks agree). `TABLEQ_BENCH_CLOCK=wall` (or
/// a system without that file) times wall-clock instead.
enum Stopwatch {
    Cpu(u64),
    Wall(Instant),
}

impl Stopwatch {
    /// Nanoseconds this thread has run on a CPU, if the system says.
    fn cpu_nanos() -> Option<u64> {
        if std::env::var_os("TABLEQ_BENCH_CLOCK").is_some_and(|c| c == "wall") {
            return None;
        }
        let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        stat.split_whitespace().next()?.parse().ok()
    }

    fn start() -> Stopwatch {
        match Stopwatch::cpu_nanos() {
            Some(ns) => Stopwatch::Cpu(ns),
            None => Stopwatch::Wall(Instant::now()),
        }
    }

    fn elapsed(&self) -> Duration {
        match self {
            Stopwatch::Cpu(from) => Duration::from_nanos(
                Stopwatch::cpu_nanos()
                    .unwrap_or(*from)
                    .saturating_sub(*from),
            ),
            Stopwatch::Wall(from) => from.elapsed(),
        }
    }
}

const STRETCHES: [Stretch; 3] = [Stretch::All, Stretch::First, Stretch::Last];

fn backend_inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory_insert");
    group.sample_size(10);
    for (label, keys) in [
        ("one_partition", Keys::OnePartition),
        ("one_partition_shuffled", Keys::OnePartitionShuffled),
        ("own_partition", Keys::OwnPartition),
    ] {
        for stretch in STRETCHES {
            group.throughput(Throughput::Elements(stretch.elements()));
            group.bench_function(BenchmarkId::new(label, stretch.name()), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let stream = entities(keys);
                        let store = MemoryBackend::new();
                        store.create_table("Bench").expect("create the table");
                        total += stretch.time(stream, |entity| {
                            let written = store
                                .write("Bench", WriteOp::Insert { entity })
                                .expect("insert");
                            black_box(written);
                        });
                        drop(store);
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

fn layout_inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory_layout");
    group.sample_size(10);
    for stretch in STRETCHES {
        group.throughput(Throughput::Elements(stretch.elements()));
        group.bench_function(BenchmarkId::new("one_partition", stretch.name()), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let stream = entities(Keys::OnePartition);
                    let mut version = MemorySnapshot::new();
                    total += stretch.time(stream, |entity| {
                        version = version
                            .with_changes([Change::Put(entity)])
                            .expect("the layout holds the entity");
                    });
                    black_box(version.len());
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, backend_inserts, layout_inserts);
criterion_main!(benches);
