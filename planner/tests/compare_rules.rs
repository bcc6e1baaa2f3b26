//! Every comparison rule of the spec ("Evaluation semantics"), checked three ways: through
//! the single function `tableq_model::compare`, through the AST evaluator (`ast_eval`) on parsed
//! filter text, and through a planned evaluation (ranges + residual). The three must agree with the
//! table.

use tableq_model::{CmpOp, DateTime, Entity, Value, compare};
use tableq_parser::{FilterOptions, parse_filter};
use tableq_planner::{Planner, ast_eval};

//                          eq     ne     gt     ge     lt     le
const LESS: [bool; 6] = [false, true, false, false, true, true];
const EQUAL: [bool; 6] = [true, false, false, true, false, true];
const GREATER: [bool; 6] = [false, true, true, true, false, false];
const NONE: [bool; 6] = [false; 6];
const NAN: [bool; 6] = [false, true, false, false, false, false];

fn dt(s: &str) -> Value {
    Value::DateTime(DateTime::parse(s).expect("datetime"))
}

fn guid(s: &str) -> Value {
    Value::Guid(uuid::Uuid::parse_str(s).expect("guid"))
}

/// (property value or None for missing, literal text, outcome for eq ne gt ge lt le).
fn cases() -> Vec<(Option<Value>, &'static str, [bool; 6])> {
    vec![
        // Missing property: false for every operator, `ne` included.
        (None, "'x'", NONE),
        (None, "1", NONE),
        (None, "true", NONE),
        (None, "NaN", NONE),
        // Int32 literal: by value against Int32, Int64 and Double properties.
        (Some(Value::Int32(5)), "5", EQUAL),
        (Some(Value::Int32(5)), "6", LESS),
        (Some(Value::Int32(-5)), "-6", GREATER),
        (Some(Value::Int64(5)), "5", EQUAL),
        (Some(Value::Int64(1 << 40)), "5", GREATER),
        (Some(Value::Double(5.0)), "5", EQUAL),
        (Some(Value::Double(5.5)), "5", GREATER),
        (Some(Value::Double(f64::NEG_INFINITY)), "-2147483648", LESS),
        // Int64 literal: by value against Int64 and Double properties.
        (Some(Value::Int64(5)), "5L", EQUAL),
        (Some(Value::Int64(i64::MIN)), "-9223372036854775808L", EQUAL),
        (Some(Value::Double(4.5)), "5L", LESS),
        (
            Some(Value::Double(9007199254740992.0)),
            "9007199254740993L",
            EQUAL,
        ),
        // Double literal: against Double properties.
        (Some(Value::Double(1.5)), "1.5", EQUAL),
        (Some(Value::Double(-0.0)), "0.0", EQUAL),
        (Some(Value::Double(1e300)), "INF", LESS),
        (Some(Value::Double(f64::INFINITY)), "INF", EQUAL),
        (Some(Value::Double(2.0)), "2d", EQUAL),
        // NaN on either side: only `ne` holds.
        (Some(Value::Double(f64::NAN)), "NaN", NAN),
        (Some(Value::Double(f64::NAN)), "1.0", NAN),
        (Some(Value::Double(1.0)), "NaN", NAN),
        (Some(Value::Double(f64::NAN)), "1", NAN),
        (Some(Value::Double(f64::NAN)), "1L", NAN),
        // Type mismatch: the property counts as less than the literal.
        (Some(Value::Int32(5)), "5L", LESS),
        (Some(Value::Int32(5)), "5.0", LESS),
        (Some(Value::Int64(5)), "5.0", LESS),
        (Some(Value::Int32(5)), "'5'", LESS),
        (Some(Value::from("5")), "5", LESS),
        (Some(Value::from("z")), "true", LESS),
        (Some(Value::Boolean(true)), "1", LESS),
        (Some(Value::Boolean(false)), "'false'", LESS),
        (
            Some(guid("a455c695-df98-5678-aaaa-81d3367e5a34")),
            "'a455c695-df98-5678-aaaa-81d3367e5a34'",
            LESS,
        ),
        (
            Some(dt("2020-01-01T00:00:00Z")),
            "'2020-01-01T00:00:00Z'",
            LESS,
        ),
        (
            Some(Value::from("2020-01-01T00:00:00Z")),
            "datetime'2020-01-01T00:00:00Z'",
            LESS,
        ),
        (Some(Value::Binary(vec![1])), "'01'", LESS),
        (Some(Value::Double(f64::NAN)), "'x'", LESS),
        // Same type: the data model's order.
        (Some(Value::from("")), "''", EQUAL),
        (Some(Value::from("")), "'a'", LESS),
        (Some(Value::from("B")), "'a'", LESS),
        (Some(Value::from("it's")), "'it''s'", EQUAL),
        (Some(Value::from("\u{10000}")), "'\u{FFFF}'", LESS),
        (Some(Value::from("\u{E000}")), "'\u{1F600}'", GREATER),
        (Some(Value::Boolean(false)), "true", LESS),
        (Some(Value::Boolean(true)), "true", EQUAL),
        (
            Some(dt("2020-01-01T00:00:00.0000001Z")),
            "datetime'2020-01-01T00:00:00Z'",
            GREATER,
        ),
        (
            Some(dt("2020-01-01T01:00:00Z")),
            "datetime'2020-01-01T02:00:00+01:00'",
            EQUAL,
        ),
        (
            Some(guid("00000000-0000-0000-0000-0000000000ff")),
            "guid'01000000-0000-0000-0000-000000000000'",
            LESS,
        ),
        (
            Some(guid("A455C695-DF98-5678-AAAA-81D3367E5A34")),
            "guid'a455c695-df98-5678-aaaa-81d3367e5a34'",
            EQUAL,
        ),
        (Some(Value::Binary(vec![1, 2])), "X'01'", GREATER),
        (Some(Value::Binary(vec![0x0a, 0xff])), "binary'0AFF'", EQUAL),
        (Some(Value::Binary(vec![])), "X'00'", LESS),
    ]
}

