//! THE planner property: for random filters over random entity sets, *planned* execution
//! (scan only the key ranges, in order, apply the residual unless exact) returns exactly the
//! entities — in the same (PartitionKey, RowKey) order — that the AST evaluator
//! ([`ast_eval`](tableq_planner::ast_eval)) returns when it evaluates the whole original AST on every entity.
//!
//! Filters mix key and non-key comparisons, literal-first comparisons, bare boolean
//! properties, and/or/not nesting, every literal type (so key comparisons with mismatched
//! types occur), NaN, properties that are missing, and Timestamp present or absent. Keys come
//! from a small alphabet (so ranges hit) including `""`, `"\0"`-suffixed successors and
//! characters whose UTF-16 order differs from code-point order. Along the way: lowering and
//! the rewrite rules preserve meaning entity by entity, the ranges are sorted and disjoint,
//! an exact plan has residual `true`, and every predicate prints as OData that parses back
//! to itself.

use proptest::prelude::*;
use std::cmp::Ordering;
use tableq_model::order::compare_str;
use tableq_model::{CmpOp, DateTime, Entity, Value};
use tableq_parser::ast::{Comparison, Expr, Filter, Literal, Property};
use tableq_parser::{FilterOptions, Span, parse_filter};
use tableq_planner::{Planner, Predicate, ast_eval, lower, rules};

const KEYS: &[&str] = &[
    "",
    "a",
    "ab",
    "b",
    "é",
    "\u{FFFF}",
    "\u{10000}",
    "a\u{10000}",
];
const LITERAL_KEYS: &[&str] = &[
    "",
    "a",
    "a\0",
    "aa",
    "ab",
    "b",
    "c",
    "é",
    "\u{FFFF}",
    "\u{10000}",
    "a\u{10000}",
];
const PROPS: &[&str] = &[
    "PartitionKey",
    "PartitionKey",
    "RowKey",
    "RowKey",
    "A",
    "B",
    "Timestamp",
    "Flag",
];

fn datetime(i: u8) -> DateTime {
    let text = [
        "2000-01-01T00:00:00Z",
        "2010-06-15T12:00:00Z",
        "2020-01-01T00:00:00.0000001Z",
    ][usize::from(i % 3)];
    DateTime::parse(text).unwrap_or(DateTime::MIN)
}

fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::sample::select(LITERAL_KEYS).prop_map(Value::from),
        2 => (-2i32..3).prop_map(Value::Int32),
        1 => (-2i64..3).prop_map(Value::Int64),
        1 => prop::sample::select(vec![0.0, 1.0, 2.5, -1.0, f64::NAN, f64::INFINITY]).prop_map(Value::Double),
        1 => any::<bool>().prop_map(Value::Boolean),
        1 => (0u8..3).prop_map(|i| Value::DateTime(datetime(i))),
        1 => prop::sample::select(vec![0u128, 1, u128::MAX]).prop_map(|g| Value::Guid(uuid_from(g))),
        1 => prop::sample::select(vec![vec![], vec![1u8], vec![1, 2]]).prop_map(Value::Binary),
    ]
}

fn uuid_from(g: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(g)
}

fn arb_comparison() -> impl Strategy<Value = Expr> {
    let property = prop::sample::select(PROPS);
    (property, prop::sample::select(CmpOp::ALL.to_vec()), any::<bool>())
        .prop_flat_map(|(p, op, literal_first)| {
            // Keys are mostly compared with Strings (the interesting ranges), sometimes not.
            let value = if p == "PartitionKey" || p == "RowKey" {
                prop_oneof![6 => prop::sample::select(LITERAL_KEYS).prop_map(Value::from), 1 => arb_value()].boxed()
            } else {
                arb_value().boxed()
            };
            value.prop_map(move |value| {
                Expr::Comparison(Comparison {
                    property: Property { name: p.to_owned(), span: Span::default() },
                    op,
                    op_span: Span::default(),
                    literal: Literal { value, span: Span::default() },
                    literal_first,
                    span: Span::default(),
                })
            })
        })
}

