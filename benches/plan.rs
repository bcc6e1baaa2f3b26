//! Criterion benchmark `plan`: parse + plan of realistic filters, and the growth of
//! key-range extraction with filter size.
//!
//! Run: `cargo bench --bench plan -- --warm-up-time 1 --measurement-time 3`.
//! Results and the reference machine: `benches/README.md`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tableq::parser::{FilterOptions, parse_filter};
use tableq::planner::Planner;

/// Realistic filters: (name, text). The first has 5 comparisons (the target: < 5 µs).
const FILTERS: &[(&str, &str)] = &[
    (
        "five_comparisons",
        "PartitionKey eq 'customer-0042' and RowKey ge '2024-01-01' and RowKey lt '2024-02-01' and Amount gt 100.0 and Active",
    ),
    (
        "point_lookup",
        "PartitionKey eq 'customer-0042' and RowKey eq 'order-000017'",
    ),
    (
        "non_key",
        "Age ge 18 and Age lt 65 and not (Country eq 'NL') and Score gt 25L",
    ),
    (
        "mixed_or",
        "(PartitionKey eq 'a' and Age gt 30) or (PartitionKey ge 'm' and PartitionKey lt 'p') or not (RowKey ne 'x')",
    ),
];

/// `(PartitionKey eq 'p000' and RowKey eq 'r') or …` with `n` point lookups (2n comparisons).
fn or_of_points(n: usize) -> String {
    let parts: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "(PartitionKey eq 'p{:03}' and RowKey eq 'r{}')",
                (i * 7919) % 1000,
                i % 3
            )
        })
        .collect();
    parts.join(" or ")
}

fn parse_and_plan(c: &mut Criterion) {
    let options = FilterOptions::default();
    let planner = Planner::new();
    let mut group = c.benchmark_group("parse_plan");
    for (name, text) in FILTERS {
        group.bench_function(*name, |b| {
            b.iter(|| {
                let filter = parse_filter(black_box(text), &options).expect("valid filter");
                planner.plan(&filter, None, None)
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("plan_only");
    for (name, text) in FILTERS {
        let filter = parse_filter(text, &options).expect("valid filter");
        group.bench_function(*name, |b| {
            b.iter(|| planner.plan(black_box(&filter), None, None))
        });
    }
    group.finish();
}

fn extraction_growth(c: &mut Criterion) {
    let planner = Planner::new();
    let mut group = c.benchmark_group("or_of_points");
    for n in 1..=15 {
        // Up to 7 point lookups fit the service's 15-comparison limit; beyond, no limits.
        let filter =
            parse_filter(&or_of_points(n), &FilterOptions::unlimited()).expect("valid filter");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &filter, |b, f| {
            b.iter(|| planner.plan(black_box(f), None, None))
        });
    }
    group.finish();

    // 600 point lookups are about 28 KiB of filter text, near the 32 KiB limit.
    let unlimited = Planner::new().max_ranges(100_000);
    let mut group = c.benchmark_group("or_of_points_large");
    for n in [50usize, 100, 200, 400, 600] {
        let filter =
            parse_filter(&or_of_points(n), &FilterOptions::unlimited()).expect("valid filter");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &filter, |b, f| {
            b.iter(|| unlimited.plan(black_box(f), None, None))
        });
    }
    group.finish();
}

criterion_group!(benches, parse_and_plan, extraction_growth);
criterion_main!(benches);