#[test]
fn every_rule_through_compare_ast_eval_and_plan() {
    for (value, literal, expected) in cases() {
        let mut e = Entity::new("p", "r");
        if let Some(v) = &value {
            e.set("P", v.clone());
        }
        for (op, want) in CmpOp::ALL.into_iter().zip(expected) {
            for text in [
                format!("P {op} {literal}"),
                format!("{literal} {} P", op.swap()),
            ] {
                let f = parse_filter(&text, &FilterOptions::default())
                    .unwrap_or_else(|err| panic!("{text}: {err}"));
                // 1. The single compare function, with the literal as parsed.
                let Some(tableq_parser::ast::Expr::Comparison(c)) = &f.expr else {
                    panic!("{text}")
                };
                let direct = compare(
                    value.as_ref().map(Value::as_ref),
                    c.normalized_op(),
                    c.literal.value.as_ref(),
                );
                assert_eq!(direct, want, "compare: {value:?} {text}");
                // 2. The AST evaluator.
                assert_eq!(
                    ast_eval::matches(&f, &e),
                    want,
                    "ast_eval: {value:?} {text}"
                );
                // 3. Planned evaluation, and `not` negates normally (missing → not matches).
                let plan = Planner::new().plan(&f, None, None);
                assert_eq!(plan.matches(&e), want, "plan: {value:?} {text}");
                let negated =
                    parse_filter(&format!("not ({text})"), &FilterOptions::default()).unwrap();
                assert_eq!(
                    Planner::new().plan(&negated, None, None).matches(&e),
                    !want,
                    "not ({text})"
                );
            }
        }
    }
}

#[test]
fn keys_and_timestamp() {
    let mut stamped = Entity::new("pk", "rk");
    stamped.set_timestamp(Some(
        DateTime::parse("2020-01-01T00:00:00Z").expect("datetime"),
    ));
    let unstamped = Entity::new("pk", "rk");
    // (filter, matches the stamped entity, matches the entity without Timestamp)
    let table: &[(&str, bool, bool)] = &[
        ("PartitionKey eq 'pk'", true, true),
        ("PartitionKey lt 5", true, true),
        ("PartitionKey gt 5", false, false),
        ("PartitionKey ne 5", true, true),
        ("RowKey le 5L", true, true),
        ("RowKey ge 1.5", false, false),
        ("not (PartitionKey eq 'pk')", false, false),
        ("Timestamp eq datetime'2020-01-01T00:00:00Z'", true, false),
        ("Timestamp ne datetime'2020-01-01T00:00:00Z'", false, false),
        ("Timestamp ne datetime'2021-01-01T00:00:00Z'", true, false),
        (
            "not (Timestamp eq datetime'2021-01-01T00:00:00Z')",
            true,
            true,
        ),
        ("Timestamp lt 'x'", true, false),
        ("not (Timestamp gt 'x')", true, true),
        ("not Missing", true, true),
        ("Missing ne 1", false, false),
    ];
    for (text, with_ts, without_ts) in table {
        let f = parse_filter(text, &FilterOptions::default()).unwrap();
        let plan = Planner::new().plan(&f, None, None);
        assert_eq!(ast_eval::matches(&f, &stamped), *with_ts, "ast_eval {text}");
        assert_eq!(
            ast_eval::matches(&f, &unstamped),
            *without_ts,
            "ast_eval {text} (no Timestamp)"
        );
        assert_eq!(plan.matches(&stamped), *with_ts, "plan {text}");
        assert_eq!(
            plan.matches(&unstamped),
            *without_ts,
            "plan {text} (no Timestamp)"
        );
    }
}