fn arb_leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        12 => arb_comparison(),
        1 => prop::sample::select(vec!["Flag", "A", "PartitionKey"])
            .prop_map(|p| Expr::BoolProperty(Property { name: p.to_owned(), span: Span::default() })),
        1 => any::<bool>().prop_map(|b| Expr::Constant(b, Span::default())),
    ]
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    arb_leaf().prop_recursive(4, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| Expr::Or(v, Span::default())),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| Expr::And(v, Span::default())),
            inner.prop_map(|e| Expr::Not(Box::new(e), Span::default())),
        ]
    })
}

fn arb_entity() -> impl Strategy<Value = Entity> {
    (
        prop::sample::select(KEYS),
        prop::sample::select(KEYS),
        prop::option::of(0u8..3),
        prop::option::of(arb_value()),
        prop::option::of(arb_value()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(pk, rk, ts, a, b, flag)| {
            let mut e = Entity::new(pk, rk);
            e.set_timestamp(ts.map(datetime));
            if let Some(a) = a {
                e.set("A", a);
            }
            if let Some(b) = b {
                e.set("B", b);
            }
            if let Some(f) = flag {
                e.set("Flag", f);
            }
            e
        })
}

/// Entities sorted by (PartitionKey, RowKey) in UTF-16 order, keys unique.
fn table(mut entities: Vec<Entity>) -> Vec<Entity> {
    let key_cmp = |a: &Entity, b: &Entity| -> Ordering {
        compare_str(a.partition_key(), b.partition_key())
            .then_with(|| compare_str(a.row_key(), b.row_key()))
    };
    entities.sort_by(key_cmp);
    entities.dedup_by(|a, b| key_cmp(a, b) == Ordering::Equal);
    entities
}

fn keys(es: &[&Entity]) -> Vec<(String, String)> {
    es.iter()
        .map(|e| (e.partition_key().to_owned(), e.row_key().to_owned()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16384, max_shrink_iters: 4096, ..ProptestConfig::default() })]

    #[test]
    fn planned_execution_equals_ast_evaluation(
        expr in arb_expr(),
        entities in prop::collection::vec(arb_entity(), 0..16),
        max_ranges in prop_oneof![3 => Just(256usize), 1 => 1usize..4],
    ) {
        let filter = Filter { expr: Some(expr) };
        let table = table(entities);
        let expected: Vec<&Entity> = table.iter().filter(|e| ast_eval::matches(&filter, *e)).collect();

        // Lowering and rewriting preserve meaning entity by entity.
        let lowered = lower::lower(&filter);
        let (rewritten, _) = rules::Driver::new().run(lowered.clone());
        for e in &table {
            let want = ast_eval::matches(&filter, e);
            prop_assert_eq!(lowered.eval(e), want, "lowered {} on {:?}", lowered, e);
            prop_assert_eq!(rewritten.eval(e), want, "rewritten {} on {:?}", rewritten, e);
        }

        let plan = Planner::new().max_ranges(max_ranges).plan(&filter, None, None);
        prop_assert!(plan.ranges.ranges().iter().all(|r| !r.is_empty()), "{:?}", plan.ranges);
        prop_assert!(plan.ranges.ranges().windows(2).all(|w| w[0].precedes(&w[1])), "{:?}", plan.ranges);
        prop_assert!(plan.ranges.len() <= max_ranges);

        // Planned execution: scan each range in order, residual only when not exact.
        let mut got: Vec<&Entity> = Vec::new();
        for range in &plan.ranges {
            for e in table.iter().filter(|e| range.contains(e.partition_key(), e.row_key())) {
                if plan.is_exact() || plan.residual.eval(e) {
                    got.push(e);
                }
            }
        }
        prop_assert_eq!(keys(&got), keys(&expected), "plan:\n{}\nfilter: {}", plan, lowered);

        // Predicates print as canonical OData that parses (and lowers) back to themselves.
        for p in [&lowered, &plan.residual] {
            if !p.is_true() && !p.is_false() {
                let text = p.to_string();
                let reparsed = parse_filter(&text, &FilterOptions::unlimited());
                prop_assert!(reparsed.is_ok(), "{} does not parse: {:?}", text, reparsed.err().map(|e| e.to_string()));
                if let Ok(f) = reparsed {
                    prop_assert_eq!(&lower::lower(&f), p, "{}", text);
                }
            }
        }

        // An exact plan needs no residual: range membership alone decides.
        if plan.is_exact() {
            prop_assert_eq!(plan.residual.clone(), Predicate::TRUE);
        }
    }
}
