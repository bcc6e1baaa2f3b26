//! Criterion benchmark `parse`: lexing and parsing of realistic `$filter`s with 1 to 15
//! comparisons covering every literal type, plus `$select`/`$top` and a 32 KiB `or` chain
//! (linear-time check).
//!
//! Run: `cargo bench --bench parse -- --warm-up-time 1 --measurement-time 3`.
//! Results and the reference machine: `benches/README.md`. Target: the 5-comparison filter
//! lexes + parses in under 2 µs.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tableq::parser::{FilterOptions, lex, parse_filter, parse_select, parse_top};

/// Realistic filters, by number of comparisons: (name, text).
const FILTERS: &[(&str, &str)] = &[
    ("c01_point", "PartitionKey eq 'customer-0042'"),
    (
        "c02_key_lookup",
        "PartitionKey eq 'customer-0042' and RowKey eq 'order-000017'",
    ),
    (
        "c05_mixed",
        "PartitionKey eq 'customer-0042' and RowKey ge '2024-01-01' and RowKey lt '2024-02-01' \
         and Amount gt 100.5 and Active",
    ),
    (
        "c08_all_literals",
        "Name eq 'O''Brien' and Age ge 18 and Visits gt 1000000000000L and Score lt 9.75e2 \
         and Joined ge datetime'2019-03-01T08:30:00.1234567Z' \
         and Id ne guid'a455c695-df98-5678-aaaa-81d3367e5a34' and Hash eq X'0aff10' and not Banned",
    ),
    (
        "c10_nested",
        "(PartitionKey eq 'a' and Age gt 30) or (PartitionKey ge 'm' and PartitionKey lt 'p') \
         or not (RowKey ne 'x' or Ratio eq NaN) and (Limit le -INF or 5 lt Count) and Flag eq true",
    ),
    (
        "c15_limit",
        "PartitionKey eq 'p1' and (RowKey eq 'r01' or RowKey eq 'r02' or RowKey eq 'r03' \
         or RowKey eq 'r04' or RowKey eq 'r05' or RowKey eq 'r06' or RowKey eq 'r07') \
         and Age ge 21 and Age lt 65 and Country ne 'NL' and Balance gt -250.25d \
         and Since lt datetime'2024-06-30T00:00:00Z' and Premium",
    ),
];

fn bench_filters(c: &mut Criterion) {
    let options = FilterOptions::default();
    let mut group = c.benchmark_group("parse_filter");
    for (name, text) in FILTERS {
        // Every benchmarked filter is valid and within the service's limits.
        assert!(parse_filter(text, &options).is_ok(), "{name}");
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), text, |b, text| {
            b.iter(|| parse_filter(black_box(text), &options))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("lex");
    for (name, text) in FILTERS {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), text, |b, text| {
            b.iter(|| lex(black_box(text)))
        });
    }
    group.finish();
}

fn bench_large(c: &mut Criterion) {
    let mut group = c.benchmark_group("or_chain");
    for size in [1024usize, 8 * 1024, 32 * 1024] {
        let mut text = String::from("P eq 0");
        let mut n = 1;
        while text.len() + 16 < size {
            text.push_str(&format!(" or P eq {n}"));
            n += 1;
        }
        assert!(parse_filter(&text, &FilterOptions::unlimited()).is_ok());
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &text, |b, text| {
            b.iter(|| parse_filter(black_box(text), &FilterOptions::unlimited()))
        });
    }
    group.finish();
}

fn bench_select_top(c: &mut Criterion) {
    c.bench_function("parse_select/5_names", |b| {
        b.iter(|| parse_select(black_box("PartitionKey, RowKey, Name, Age, Größe")))
    });
    c.bench_function("parse_top", |b| b.iter(|| parse_top(black_box("250"))));
}

criterion_group!(benches, bench_filters, bench_large, bench_select_top);
criterion_main!(benches);
