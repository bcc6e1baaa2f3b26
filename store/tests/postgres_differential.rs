//! Differential test: random `$filter`s from tableq's grammar over random entities with the
//! corner cases of every type (NaN, −0, ±∞, Int64 beyond Double precision, supplementary
//! characters and U+E000–U+FFFF, U+0000, mixed types under one property name, missing
//! properties) give the same rows, in the same order, page after page, on PostgreSQL (with
//! every comparison pushed down) as on the in-memory engine. See `pg/mod.rs` for how the
//! server is started and stopped.

use crate::pg;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tableq_exec::{Key, PageOptions};
use tableq_model::{DateTime, Entity, Value};
use tableq_parser::{FilterOptions, parse_filter};
use tableq_store::{Backend, MemoryBackend, WriteOp};

const NAMES: [&str; 4] = ["A", "B", "C", "Missing"];

fn corner_strings() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[ab\u{E000}\u{FFFD}\u{10000}\u{1F600}]{0,3}",
        Just("a\0b".to_owned()),
        Just("it's".to_owned()),
    ]
}

fn corner_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        corner_strings().prop_map(Value::String),
        prop_oneof![Just(i32::MIN), Just(i32::MAX), -3i32..4].prop_map(Value::Int32),
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just((1i64 << 53) + 1),
            Just(1i64 << 53),
            -3i64..4
        ]
        .prop_map(Value::Int64),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(0.0),
            Just(5e-324),
            Just(9007199254740992.0),
            Just(0.1),
            (-3i32..4).prop_map(f64::from),
            (-30i32..40).prop_map(|i| f64::from(i) / 10.0),
        ]
        .prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        prop_oneof![
            Just(DateTime::MIN),
            Just(DateTime::MAX),
            Just(DateTime::parse("2021-06-09T01:17:08.3795894Z").unwrap()),
            Just(DateTime::parse("2021-06-09T01:17:08.3795895Z").unwrap()),
        ]
        .prop_map(Value::DateTime),
        prop_oneof![
            Just(uuid::Uuid::nil()),
            Just(uuid::Uuid::from_u128(0x00ff)),
            Just(uuid::Uuid::from_u128(
                0x0100_0000_0000_0000_0000_0000_0000_0000
            )),
        ]
        .prop_map(Value::Guid),
        prop_oneof![
            Just(vec![]),
            Just(vec![0u8]),
            Just(vec![0, 255]),
            Just(vec![1])
        ]
        .prop_map(Value::Binary),
    ]
}

fn arb_entity() -> impl Strategy<Value = Entity> {
    (
        "[ab\u{E000}\u{10000}]{0,2}",
        "[ab\u{FFFD}\u{1F600}]{0,2}",
        proptest::collection::vec(proptest::option::of(corner_value()), 3),
    )
        .prop_map(|(pk, rk, values)| {
            let mut e = Entity::new(pk, rk);
            for (name, v) in NAMES.iter().zip(values) {
                if let Some(v) = v {
                    e.set(*name, v);
                }
            }
            e
        })
}

/// A comparison in OData text: a property (custom or system) against a literal of any type.
fn arb_comparison() -> impl Strategy<Value = String> {
    let property = prop_oneof![
        4 => proptest::sample::select(NAMES.to_vec()).prop_map(str::to_owned),
        1 => Just("PartitionKey".to_owned()),
        1 => Just("RowKey".to_owned()),
        1 => Just("Timestamp".to_owned()),
    ];
    let op = proptest::sample::select(vec!["eq", "ne", "gt", "ge", "lt", "le"]);
    let literal = prop_oneof![
        8 => corner_value().prop_filter("printable literal", |v| !matches!(v, Value::String(s) if s.contains('\0'))),
        1 => Just(Value::DateTime(DateTime::parse("2000-01-01T00:00:00Z").unwrap())),
    ];
    (property, op, literal).prop_map(|(p, op, v)| format!("{p} {op} {v}"))
}

fn arb_filter() -> impl Strategy<Value = String> {
    arb_comparison().prop_recursive(3, 8, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) or ({b})")),
            inner.prop_map(|a| format!("not ({a})")),
        ]
    })
}

/// Every page of a query (page size `page`), as keys.
fn keys_paged(
    b: &dyn Backend,
    table: &str,
    filter: &str,
    top: Option<&str>,
    page: usize,
) -> Vec<(String, String)> {
    let options = FilterOptions {
        max_comparisons: None,
        ..FilterOptions::default()
    };
    let parsed = parse_filter(filter, &options).expect("filter");
    let top = top.map(|t| tableq_parser::parse_top(t).expect("top"));
    let plan = tableq_planner::plan(&parsed, None, top.as_ref());
    let mut out = Vec::new();
    let mut next: Option<Key> = None;
    loop {
        let p = b
            .query(
                table,
                &plan,
                next.as_ref(),
                &PageOptions::default().with_page_size(page),
                &mut |r| {
                    out.push((
                        r.row().partition_key().to_owned(),
                        r.row().row_key().to_owned(),
                    ))
                },
            )
            .unwrap_or_else(|e| panic!("{filter}: {e}"));
        match p.continuation {
            Some(k) => next = Some(k),
            None => return out,
        }
    }
}

#[test]
fn random_filters_agree_with_the_in_memory_engine() {
    let Some(cluster) = pg::single("random_filters_agree_with_the_in_memory_engine") else {
        return;
    };
    let (pg, _) = pg::open_single(cluster);
    // TABLEQ_DIFF_CASES=N runs more cases (CI: 40).
    let cases = std::env::var("TABLEQ_DIFF_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let round = std::sync::atomic::AtomicUsize::new(0);
    let options = FilterOptions {
        max_comparisons: None,
        ..FilterOptions::default()
    };
    runner
        .run(
            &(
                proptest::collection::vec(arb_entity(), 0..30),
                proptest::collection::vec(arb_filter(), 12),
            ),
            |(entities, filters)| {
                let table = format!(
                    "diff{}",
                    round.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                );
                let memory = MemoryBackend::new();
                let mut unique = std::collections::BTreeMap::new();
                for e in entities {
                    unique.insert((e.partition_key().to_owned(), e.row_key().to_owned()), e);
                }
                let ops: Vec<WriteOp> = unique
                    .into_values()
                    .map(|entity| WriteOp::Insert { entity })
                    .collect();
                for b in [&pg as &dyn Backend, &memory] {
                    b.create_table(&table).unwrap();
                    b.write_batch(&table, ops.clone()).unwrap();
                }
                for filter in &filters {
                    if parse_filter(filter, &options).is_err() {
                        continue;
                    }
                    for (top, page) in [(None, 1000), (Some("2"), 1000), (None, 3)] {
                        let want = keys_paged(&memory, &table, filter, top, page);
                        let got = keys_paged(&pg, &table, filter, top, page);
                        prop_assert_eq!(got, want, "filter {} top {:?} page {}", filter, top, page);
                    }
                }
                pg.delete_table(&table).unwrap();
                Ok(())
            },
        )
        .unwrap();
}
