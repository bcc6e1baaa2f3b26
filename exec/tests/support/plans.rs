//! Shared by the executor's property tests (`exec/tests/executor.rs`, over `VecSource`) and
//! the memory engine's (`store/tests/memory_executor.rs` includes this file by path, over
//! `MemorySnapshot` versions with write overlays): generators of entities, key sets and
//! residuals, and the naive evaluation every execution must equal.
#![allow(dead_code)]

use proptest::prelude::*;
use std::ops::Bound;
use tableq_exec::{Key, ResultRow, compare_keys};
use tableq_model::{CmpOp, Entity, Value};
use tableq_planner::plan::{KeyInterval, KeyRange, KeySet, Plan};
use tableq_planner::predicate::Predicate;

pub const KEY: &str = "[ab\u{FFFF}\u{10000}]{0,2}";

pub fn arb_entity() -> impl Strategy<Value = Entity> {
    (
        KEY,
        KEY,
        proptest::option::of(0i32..4),
        proptest::option::of("[xy]{0,1}"),
        any::<bool>(),
    )
        .prop_map(|(pk, rk, a, b, c)| {
            let mut e = Entity::new(pk, rk);
            if let Some(a) = a {
                e.set("A", Value::Int32(a));
            }
            if let Some(b) = b {
                e.set("B", Value::String(b));
            }
            if c {
                e.set("C", Value::Int64(2));
            }
            e
        })
}

fn arb_bound() -> impl Strategy<Value = Bound<String>> {
    prop_oneof![
        Just(Bound::Unbounded),
        KEY.prop_map(Bound::Included),
        KEY.prop_map(Bound::Excluded),
    ]
}

fn arb_interval() -> impl Strategy<Value = KeyInterval> {
    prop_oneof![
        Just(KeyInterval::full()),
        KEY.prop_map(KeyInterval::point),
        (arb_bound(), arb_bound()).prop_map(|(lower, upper)| KeyInterval { lower, upper }),
    ]
}

fn arb_range() -> impl Strategy<Value = KeyRange> {
    (arb_interval(), arb_interval()).prop_map(|(partition_key, row_key)| KeyRange {
        partition_key,
        row_key,
    })
}

/// Key sets: the union of up to four arbitrary ranges (overlapping, unordered, empty) in
/// the normal form `KeySet::new` gives them, or their first range alone when the union
/// cannot be listed in scan order.
pub fn arb_ranges() -> impl Strategy<Value = KeySet> {
    prop_oneof![
        Just(KeySet::all()),
        proptest::collection::vec(arb_range(), 0..4).prop_map(|rs| {
            let first = rs.first().cloned();
            KeySet::new(rs).unwrap_or_else(|_| first.map_or_else(KeySet::none, KeySet::from))
        }),
        arb_range().prop_map(KeySet::from),
    ]
}

pub fn arb_predicate() -> impl Strategy<Value = Predicate> {
    let leaf = prop_oneof![
        Just(Predicate::TRUE),
        Just(Predicate::FALSE),
        (
            proptest::sample::select(vec!["A", "B", "C", "PartitionKey", "RowKey", "Missing"]),
            proptest::sample::select(CmpOp::ALL.to_vec()),
            prop_oneof![
                (0i32..4).prop_map(Value::Int32),
                Just(Value::Int64(2)),
                "[abxy]{0,1}".prop_map(Value::String),
            ],
        )
            .prop_map(|(p, op, value)| Predicate::compare(p, op, value)),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(Predicate::negate),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Predicate::and),
            proptest::collection::vec(inner, 2..4).prop_map(Predicate::or),
        ]
    })
}

pub fn naive(entities: &[Entity], plan: &Plan) -> Vec<Key> {
    // Later duplicates replace earlier ones in the source: keep the last of each key.
    let mut dedup: Vec<Key> = Vec::new();
    let mut chosen: Vec<&Entity> = Vec::new();
    for e in entities.iter().rev() {
        if !chosen
            .iter()
            .any(|c| c.partition_key() == e.partition_key() && c.row_key() == e.row_key())
        {
            chosen.push(e);
        }
    }
    chosen.sort_by(|a, b| {
        compare_keys(
            a.partition_key(),
            a.row_key(),
            b.partition_key(),
            b.row_key(),
        )
    });
    for e in chosen {
        if plan.ranges.contains(e.partition_key(), e.row_key()) && plan.residual.eval(e) {
            dedup.push(Key::new(e.partition_key(), e.row_key()));
        }
    }
    dedup
}

pub fn keys(rows: &[ResultRow]) -> Vec<Key> {
    rows.iter().map(ResultRow::key).collect()
}
